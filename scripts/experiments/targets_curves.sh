#!/usr/bin/env bash
# Learning curves for docs/targets/: one run (seed 1, 2 processes) of each
# configuration below, whose scores.txt and scores.svg are copied to
# docs/targets/<name>.txt and .svg. About 2 minutes on a 2-core machine.
#
# Usage: scripts/experiments/targets_curves.sh   (after a Release build)
set -euo pipefail
cd "$(dirname "$0")/../.."
bin=build/apps/train_a3c
[ -x "$bin" ] || { echo "$0: $bin is missing; build first (cmake --build build --target train_a3c)" >&2; exit 1; }
mkdir -p docs/targets
curve() {
  local name=$1
  shift
  local out
  out=$(mktemp -d)
  "$bin" --processes 2 --seed 1 --outdir "$out" --quiet "$@" > "$out/log"
  local run
  run=$(sed -n 's/^results in //p' "$out/log" | head -n 1)
  cp "$run/scores.txt" "docs/targets/$name.txt"
  cp "$run/scores.svg" "docs/targets/$name.svg"
  echo "$name: $(tail -n 1 "$run/scores.txt" | cut -f1,3,4) (steps, seconds, last mean)"
  rm -rf "$out"
}
cartpole=(--env CartPole-v1 --eval-interval 10000 --successful-score 475)
curve cartpole-e16 "${cartpole[@]}"
curve cartpole-e1 "${cartpole[@]}" --envs-per-process 1
breakout=(--env MinAtar/Breakout --eval-interval 100000 --steps 5000000)
curve breakout-e16 "${breakout[@]}"
