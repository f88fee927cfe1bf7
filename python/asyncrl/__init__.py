"""asyncrl from Python (docs/python.md).

- make_vec(name, num_envs): asyncrl's native environments as a batched
  vector environment with Gymnasium's semantics (reset(seed=...) ->
  (obs, info); step(actions) -> (obs, reward, terminated, truncated, info)),
  autoreset in the same step.
- read_scores(run), read_checkpoint(dir): what a run wrote.
- train(args, **options): a train_a3c run with its flags (a list, or
  keyword options: env=..., lr=...); returns when it ends.
- export(run_or_checkpoint, path), load_policy(path).act(obs): the
  trained policy as TorchScript, and played in Python (needs torch).

Needs NumPy (Debian's python3-numpy). Nothing here imports torch.
"""

import os
import re
import subprocess
import sys

import numpy as np

from . import _native
from ._paths import TRAIN_A3C

__all__ = ["VectorEnv", "Space", "Discrete", "Box", "MultiDiscrete",
           "make_vec", "env_names", "read_scores", "read_checkpoint", "train",
           "TrainResult", "TrainInterrupted", "export", "load_policy",
           "Policy", "add_environments", "read_final_eval"]

Space = _native.Space


class _Space:
    """What every space below shares: its generator (seed) and `in`."""

    def seed(self, seed=None):
        self.np_random = np.random.default_rng(seed)
        return [seed]

    def __contains__(self, x):
        return self.contains(x)


class Discrete(_Space):
    """Gymnasium's Discrete(n) by its attributes: n, shape (), dtype int64,
    sample(mask=None), seed(seed), contains(x); kind "discrete" and
    action_mask (the number of trailing observation elements that are a
    game's legal-move mask) as asyncrl's Space has them."""

    kind = "discrete"

    def __init__(self, n, action_mask=0, seed=None):
        self.n = int(n)
        self.shape = ()
        self.dtype = np.dtype(np.int64)
        self.action_mask = int(action_mask)
        self.seed(seed)

    def sample(self, mask=None):
        """A uniform action; with mask (int8/bool [n], 1 = allowed), a
        uniform allowed one."""
        if mask is None:
            return np.int64(self.np_random.integers(self.n))
        allowed = np.flatnonzero(np.asarray(mask).reshape(-1)[:self.n])
        if allowed.size == 0:
            raise ValueError("mask=%r is invalid; accepted: at least one "
                             "allowed action of %d" % (mask, self.n))
        return np.int64(self.np_random.choice(allowed))

    def contains(self, x):
        a = np.asarray(x)
        return (a.shape == () and np.issubdtype(a.dtype, np.integer)
                and 0 <= int(a) < self.n)

    def __repr__(self):
        return "Discrete(%d)" % self.n


class MultiDiscrete(_Space):
    """A batch of Discrete actions, as Gymnasium batches them: nvec, shape
    (len(nvec),), dtype int64, sample(), seed(), contains()."""

    def __init__(self, nvec, seed=None):
        self.nvec = np.asarray(nvec, dtype=np.int64)
        self.shape = self.nvec.shape
        self.dtype = np.dtype(np.int64)
        self.seed(seed)

    def sample(self):
        return self.np_random.integers(self.nvec).astype(np.int64)

    def contains(self, x):
        a = np.asarray(x)
        return (a.shape == self.shape and np.issubdtype(a.dtype, np.integer)
                and bool(((a >= 0) & (a < self.nvec)).all()))

    def __repr__(self):
        return "MultiDiscrete(%s)" % self.nvec.tolist()


class Box(_Space):
    """Gymnasium's Box by its attributes: low, high (float32 arrays of
    shape), shape, dtype float32, sample(), seed(), contains(); kind "box"
    and action_mask as asyncrl's Space has them. sample() draws as
    Gymnasium's does: uniform where both bounds are finite, an exponential
    off a single finite bound, a normal where neither is."""

    kind = "box"

    def __init__(self, low, high, shape, action_mask=0, seed=None):
        self.shape = tuple(int(d) for d in shape)
        self.dtype = np.dtype(np.float32)
        self.low = self._full(low, -np.inf)
        self.high = self._full(high, np.inf)
        self.action_mask = int(action_mask)
        self.seed(seed)

    def _full(self, bound, missing):
        b = np.asarray(bound, dtype=np.float32).reshape(-1)
        if b.size == 0:
            b = np.array([missing], dtype=np.float32)
        if b.size == 1:
            return np.full(self.shape, b[0], dtype=np.float32)
        return b.reshape(self.shape).copy()

    def sample(self):
        low, high = self.low.astype(np.float64), self.high.astype(np.float64)
        out = np.empty(self.shape, dtype=np.float64)
        lo, hi = np.isfinite(low), np.isfinite(high)
        both, only_lo, only_hi, neither = lo & hi, lo & ~hi, ~lo & hi, ~lo & ~hi
        rng = self.np_random
        out[both] = rng.uniform(low[both], high[both])
        out[only_lo] = low[only_lo] + rng.exponential(size=only_lo.sum())
        out[only_hi] = high[only_hi] - rng.exponential(size=only_hi.sum())
        out[neither] = rng.normal(size=neither.sum())
        return np.clip(out, low, high).astype(np.float32)

    def contains(self, x):
        a = np.asarray(x, dtype=np.float32)
        return (a.shape == self.shape
                and bool(((a >= self.low) & (a <= self.high)).all()))

    def __repr__(self):
        return "Box(shape=%s)" % (self.shape,)


def _space(native, seed=None):
    """The Gymnasium-like space of a native Space."""
    if native.kind == "discrete":
        return Discrete(native.n, native.action_mask, seed)
    return Box(native.low, native.high, native.shape, native.action_mask,
               seed)


class _VectorEnvMethods:
    """num_envs copies of one environment stepped together.

    reset(seed=None) -> (obs, info): obs is float32 [num_envs, *shape];
        with a seed, environment i is seeded seed + i (same seed, same
        episodes); without, each continues its own stream.
    step(actions) -> (obs, reward, terminated, truncated, info):
        actions are integers [num_envs] (Discrete) or floats
        [num_envs, D] (Box); reward float64, terminated and truncated
        bool, all [num_envs]. Every action is checked before any
        environment steps (out of range, a game's illegal move, a wrong
        shape or dtype: ValueError with asyncrl's message; nothing moves).
    autoreset_mode is "SameStep" (the value of Gymnasium's
        AutoresetMode.SAME_STEP): an environment whose episode ends in
        step() is reset at once; obs holds the new episode's first
        observation and info["final_obs"] the ended episode's last, in the
        rows where info["_final_obs"] is True; as in Gymnasium, both keys
        are there only on a step where a copy ended. Unlike Gymnasium's
        object array with None in the other rows, final_obs is a float32
        array like obs, zeros in the other rows.
    set_parameter(name, value) sets an environment parameter of every
        copy from its next episode; parameters() lists them.
    single_observation_space, single_action_space: one copy's spaces
        (Discrete or Box, with Gymnasium's attributes and sample());
        observation_space, action_space: the batch's (Box [num_envs, ...],
        MultiDiscrete([n] * num_envs) for discrete actions).
    """

    autoreset_mode = "SameStep"
    metadata = {"autoreset_mode": "SameStep"}

    def __init__(self, name, num_envs=1, max_episode_steps=0,
                 reward_scale=1.0):
        _check_int("num_envs", num_envs, 1, 65536, "1 to 65536")
        _check_int("max_episode_steps", max_episode_steps, 0, 2**63 - 1,
                   "0 (the environment's limit) or a positive integer")
        if not isinstance(name, str):
            raise TypeError("name=%r is invalid; accepted: an environment "
                            "name (a str; env_names() lists them)" % (name,))
        if (isinstance(reward_scale, bool)
                or not isinstance(reward_scale, (int, float, np.number))):
            raise TypeError("reward_scale=%r is invalid; accepted: a finite "
                            "number" % (reward_scale,))
        super().__init__(name, num_envs, max_episode_steps,
                         float(reward_scale))
        native = self._native_class
        native_obs = native.single_observation_space.fget(self)
        native_act = native.single_action_space.fget(self)
        self._single_observation_space = _space(native_obs)
        self._single_action_space = _space(native_act)
        n = self.num_envs
        obs = self._single_observation_space
        self._observation_space = Box(
            np.broadcast_to(obs.low, (n,) + obs.shape),
            np.broadcast_to(obs.high, (n,) + obs.shape), (n,) + obs.shape,
            obs.action_mask)
        act = self._single_action_space
        if act.kind == "discrete":
            self._action_space = MultiDiscrete([act.n] * n)
        else:
            self._action_space = Box(
                np.broadcast_to(act.low, (n,) + act.shape),
                np.broadcast_to(act.high, (n,) + act.shape),
                (n,) + act.shape)

    # Gymnasium's four space attributes: one copy's, and the batch's.
    single_observation_space = property(
        lambda self: self._single_observation_space)
    single_action_space = property(lambda self: self._single_action_space)
    observation_space = property(lambda self: self._observation_space)
    action_space = property(lambda self: self._action_space)

    def reset(self, *, seed=None, options=None):
        if options:
            raise ValueError("options=%r is invalid; accepted: None (use "
                             "set_parameter for environment parameters)"
                             % (options,))
        if seed is not None:
            # Copy i is seeded seed + i, each an unsigned 64-bit integer.
            _check_int("seed", seed, 0, 2**64 - self.num_envs,
                       "None or an integer in [0, 2**64 - num_envs]")
            seed = int(seed)
        return super().reset(seed)

    def step(self, actions):
        actions = np.asarray(actions)
        if actions.dtype.kind not in "biuf":
            # Complex numbers lost their imaginary part in the cast.
            raise TypeError("actions of dtype %s are invalid; accepted: "
                            "integers (Discrete) or real numbers (Box)"
                            % actions.dtype)
        return super().step(actions)

    def close(self):
        pass

    def __repr__(self):
        return "VectorEnv(%r, num_envs=%d)" % (self.name, self.num_envs)


class VectorEnv(_VectorEnvMethods, _native.VectorEnv):
    __doc__ = _VectorEnvMethods.__doc__
    _native_class = _native.VectorEnv


# Modules of users' own that step C++ environments their libraries register
# (asyncrl/python/bindings.h: DefineEnvironmentModule calls
# add_environments): (module, its VectorEnv class), in import order.
_environment_modules = []


def add_environments(module):
    """Makes asyncrl.make_vec and env_names find the environments `module`
    registers: a module built with asyncrl's bindings
    (asyncrl::python::DefineEnvironmentModule calls this when imported)."""
    if not hasattr(module, "VectorEnv") or not hasattr(module, "env_names"):
        raise TypeError("module=%r is invalid; accepted: a module built with "
                        "asyncrl::python::DefineEnvironmentModule" % (module,))
    if any(m is module for m, _ in _environment_modules):
        return
    cls = type("VectorEnv", (_VectorEnvMethods, module.VectorEnv),
               {"__doc__": _VectorEnvMethods.__doc__,
                "__module__": module.__name__,
                "_native_class": module.VectorEnv})
    _environment_modules.append((module, cls))


def _check_int(field, value, low, high, accepted=None):
    """asyncrl's one-line refusal for an integer argument outside
    [low, high] or not an integer at all (a bool, a float, a str)."""
    ok = (isinstance(value, (int, np.integer)) and not isinstance(value, bool)
          and low <= value <= high)
    if not ok:
        error = (ValueError if isinstance(value, (int, np.integer))
                 and not isinstance(value, bool) else TypeError)
        raise error("%s=%r is invalid; accepted: %s" % (
            field, value, accepted or "an integer in [%d, %d]" % (low, high)))


def make_vec(name, num_envs=1, max_episode_steps=0, reward_scale=1.0):
    """A VectorEnv of num_envs copies of the environment `name`
    (env_names() lists them, the ones registered by an imported module of
    your own too; max_episode_steps 0 keeps its time limit)."""
    if isinstance(name, str) and name not in _native.env_names():
        for module, cls in _environment_modules:
            if name in module.env_names():
                return cls(name, num_envs, max_episode_steps, reward_scale)
        if _environment_modules:
            raise ValueError("name=%r is invalid; accepted: %s" % (
                name, ", ".join(env_names())))
    return VectorEnv(name, num_envs, max_episode_steps, reward_scale)


def env_names():
    """The names make_vec accepts: asyncrl's, then those of the modules of
    your own imported (add_environments)."""
    names = list(_native.env_names())
    for module, _ in _environment_modules:
        names += [n for n in module.env_names() if n not in names]
    return names


def read_scores(run):
    """scores.txt of a run folder (or the file itself) as a dict of
    columns: {"steps": [...], "mean": [...], ...}, numbers as int or
    float."""
    path = os.path.join(run, "scores.txt") if os.path.isdir(run) else run
    with open(path, encoding="utf-8") as f:
        lines = f.read().splitlines()
    if not lines:
        raise ValueError("%s is empty; accepted: a scores.txt with a header"
                         % path)
    header = lines[0].split("\t")
    columns = {name: [] for name in header}
    for number, line in enumerate(lines[1:], start=2):
        cells = line.split("\t")
        if len(cells) != len(header):
            raise ValueError("%s line %d has %d cells; the header has %d"
                             % (path, number, len(cells), len(header)))
        for name, cell in zip(header, cells):
            columns[name].append(_number(cell))
    return columns


def read_final_eval(run):
    """final_eval.tsv of a run folder (or the file itself): the final agent
    and best/ evaluated on fresh episodes when the run ended, as a list of
    dicts {"agent": "final" or "best", "checkpoint", "step", "action":
    "deterministic", "sampled" or "agent", "episodes", "mean", "median",
    "stdev", "max", "min", "chosen_score": best/'s choosing evaluation mean
    or None}; [] when the run wrote none (--final-eval-n-runs 0, a stopped
    run, a game)."""
    path = (os.path.join(run, "final_eval.tsv") if os.path.isdir(run)
            else run)
    if not os.path.exists(path):
        return []
    with open(path, encoding="utf-8") as f:
        lines = f.read().splitlines()
    header = lines[0].split("\t") if lines else []
    rows = []
    for line in lines[1:]:
        row = dict(zip(header, line.split("\t")))
        for key in ("step", "episodes", "mean", "median", "stdev", "max",
                    "min"):
            row[key] = _number(row[key])
        row["chosen_score"] = (_number(row["chosen_score"])
                               if row.get("chosen_score") else None)
        rows.append(row)
    return rows


def _number(cell):
    try:
        return int(cell)
    except ValueError:
        try:
            return float(cell)
        except ValueError:
            return cell


def read_checkpoint(directory):
    """A checkpoint directory's metadata (no tensors): global_step,
    episodes, elapsed_seconds, best_score (None before an evaluation),
    agent_type, env, config (every recorded option, as str), parameters
    (name -> shape), build_revision, created_unix_ms. Raises
    RuntimeError naming the file when it is missing or damaged."""
    info = _native.read_checkpoint(directory)
    decode = lambda b: b.decode("utf-8", "surrogateescape")
    info["env"] = decode(info["env"])
    info["config"] = {k: decode(v) for k, v in info["config"].items()}
    return info


class TrainResult:
    """How a train() run ended: returncode (train_a3c's exit status: 0
    done, 1 a worker failed, 2 invalid flags, 130/143 stopped), run (the
    run folder, None when none was made), output (what it printed)."""

    def __init__(self, returncode, run, output):
        self.returncode = returncode
        self.run = run
        self.output = output

    def __repr__(self):
        return "TrainResult(returncode=%d, run=%r)" % (self.returncode,
                                                       self.run)


class TrainInterrupted(KeyboardInterrupt):
    """Raised by train() after a KeyboardInterrupt (Ctrl-C, Jupyter's
    interrupt) stopped its run: `result` is the TrainResult (returncode
    130, the run folder with its <t>_except checkpoint)."""

    def __init__(self, result):
        super().__init__("train_a3c stopped by SIGINT (status %d): %s"
                         % (result.returncode, result.run))
        self.result = result


def _parent_death_signal():
    # Resolved here, in the parent: between fork and exec the child only
    # calls it (no import, no dlopen: a process with threads must not).
    import ctypes
    import signal
    prctl = ctypes.CDLL(None, use_errno=True).prctl
    PR_SET_PDEATHSIG = 1
    parent = os.getpid()

    def set_in_child():
        # The run stops cleanly (SIGTERM: <t>_except, status 143) if the
        # Python process dies without stopping it; if it died already,
        # the child does not start.
        prctl(PR_SET_PDEATHSIG, signal.SIGTERM)
        if os.getppid() != parent:
            os._exit(1)
    return set_in_child


def _flags(options):
    """train_a3c flags of keyword options: lr=7e-4 -> --lr=0.0007,
    successful_score -> --successful-score, a list -> comma-separated
    (hidden_sizes=[64, 64]), True -> the switch (--lr-decay), False or
    None -> nothing (the default)."""
    flags = []
    for key, value in options.items():
        name = "--" + key.replace("_", "-")
        if value is None or value is False:
            continue
        if value is True:
            flags.append(name)
        elif isinstance(value, dict):
            import json
            flags.append("%s=%s" % (name, json.dumps(value)))
        elif isinstance(value, (list, tuple)):
            flags.append("%s=%s" % (name, ",".join(str(v) for v in value)))
        else:
            flags.append("%s=%s" % (name, value))
    return flags


def _env_flag(env):
    """--env for train's env=: a built-in name as it is; "module:factory"
    (or "python:module:factory") a Python environment the workers import;
    a class or function importable by name as its "module:qualname"."""
    if callable(env):
        module = getattr(env, "__module__", None)
        qualname = getattr(env, "__qualname__", "")
        if (not module or module == "__main__" or "<lambda>" in qualname
                or "<locals>" in qualname):
            raise ValueError(
                "env=%r cannot be imported by the workers (each imports it "
                "by name in its own Python): define it at the top level of "
                "a module and pass env='module:attr' or the class or "
                "function itself" % (env,))
        return "python:%s:%s" % (module, qualname)
    env = str(env)
    if ":" in env and not env.startswith("python:"):
        return "python:" + env
    return env


def _python_path():
    """PYTHONPATH for the trainer's workers: this interpreter's sys.path
    (the current folder for ''), then what was set."""
    paths = [p or os.getcwd() for p in sys.path]
    if os.environ.get("PYTHONPATH"):
        paths.append(os.environ["PYTHONPATH"])
    return os.pathsep.join(paths)


def train(args=(), echo=False, train_a3c=None, **options):
    """Runs train_a3c with `args` (a list of its flags, e.g.
    ["--env", "CartPole-v1", "--successful-score", "475"]) and the keyword
    options (env="CartPole-v1", algorithm="ppo", lr=7e-4, steps=200000,
    successful_score=475: each flag by its name with _ for -, a list
    comma-separated, a dict as JSON, True for a switch) and returns a
    TrainResult when it ends. env= is also your own Python environment:
    "module:factory", or the class or function itself if it is importable by
    name (env_kwargs={...} are its keyword arguments); each worker imports it
    in its own interpreter, with this process's sys.path. A separate process: the trainer forks its
    workers, which a Python process with threads must not. echo=True also
    prints its output as it comes. train_a3c: another binary (default: the
    one built or installed with this package, or $ASYNCRL_TRAIN_A3C).

    A KeyboardInterrupt while it runs sends the run one SIGINT (it runs in
    its own process group, so a terminal's Ctrl-C reaches it only this
    way), waits for its clean stop and raises TrainInterrupted carrying the
    result. If this process dies, the run gets SIGTERM."""
    binary = _binary(train_a3c)
    if isinstance(args, str):
        raise TypeError("args must be a list of flags, not a string")
    if "env" in options:
        options["env"] = _env_flag(options["env"])
    environment = dict(os.environ, PYTHONPATH=_python_path())
    process = subprocess.Popen([binary] + [str(a) for a in args] +
                               _flags(options),
                               env=environment,
                               stdout=subprocess.PIPE,
                               stderr=subprocess.STDOUT, text=True,
                               # Bytes that are not UTF-8 (a path's) kept
                               # as os.fsdecode keeps them, so the run's
                               # path names the folder it is.
                               errors="surrogateescape", process_group=0,
                               preexec_fn=_parent_death_signal())
    output = []

    def result():
        text = "".join(output)
        # "results in RUN", or with --resume "results in RUN (resuming
        # from DIR at step N)".
        match = re.search(r"^results in (.*?)(?: \(resuming from .*\))?$",
                          text, re.MULTILINE)
        return TrainResult(process.returncode, match.group(1) if match
                           else None, text)

    def read():
        for line in process.stdout:
            output.append(line)
            if echo:
                sys.stdout.write(line.encode("utf-8", "surrogateescape")
                                 .decode("utf-8", "replace"))
                sys.stdout.flush()

    try:
        read()
        process.wait()
    except KeyboardInterrupt:
        import signal
        process.send_signal(signal.SIGINT)
        while True:
            try:
                read()
                process.wait()
                break
            except KeyboardInterrupt:
                # A second one: as a second Ctrl-C to train_a3c, the
                # workers stop at once (still nothing half-written).
                process.send_signal(signal.SIGINT)
        process.stdout.close()
        raise TrainInterrupted(result()) from None
    except BaseException:
        # Anything else (echo's stdout closed...): the run is stopped as
        # Ctrl-C stops it, not left blocked on a pipe nobody reads.
        import signal
        process.send_signal(signal.SIGINT)
        process.stdout.close()
        process.wait()
        raise
    process.stdout.close()
    return result()


def _binary(train_a3c):
    return train_a3c or os.environ.get("ASYNCRL_TRAIN_A3C") or TRAIN_A3C


def _checkpoint_of(path):
    """A checkpoint directory, or a run folder's best/ (else its newest
    <steps>_finish)."""
    if os.path.isfile(os.path.join(path, "checkpoint.pb")):
        return path
    if os.path.isfile(os.path.join(path, "args.json")):
        best = os.path.join(path, "best")
        if os.path.isfile(os.path.join(best, "checkpoint.pb")):
            return best
        finishes = sorted(
            (int(d.split("_")[0]), d) for d in os.listdir(path)
            if re.fullmatch(r"\d+_finish", d))
        if finishes:
            return os.path.join(path, finishes[-1][1])
    raise ValueError("%r is invalid; accepted: a checkpoint directory (with "
                     "checkpoint.pb) or a run folder with best/ or a "
                     "<steps>_finish/" % (path,))


def export(run_or_checkpoint, path, train_a3c=None):
    """Writes the policy of a checkpoint (or of a run folder's best/, else
    its newest <steps>_finish/) to `path` as a TorchScript module
    (train_a3c --export; docs/export.md) and returns `path`. Raises
    RuntimeError with train_a3c's message if it fails."""
    checkpoint = _checkpoint_of(os.fspath(run_or_checkpoint))
    done = subprocess.run([_binary(train_a3c), "--export", os.fspath(path),
                           "--load", checkpoint], stdout=subprocess.PIPE,
                          stderr=subprocess.STDOUT, text=True,
                          errors="replace")
    if done.returncode != 0:
        lines = done.stdout.strip().splitlines()
        raise RuntimeError("export of %s failed (status %d): %s"
                           % (checkpoint, done.returncode,
                              lines[-1] if lines else ""))
    return os.fspath(path)


class Policy:
    """An exported policy (export(), train_a3c --export) in this process:
    act(obs) takes one observation or a batch (NumPy) and returns the
    action(s) as NumPy: the most probable action (categorical) or the
    mean (Gaussian); a recurrent policy keeps its state between calls
    until reset(). `module` is the TorchScript module (torch.jit.load)."""

    def __init__(self, module):
        import torch
        self._torch = torch
        self.module = module
        self.env = module.env
        self.observation_size = int(module.observation_size)
        self.state_size = int(module.state_size)
        self.categorical = bool(module.categorical)
        self._state = None

    def reset(self):
        self._state = None

    def act(self, obs):
        torch = self._torch
        x = torch.from_numpy(np.ascontiguousarray(obs, dtype=np.float32))
        # One observation ([D], or an image's [C, H, W]) is a batch of one.
        single = x.numel() == self.observation_size and x.dim() in (1, 3)
        if single:
            x = x.unsqueeze(0)
        with torch.no_grad():
            if self.state_size > 0:
                if self._state is None or self._state.shape[0] != x.shape[0]:
                    self._state = self.module.initial_state(x.shape[0])
                action, self._state = self.module.act(x, self._state)
            else:
                action = self.module.act(x)
        action = action.numpy()
        return action[0] if single else action

    def __repr__(self):
        return "Policy(env=%r, categorical=%s)" % (self.env, self.categorical)


def load_policy(path):
    """Loads an exported policy (needs PyTorch: Debian's python3-torch)."""
    import torch
    return Policy(torch.jit.load(os.fspath(path)))
