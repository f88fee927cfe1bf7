#!/usr/bin/env bash
# What training a Python environment costs beyond the environment itself:
# examples/python_env/cartpole.py (pure Python) stepped
#   (a) in a tight Python loop, one process per core, random actions: the
#       environment's own steps/s, summed over the processes;
#   (b) by train_a3c --env python:cartpole:CartPole, one worker per core,
#       16 copies per worker (--envs-per-process 16), A3C's default network:
#       training steps/s = steps / wall time of the whole run (start-up,
#       evaluation off).
#   With ASYNCRL_BENCH_VECTOR=1, (b) trains
#   examples/python_env/vector_cartpole.py instead: each worker's 16 copies
#   are one vector environment, stepped by one call (a loop in Python); with
#   ASYNCRL_BENCH_VECTOR=numpy, bench/numpy_vector_cartpole.py (the copies
#   stepped together by NumPy), and (a) steps it too, 16 copies a call.
# Prints both, their ratio, and train_a3c's time split (the environment's
# share in the workers vs the agent's).
# Usage: bench/python_env_bench.sh [PROCESSES] [TRAIN_STEPS] [LOOP_STEPS]
#                                  [train_a3c flags, e.g. --hidden-sizes 32]
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
processes=${1:-2}
train_steps=${2:-2000000}
loop_steps=${3:-2000000}
shift $(($# < 3 ? $# : 3))
train_a3c=${ASYNCRL_TRAIN_A3C:-$root/build/apps/train_a3c}
python=${ASYNCRL_PYTHON:-/usr/bin/python3}
export PYTHONPATH=$root/examples/python_env:$root/bench${PYTHONPATH:+:$PYTHONPATH}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

echo "cpu: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ //'), $(nproc) cores"
loop='
import random, sys, time, cartpole
n = int(sys.argv[1])
env = cartpole.CartPole()
env.reset(seed=int(sys.argv[2]))
rng = random.Random(int(sys.argv[2]))
start = time.perf_counter()
for _ in range(n):
    obs, reward, terminated, truncated, info = env.step(rng.randrange(2))
    if terminated or truncated:
        env.reset()
print(n / (time.perf_counter() - start))
'
if [ "${ASYNCRL_BENCH_VECTOR:-0}" = numpy ]; then
  loop='
import sys, time, numpy, numpy_vector_cartpole
n = int(sys.argv[1]) // 16
env = numpy_vector_cartpole.NumpyVectorCartPole(16)
env.reset(seed=int(sys.argv[2]))
rng = numpy.random.default_rng(int(sys.argv[2]))
start = time.perf_counter()
for _ in range(n):
    env.step(rng.integers(0, 2, 16))
print(n * 16 / (time.perf_counter() - start))
'
fi
for i in $(seq "$processes"); do
  "$python" -c "$loop" "$loop_steps" "$i" > "$work/loop_$i" &
done
wait
env_rate=$(cat "$work"/loop_* | awk '{s += $1} END {printf "%.0f", s}')
echo "environment alone: $env_rate steps/s ($processes processes x $loop_steps steps)"

if [ "${ASYNCRL_BENCH_VECTOR:-0}" = numpy ]; then
  env_flags=(--env python:numpy_vector_cartpole:NumpyVectorCartPole
             --env-kwargs '{"num_envs": 16}')
elif [ "${ASYNCRL_BENCH_VECTOR:-0}" = 1 ]; then
  env_flags=(--env python:vector_cartpole:VectorCartPole
             --env-kwargs '{"num_envs": 16}')
else
  env_flags=(--env python:cartpole:CartPole --envs-per-process 16)
fi
start=$(date +%s.%N)
"$train_a3c" "${env_flags[@]}" --processes "$processes" \
  --steps "$train_steps" --eval-interval 0 \
  --outdir "$work/runs" "$@" > "$work/train.log" 2>&1 ||
  { cat "$work/train.log"; exit 1; }
end=$(date +%s.%N)
train_rate=$(awk -v s="$start" -v e="$end" -v n="$train_steps" \
  'BEGIN {printf "%.0f", n / (e - s)}')
echo "training: $train_rate steps/s ($train_steps steps, $processes workers x 16 environments (${env_flags[1]}), $(awk -v s="$start" -v e="$end" 'BEGIN {printf "%.2f", e - s}') s${*:+, $*})"
grep -E '^(  agent|  env_step) ' "$work/train.log" | sed 's/^ */  workers: /' 
awk -v t="$train_rate" -v e="$env_rate" \
  'BEGIN {printf "ratio: %.2f (training / environment alone)\n", t / e}'
