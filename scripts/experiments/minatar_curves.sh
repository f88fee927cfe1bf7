#!/usr/bin/env bash
# Learning curves of the MinAtar games: one train_a3c run per game with the
# default hyperparameters on 2 worker processes with one environment each
# (the defaults before 16 environments per worker; docs/targets/ has the
# batched runs), whose scores.txt and
# scores.svg are copied to docs/minatar/<Game>.txt and <Game>.svg.
#
# Usage: scripts/experiments/minatar_curves.sh STEPS GAME...   (after a Release build)
#   e.g. scripts/experiments/minatar_curves.sh 5000000 Breakout
set -euo pipefail
cd "$(dirname "$0")/../.."
if [ $# -lt 2 ]; then
  echo "usage: $0 STEPS GAME... (games: Asterix Breakout Freeway Seaquest SpaceInvaders)" >&2
  exit 2
fi
steps=$1
shift
bin=build/apps/train_a3c
[ -x "$bin" ] || { echo "$0: $bin is missing; build first (cmake --preset release && cmake --build build --target train_a3c)" >&2; exit 1; }
mkdir -p docs/minatar
for game in "$@"; do
  out=$(mktemp -d)
  echo "== MinAtar/$game, $steps steps"
  "$bin" --env "MinAtar/$game" --processes 2 --envs-per-process 1 \
    --steps "$steps" --outdir "$out" --quiet |
    tee "$out/log"
  run=$(sed -n 's/^results in //p' "$out/log" | head -n 1)
  cp "$run/scores.txt" "docs/minatar/$game.txt"
  cp "$run/scores.svg" "docs/minatar/$game.svg"
  echo "$game: $(tail -n 1 "$run/scores.txt" | cut -f1,3,4) (steps, seconds, last mean)"
done
