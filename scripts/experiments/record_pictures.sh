#!/usr/bin/env bash
# The pictures in docs/training.md ("Watching the agent") and
# docs/physics.md: trains an agent on CartPole-v1, Pendulum-v1,
# MinAtar/Breakout, ConnectFour and HalfCheetah-v4 with their presets and
# records one evaluation episode (ConnectFour: one game against the random
# player; HalfCheetah: its first 200 steps, 10 s) of each with --demo
# --record.
#   scripts/experiments/record_pictures.sh [OUT_DIR] [BREAKOUT_STEPS]
# OUT_DIR defaults to docs/pictures; BREAKOUT_STEPS to 2000000 (about 3
# minutes on 2 cores). Needs a built build/apps/train_a3c.
set -euo pipefail
cd "$(dirname "$0")/../.."
out=${1:-docs/pictures}
breakout_steps=${2:-2000000}
bin=build/apps/train_a3c
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mkdir -p "$out"

# Trains with the given flags and prints the folder of the agent to record
# (successful/ when the run reached its score, else the final one).
train() {
  local name=$1
  shift
  echo "record_pictures: training $name" >&2
  local log="$work/$name.log"
  "$bin" --outdir "$work/$name" --seed 1 --quiet "$@" >"$log" 2>&1 ||
    { cat "$log" >&2; exit 1; }
  local run
  run=$(sed -n 's/^results in //p' "$log" | head -n 1)
  if [ -d "$run/successful" ]; then
    echo "$run/successful"
  else
    ls -d "$run"/*_finish | head -n 1
  fi
}

record() {
  local agent=$1 file=$2
  shift 2
  "$bin" --demo --load "$agent" --eval-n-runs 1 --seed 2 --record "$out/$file" "$@"
}

record "$(train cartpole --config configs/cartpole-fast.conf --processes 2)" cartpole.gif
record "$(train pendulum --config configs/pendulum.conf --processes 2 \
  --successful-score -170 --eval-interval 10000 --steps 300000)" pendulum.gif
record "$(train breakout --config configs/minatar-breakout.conf --processes 2 \
  --steps "$breakout_steps" --eval-interval 0)" breakout.gif
record "$(train connectfour --env ConnectFour --processes 2 --steps 1000000 \
  --eval-interval 0)" connectfour.gif --eval-opponents random
record "$(train halfcheetah --config configs/halfcheetah.conf --processes 2 \
  --eval-interval 0)" halfcheetah.gif --max-episode-len 200
ls -l "$out"
