#!/usr/bin/python3
"""Turns a policy exported by `train_a3c --export FILE --load DIR` (a
TorchScript module) into an ONNX model, and checks it with
onnx.checker.check_model.

Usage: scripts/export_onnx.py POLICY.pt OUT.onnx [--opset N]

Needs Debian's python3-torch and python3-onnx (scripts/install-deps.sh
installs them); run it with /usr/bin/python3, whose packages they are.

The ONNX graph is the module's forward(), with a dynamic batch axis:
  inputs   obs [batch, observation_size] float32
           state [batch, state_size] float32 (recurrent policies only)
  outputs  categorical: logits [batch, A], value [batch]
           Gaussian: mean [batch, D], log_std [batch, D], value [batch]
           recurrent: next_state [batch, state_size] last
act() and initial_state() are not in the graph: the most probable action is
argmax(logits) (a Gaussian's: mean), the state at an episode's start zeros.
The file is written to a temporary name and renamed, so an existing OUT is
replaced whole or left as it was. Exit status 0, or 1 with one line on
stderr.
"""

import argparse
import os
import sys
import tempfile


def fail(message):
    print("export_onnx: " + message, file=sys.stderr)
    sys.exit(1)


def main():
    parser = argparse.ArgumentParser(
        description="TorchScript policy (train_a3c --export) to ONNX")
    parser.add_argument("policy", help="the file train_a3c --export wrote")
    parser.add_argument("out", help="the ONNX file to write")
    parser.add_argument("--opset", type=int, default=14,
                        help="ONNX opset (default 14; torch 1.13 exports "
                             "7-16)")
    args = parser.parse_args()
    if not 7 <= args.opset <= 16:
        fail("--opset=%d is invalid; accepted: 7 to 16" % args.opset)

    import warnings

    import onnx
    import torch

    try:
        module = torch.jit.load(args.policy)
    except Exception as e:  # torch raises RuntimeError, ValueError...
        first = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
        fail("%s is not a TorchScript policy: %s" % (args.policy, first))
    try:
        obs_size = int(module.observation_size)
        state_size = int(module.state_size)
        categorical = bool(module.categorical)
    except AttributeError as e:
        fail("%s is not a policy written by train_a3c --export (%s)"
             % (args.policy, e))

    inputs = [torch.zeros(2, obs_size)]
    input_names = ["obs"]
    if state_size > 0:
        inputs.append(torch.zeros(2, state_size))
        input_names.append("state")
    output_names = (["logits"] if categorical else ["mean", "log_std"])
    output_names.append("value")
    if state_size > 0:
        output_names.append("next_state")
    axes = {name: {0: "batch"} for name in input_names + output_names}

    # A symbolic link is written through: the file it names is replaced,
    # the link stays (as train_a3c --export does).
    target = os.path.realpath(args.out)
    if os.path.exists(target) and not os.path.isfile(target):
        import stat
        mode = os.stat(target).st_mode
        kind = ("a directory" if stat.S_ISDIR(mode) else
                "a character device" if stat.S_ISCHR(mode) else
                "a block device" if stat.S_ISBLK(mode) else
                "a FIFO" if stat.S_ISFIFO(mode) else
                "a socket" if stat.S_ISSOCK(mode) else "not a regular file")
        fail("cannot write %s: it is %s; only a regular file is written"
             % (args.out, kind))
    folder = os.path.dirname(target)
    if not os.path.isdir(folder):
        fail("cannot write %s: %s is not a folder" % (args.out, folder))
    try:
        fd, temporary = tempfile.mkstemp(prefix=".export_onnx.", dir=folder)
    except OSError as e:
        fail("cannot write %s: %s" % (args.out, e.strerror or e))
    os.close(fd)
    # mkstemp's 0600, made what a new file of this user gets.
    mask = os.umask(0)
    os.umask(mask)
    os.chmod(temporary, 0o666 & ~mask)
    try:
        with warnings.catch_warnings():
            # A scripted method has no Python signature to inspect; the
            # names above are the inputs.
            warnings.simplefilter("ignore", UserWarning)
            torch.onnx.export(module, tuple(inputs), temporary,
                              input_names=input_names,
                              output_names=output_names,
                              dynamic_axes=axes, opset_version=args.opset)
        model = onnx.load(temporary)
        onnx.checker.check_model(model)
        os.replace(temporary, target)
    except Exception as e:
        os.unlink(temporary)
        lines = str(e).strip().splitlines()
        fail("cannot export %s: %s" % (args.policy,
                                        lines[0] if lines else type(e).__name__))
    except BaseException:  # Ctrl-C: nothing left behind.
        os.unlink(temporary)
        raise
    print("export_onnx: wrote %s (opset %d; inputs %s; outputs %s); "
          "onnx.checker passed" % (args.out, args.opset, ", ".join(input_names),
                                   ", ".join(output_names)))


if __name__ == "__main__":
    main()
