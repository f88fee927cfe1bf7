#!/usr/bin/env bash
# Beyond CartPole: the reference's settings (train_a3c's defaults: n-step
# target, lr 7e-4, RMSprop eps 0.1, one environment per worker) against
# batched environments and the new targets, on 2 worker processes, with
# scripts/experiments/wall_time.sh:
#   MinAtar/Breakout to an evaluation mean >= 17.5 within 5M steps;
#   MinAtar/Asterix and Seaquest: the best evaluation mean in 5M steps;
#   Acrobot-v1 to >= -100 and Pendulum-v1 (Gaussian policy) to >= -200
#   within 2M steps.
# The batched rows run SEEDS (default 1 2 3 4 5); the slow ones (one
# environment per worker, and the GAE variants) SLOW_SEEDS (default 1).
# Rows go to docs/targets/other.tsv, the table to docs/targets/other.md.
# The settings are spelled out, so the rows do not depend on train_a3c's
# defaults. About 25 minutes on a 2-core machine.
#
# Usage: scripts/experiments/targets_other.sh [SEEDS [SLOW_SEEDS]]   (after a Release build)
set -euo pipefail
cd "$(dirname "$0")/../.."
seeds=${1:-"1 2 3 4 5"}
slow=${2:-"1"}
out=docs/targets/other.tsv
mkdir -p docs/targets
rm -f "$out"
run() { scripts/experiments/wall_time.sh "$out" "$@" | tail -n 1; }
# The reference's settings: one environment per worker, n-step target;
# lr 7e-4 and eps 0.1 for the gym tasks (MinAtar's were already 2e-3 and
# 1e-5, the image defaults before they became everyone's).
reference=(--processes 2 --envs-per-process 1 --policy-target nstep)
gym_reference=(--lr 7e-4 --rmsprop-epsilon 0.1)
fast=(--processes 2 --envs-per-process 16 --lr 2e-3 --rmsprop-epsilon 1e-5)
minatar=(--env MinAtar/Breakout --eval-interval 100000)
run Breakout/reference 17.5 5000000 "$slow" "${minatar[@]}" "${reference[@]}" \
  --lr 2e-3 --rmsprop-epsilon 1e-5
run Breakout/e16 17.5 5000000 "$seeds" "${minatar[@]}" "${fast[@]}"
run Breakout/e16/gae 17.5 5000000 "$slow" "${minatar[@]}" "${fast[@]}" \
  --policy-target gae
for game in Asterix Seaquest; do
  # A score no run reaches: the row reports the best mean in 5M steps.
  run "$game/e16" 1e9 5000000 "$slow" --env "MinAtar/$game" \
    --eval-interval 100000 "${fast[@]}"
done
for env in Acrobot-v1:-100 Pendulum-v1:-200; do
  name=${env%%:*} score=${env#*:}
  common=(--env "$name" --eval-interval 10000)
  run "$name/reference" "$score" 2000000 "$slow" "${common[@]}" \
    "${reference[@]}" "${gym_reference[@]}"
  run "$name/e16" "$score" 2000000 "$seeds" "${common[@]}" "${fast[@]}"
  run "$name/e16/gae" "$score" 2000000 "$slow" "${common[@]}" "${fast[@]}" \
    --policy-target gae
done
scripts/experiments/targets_table.sh "$out" > docs/targets/other.md
cat docs/targets/other.md
