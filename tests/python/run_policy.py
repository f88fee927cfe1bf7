#!/usr/bin/python3
"""Runs an exported policy (train_a3c --export) in Python, as a user would:
torch.jit.load and nothing of asyncrl. For tests/apps/export_test.cc.

Usage: run_policy.py POLICY ROWS OBS_FILE STATE_FILE|- OUT_PREFIX
OBS_FILE (and STATE_FILE for recurrent policies) hold float32 rows, native
byte order. Writes OUT_PREFIX.<i> for each of forward()'s outputs and
OUT_PREFIX.act for act()'s action, as float32; prints the attributes.
"""
import sys

import numpy
import torch


def main():
    policy, rows, obs_file, state_file, prefix = sys.argv[1:6]
    rows = int(rows)
    module = torch.jit.load(policy)
    obs = torch.from_numpy(
        numpy.fromfile(obs_file, dtype=numpy.float32).reshape(rows, -1))
    inputs = [obs]
    if module.state_size > 0:
        inputs.append(torch.from_numpy(
            numpy.fromfile(state_file, dtype=numpy.float32).reshape(rows, -1)))
    with torch.no_grad():
        outputs = module(*inputs)
        acted = module.act(*inputs)
    if module.state_size > 0:
        acted = acted[0]
    for i, tensor in enumerate(outputs):
        tensor.to(torch.float32).numpy().tofile("%s.%d" % (prefix, i))
    acted.to(torch.float32).numpy().tofile(prefix + ".act")
    print("observation_size=%d state_size=%d categorical=%s outputs=%d"
          % (module.observation_size, module.state_size, module.categorical,
             len(outputs)))


if __name__ == "__main__":
    main()
