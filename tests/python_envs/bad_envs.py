"""Environments that break asyncrl's rules, one way each (tests/apps/
python_worker_env_test.cc). Built on examples/python_env/cartpole.py."""

from cartpole import Box, CartPole, Discrete
from vector_cartpole import VectorCartPole


class OldGymStep(CartPole):
    """gym 0.21's step: (observation, reward, done, info)."""

    def step(self, action):
        obs, reward, terminated, truncated, info = super().step(action)
        return obs, reward, terminated or truncated, info


class DictSpace:
    def __init__(self):
        self.spaces = {"a": Discrete(2)}


class DictObservation(CartPole):
    def __init__(self):
        super().__init__()
        self.observation_space = DictSpace()


class WrongShape(CartPole):
    """Three values where the space says four, from the 7th step on."""

    def step(self, action):
        obs, reward, terminated, truncated, info = super().step(action)
        if self.steps >= 7:
            obs = obs[:3]
        return obs, reward, terminated, truncated, info


_steps_in_this_process = 0


class RaisesInStep(CartPole):
    """Raises at the 300th step of a process (every worker's)."""

    def step(self, action):
        global _steps_in_this_process
        _steps_in_this_process += 1
        if _steps_in_this_process == 300:
            raise ValueError("the cart fell off the table")
        return super().step(action)


def raises_in_factory():
    raise RuntimeError("no such track")


def returns_none():
    return None


class NoReset:
    observation_space = Box([0.0], [1.0], (1,))
    action_space = Discrete(2)

    def step(self, action):
        return [0.0], 0.0, False, False, {}


class Sized(CartPole):
    """A factory with keyword arguments (--env-kwargs)."""

    def __init__(self, max_steps=500, extra_dims=0):
        super().__init__(max_steps=max_steps)
        n = 4 + extra_dims
        self.observation_space = Box([-1e30] * n, [1e30] * n, (n,))
        self.extra_dims = extra_dims

    def reset(self, seed=None, options=None):
        obs, info = super().reset(seed=seed)
        return obs + [0.0] * self.extra_dims, info

    def step(self, action):
        obs, r, te, tr, info = super().step(action)
        return obs + [0.0] * self.extra_dims, r, te, tr, info


class NextStepVector(VectorCartPole):
    """Declares Gymnasium 1.x's default autoreset (the next step)."""

    metadata = {"autoreset_mode": "NextStep"}


class NoFinalObsVector(VectorCartPole):
    """Resets an ended copy but leaves its last observation out."""

    def step(self, actions):
        obs, rewards, terms, truncs, infos = super().step(actions)
        return obs, rewards, terms, truncs, {}


class VectorWithParameters(VectorCartPole):
    asyncrl_parameters = {"length": {"min": 0.1, "max": 2.0}}
    length = 0.5


class ShortVector(VectorCartPole):
    """Returns one observation too few from the 5th step on."""

    def __init__(self, num_envs=4):
        super().__init__(num_envs)
        self.calls = 0

    def step(self, actions):
        self.calls += 1
        obs, rewards, terms, truncs, infos = super().step(actions)
        if self.calls >= 5:
            obs = obs[1:]
        return obs, rewards, terms, truncs, infos


class ShortFinalVector(VectorCartPole):
    """Gives the last observation of the first copy only."""

    def step(self, actions):
        obs, rewards, terms, truncs, infos = super().step(actions)
        if infos:
            infos = {"final_obs": infos["final_obs"][:1],
                     "_final_obs": infos["_final_obs"]}
        return obs, rewards, terms, truncs, infos


class RefusesLargeSeeds(CartPole):
    """Raises for a seed of 2**31 or more: those only the final evaluation
    gives."""

    def reset(self, seed=None, options=None):
        if seed is not None and seed >= 2**31:
            raise ValueError("seed %d is too large for this track" % seed)
        return super().reset(seed=seed, options=options)
