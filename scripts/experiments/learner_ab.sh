#!/usr/bin/env bash
# The learner beside the workers (--learner, docs/learner.md) against the
# Hogwild preset of the same task, on one machine: the same steps and
# seeds, 2 processes (Hogwild: 2 learning workers; --learner: 1 worker and
# the learner), each mode's own flags (HOGWILD and LEARNER; --learner is
# added to the latter). Per run: wall time, the learner's updates and reuse, the
# final agent and best/ each on FINAL_RUNS fresh episodes (final_eval.tsv,
# deterministic action). Runs are kept under DIR/<task>/<mode>/seed<S>/ (a
# run already there is not run again); the table goes to DIR/<task>.tsv.
#
# Usage: HOGWILD="flags" LEARNER="flags" \
#          scripts/experiments/learner_ab.sh DIR TASK STEPS "SEEDS"
#   HOGWILD="--config configs/minatar-breakout.conf" \
#   LEARNER="--config configs/minatar-breakout.conf --reuse 2" \
#     scripts/experiments/learner_ab.sh docs/learner breakout 5000000 "11 12 13 14 15"
# Environment: PROCESSES (2), FINAL_RUNS (100).
set -euo pipefail
cd "$(dirname "$0")/../.."
usage="usage: HOGWILD=flags LEARNER=flags scripts/experiments/learner_ab.sh DIR TASK STEPS SEEDS"
dir=${1:?$usage}
task=${2:?$usage}
steps=${3:?$usage}
seeds=${4:?$usage}
read -r -a hogwild_flags <<< "${HOGWILD:?$usage}"
read -r -a learner_flags <<< "${LEARNER:?$usage}"
bin=build/apps/train_a3c
[ -x "$bin" ] || { echo "learner_ab: build $bin first" >&2; exit 1; }
processes=${PROCESSES:-2}
final_runs=${FINAL_RUNS:-100}
tsv=$dir/$task.tsv
mkdir -p "$dir"

# The final agent's and best/'s deterministic means from final_eval.tsv.
finals() {  # finals RUN_FOLDER
  awk -F'\t' '$4 == "deterministic" { m[$1] = $6 }
              END { printf "%s\t%s", m["final"], m["best"] }' "$1/final_eval.tsv"
}

{
  echo "# HOGWILD=\"${HOGWILD}\" LEARNER=\"${LEARNER}\" scripts/experiments/learner_ab.sh $dir $task $steps \"$seeds\""
  echo "# $(date -u +%Y-%m-%d), $(nproc) cores, $(lscpu | sed -n 's/^Model name: *//p' | head -1) (family $(sed -n 's/^cpu family\t*: //p' /proc/cpuinfo | head -1), model $(sed -n 's/^model\t*: //p' /proc/cpuinfo | head -1))"
} > "$tsv"
printf "mode\tseed\tsteps\twall_s\tlearner_updates\treuse\tfinal\tbest\n" >> "$tsv"
for seed in $seeds; do
  for mode in hogwild learner; do
    out=$dir/$task/$mode/seed$seed
    flags=("${hogwild_flags[@]}")
    [ "$mode" = learner ] && flags=(--learner "${learner_flags[@]}")
    if ! ls "$out"/*/final_eval.tsv > /dev/null 2>&1; then
      rm -rf "$out"
      mkdir -p "$out"
      start=$(date +%s.%N)
      "$bin" --processes "$processes" \
        --steps "$steps" --seed "$seed" --final-eval-n-runs "$final_runs" \
        --outdir "$out" --quiet "${flags[@]}" > "$out.log" 2>&1
      end=$(date +%s.%N)
      awk -v a="$start" -v b="$end" 'BEGIN { print b - a }' > "$out.wall"
    fi
    run=$(ls -d "$out"/*/ | head -1)
    updates=$(grep -o 'learner: [0-9]*' "$out.log" | grep -o '[0-9]*' || echo -)
    reuse=$(grep -o 'trained on [0-9.]*' "$out.log" | grep -o '[0-9.]*$' || echo -)
    printf "%s\t%s\t%s\t%.1f\t%s\t%s\t%s\n" "$mode" "$seed" "$steps" \
      "$(cat "$out.wall")" "${updates:--}" "${reuse:--}" "$(finals "$run")" >> "$tsv"
    tail -1 "$tsv"
  done
done
echo "learner_ab: $tsv"
