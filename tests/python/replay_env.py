#!/usr/bin/python3
"""Replays recorded actions through asyncrl.make_vec, for
tests/apps/python_env_test.cc (which steps the C++ environments with the
same actions and compares).

Usage: replay_env.py NAME NUM_ENVS SEED STEPS MAX_EPISODE_STEPS ACTIONS OUT
ACTIONS: float32 [STEPS, NUM_ENVS, action size] (Discrete: the index).
Writes OUT: float32, per step: obs [NUM_ENVS, size], reward, terminated,
truncated [NUM_ENVS] each, final_obs [NUM_ENVS, size]; the reset's obs first.
"""
import sys

import numpy as np

import asyncrl


def main():
    name, n, seed, steps, limit, actions_file, out = sys.argv[1:8]
    n, seed, steps = int(n), int(seed), int(steps)
    env = asyncrl.make_vec(name, num_envs=n, max_episode_steps=int(limit))
    discrete = env.single_action_space.kind == "discrete"
    actions = np.fromfile(actions_file, dtype=np.float32).reshape(steps, n, -1)
    obs, _ = env.reset(seed=seed)
    parts = [obs.reshape(n, -1)]
    for t in range(steps):
        a = actions[t, :, 0].astype(np.int64) if discrete else actions[t]
        obs, reward, terminated, truncated, info = env.step(a)
        parts += [obs.reshape(n, -1), reward[:, None], terminated[:, None],
                  truncated[:, None],
                  info.get("final_obs", np.zeros_like(obs)).reshape(n, -1)]
    np.concatenate([p.astype(np.float32).ravel() for p in parts]).tofile(out)


if __name__ == "__main__":
    main()
