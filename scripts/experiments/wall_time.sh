#!/usr/bin/env bash
# Wall time to a score: runs train_a3c once per seed with the given flags,
# until an evaluation mean reaches SCORE (--successful-score) or STEPS
# steps pass, and appends one row per run to the TSV file OUT:
#   name  seed  solved  wall_s  steps  best_mean
# wall_s is the whole process's wall time (start-up included); steps is
# the global step of the evaluation that reached SCORE (or of the last
# one); best_mean the best evaluation mean. Then prints the median wall
# time of the runs (unsolved runs count as slower than any solved one).
#
# Usage: scripts/experiments/wall_time.sh OUT NAME SCORE STEPS "SEEDS" [train_a3c flags...]
#   e.g. scripts/experiments/wall_time.sh /tmp/runs.tsv gae 475 1000000 "1 2 3 4 5" \
#          --env CartPole-v1 --policy-target gae
# (after a Release build: cmake --build build --target train_a3c)
set -euo pipefail
cd "$(dirname "$0")/../.."
if [ $# -lt 5 ]; then
  echo "usage: $0 OUT NAME SCORE STEPS \"SEEDS\" [train_a3c flags...]" >&2
  exit 2
fi
out=$1 name=$2 score=$3 steps=$4 seeds=$5
shift 5
bin=build/apps/train_a3c
[ -x "$bin" ] || { echo "$0: $bin is missing; build first (cmake --build build --target train_a3c)" >&2; exit 1; }
[ -s "$out" ] || printf 'name\tseed\tsolved\twall_s\tsteps\tbest_mean\n' > "$out"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
walls=()
for seed in $seeds; do
  start=$(date +%s.%N)
  "$bin" --successful-score "$score" --steps "$steps" --seed "$seed" \
    --outdir "$tmp/$seed" --quiet "$@" > "$tmp/log" 2>&1 || {
    echo "$0: train_a3c failed (seed $seed):" >&2
    cat "$tmp/log" >&2
    exit 1
  }
  end=$(date +%s.%N)
  run=$(ls -d "$tmp/$seed"/*/ | head -n 1)
  wall=$(echo "$end - $start" | bc -l)
  solved=0
  [ -d "$run/successful" ] && solved=1
  last_step=$(tail -n 1 "$run/scores.txt" | cut -f1)
  best=$(tail -n +2 "$run/scores.txt" | cut -f4 | sort -g | tail -n 1)
  printf '%s\t%s\t%s\t%.2f\t%s\t%s\n' "$name" "$seed" "$solved" "$wall" \
    "$last_step" "$best" | tee -a "$out"
  # Unsolved runs sort after every solved one.
  if [ "$solved" = 1 ]; then walls+=("$wall"); else walls+=("inf"); fi
  rm -rf "${tmp:?}/$seed"
done
median=$(printf '%s\n' "${walls[@]}" | sort -g |
  awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }')
echo "$name: median wall ${median} s over ${#walls[@]} seeds"
