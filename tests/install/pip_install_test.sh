#!/usr/bin/env bash
# pip install of the Python package, offline, as docs/python.md tells a
# user: a virtual environment that sees Debian's packages, then
# pip install --no-build-isolation of the source tree (setup.py packages the
# build folder BUILD). The installed package must import outside the tree,
# step an environment, and train both a built-in and a Python environment
# with the train_a3c it installed.
# Usage: pip_install_test.sh BUILD SOURCE
set -euo pipefail
build=$(cd "$1" && pwd)
source=$(cd "$2" && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
/usr/bin/python3 -m venv --system-site-packages "$work/venv"
# ASYNCRL_SKIP_BUILD: the build is ctest's own, up to date; rebuilding it
# here would relink train_a3c under the tests running beside this one.
ASYNCRL_BUILD_DIR=$build ASYNCRL_SKIP_BUILD=1 "$work/venv/bin/pip" install --quiet \
  --no-build-isolation --no-index "$source"
cd "$work"
PYTHONPATH=$source/examples/python_env "$work/venv/bin/python" - "$work" <<'PY'
import os
import sys

import asyncrl

work = sys.argv[1]
package = os.path.dirname(asyncrl.__file__)
assert package.startswith(work), package
binary = os.path.join(package, "bin", "train_a3c")
assert os.access(binary, os.X_OK), binary
obs, _ = asyncrl.make_vec("CartPole-v1", num_envs=2).reset(seed=0)
assert obs.shape == (2, 4), obs.shape
for env in ("CartPole-v1", "cartpole:CartPole"):
    result = asyncrl.train(env=env, processes=1, steps=2000,
                           outdir=os.path.join(work, "runs"), quiet=True)
    assert result.returncode == 0, result.output
    assert os.path.isdir(os.path.join(result.run, "2000_finish")), result.output
print("pip install: imported from", package, "and trained with", binary)
PY
