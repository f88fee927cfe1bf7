#!/usr/bin/env bash
# Several hosts on one machine (issue 15): each "host" is a train_a3c
# process tree of its own (--nnodes/--node-rank) meeting at 127.0.0.1, so
# this measures the trainer's own cost of syncing, not a network.
#  1. Throughput: 1 host x 1 worker, 1 host x 2 workers and 2 hosts x 1
#     worker, CartPole-v1, evaluation off, with 1 and 16 environments per
#     worker; steps/s from wall time (start to the last host's exit).
#  2. The sync interval's effect: 2 hosts x 1 worker x 16 environments.
#  3. Learning: wall time to an evaluation mean >= 475 on CartPole-v1
#     (configs/cartpole-fast.conf), 1 host x 2 workers against 2 hosts x 1
#     worker, seeds 1-5.
#  4. MinAtar Breakout to 17.5 (up to 5M steps), 2 hosts x 1 worker x 16
#     environments, against 1 host x 2 workers, seeds 1-2.
#  5. Running statistics combined across hosts: MountainCar-v0 to -110
#     (configs/mountaincar.conf: normalized observations and rewards), 1 host x 2
#     workers against 2 hosts x 1 worker, seeds 1-5.
# Prints markdown tables; docs/hosts/README.md holds one run's output.
#
# Usage: scripts/experiments/hosts.sh [PARTS]   e.g. scripts/experiments/hosts.sh 1 2   (default all)
# Needs build/apps/train_a3c (a Release build).
set -euo pipefail
cd "$(dirname "$0")/../.."
bin=build/apps/train_a3c
[ -x "$bin" ] || { echo "hosts: build $bin first" >&2; exit 1; }
parts=("$@")
[ ${#parts[@]} -gt 0 ] || parts=(1 2 3 4 5)
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
port=29700

# run HOSTS WORKERS ARGS...: trains with HOSTS hosts of WORKERS workers each;
# prints the wall seconds; fails (with the logs) if any host fails.
run() {
  local hosts=$1 workers=$2
  shift 2
  port=$((port + 1))
  rm -rf "$out/run"
  local start end pids=() r
  start=$(date +%s.%N)
  if [ "$hosts" -eq 1 ]; then
    "$bin" --processes "$workers" --outdir "$out/run/0" --quiet "$@" \
      > "$out/log0" 2>&1 &
    pids+=($!)
  else
    for ((r = 0; r < hosts; r++)); do
      "$bin" --processes "$workers" --outdir "$out/run/$r" --quiet \
        --nnodes "$hosts" --node-rank "$r" --master-addr "127.0.0.1:$port" \
        "$@" > "$out/log$r" 2>&1 &
      pids+=($!)
    done
  fi
  local failed=0
  for p in "${pids[@]}"; do wait "$p" || failed=1; done
  end=$(date +%s.%N)
  if [ "$failed" -ne 0 ]; then cat "$out"/log* >&2; exit 1; fi
  awk -v a="$start" -v b="$end" 'BEGIN { printf "%.2f\n", b - a }'
}

# The last scores.txt row's mean and steps, and whether it reached GOAL.
last_eval() {
  local scores
  scores=$(ls "$out"/run/0/*/scores.txt)
  awk -v goal="$1" 'NR > 1 { steps = $1; mean = $4; if (NR == 2 || mean > best) best = mean }
    END { printf "%s %s %s\n", steps, best, (mean >= goal ? "yes" : "no") }' "$scores"
}

echo "machine: $(nproc) cores, $(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -1)"
for part in "${parts[@]}"; do
  case $part in
    1)
      echo
      echo "### Throughput (CartPole-v1, evaluation off, sync every 1 s)"
      echo
      echo "| layout | envs/worker | steps | seconds | steps/s | vs 1 host x 1 worker |"
      echo "| --- | --- | --- | --- | --- | --- |"
      for envs in 1 16; do
        steps=$(( envs == 1 ? 600000 : 2000000 ))
        base=
        for layout in "1 1" "1 2" "2 1"; do
          set -- $layout
          s=$(run "$1" "$2" --env CartPole-v1 --envs-per-process "$envs" \
                --steps "$steps" --eval-interval 0)
          rate=$(awk -v n="$steps" -v t="$s" 'BEGIN { printf "%.0f", n / t }')
          [ -z "$base" ] && base=$rate
          awk -v h="$1" -v w="$2" -v e="$envs" -v n="$steps" -v t="$s" -v r="$rate" -v b="$base" \
            'BEGIN { printf "| %d host x %d worker | %d | %d | %.2f | %d | %.2fx |\n", h, w, e, n, t, r, r / b }'
        done
      done
      ;;
    2)
      echo
      echo "### Sync interval (2 hosts x 1 worker x 16 envs, CartPole-v1, 2M steps)"
      echo
      echo "| --sync-interval s | seconds | steps/s | averages | ms per average |"
      echo "| --- | --- | --- | --- | --- |"
      for interval in 0.02 0.1 1 10; do
        s=$(run 2 1 --env CartPole-v1 --steps 2000000 --eval-interval 0 \
              --sync-interval "$interval" --log-level info)
        line=$(grep -h "parameter averages" "$out/log0" | tail -1)
        n=$(sed -E 's/.*dist: ([0-9]+) parameter averages, ([0-9.]+) ms.*/\1/' <<< "$line")
        ms=$(sed -E 's/.*dist: ([0-9]+) parameter averages, ([0-9.]+) ms.*/\2/' <<< "$line")
        awk -v i="$interval" -v t="$s" -v n="$n" -v ms="$ms" \
          'BEGIN { printf "| %s | %.2f | %.0f | %d | %s |\n", i, t, 2000000 / t, n, ms }'
      done
      ;;
    3)
      echo
      echo "### CartPole-v1 to an evaluation mean >= 475 (configs/cartpole-fast.conf)"
      echo
      echo "| layout | --sync-interval | seed | wall s | steps at the end | best mean | solved |"
      echo "| --- | --- | --- | --- | --- | --- | --- |"
      for layout in "1 2 -" "2 1 1" "2 1 0.1"; do
        set -- $layout
        sync=()
        [ "$3" != - ] && sync=(--sync-interval "$3")
        for seed in 1 2 3 4 5; do
          s=$(run "$1" "$2" --config configs/cartpole-fast.conf --seed "$seed" \
                --steps 2000000 "${sync[@]}")
          read -r steps best solved <<< "$(last_eval 475)"
          echo "| $1 host x $2 worker | $3 | $seed | $s | $steps | $best | $solved |"
        done
      done
      ;;
    4)
      echo
      echo "### MinAtar Breakout to 17.5 (16 envs/worker, evaluation every 100k steps)"
      echo
      echo "| layout | seed | wall s | steps at the end | best mean | solved |"
      echo "| --- | --- | --- | --- | --- | --- |"
      for layout in "1 2" "2 1"; do
        set -- $layout
        for seed in 1 2; do
          s=$(run "$1" "$2" --env MinAtar/Breakout --seed "$seed" --steps 5000000 \
                --eval-interval 100000 --successful-score 17.5)
          read -r steps best solved <<< "$(last_eval 17.5)"
          echo "| $1 host x $2 worker | $seed | $s | $steps | $best | $solved |"
        done
      done
      ;;
    5)
      echo
      echo "### MountainCar-v0 to -110 with running normalization (configs/mountaincar.conf)"
      echo
      echo "| layout | seed | wall s | steps at the end | best mean | solved |"
      echo "| --- | --- | --- | --- | --- | --- |"
      for layout in "1 2" "2 1"; do
        set -- $layout
        for seed in 1 2 3 4 5; do
          s=$(run "$1" "$2" --config configs/mountaincar.conf --seed "$seed")
          read -r steps best solved <<< "$(last_eval -110)"
          echo "| $1 host x $2 worker | $seed | $s | $steps | $best | $solved |"
        done
      done
      ;;
  esac
done
