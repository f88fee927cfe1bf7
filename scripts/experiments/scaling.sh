#!/usr/bin/env bash
# Trainer throughput against the number of worker processes (issue 11):
# train_a3c on CartPole-v1 with the defaults, evaluation off, for a fixed
# number of steps per process, at each of 1, 2, 4, 8, 16 processes (or the
# counts given), with 1 and 16 environments per process and the fast path
# on and off. Prints one markdown row per run: global steps/s from the
# run's own wall time (command start to exit, so fork and setup count).
#
# Usage: scripts/experiments/scaling.sh [PROCESS COUNTS...]   e.g. scripts/experiments/scaling.sh 1 2 4
# Needs build/apps/train_a3c.
set -euo pipefail
cd "$(dirname "$0")/../.."
bin=build/apps/train_a3c
[ -x "$bin" ] || { echo "scaling: build $bin first" >&2; exit 1; }
counts=("$@")
[ ${#counts[@]} -gt 0 ] || counts=(1 2 4 8 16)
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
echo "machine: $(nproc) cores, $(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -1)"
echo
echo "| processes | envs/process | fast path | steps | seconds | steps/s | steps/s per process |"
echo "| --- | --- | --- | --- | --- | --- | --- |"
for envs in 1 16; do
  for fast in on off; do
    flag=()
    [ "$fast" = off ] && flag=(--no-fast-path)
    for p in "${counts[@]}"; do
      # About 3 s of work per process at the fast path's speed.
      per=$(( envs == 1 ? 100000 : 300000 ))
      [ "$fast" = off ] && per=$(( per / 5 ))
      steps=$(( per * p ))
      start=$(date +%s.%N)
      "$bin" --env CartPole-v1 --processes "$p" --envs-per-process "$envs" \
        --steps "$steps" --eval-interval 0 --outdir "$out/run" --quiet \
        "${flag[@]}" > "$out/log" 2>&1 || { cat "$out/log" >&2; exit 1; }
      end=$(date +%s.%N)
      awk -v p="$p" -v e="$envs" -v f="$fast" -v s="$steps" -v a="$start" -v b="$end" \
        'BEGIN { t = b - a; printf "| %d | %d | %s | %d | %.2f | %.0f | %.0f |\n", p, e, f, s, t, s / t, s / t / p }'
      rm -rf "$out/run"
    done
  done
done
