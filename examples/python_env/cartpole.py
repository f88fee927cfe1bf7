"""CartPole in pure Python (no NumPy, no Gymnasium), trained by asyncrl.

Gymnasium's CartPole-v1 equations (Barto, Sutton and Anderson's cart-pole),
written out so that nothing needs installing. Train it with

    train_a3c --env python:cartpole:CartPole --processes 2 \
        --successful-score 475 --eval-interval 10000

run from this folder (or with it on PYTHONPATH). asyncrl reads the spaces
through the attributes Gymnasium's Box and Discrete have, so a Gymnasium
environment works the same way.
"""

import math
import random


class Box:
    """A box of floats: what asyncrl reads of Gymnasium's Box."""

    def __init__(self, low, high, shape, dtype="float32"):
        self.low, self.high, self.shape, self.dtype = low, high, shape, dtype


class Discrete:
    """The integers 0..n-1: what asyncrl reads of Gymnasium's Discrete."""

    def __init__(self, n):
        self.n = n


class CartPole:
    """Push the cart left (0) or right (1) to keep the pole upright.

    Reward 1 per step; the episode ends when the pole leans past 12 degrees
    or the cart leaves the track, and is cut at `max_steps` (500)."""

    # Parameters asyncrl can set (--env-param, curricula): attributes of
    # this object, assigned before the next reset().
    asyncrl_parameters = {
        "length": {"min": 0.1, "max": 2.0, "help": "half the pole's length (m)"},
    }

    def __init__(self, max_steps=500):
        self.gravity = 9.8
        self.masscart = 1.0
        self.masspole = 0.1
        self.length = 0.5
        self.force_mag = 10.0
        self.tau = 0.02
        self.theta_threshold = 12 * 2 * math.pi / 360
        self.x_threshold = 2.4
        self.max_steps = max_steps
        high = [self.x_threshold * 2, 3.4028235e38,
                self.theta_threshold * 2, 3.4028235e38]
        self.observation_space = Box([-h for h in high], high, (4,))
        self.action_space = Discrete(2)
        self.rng = random.Random()
        self.state = [0.0, 0.0, 0.0, 0.0]
        self.steps = 0

    def reset(self, seed=None, options=None):
        if seed is not None:
            self.rng.seed(seed)
        self.state = [self.rng.uniform(-0.05, 0.05) for _ in range(4)]
        self.steps = 0
        return list(self.state), {}

    def step(self, action):
        x, x_dot, theta, theta_dot = self.state
        force = self.force_mag if action == 1 else -self.force_mag
        total_mass = self.masspole + self.masscart
        polemass_length = self.masspole * self.length
        costheta, sintheta = math.cos(theta), math.sin(theta)
        temp = (force + polemass_length * theta_dot**2 * sintheta) / total_mass
        thetaacc = (self.gravity * sintheta - costheta * temp) / (
            self.length
            * (4.0 / 3.0 - self.masspole * costheta**2 / total_mass))
        xacc = temp - polemass_length * thetaacc * costheta / total_mass
        x += self.tau * x_dot
        x_dot += self.tau * xacc
        theta += self.tau * theta_dot
        theta_dot += self.tau * thetaacc
        self.state = [x, x_dot, theta, theta_dot]
        self.steps += 1
        terminated = (abs(x) > self.x_threshold
                      or abs(theta) > self.theta_threshold)
        truncated = not terminated and self.steps >= self.max_steps
        return list(self.state), 1.0, terminated, truncated, {}
