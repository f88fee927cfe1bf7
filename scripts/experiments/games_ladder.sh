#!/usr/bin/env bash
# The strength ladder of trained game agents (issue 28; docs/games/README.md,
# "The strength ladder"): each checkpoint plays GAMES games (half moving
# first, the most probable move) against random, greedy, minimax at depths
# 1-5 and, for Connect Four, the solver (SOLVER_GAMES games: it is slow in
# the opening); score = (wins + draws / 2) / games.
# -> one row per checkpoint appended to docs/games/ladder-<game>.tsv:
#    label, steps, wall seconds (as given), then the score per opponent.
#
# Usage: scripts/experiments/games_ladder.sh GAME LABEL WALL_SECONDS CHECKPOINT_DIR
#   scripts/experiments/games_ladder.sh ConnectFour "both, board-conv config" 1234 \
#     results/<run>/15000000_finish
# Environment: GAMES (200), SOLVER_GAMES (50).
set -euo pipefail
cd "$(dirname "$0")/../.."
game=${1:?usage: scripts/experiments/games_ladder.sh GAME LABEL WALL_SECONDS CHECKPOINT}
label=${2:?}
wall=${3:?}
checkpoint=${4:?}
bin=build/apps/train_a3c
[ -x "$bin" ] || { echo "games_ladder: build $bin first" >&2; exit 1; }
games=${GAMES:-200}
solver_games=${SOLVER_GAMES:-50}
opponents=random,greedy,minimax:1,minimax:2,minimax:3,minimax:4,minimax:5
[ "$game" = TicTacToe ] && opponents=random,greedy,minimax:1,minimax:2,minimax:3,minimax:4,minimax
tsv=docs/games/ladder-$game.tsv
steps=$(basename "$checkpoint" | sed 's/_.*//')

# "opponent score" per line of a --demo table.
scores() {
  awk 'NR > 1 { split($3, a, "/"); split($4, b, "/")
    w = a[1] + b[1]; d = a[2] + b[2]; l = a[3] + b[3]
    printf "%s %.3f\n", $1, (w + d / 2) / (w + d + l) }'
}

demo() {  # demo OPPONENTS RUNS
  "$bin" --env "$game" --demo --load "$checkpoint" --eval-n-runs "$2" \
    --act-deterministically --eval-opponents "$1"
}

echo "games_ladder: $game $label ($checkpoint)" >&2
table=$(demo "$opponents" "$games" | scores)
if [ "$game" = ConnectFour ]; then
  table+=$'\n'$(demo solver "$solver_games" | scores)
fi
if [ ! -f "$tsv" ]; then
  printf "label\tsteps\twall_s\t%s\n" "$(echo "$table" | awk '{ print $1 }' | paste -sd '\t')" > "$tsv"
fi
printf "%s\t%s\t%s\t%s\n" "$label" "$steps" "$wall" \
  "$(echo "$table" | awk '{ print $2 }' | paste -sd '\t')" | tee -a "$tsv"
