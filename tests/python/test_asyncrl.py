#!/usr/bin/python3
"""The asyncrl Python package (python/), as a user imports it: the vector
environments' semantics and refusals, reading a run, asyncrl.train.
Run by ctest (tests/CMakeLists.txt) with PYTHONPATH=build/python and
ASYNCRL_SOURCE_DIR; the trajectories against the C++ environments are in
tests/apps/python_env_test.cc."""

import os
import shutil
import signal
import subprocess
import sys
import tempfile
import unittest

import numpy as np

import asyncrl

SOURCE = os.environ.get("ASYNCRL_SOURCE_DIR",
                        os.path.join(os.path.dirname(__file__), "..", ".."))


class VectorEnvTest(unittest.TestCase):
    def test_reset_and_step_have_gymnasiums_shapes_and_types(self):
        env = asyncrl.make_vec("MinAtar/Breakout", num_envs=5)
        self.assertEqual(env.num_envs, 5)
        self.assertEqual(env.autoreset_mode, "SameStep")
        self.assertEqual(env.single_observation_space.shape, (4, 10, 10))
        self.assertEqual(env.single_action_space.kind, "discrete")
        self.assertEqual(env.single_action_space.n, 6)
        obs, info = env.reset(seed=3)
        self.assertEqual(obs.shape, (5, 4, 10, 10))
        self.assertEqual(obs.dtype, np.float32)
        self.assertEqual(info, {})
        obs, reward, terminated, truncated, info = env.step(
            np.zeros(5, dtype=np.int32))
        self.assertEqual(obs.shape, (5, 4, 10, 10))
        self.assertEqual(reward.dtype, np.float64)
        self.assertEqual(terminated.dtype, np.bool_)
        self.assertEqual(truncated.shape, (5,))
        # No copy ended in the first step: no final_obs keys, as Gymnasium.
        self.assertEqual(info, {})

    def test_a_seed_fixes_the_episodes_and_each_copy_differs(self):
        def run(seed):
            env = asyncrl.make_vec("CartPole-v1", num_envs=3)
            first, _ = env.reset(seed=seed)
            rng = np.random.default_rng(0)
            rows = [first]
            for _ in range(50):
                rows.append(env.step(rng.integers(0, 2, size=3))[0])
            return np.stack(rows)
        a, b, c = run(7), run(7), run(8)
        np.testing.assert_array_equal(a, b)
        self.assertFalse(np.array_equal(a, c))
        self.assertFalse(np.array_equal(a[:, 0], a[:, 1]))

    def test_an_ended_episode_resets_in_the_same_step(self):
        env = asyncrl.make_vec("CartPole-v1", num_envs=2,
                               max_episode_steps=10)
        env.reset(seed=0)
        for _ in range(10):
            obs, _, terminated, truncated, info = env.step(
                np.ones(2, dtype=np.int64))
            ended = terminated | truncated
            # The keys only on the step where a copy ended, as Gymnasium.
            self.assertEqual("final_obs" in info, bool(ended.any()), info)
            if ended.any():
                np.testing.assert_array_equal(info["_final_obs"], ended)
                self.assertEqual(info["_final_obs"].dtype, np.bool_)
                self.assertEqual(info["final_obs"].shape, (2, 4))
                break
        # Pushing right: the pole falls, or the limit cuts at step 10.
        self.assertTrue(ended.any())
        # The new episode's first observation (CartPole starts within
        # +-0.05) and the ended one's last, which had moved further.
        self.assertTrue((np.abs(obs[ended]) <= 0.05).all())
        self.assertTrue((np.abs(info["final_obs"][ended]) > 0.05).any())
        self.assertTrue((info["final_obs"][~ended] == 0).all())

    def test_continuous_actions_take_both_shapes(self):
        env = asyncrl.make_vec("Pendulum-v1", num_envs=4)
        env.reset(seed=1)
        r1 = env.step(np.zeros((4, 1), dtype=np.float32))[1]
        r2 = env.step([0.5, -0.5, 1.0, 2.0])[1]
        self.assertEqual(r1.shape, (4,))
        self.assertEqual(r2.shape, (4,))

    def test_bad_actions_raise_the_cpp_message_and_nothing_moves(self):
        env = asyncrl.make_vec("MinAtar/Breakout", num_envs=3)
        obs, _ = env.reset(seed=2)
        cases = [
            (np.array([0, 1, 9]), "actions[2]: MinAtar/Breakout: action 9 "
             "is out of range; accepted: integers in [0, 5]"),
            (np.array([0, 1]), "actions of shape (2,) and dtype int64 are "
             "invalid; accepted: integers of shape (3,)"),
            (np.array([0.0, 1.0, 2.0]), "actions of shape (3,) and dtype "
             "float64 are invalid"),
            (np.zeros((3, 1), dtype=np.int64), "actions of shape (3, 1)"),
        ]
        for actions, message in cases:
            with self.assertRaises(ValueError) as raised:
                env.step(actions)
            self.assertIn(message, str(raised.exception))
            self.assertNotIn("\n", str(raised.exception))
        # The refused batches moved nothing: the same seed's first step.
        fresh = asyncrl.make_vec("MinAtar/Breakout", num_envs=3)
        fresh.reset(seed=2)
        np.testing.assert_array_equal(env.step(np.zeros(3, np.int64))[0],
                                      fresh.step(np.zeros(3, np.int64))[0])
        pendulum = asyncrl.make_vec("Pendulum-v1", num_envs=2)
        pendulum.reset(seed=0)
        with self.assertRaises(ValueError) as raised:
            pendulum.step(np.array([[0.0], [3.0]], dtype=np.float32))
        self.assertEqual(str(raised.exception),
                         "actions[1]: Pendulum: action[0]=3 is out of range; "
                         "accepted: [-2, 2]")

    def test_spaces_have_gymnasiums_attributes_and_sample(self):
        env = asyncrl.make_vec("CartPole-v1", num_envs=3)
        single = env.single_action_space
        self.assertIsInstance(single, asyncrl.Discrete)
        self.assertEqual((single.n, single.kind, single.dtype), (2, "discrete",
                                                                np.int64))
        batch = env.action_space
        self.assertIsInstance(batch, asyncrl.MultiDiscrete)
        self.assertEqual(batch.nvec.tolist(), [2, 2, 2])
        obs_space = env.observation_space
        self.assertEqual(obs_space.shape, (3, 4))
        self.assertEqual(obs_space.dtype, np.float32)
        np.testing.assert_array_equal(obs_space.low[1],
                                      env.single_observation_space.low)
        # Seeded samples repeat; a sample is in its space and steps.
        batch.seed(5)
        first = batch.sample()
        batch.seed(5)
        np.testing.assert_array_equal(batch.sample(), first)
        self.assertIn(first, batch)
        self.assertNotIn(np.array([0, 2, 0]), batch)
        obs, _ = env.reset(seed=0)
        self.assertIn(obs, obs_space)
        env.step(first)
        # Box: within its bounds, the batch's shape; a masked Discrete draws
        # only what the mask allows.
        pendulum = asyncrl.make_vec("Pendulum-v1", num_envs=2)
        box = pendulum.action_space
        self.assertEqual(box.shape, (2, 1))
        box.seed(0)
        for _ in range(50):
            a = box.sample()
            self.assertTrue(((a >= -2) & (a <= 2)).all(), a)
        pendulum.reset(seed=0)
        pendulum.step(box.sample())
        game = asyncrl.make_vec("TicTacToe", num_envs=1).single_action_space
        mask = np.zeros(9, dtype=np.int8)
        mask[[2, 7]] = 1
        self.assertEqual({int(game.sample(mask=mask)) for _ in range(40)},
                         {2, 7})
        with self.assertRaises(ValueError):
            game.sample(mask=np.zeros(9))

    def test_an_illegal_move_of_a_game_is_refused(self):
        env = asyncrl.make_vec("TicTacToe", num_envs=1)
        obs, _ = env.reset(seed=0)
        space = env.single_observation_space
        self.assertEqual(space.action_mask, 9)
        mask = obs[0, -9:]
        legal = int(np.flatnonzero(mask)[0])
        obs = env.step(np.array([legal]))[0]
        taken = [a for a in range(9) if obs[0, -9 + a] == 0]
        self.assertIn(legal, taken)
        with self.assertRaises(ValueError) as raised:
            env.step(np.array([legal]))
        self.assertIn("action %d is illegal in this position" % legal,
                      str(raised.exception))

    def test_step_before_reset_and_bad_construction_raise(self):
        with self.assertRaises(RuntimeError) as raised:
            asyncrl.make_vec("CartPole-v1").step(np.array([0]))
        self.assertEqual(str(raised.exception),
                         "step() before reset(): call reset() first")
        with self.assertRaises(ValueError) as raised:
            asyncrl.make_vec("Pong")
        self.assertIn("unknown environment 'Pong'; registered: ",
                      str(raised.exception))
        with self.assertRaises(ValueError) as raised:
            asyncrl.make_vec("CartPole-v1", num_envs=0)
        self.assertEqual(str(raised.exception),
                         "num_envs=0 is invalid; accepted: 1 to 65536")
        with self.assertRaises(ValueError):
            asyncrl.make_vec("CartPole-v1").reset(seed=-1)

    def test_parameters_are_listed_set_and_checked(self):
        env = asyncrl.make_vec("CartPole-v1", num_envs=2)
        names = [p["name"] for p in env.parameters()]
        self.assertIn("length", names)
        env.set_parameter("length", 1.0)
        env.reset(seed=0)
        self.assertEqual(env.parameter("length"), 1.0)
        with self.assertRaises(ValueError) as raised:
            env.set_parameter("length", -1.0)
        self.assertIn("length", str(raised.exception))
        self.assertIn("-1", str(raised.exception))
        with self.assertRaises(ValueError) as raised:
            env.set_parameter("pole", 1.0)
        self.assertIn("unknown parameter 'pole'", str(raised.exception))

    def test_bad_arguments_are_one_line_errors_naming_the_field(self):
        env = asyncrl.make_vec("CartPole-v1", num_envs=2)
        for seed, error in ((2**64, ValueError), (2**64 - 1, ValueError),
                            (-1, ValueError), (1.5, TypeError),
                            ("0", TypeError), (True, TypeError)):
            with self.assertRaises(error) as raised:
                env.reset(seed=seed)
            self.assertEqual(
                str(raised.exception),
                "seed=%r is invalid; accepted: None or an integer in "
                "[0, 2**64 - num_envs]" % (seed,))
        env.reset(seed=2**64 - 2)  # The last seed two copies can take.
        for num_envs, error in ((10**20, ValueError), (0, ValueError),
                                (2.0, TypeError)):
            with self.assertRaises(error) as raised:
                asyncrl.make_vec("CartPole-v1", num_envs)
            self.assertEqual(str(raised.exception),
                             "num_envs=%r is invalid; accepted: 1 to 65536"
                             % (num_envs,))
        pendulum = asyncrl.make_vec("Pendulum-v1", num_envs=2)
        pendulum.reset(seed=0)
        with self.assertRaises(TypeError) as raised:
            pendulum.step(np.array([[1 + 2j], [0.5 + 0j]]))
        self.assertEqual(str(raised.exception),
                         "actions of dtype complex128 are invalid; accepted: "
                         "integers (Discrete) or real numbers (Box)")
        with self.assertRaises(TypeError) as raised:
            asyncrl.make_vec("CartPole-v1", 1, max_episode_steps="10")
        self.assertIn("max_episode_steps='10' is invalid",
                      str(raised.exception))

    def test_env_names_are_the_registrys(self):
        names = asyncrl.env_names()
        for name in ("CartPole-v1", "MinAtar/Seaquest", "ConnectFour"):
            self.assertIn(name, names)


# examples/custom_env's Python module corridor_envs, built in the tree.
EXAMPLE_MODULES = os.environ.get("ASYNCRL_EXAMPLE_MODULES", "")


class OwnModuleTest(unittest.TestCase):
    """A module of the user's own (asyncrl::python::DefineEnvironmentModule)
    makes asyncrl.make_vec step the C++ environment it registers; each case
    runs in a fresh interpreter, as a user's script does."""

    def run_python(self, script):
        env = dict(os.environ)
        env["PYTHONPATH"] = os.pathsep.join(
            [EXAMPLE_MODULES] + sys.path)
        done = subprocess.run([sys.executable, "-c", script], env=env,
                              capture_output=True, text=True, timeout=120)
        self.assertEqual(done.returncode, 0, done.stderr)
        return done.stdout

    @unittest.skipUnless(EXAMPLE_MODULES, "the example module is not built")
    def test_make_vec_steps_the_modules_environment(self):
        out = self.run_python("""
import numpy as np
import corridor_envs  # before asyncrl: it imports asyncrl itself
import asyncrl
assert "Corridor" in asyncrl.env_names(), asyncrl.env_names()
assert "CartPole-v1" in asyncrl.env_names()
env = asyncrl.make_vec("Corridor", num_envs=2)
obs, info = env.reset(seed=0)
assert obs.shape == (2, 2) and obs[0, 0] == 0.0, obs
assert env.single_action_space.n == 2 and env.num_envs == 2
# Right 10 times: the 10th step reaches the goal (length 10) and resets.
for _ in range(10):
    obs, reward, terminated, truncated, info = env.step(np.ones(2, int))
assert terminated.all() and (reward == 1.0).all(), (terminated, reward)
assert (info["final_obs"][:, 0] == 1.0).all() and (obs[:, 0] == 0).all()
env.set_parameter("length", 3)
# asyncrl's own environments still work beside it.
cartpole = asyncrl.make_vec("CartPole-v1", num_envs=2)
assert isinstance(cartpole, asyncrl.VectorEnv)
assert cartpole.reset(seed=1)[0].shape == (2, 4)
try:
    asyncrl.make_vec("Nope")
except ValueError as e:
    print(e)
""")
        self.assertIn("name='Nope' is invalid; accepted: ", out)
        self.assertIn("CartPole-v1", out)
        self.assertIn("Corridor", out)

    @unittest.skipUnless(EXAMPLE_MODULES, "the example module is not built")
    def test_without_the_module_the_name_is_unknown(self):
        out = self.run_python("""
import asyncrl
print("Corridor" in asyncrl.env_names())
""")
        self.assertEqual(out.strip(), "False")

    def test_add_environments_refuses_another_module(self):
        with self.assertRaisesRegex(TypeError, "module=.* is invalid; "
                                    "accepted: a module built with "):
            asyncrl.add_environments(os)


class RunTest(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.mkdtemp(prefix="asyncrl_python_")

    def tearDown(self):
        shutil.rmtree(self.dir)

    def test_train_solves_cartpole_and_its_run_reads_back(self):
        result = asyncrl.train([
            "--config", os.path.join(SOURCE, "configs", "cartpole-fast.conf"),
            "--processes", "2", "--seed", "1", "--outdir", self.dir,
            "--quiet"])
        self.assertEqual(result.returncode, 0, result.output)
        self.assertTrue(os.path.isdir(result.run), result.output)
        scores = asyncrl.read_scores(result.run)
        self.assertEqual(list(scores)[:3], ["steps", "episodes", "elapsed"])
        self.assertGreaterEqual(max(scores["mean"]), 475)
        checkpoint = asyncrl.read_checkpoint(
            os.path.join(result.run, "successful"))
        self.assertEqual(checkpoint["env"], "CartPole-v1")
        self.assertEqual(checkpoint["config"]["successful-score"], "475")
        self.assertGreater(checkpoint["global_step"], 0)
        self.assertGreaterEqual(checkpoint["best_score"], 475)
        self.assertIn("pi.0.weight", checkpoint["parameters"])
        # The agent it ended with (successful/) and best/, each on 100
        # fresh episodes, greedy and sampled.
        final = asyncrl.read_final_eval(result.run)
        self.assertEqual([(r["agent"], r["action"]) for r in final],
                         [("final", "deterministic"), ("final", "sampled"),
                          ("best", "deterministic"), ("best", "sampled")])
        self.assertEqual(final[0]["checkpoint"], "successful")
        self.assertEqual(final[0]["episodes"], 100)
        self.assertIsNone(final[0]["chosen_score"])
        self.assertGreaterEqual(final[2]["chosen_score"], 475)
        self.assertEqual(asyncrl.read_final_eval(self.dir), [])

    def test_train_takes_a_python_environment_by_name_or_as_a_class(self):
        sys.path.insert(0, os.path.join(SOURCE, "examples", "python_env"))
        try:
            import cartpole
            for env in ("cartpole:CartPole", cartpole.CartPole):
                result = asyncrl.train(
                    env=env, env_kwargs={"max_steps": 200}, processes=2,
                    steps=3000, eval_interval=1000, eval_n_runs=2,
                    outdir=self.dir, quiet=True)
                self.assertEqual(result.returncode, 0, result.output)
                checkpoint = asyncrl.read_checkpoint(
                    os.path.join(result.run, "3000_finish"))
                self.assertEqual(checkpoint["env"],
                                 "python:cartpole:CartPole")
                self.assertEqual(checkpoint["config"]["env-kwargs"],
                                 '{"max_steps": 200}')
        finally:
            sys.path.remove(os.path.join(SOURCE, "examples", "python_env"))

    def test_train_returns_the_run_of_an_outdir_that_is_not_utf8(self):
        outdir = os.path.join(self.dir, os.fsdecode(b"runs-\xff"))
        result = asyncrl.train(env="CartPole-v1", processes=1, steps=500,
                               eval_interval=0, outdir=outdir, quiet=True,
                               echo=False)
        self.assertEqual(result.returncode, 0, result.output)
        self.assertTrue(os.path.isdir(result.run), result.run)
        self.assertTrue(result.run.startswith(outdir), result.run)

    def test_train_refuses_an_environment_the_workers_cannot_import(self):
        def local_env():
            return None
        for env in (lambda: None, local_env):
            with self.assertRaises(ValueError) as raised:
                asyncrl.train(env=env, outdir=self.dir)
            self.assertIn("cannot be imported by the workers",
                          str(raised.exception))
        self.assertEqual(os.listdir(self.dir), [])

    def test_ctrl_c_stops_the_run_as_train_a3c_does(self):
        # A Python program training, interrupted as Ctrl-C interrupts it.
        script = (
            "import sys, asyncrl\n"
            "try:\n"
            "    asyncrl.train(['--env', 'CartPole-v1', '--processes', '2',\n"
            "                   '--steps', '100000000', '--log-level', 'debug',\n"
            "                   '--outdir', sys.argv[1]], echo=True)\n"
            "except asyncrl.TrainInterrupted as e:\n"
            "    print('interrupted', e.result.returncode, e.result.run,\n"
            "          flush=True)\n")
        program = subprocess.Popen([sys.executable, "-c", script, self.dir],
                                   stdout=subprocess.PIPE,
                                   stderr=subprocess.STDOUT, text=True)
        seen = []
        for line in program.stdout:  # Until a worker has trained.
            seen.append(line)
            if line.startswith("[debug] outdir:"):
                break
        self.assertTrue(seen and seen[-1].startswith("[debug] outdir:"),
                        "".join(seen))
        program.send_signal(signal.SIGINT)
        rest = program.stdout.read()
        self.assertEqual(program.wait(timeout=120), 0, rest)
        last = rest.strip().splitlines()[-1].split()
        self.assertEqual(last[:2], ["interrupted", "130"], rest)
        run = last[2]
        self.assertTrue(any(name.endswith("_except")
                            for name in os.listdir(run)), os.listdir(run))
        # No process of the run is left.
        left = []
        for pid in filter(str.isdigit, os.listdir("/proc")):
            try:
                with open("/proc/%s/cmdline" % pid, "rb") as f:
                    if self.dir.encode() in f.read():
                        left.append(pid)
            except OSError:
                pass
        self.assertEqual(left, [])

    def test_keyword_options_export_and_load_policy(self):
        # Keyword options become flags (a list comma-separated, True a
        # switch); the run's policy exports and acts in Python.
        result = asyncrl.train(
            env="CartPole-v1", processes=1, steps=2000, eval_interval=1000,
            eval_n_runs=2, hidden_sizes=[16, 8], lr_decay=True,
            normalize_rewards=False, outdir=self.dir, quiet=True)
        self.assertEqual(result.returncode, 0, result.output)
        with open(os.path.join(result.run, "args.json")) as f:
            args = f.read()
        self.assertIn('"hidden-sizes": "16,8"', args)
        self.assertIn('"lr-decay": "true"', args)
        self.assertIn('"normalize-rewards": "false"', args)
        path = os.path.join(self.dir, "policy.pt")
        self.assertEqual(asyncrl.export(result.run, path), path)
        policy = asyncrl.load_policy(path)
        self.assertEqual((policy.env, policy.observation_size,
                          policy.categorical), ("CartPole-v1", 4, True))
        env = asyncrl.make_vec("CartPole-v1", num_envs=3)
        obs, _ = env.reset(seed=0)
        actions = policy.act(obs)
        self.assertEqual(actions.shape, (3,))
        self.assertIn(actions, env.action_space)
        self.assertIn(int(policy.act(obs[1])), (0, 1))
        env.step(actions)
        # What is not a checkpoint, and a failing export, raise.
        with self.assertRaises(ValueError):
            asyncrl.export(self.dir, path)
        with self.assertRaises(RuntimeError) as raised:
            asyncrl.export(result.run, os.path.join(self.dir, "no", "p.pt"))
        self.assertIn("--export", str(raised.exception))

    def test_an_image_policy_acts_on_one_observation_and_a_batch(self):
        result = asyncrl.train(env="MinAtar/Breakout", processes=1,
                               steps=400, eval_interval=0, outdir=self.dir,
                               quiet=True)
        self.assertEqual(result.returncode, 0, result.output)
        policy = asyncrl.load_policy(
            asyncrl.export(result.run, os.path.join(self.dir, "b.pt")))
        env = asyncrl.make_vec("MinAtar/Breakout", num_envs=2)
        obs, _ = env.reset(seed=0)
        self.assertEqual(policy.act(obs).shape, (2,))
        one = policy.act(obs[0])  # [4, 10, 10], not flattened.
        self.assertEqual(np.shape(one), ())
        self.assertIn(one, env.single_action_space)

    def test_a_bad_flag_returns_two_and_no_run(self):
        result = asyncrl.train(["--outdir", self.dir, "--processes", "0"])
        self.assertEqual(result.returncode, 2)
        self.assertIsNone(result.run)
        self.assertIn("--processes=0 is invalid", result.output)
        self.assertEqual(os.listdir(self.dir), [])

    def test_reading_what_is_not_a_run_raises(self):
        with self.assertRaises(RuntimeError) as raised:
            asyncrl.read_checkpoint(self.dir)
        self.assertIn(self.dir, str(raised.exception))
        with self.assertRaises(FileNotFoundError):
            asyncrl.read_scores(self.dir)
        with self.assertRaises(TypeError):
            asyncrl.train("--env CartPole-v1")


if __name__ == "__main__":
    unittest.main()
