#!/usr/bin/env bash
# Wall time to solve CartPole-v1 (an evaluation mean >= 475, evaluations
# every 10,000 steps) for every policy target, with 2 and 16 worker
# processes and 1 and 16 environments per process, 5 seeds each, with
# scripts/experiments/wall_time.sh. Rows go to docs/targets/cartpole.tsv; the table of
# medians to docs/targets/cartpole.md (scripts/experiments/targets_table.sh).
#
# Usage: scripts/experiments/targets_cartpole.sh [SEEDS]   (after a Release build)
# Every run starts from `--lr 2e-3 --rmsprop-epsilon 1e-5`
# (configs/cartpole-fast.conf without the target choice), the best
# setting of issue 12's table for the reference's n-step target.
set -euo pipefail
cd "$(dirname "$0")/../.."
seeds=${1:-"1 2 3 4 5"}
out=docs/targets/cartpole.tsv
mkdir -p docs/targets
rm -f "$out"
base=(--env CartPole-v1 --eval-interval 10000 --lr 2e-3 --rmsprop-epsilon 1e-5)
for procs in 2 16; do
  for envs in 1 16; do
    for target in nstep gae vtrace upgo vtrace+fresh upgo+fresh; do
      flags=(--policy-target "${target%+fresh}")
      [ "$target" != "${target%+fresh}" ] && flags+=(--fresh-params)
      name="$target/p$procs/e$envs"
      scripts/experiments/wall_time.sh "$out" "$name" 475 1000000 "$seeds" "${base[@]}" \
        --processes "$procs" --envs-per-process "$envs" "${flags[@]}" | tail -n 1
    done
  done
done
scripts/experiments/targets_table.sh "$out" > docs/targets/cartpole.md
cat docs/targets/cartpole.md
