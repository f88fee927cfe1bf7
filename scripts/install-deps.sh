#!/usr/bin/env bash
# Installs the Debian 12 packages asyncrl needs, only those that are missing.
# Idempotent; works as root or through sudo; says what it installs.
set -euo pipefail

packages=(
  cmake ninja-build g++ pkg-config ccache
  libtorch-dev
  libopenblas0-serial          # LibTorch on the reference BLAS is ~6x slower
  libblas-dev                  # cblas.h and libblas.so for the fast path
  libyaml-cpp-dev              # --curriculum files
  libgloo-dev                  # --nnodes: c10d's ProcessGroupGloo
  libboost-dev libboost-program-options-dev
  libprotobuf-dev protobuf-compiler
  libgtest-dev libgmock-dev libbenchmark-dev
  libgoogle-perftools-dev google-perftools   # --profile, google-pprof
  libgif-dev                   # --demo --record: animated GIFs of the agent
  libmujoco-dev libbox2d-dev   # the MuJoCo and Box2D environments' physics
  libmujoco-samples            # mujoco-testspeed, the simulator's own rate (bench/mujoco_speed.sh)
  clang libclang-rt-14-dev                   # fuzzers and sanitizers (scripts/fuzz.sh)
  python3-torch python3-onnx   # exported policies in Python, scripts/export_onnx.py
  pybind11-dev python3-dev     # the Python module (python/), Python environments in the workers
  python3-venv python3-pip python3-setuptools python3-wheel  # pip install . (pyproject.toml)
  mkdocs mkdocs-material       # the documentation site (mkdocs.yml), built by the tests
  iproute2                     # the host tests in network namespaces (ip netns, tc)
)

missing=()
for p in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed'; then
    missing+=("$p")
  fi
done

if [ "$(id -u)" -eq 0 ]; then
  as_root=()
elif command -v sudo >/dev/null 2>&1; then
  as_root=(sudo)
else
  echo "install-deps: need root or sudo to install: ${missing[*]}" >&2
  exit 1
fi

if [ ${#missing[@]} -eq 0 ]; then
  echo "install-deps: all ${#packages[@]} packages already installed"
else
  echo "install-deps: installing ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  "${as_root[@]}" apt-get update -qq
  "${as_root[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi

# LibTorch calls whatever libblas.so.3 points to. With one thread per worker
# OpenBLAS serial is as fast as OpenBLAS pthread (bench/blas_bench) and ~6-20x
# faster than the reference BLAS; never leave the reference one selected.
# Measured against the other Debian 12 choices at our sizes (docs/results/performance.md,
# "Which BLAS"): BLIS 0.9 ties at batch 1 and is 13% slower in the default
# 16-environment loop, ATLAS 2-4x slower. On CPUs newer than OpenBLAS 0.3.21
# the programs pick its best kernel themselves (src/misc/platform/blas_kernel.h).
alt=libblas.so.3-x86_64-linux-gnu
serial=/usr/lib/x86_64-linux-gnu/openblas-serial/libblas.so.3
current=$(update-alternatives --query "$alt" 2>/dev/null | sed -n 's/^Value: //p')
case "$current" in
  *openblas*) ;;
  *)
    echo "install-deps: pointing libblas.so.3 at OpenBLAS ($serial), was: ${current:-none}"
    "${as_root[@]}" update-alternatives --set "$alt" "$serial"
    ;;
esac
