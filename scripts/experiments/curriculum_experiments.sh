#!/usr/bin/env bash
# Environment parameters at work (docs/environments.md, "Environment parameters and
# curricula"), on 2 worker processes:
#  1. MountainCar-v0, 5M steps, evaluations (20 episodes every 100,000
#     steps) on gym's default parameters: without a curriculum and with
#     configs/mountaincar-force-curriculum.yaml, each with the reference's
#     settings (one environment per worker, lr 7e-4, RMSprop eps 0.1) and
#     with train_a3c's defaults (16 environments per worker, lr 2e-3, eps
#     1e-5); then "scaled": the defaults with --scale-observations and
#     --reward-scale-factor 0.1 (configs/mountaincar-curriculum.conf),
#     without a curriculum, with the force curriculum and with
#     configs/mountaincar-goal-curriculum.yaml; seeds SEEDS.
#     -> docs/curriculum/mountaincar.{tsv,md}, every run's evaluation curve
#     in docs/curriculum/mountaincar-curves.tsv and the seed-0 runs'
#     scores.svg.
#  2. Domain randomisation: CartPole-v1, 1M steps, trained on gym's pole
#     (half) length 0.5 only and on lengths drawn from [0.25, 1.5]
#     (configs/cartpole-pole-length-randomized.yaml), each final agent
#     evaluated (--demo, 20 episodes) on fixed lengths across the range;
#     seeds SEEDS. -> docs/curriculum/cartpole-length.{tsv,md}.
# About 20 minutes on a 2-core machine.
#
# Usage: scripts/experiments/curriculum_experiments.sh [SEEDS]   (after a Release build)
set -euo pipefail
cd "$(dirname "$0")/../.."
seeds=${1:-"0 1 2"}
bin=build/apps/train_a3c
[ -x "$bin" ] || { echo "curriculum_experiments: build $bin first" >&2; exit 1; }
docs=docs/curriculum
mkdir -p "$docs"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# The best evaluation mean of a run, the first step it reached >= -110, and
# its lessons at the end ('-' without a curriculum).
summarize() {  # summarize RUN_FOLDER
  awk -F'\t' 'NR == 1 { for (i = 1; i <= NF; ++i) if ($i == "lessons") col = i; next }
    { if (best == "" || $4 > best) best = $4
      if (first == "" && $4 >= -110) first = $1
      if (col) lessons = $col }
    END { printf "%s\t%s\t%s", best, (first == "" ? "-" : first), (lessons == "" ? "-" : lessons) }' \
    "$1/scores.txt"
}

mc="$docs/mountaincar.tsv"
curves="$docs/mountaincar-curves.tsv"
printf "settings\tcurriculum\tseed\tbest_eval_mean\tfirst_step_ge_-110\tlessons_at_end\tseconds\n" > "$mc"
printf "settings\tcurriculum\tseed\tstep\teval_mean\n" > "$curves"
for seed in $seeds; do
  for settings in reference defaults scaled; do
    flags=(--processes 2 --steps 5000000 --eval-interval 100000
           --eval-n-runs 20 --seed "$seed" --quiet)
    curricula="none force"
    if [ "$settings" = reference ]; then
      flags+=(--envs-per-process 1 --lr 7e-4 --rmsprop-epsilon 0.1)
    elif [ "$settings" = scaled ]; then
      flags+=(--scale-observations --reward-scale-factor 0.1)
      curricula="none force goal"
    fi
    for curriculum in $curricula; do
      extra=()
      [ "$curriculum" != none ] &&
        extra=(--curriculum "configs/mountaincar-$curriculum-curriculum.yaml")
      out="$work/mc-$settings-$curriculum-$seed"
      start=$(date +%s.%N)
      "$bin" --env MountainCar-v0 "${flags[@]}" "${extra[@]}" --outdir "$out" \
        > "$work/log" 2>&1 || { cat "$work/log" >&2; exit 1; }
      end=$(date +%s.%N)
      run=$(ls -d "$out"/*/ | head -n 1)
      seconds=$(awk -v a="$start" -v b="$end" 'BEGIN { printf "%.0f", b - a }')
      printf "%s\t%s\t%s\t%s\t%s\n" "$settings" "$curriculum" "$seed" \
        "$(summarize "$run")" "$seconds" >> "$mc"
      awk -F'\t' -v s="$settings" -v c="$curriculum" -v seed="$seed" \
        'NR > 1 { printf "%s\t%s\t%s\t%s\t%s\n", s, c, seed, $1, $4 }' \
        "$run/scores.txt" >> "$curves"
      grep -h "curriculum: lesson" "$work/log" | sed "s/^/$settings seed $seed: /" \
        >> "$work/lessons.log" || true
      [ "$seed" = "$(echo "$seeds" | awk '{print $1}')" ] &&
        cp "$run/scores.svg" "$docs/mountaincar-$settings-$curriculum.svg"
      tail -n 1 "$mc"
    done
  done
done

cp=$docs/cartpole-length.tsv
lengths="0.25 0.5 0.75 1 1.25 1.5"
printf "trained_on\tseed" > "$cp"
for l in $lengths; do printf "\tlength_%s" "$l" >> "$cp"; done
printf "\n" >> "$cp"
for seed in $seeds; do
  for trained in default randomized; do
    extra=()
    [ "$trained" = randomized ] &&
      extra=(--curriculum configs/cartpole-pole-length-randomized.yaml)
    out="$work/cp-$trained-$seed"
    "$bin" --env CartPole-v1 --processes 2 --steps 1000000 --eval-interval 0 \
      --seed "$seed" --quiet "${extra[@]}" --outdir "$out" > "$work/log" 2>&1 ||
      { cat "$work/log" >&2; exit 1; }
    run=$(ls -d "$out"/*/ | head -n 1)
    row="$trained\t$seed"
    for l in $lengths; do
      mean=$("$bin" --demo --load "$run/1000000_finish" --env CartPole-v1 \
        --env-param "length=$l" --eval-n-runs 20 --seed 100 \
        --outdir "$work/demo" 2>/dev/null | sed -n 's/.* mean: \([^ ]*\).*/\1/p')
      row="$row\t$mean"
    done
    printf "%b\n" "$row" | tee -a "$cp"
  done
done

{
  echo "# Environment parameters and curricula: measured runs"
  echo
  echo "Made by \`scripts/experiments/curriculum_experiments.sh\` (seeds: $seeds) on a $(nproc)-core"
  echo "$(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -1)."
  echo
  echo "## MountainCar-v0, 5M steps, 2 processes, evaluations on the default parameters"
  echo
  echo "reference: 1 environment per worker, lr 7e-4, RMSprop eps 0.1; defaults:"
  echo "train_a3c's (16 environments per worker, lr 2e-3, eps 1e-5); scaled: the"
  echo "defaults with --scale-observations --reward-scale-factor 0.1. Curricula:"
  echo "configs/mountaincar-force-curriculum.yaml (force), configs/mountaincar-goal-curriculum.yaml (goal)."
  echo
  echo "| settings | curriculum | seed | best evaluation mean | first step with mean >= -110 | lessons at the end | seconds |"
  echo "| --- | --- | --- | --- | --- | --- | --- |"
  tail -n +2 "$mc" | awk -F'\t' '{ printf "| %s | %s | %s | %s | %s | %s | %s |\n", $1, $2, $3, $4, $5, $6, $7 }'
  echo
  echo "Lesson advances (from the runs' logs):"
  echo
  echo '```'
  cat "$work/lessons.log" 2>/dev/null || true
  echo '```'
  echo
  echo "## CartPole-v1, 1M steps: evaluation mean (20 episodes) per pole half-length"
  echo
  printf "| trained on | seed |"
  for l in $lengths; do printf " %s |" "$l"; done
  echo
  printf "| --- | --- |"
  for l in $lengths; do printf " --- |"; done
  echo
  tail -n +2 "$cp" | awk -F'\t' '{ printf "|"; for (i = 1; i <= NF; ++i) printf " %s |", $i; printf "\n" }'
} > "$docs/README.md"
echo "wrote $docs/README.md"
