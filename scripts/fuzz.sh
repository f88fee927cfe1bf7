#!/usr/bin/env bash
# Builds the libFuzzer targets (clang, ASan+UBSan, no LibTorch) and runs each
# for a bounded time on a copy of its seed corpus. Usage: scripts/fuzz.sh [SECONDS]
set -euo pipefail
cd "$(dirname "$0")/.."
seconds=${1:-30}
cmake -S . -B build-fuzz -G Ninja -DCMAKE_CXX_COMPILER=clang++ \
  -DASYNCRL_BUILD_FUZZERS=ON > /dev/null
cmake --build build-fuzz
for target in checkpoint config merge; do
  work=$(mktemp -d)
  cp fuzz/corpus/$target/* "$work"/
  echo "fuzz: ${target}_fuzzer for ${seconds}s"
  # -malloc_limit_mb: no single allocation may exceed what a 1 MiB file
  # could justify; a crash, leak or over-large allocation fails the run.
  status=0
  build-fuzz/fuzz/${target}_fuzzer -max_total_time="$seconds" \
    -malloc_limit_mb=64 -print_final_stats=1 "$work" > "$work.log" 2>&1 ||
    status=$?
  grep -E '^(stat::number_of_executed_units|Done)|ERROR|SUMMARY' "$work.log" || true
  [ "$status" -eq 0 ] || tail -n 40 "$work.log" >&2
  rm -rf "$work" "$work.log"
  if [ "$status" -ne 0 ]; then
    echo "fuzz: ${target}_fuzzer failed (status $status)" >&2
    exit 1
  fi
done
echo "fuzz: 3 passed, 0 failed"
