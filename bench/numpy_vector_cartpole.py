"""CartPole copies stepped together with NumPy (bench/python_env_bench.sh).

The cart-pole equations of examples/python_env/cartpole.py on arrays of
`num_envs` states, as a vectorized environment is usually written, with
Gymnasium's VectorEnv API and the same-step autoreset asyncrl takes.
"""

import numpy as np

from cartpole import Box, Discrete


class NumpyVectorCartPole:
    metadata = {"autoreset_mode": "SameStep"}

    def __init__(self, num_envs=16, max_steps=500):
        self.num_envs = num_envs
        self.max_steps = max_steps
        self.gravity, self.masscart, self.masspole = 9.8, 1.0, 0.1
        self.length, self.force_mag, self.tau = 0.5, 10.0, 0.02
        self.theta_threshold = 12 * 2 * np.pi / 360
        self.x_threshold = 2.4
        high = [self.x_threshold * 2, 3.4028235e38,
                self.theta_threshold * 2, 3.4028235e38]
        self.single_observation_space = Box([-h for h in high], high, (4,))
        self.single_action_space = Discrete(2)
        self.rng = np.random.default_rng()
        self.state = np.zeros((num_envs, 4))
        self.steps = np.zeros(num_envs, dtype=np.int64)

    def reset(self, seed=None, options=None):
        if seed is not None:
            self.rng = np.random.default_rng(
                seed if isinstance(seed, int) else list(seed))
        self.state = self.rng.uniform(-0.05, 0.05, (self.num_envs, 4))
        self.steps[:] = 0
        return self.state.astype(np.float32), {}

    def step(self, actions):
        x, x_dot, theta, theta_dot = self.state.T
        force = np.where(np.asarray(actions) == 1, self.force_mag,
                         -self.force_mag)
        total_mass = self.masspole + self.masscart
        polemass_length = self.masspole * self.length
        costheta, sintheta = np.cos(theta), np.sin(theta)
        temp = (force + polemass_length * theta_dot**2 * sintheta) / total_mass
        thetaacc = (self.gravity * sintheta - costheta * temp) / (
            self.length
            * (4.0 / 3.0 - self.masspole * costheta**2 / total_mass))
        xacc = temp - polemass_length * thetaacc * costheta / total_mass
        x = x + self.tau * x_dot
        x_dot = x_dot + self.tau * xacc
        theta = theta + self.tau * theta_dot
        theta_dot = theta_dot + self.tau * thetaacc
        self.state = np.stack([x, x_dot, theta, theta_dot], axis=1)
        self.steps += 1
        terminated = ((np.abs(x) > self.x_threshold)
                      | (np.abs(theta) > self.theta_threshold))
        truncated = ~terminated & (self.steps >= self.max_steps)
        ended = terminated | truncated
        obs = self.state.astype(np.float32)
        infos = {}
        if ended.any():
            infos = {"final_obs": obs.copy(), "_final_obs": ended}
            n = int(ended.sum())
            self.state[ended] = self.rng.uniform(-0.05, 0.05, (n, 4))
            self.steps[ended] = 0
            obs[ended] = self.state[ended]
        return obs, np.ones(self.num_envs), terminated, truncated, infos
