#!/usr/bin/env bash
# Whether the MuJoCo environments run at the simulator's own speed: for each
# task, on one core,
#   (a) mujoco-testspeed's physics steps/s on the task's model with control
#       noise, divided by the task's frame skip (the environment steps/s the
#       simulator alone allows);
#   (b) the environment's steps/s with random actions (bench/env_bench's
#       BM_EnvStep/<task>, resets included).
# Prints both and their ratio (the goal: >= 0.9).
# Usage: bench/mujoco_speed.sh [PHYSICS_STEPS (200000)]
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
physics_steps=${1:-200000}
env_bench=${ASYNCRL_ENV_BENCH:-$root/build/bench/env_bench}
models=$root/src/envs/mujoco/models
command -v mujoco-testspeed >/dev/null || {
  echo "mujoco_speed: mujoco-testspeed not found (Debian: libmujoco-samples)" >&2
  exit 1
}
[ -x "$env_bench" ] || {
  echo "mujoco_speed: $env_bench not found (ninja -C build env_bench)" >&2
  exit 1
}
echo "CPU: $(lscpu | sed -n 's/^Model name: *//p')"
printf '%-20s %10s %12s %12s %6s\n' task frame_skip simulator/s env/s ratio
# Task, model file, frame skip (Gymnasium's v4).
while read -r task model skip; do
  physics=$(mujoco-testspeed "$models/$model.xml" "$physics_steps" 1 0.01 |
            sed -n 's/^ *Steps per second *: *//p')
  env=$("$env_bench" --benchmark_filter="^BM_EnvStep/$task-v4\$" \
          --benchmark_min_time=2 --benchmark_counters_tabular=true 2>/dev/null |
        awk -v t="BM_EnvStep/$task-v4" '$1 == t {print $NF}')
  python3 - "$task" "$skip" "$physics" "$env" <<'PY'
import sys
task, skip, physics, env = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4]
def number(text):
    text = text.strip().removesuffix("/s")
    scale = {"k": 1e3, "M": 1e6}.get(text[-1:], 1)
    return float(text.rstrip("kM")) * scale
allowed = number(physics) / skip
got = number(env)
print(f"{task:<20} {skip:>10} {allowed:>12.0f} {got:>12.0f} {got / allowed:>6.2f}")
PY
done <<'TASKS'
InvertedPendulum inverted_pendulum 2
Swimmer swimmer 4
Hopper hopper 4
Walker2d walker2d 4
HalfCheetah half_cheetah 5
Ant ant 5
Humanoid humanoid 5
TASKS
