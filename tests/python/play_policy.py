#!/usr/bin/python3
"""Plays an exported policy (train_a3c --export) in asyncrl's Python
environment, as train_a3c --demo --act-deterministically plays the
checkpoint: the environment seeded once, then EPISODES episodes of the
policy's act(). For tests/apps/export_test.cc.

Usage: play_policy.py POLICY ENV SEED EPISODES
Prints one line: the episodes' returns, space-separated (repr of floats).
"""
import sys

import torch

import asyncrl


def main():
    policy, name, seed, episodes = sys.argv[1:5]
    module = torch.jit.load(policy)
    env = asyncrl.make_vec(name, num_envs=1)
    env.reset(seed=int(seed))  # As --demo: seeded, then each episode resets.
    obs, _ = env.reset()
    recurrent = module.state_size > 0
    state = module.initial_state(1) if recurrent else None
    returns, total = [], 0.0
    with torch.no_grad():
        while len(returns) < int(episodes):
            x = torch.from_numpy(obs)
            if recurrent:
                action, state = module.act(x, state)
            else:
                action = module.act(x)
            obs, reward, terminated, truncated, _ = env.step(action.numpy())
            total += float(reward[0])
            if terminated[0] or truncated[0]:
                returns.append(total)
                total = 0.0
                if recurrent:
                    state = module.initial_state(1)
    print(" ".join(repr(r) for r in returns))


if __name__ == "__main__":
    main()
