#!/usr/bin/env bash
# Trains examples/python_env/cartpole.py (pure-Python CartPole) to an
# evaluation mean of 475 from train_a3c --env python:cartpole:CartPole, one
# run per seed, and prints per seed: the wall time of the whole command, the
# steps it took, and the agent it ended with (successful/) re-evaluated on
# 100 fresh episodes (--demo, seeds other than the run's).
# With ASYNCRL_SOLVE_VECTOR=N, trains examples/python_env/vector_cartpole.py
# with num_envs N instead (each worker's N copies stepped by one call; the
# re-evaluation plays the single CartPole, the same task).
# Usage: scripts/experiments/python_env_solve.sh [PROCESSES] [SEEDS...]   (default 2; 1-5)
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
processes=${1:-2}
shift || true
seeds=("$@")
[ ${#seeds[@]} -gt 0 ] || seeds=(1 2 3 4 5)
train_a3c=${ASYNCRL_TRAIN_A3C:-$root/build/apps/train_a3c}
export PYTHONPATH=$root/examples/python_env${PYTHONPATH:+:$PYTHONPATH}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
echo "cpu: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ //'), $(nproc) cores"
if [ -n "${ASYNCRL_SOLVE_VECTOR:-}" ]; then
  env_flags=(--env python:vector_cartpole:VectorCartPole
             --env-kwargs "{\"num_envs\": $ASYNCRL_SOLVE_VECTOR}")
else
  env_flags=(--env python:cartpole:CartPole)
fi
echo "environment: ${env_flags[*]}"
printf 'seed\twall_s\tsteps\treached\tfinal_agent_mean_100\n'
for seed in "${seeds[@]}"; do
  start=$(date +%s.%N)
  "$train_a3c" "${env_flags[@]}" --processes "$processes" \
    --successful-score 475 --eval-interval 10000 --steps 2000000 \
    --seed "$seed" --outdir "$work/runs" --quiet > "$work/log" 2>&1 ||
    { cat "$work/log"; exit 1; }
  end=$(date +%s.%N)
  run=$(sed -n 's/^results in \(.*\)$/\1/p' "$work/log" | head -1)
  steps=$(sed -n 's/^finished at step \([0-9]*\) .*/\1/p' "$work/log")
  if [ -d "$run/successful" ]; then reached=yes; agent=$run/successful
  else reached=no; agent=$(ls -d "$run"/*_finish | tail -1); fi
  mean=$("$train_a3c" --env python:cartpole:CartPole --demo --load "$agent" \
    --eval-n-runs 100 --seed $((seed + 1000)) 2>&1 |
    sed -n 's/.*n_runs: 100 mean: \([^ ]*\) .*/\1/p')
  printf '%s\t%.2f\t%s\t%s\t%s\n' "$seed" "$(awk -v s="$start" -v e="$end" \
    'BEGIN {print e - s}')" "$steps" "$reached" "$mean"
done
