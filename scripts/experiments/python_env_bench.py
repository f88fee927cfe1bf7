#!/usr/bin/python3
"""Steps per second of asyncrl's environments from Python (asyncrl.make_vec),
for 1 and 64 environments, actions drawn in advance (docs/python.md).
Usage: PYTHONPATH=build/python scripts/experiments/python_env_bench.py [NAME...]
Prints one line per environment and batch size: env steps/s (each of the
batch's environments counts), the median of 5 runs of ~1 s each."""
import statistics
import sys
import time

import numpy as np

import asyncrl


def measure(name, n, seconds=1.0):
    env = asyncrl.make_vec(name, num_envs=n)
    env.reset(seed=0)
    space = env.single_action_space
    rng = np.random.default_rng(0)
    if space.kind == "discrete":
        batches = [rng.integers(0, space.n, size=n) for _ in range(64)]
    else:
        low, high = np.array(space.low), np.array(space.high)
        batches = [(low + rng.random((n, len(low))) * (high - low))
                   .astype(np.float32) for _ in range(64)]
    rates = []
    for _ in range(5):
        steps, start = 0, time.perf_counter()
        while time.perf_counter() - start < seconds:
            for a in batches:
                env.step(a)
            steps += 64 * n
        rates.append(steps / (time.perf_counter() - start))
    return statistics.median(rates)


def main():
    names = sys.argv[1:] or ["CartPole-v1", "MinAtar/Breakout",
                             "MinAtar/Seaquest"]
    for name in names:
        for n in (1, 64):
            print("%-20s num_envs=%-3d %12.0f steps/s" % (name, n,
                                                         measure(name, n)),
                  flush=True)


if __name__ == "__main__":
    main()
