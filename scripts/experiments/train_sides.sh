#!/usr/bin/env bash
# Issue 28's A/B of --train-sides (docs/games.md):
# the same game, flags and seeds trained with the learner's side only and
# with both sides, 2 worker processes. Per run: the wall time and the first
# evaluation (EVAL_RUNS games per opponent along the run) that meets the
# bar, then the final agent's DEMO_RUNS games per opponent (--demo, half
# moving first).
#   bar, TicTacToe: no loss to minimax;
#   bar, ConnectFour: a score (wins + half the draws) >= BAR against the
#   last evaluation opponent.
# -> docs/games/train-sides-<game><TAG>.tsv (one row per run) and the final
#    tables in docs/games/train-sides-<game><TAG>-final.txt.
#
# Usage: scripts/experiments/train_sides.sh GAME STEPS [SEEDS] [-- extra train_a3c flags]
#   scripts/experiments/train_sides.sh TicTacToe 2000000 "0 1 2 3 4"
#   TAG=-board scripts/experiments/train_sides.sh ConnectFour 4000000 0 -- \
#     --config configs/connectfour-board-conv.conf
# Environment: MODES ("learner both"), EVAL (evaluation interval, STEPS /
# 8), EVAL_RUNS (200), DEMO_RUNS (1000), OPPONENTS (the game's default
# evaluation opponents), BAR (0.5).
set -euo pipefail
cd "$(dirname "$0")/../.."
game=${1:?usage: scripts/experiments/train_sides.sh GAME STEPS [SEEDS] [-- flags]}
steps=${2:?usage: scripts/experiments/train_sides.sh GAME STEPS [SEEDS] [-- flags]}
seeds=${3:-0}
shift $(($# < 3 ? $# : 3))
[ "${1:-}" = "--" ] && shift
extra=("$@")
bin=build/apps/train_a3c
[ -x "$bin" ] || { echo "train_sides: build $bin first" >&2; exit 1; }
modes=${MODES:-"learner both"}
eval_interval=${EVAL:-$((steps / 8))}
eval_runs=${EVAL_RUNS:-200}
demo_runs=${DEMO_RUNS:-1000}
bar=${BAR:-0.5}
opponents=()
[ -n "${OPPONENTS:-}" ] && opponents=(--eval-opponents "$OPPONENTS")
docs=docs/games
tsv=$docs/train-sides-$game${TAG:-}.tsv
final=$docs/train-sides-$game${TAG:-}-final.txt
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# The first evaluation that meets the bar: "step seconds", or "- -".
first_at_bar() {  # first_at_bar SCORES
  awk -F'\t' -v game="$game" -v bar="$bar" '
    NR == 1 { for (i = 1; i <= NF; ++i) { if ($i ~ /^win_/) w = i; if ($i ~ /^draw_/) d = i; if ($i ~ /^loss_/) l = i }; next }
    { ok = game == "TicTacToe" ? $l == 0 : $w + $d / 2 >= bar
      if (ok) { print $1, $3; found = 1; exit } }
    END { if (!found) print "- -" }' "$1"
}

printf "mode\tseed\tsteps\twall_s\tsteps_to_bar\tseconds_to_bar\tfinal_vs_last_W/D/L\tfinal_score_vs_last\n" > "$tsv"
{
  echo "# scripts/experiments/train_sides.sh $game $steps \"$seeds\" -- ${extra[*]:-}"
  echo "# $(date -u +%Y-%m-%dT%H:%MZ), $(nproc) cores"
} > "$final"
for seed in $seeds; do
  for mode in $modes; do
    out=$work/$mode-$seed
    echo "train_sides: $game $mode seed $seed ($steps steps)" >&2
    start=$(date +%s.%N)
    "$bin" --env "$game" --processes 2 --steps "$steps" --seed "$seed" \
      --eval-interval "$eval_interval" --eval-n-runs "$eval_runs" \
      --act-deterministically --train-sides "$mode" --outdir "$out" \
      --quiet "${opponents[@]}" "${extra[@]}" > "$out.log"
    wall=$(echo "$(date +%s.%N) - $start" | bc)
    run=$(ls -d "$out"/*/ | head -1)
    read -r bar_step bar_seconds < <(first_at_bar "$run/scores.txt")
    table=$("$bin" --env "$game" --demo --load "$run/${steps}_finish" \
      --eval-n-runs "$demo_runs" --act-deterministically "${opponents[@]}")
    { echo "## $mode, seed $seed: $steps steps, ${wall%.*} s"; echo "$table"; } >> "$final"
    last=$(echo "$table" | tail -1)
    wdl=$(echo "$last" | awk '{ split($3, a, "/"); split($4, b, "/"); printf "%d/%d/%d", a[1] + b[1], a[2] + b[2], a[3] + b[3] }')
    score=$(echo "$wdl" | awk -F/ '{ printf "%.3f", ($1 + $2 / 2) / ($1 + $2 + $3) }')
    printf "%s\t%s\t%s\t%.1f\t%s\t%s\t%s\t%s\n" "$mode" "$seed" "$steps" \
      "$wall" "$bar_step" "$bar_seconds" "$wdl" "$score" | tee -a "$tsv"
  done
done
