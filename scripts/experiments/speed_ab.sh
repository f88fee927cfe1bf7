#!/usr/bin/env bash
# Trainer speed, before and after (issue 27's goals: "A/B in one
# session"): runs two train_a3c binaries, and the new one with
# --no-fast-path, on the issue's four archs (fc-softmax and
# fc-softmax-lstm on CartPole-v1, minatar-conv and minatar-conv-lstm on
# MinAtar/Breakout) with 1 and 16 environments on one worker process,
# evaluation off, as a user runs them. Each rate is the last status line's
# steps/s per worker (the issue's measure: steps since the workers started
# over the time since then). ROUNDS rounds (default 3) alternate the three
# binaries, each round in another order, so a slow spell of the machine
# hits all of them; prints one markdown row per configuration: the median
# [min-max] of each and the ratios of the medians. A run that fails stops
# the script, which keeps the rates measured so far and says where.
#
# Usage: scripts/experiments/speed_ab.sh OLD_TRAIN_A3C NEW_TRAIN_A3C [ROUNDS]
#   e.g. (the issue's "before", main at 0b6c0ed, built in a worktree):
#   git worktree add ../before 0b6c0ed
#   cmake -S ../before -B ../before/build -G Ninja -DCMAKE_BUILD_TYPE=Release
#   ninja -C ../before/build train_a3c
#   scripts/experiments/speed_ab.sh ../before/build/apps/train_a3c build/apps/train_a3c
# OPENBLAS_CORETYPE is passed on as set: unset it to measure the kernel
# OpenBLAS picks for the CPU.
set -euo pipefail
export LC_ALL=C  # printf and awk read and write "1.5", whatever the locale.
[ $# -ge 2 ] && [ $# -le 3 ] || {
  echo "usage: $0 OLD_TRAIN_A3C NEW_TRAIN_A3C [ROUNDS]" >&2
  exit 2
}
old=$1 new=$2 rounds=${3:-3}
for bin in "$old" "$new"; do
  [ -x "$bin" ] || { echo "$0: $bin is not an executable" >&2; exit 2; }
done
[[ "$rounds" =~ ^[1-9][0-9]*$ ]] || {
  echo "$0: ROUNDS=$rounds is invalid; accepted: an integer >= 1" >&2
  exit 2
}
work=$(mktemp -d)

# arch env environments steps: long enough that the slowest binary runs
# for several seconds (the rate counts the first steps' warm-up).
configs=(
  "fc-softmax CartPole-v1 1 150000"
  "fc-softmax CartPole-v1 16 600000"
  "minatar-conv MinAtar/Breakout 1 40000"
  "minatar-conv MinAtar/Breakout 16 300000"
  "fc-softmax-lstm CartPole-v1 1 20000"
  "fc-softmax-lstm CartPole-v1 16 200000"
  "minatar-conv-lstm MinAtar/Breakout 1 20000"
  "minatar-conv-lstm MinAtar/Breakout 16 200000"
)

# One run's steps/s per worker, from its last status line.
rate() {
  local bin=$1 arch=$2 env=$3 envs=$4 steps=$5
  shift 5
  local log="$work/run.log"
  if ! "$bin" --arch "$arch" --env "$env" --processes 1 \
      --envs-per-process "$envs" --steps "$steps" \
      --eval-interval 1000000000 --outdir "$work/out" "$@" > "$log" 2>&1; then
    echo "$0: $bin --arch $arch --env $env --envs-per-process $envs${*:+ $*} failed" \
      "(the rates so far are in $work):" >&2
    tail -5 "$log" >&2
    exit 1
  fi
  local r
  r=$(tr '\r' '\n' < "$log" | sed -n 's/.*steps\/s (\([0-9.]*\)\/worker).*/\1/p' |
      tail -1)
  [ -n "$r" ] || {
    echo "$0: no status line from $bin ($arch; the rates so far are in $work)" >&2
    exit 1
  }
  echo "$r"
}

# One run of `kind` (old, new or libtorch) for configuration i.
run() {
  local kind=$1 i=$2 arch env envs steps
  read -r arch env envs steps <<< "${configs[$i]}"
  case $kind in
    old) rate "$old" "$arch" "$env" "$envs" "$steps" ;;
    new) rate "$new" "$arch" "$env" "$envs" "$steps" ;;
    libtorch) rate "$new" "$arch" "$env" "$envs" "$steps" --no-fast-path ;;
  esac >> "$work/$kind.$i"
}

orders=("old new libtorch" "new libtorch old" "libtorch old new")
for ((round = 1; round <= rounds; ++round)); do
  for i in "${!configs[@]}"; do
    read -r arch env envs steps <<< "${configs[$i]}"
    echo "round $round/$rounds: $arch, $envs environment(s)" >&2
    for kind in ${orders[$(((round - 1) % 3))]}; do run "$kind" "$i"; done
  done
done

# median [min-max] of a file of numbers; the median alone with "m".
summary() {
  sort -g "$1" | awk -v only="${2:-}" '{ v[NR] = $1 }
    END {
      m = NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2
      if (only == "m") printf "%.1f", m
      else printf "%.0f [%.0f-%.0f]", m, v[1], v[NR]
    }'
}

# a / b as "1.23x".
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.2fx", a / b }'; }

echo "| arch, environment | envs | before | after | after --no-fast-path | after / before | after / --no-fast-path |"
echo "| --- | --- | --- | --- | --- | --- | --- |"
for i in "${!configs[@]}"; do
  read -r arch env envs steps <<< "${configs[$i]}"
  o=$(summary "$work/old.$i" m)
  n=$(summary "$work/new.$i" m)
  l=$(summary "$work/libtorch.$i" m)
  printf '| %s, %s | %s | %s | %s | %s | %s | %s |\n' "$arch" "$env" \
    "$envs" "$(summary "$work/old.$i")" "$(summary "$work/new.$i")" \
    "$(summary "$work/libtorch.$i")" "$(ratio "$n" "$o")" "$(ratio "$n" "$l")"
done
rm -rf "$work"
