#!/usr/bin/env bash
# Runs the tests that compare computed numbers (ctest label "numeric") under
# several OpenBLAS kernels, forced with OPENBLAS_CORETYPE: the float sums
# differ by kernel, and the tests' tolerances must hold on every one. A
# kernel the CPU cannot run (Haswell needs AVX2, SkylakeX AVX-512) is
# skipped with a line saying so. Usage: scripts/numeric_kernels.sh [BUILD_DIR]
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build}
flags=$(grep -m1 '^flags' /proc/cpuinfo || true)
ran=0
for core in Prescott Haswell SkylakeX; do
  case $core in
    Haswell) need=avx2 ;;
    SkylakeX) need=avx512f ;;
    *) need= ;;
  esac
  if [ -n "$need" ] && ! grep -qw "$need" <<< "$flags"; then
    echo "numeric-kernels: $core skipped (this CPU has no $need)"
    continue
  fi
  # OpenBLAS names the kernel it runs with OPENBLAS_VERBOSE=2.
  used=$(OPENBLAS_CORETYPE=$core OPENBLAS_VERBOSE=2 \
    "$build/tests/asyncrl_numeric_tests" --gtest_filter=NONE 2>&1 |
    sed -n 's/^Core: //p' | head -n 1)
  if [ "$used" != "$core" ]; then
    echo "numeric-kernels: OpenBLAS ran '${used:-unknown}' for OPENBLAS_CORETYPE=$core (is libblas.so.3 OpenBLAS? see scripts/install-deps.sh)" >&2
    exit 1
  fi
  echo "numeric-kernels: OPENBLAS_CORETYPE=$core"
  OPENBLAS_CORETYPE=$core ctest --test-dir "$build" -L numeric --no-tests=error \
    --output-on-failure -j2
  ran=$((ran + 1))
done
echo "numeric-kernels: $ran kernels passed, 0 failed"
