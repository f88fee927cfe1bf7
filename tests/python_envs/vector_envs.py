"""Vector environments that keep asyncrl's rules in each way it reads them
(tests/apps/python_worker_env_test.cc): each checks what asyncrl gives it
and raises when it is not what Gymnasium would give."""

from cartpole import Box, Discrete
from vector_cartpole import VectorCartPole

try:
    import numpy
except ImportError:  # Actions are lists where NumPy is missing.
    numpy = None


class Gymnasium029(VectorCartPole):
    """Takes only an int seed (Gymnasium's VectorEnv.reset) and puts the
    ended copies' last observations under Gymnasium 0.29's keys."""

    def reset(self, seed=None, options=None):
        if seed is not None and not isinstance(seed, int):
            raise TypeError("Seed must be a python integer, got %r" % (seed,))
        return super().reset(seed=seed, options=options)

    def step(self, actions):
        obs, rewards, terms, truncs, infos = super().step(actions)
        if infos:
            infos = {"final_observation": infos["final_obs"],
                     "_final_observation": infos["_final_obs"]}
        return obs, rewards, terms, truncs, infos


def _check_actions(actions, n, shape):
    if numpy is None:
        rows = list(actions)
    else:
        if not isinstance(actions, numpy.ndarray):
            raise TypeError("actions are a %s" % type(actions).__name__)
        if actions.shape != (n,) + shape or actions.dtype != numpy.float32:
            raise ValueError("actions have shape %s and dtype %s"
                             % (actions.shape, actions.dtype))
        rows = actions.tolist()
    if len(rows) != n:
        raise ValueError("%d rows of actions" % len(rows))
    return rows


class ContinuousVector:
    """Actions of shape (2,): the reward is how near they are to the
    observation's first two values; episodes of 10 steps."""

    metadata = {"autoreset_mode": "SameStep"}
    shape = (2,)

    def __init__(self, num_envs=3):
        self.num_envs = num_envs
        self.single_observation_space = Box([-1.0] * 3, [1.0] * 3, (3,))
        self.single_action_space = Box([-1.0] * 2, [1.0] * 2, self.shape)
        self.steps = [0] * num_envs
        self.targets = [[0.5, -0.5]] * num_envs

    def _obs(self, i):
        return [self.targets[i][0], self.targets[i][1], self.steps[i] / 10]

    def reset(self, seed=None, options=None):
        self.steps = [0] * self.num_envs
        return [self._obs(i) for i in range(self.num_envs)], {}

    def _values(self, row):
        return row if isinstance(row, list) else [row, row]

    def step(self, actions):
        rows = _check_actions(actions, self.num_envs, self.shape)
        obs, rewards, terms, truncs = [], [], [], []
        final, ended = [None] * self.num_envs, [False] * self.num_envs
        for i, row in enumerate(rows):
            a = self._values(row)
            self.steps[i] += 1
            rewards.append(-sum((x - t) ** 2
                                for x, t in zip(a, self.targets[i])))
            truncs.append(self.steps[i] >= 10)
            terms.append(False)
            if truncs[-1]:
                final[i], ended[i] = self._obs(i), True
                self.steps[i] = 0
            obs.append(self._obs(i))
        infos = {"final_obs": final, "_final_obs": ended} if any(ended) else {}
        return obs, rewards, terms, truncs, infos


class ScalarActionVector(ContinuousVector):
    """An action space of shape (): the batch of actions is [num_envs]."""

    shape = ()

    def __init__(self, num_envs=3):
        super().__init__(num_envs)
        self.single_action_space = Box(-1.0, 1.0, ())
