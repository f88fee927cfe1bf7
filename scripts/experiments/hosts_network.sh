#!/usr/bin/env bash
# Two hosts over an imperfect network: each "host" is a train_a3c process
# tree in a network namespace of its own (10.232.0.1 and .2); their one
# link passes through a third namespace, where build/tests/asyncrl_link_relay
# carries every frame after a chosen one-way delay, and tc's token bucket
# (tbf) limits each host's sending rate. For each rate and delay: the wall
# time of a fixed run, steps/s, the number of parameter averages and the
# milliseconds each took (rank 0's "dist:" line), and whether both hosts
# ended with the same digest. Prints a markdown table;
# docs/hosts/network.md holds one run's output.
#
# Usage (root: it makes network namespaces):
#   scripts/experiments/hosts_network.sh [STEPS]   (default 1000000)
# Needs build/apps/train_a3c and build/tests/asyncrl_link_relay (a Release
# build with the tests).
set -euo pipefail
cd "$(dirname "$0")/../.."
bin=$PWD/build/apps/train_a3c
relay=$PWD/build/tests/asyncrl_link_relay
for f in "$bin" "$relay"; do
  [ -x "$f" ] || { echo "hosts_network: build $f first" >&2; exit 1; }
done
[ "$(id -u)" -eq 0 ] || { echo "hosts_network: needs root (ip netns)" >&2; exit 1; }
steps=${1:-1000000}
out=$(mktemp -d)
id=$$
a=asyncrl_na$id b=asyncrl_nb$id r=asyncrl_nr$id
relay_pid=
host_pids=()
cleanup() {
  for p in "${host_pids[@]}"; do kill "$p" 2> /dev/null || true; done
  [ -z "$relay_pid" ] || kill "$relay_pid" 2> /dev/null || true
  for ns in "$a" "$b" "$r"; do ip netns del "$ns" 2> /dev/null || true; done
  rm -rf "$out"
}
trap cleanup EXIT

# net RATE DELAY_MS: (re)builds the namespaces with that link ("-": no
# rate limit).
net() {
  local rate=$1 delay=$2
  [ -z "$relay_pid" ] || { kill "$relay_pid"; wait "$relay_pid" 2> /dev/null || true; }
  relay_pid=
  for ns in "$a" "$b" "$r"; do ip netns del "$ns" 2> /dev/null || true; done
  for ns in "$a" "$b" "$r"; do ip netns add "$ns"; ip -n "$ns" link set lo up; done
  local i=1 ns side
  for side in a b; do
    ns=$a; [ "$side" = b ] && ns=$b
    ip link add "h$side$id" netns "$ns" type veth peer name "r$side$id" netns "$r"
    ip -n "$ns" addr add "10.232.0.$i/24" dev "h$side$id"
    ip -n "$ns" link set "h$side$id" up
    ip -n "$r" link set "r$side$id" up
    if [ "$rate" != - ]; then
      ip netns exec "$ns" tc qdisc add dev "h$side$id" root tbf rate "$rate" \
        burst 64kb latency 400ms
    fi
    i=$((i + 1))
  done
  ip netns exec "$r" "$relay" "ra$id" "rb$id" "$delay" 3600 > "$out/relay.log" 2>&1 &
  relay_pid=$!
  local tries=0
  until grep -q 'relay: ready' "$out/relay.log"; do
    tries=$((tries + 1))
    [ "$tries" -le 100 ] || { cat "$out/relay.log"; echo "hosts_network: relay did not start" >&2; exit 1; }
    sleep 0.1
  done
}

# run: 2 hosts x 1 worker x 16 environments on CartPole-v1 with a
# 256x256 network (~68k parameters, ~270 KB an average), averaging every
# 0.1 s; prints "seconds averages ms_each same_digest".
run() {
  rm -rf "$out/r0" "$out/r1"
  local common=(--env CartPole-v1 --processes 1 --envs-per-process 16
    --hidden-sizes 256,256 --steps "$steps" --eval-interval 0 --nnodes 2
    --master-addr 10.232.0.1:29500 --sync-interval 0.1 --dist-timeout 120)
  local start end
  start=$(date +%s.%N)
  ip netns exec "$a" "$bin" "${common[@]}" --node-rank 0 --outdir "$out/r0" > "$out/h0.log" 2>&1 &
  local p0=$!
  ip netns exec "$b" "$bin" "${common[@]}" --node-rank 1 --outdir "$out/r1" > "$out/h1.log" 2>&1 &
  local p1=$!
  host_pids=("$p0" "$p1")
  local s0=0 s1=0
  wait "$p0" || s0=$?
  wait "$p1" || s1=$?
  end=$(date +%s.%N)
  if [ "$s0" -ne 0 ] || [ "$s1" -ne 0 ]; then
    cat "$out/h0.log" "$out/h1.log" >&2
    echo "hosts_network: a host failed ($s0, $s1)" >&2
    exit 1
  fi
  local d0 d1 dist
  d0=$(grep -o 'digest [0-9a-f]*' "$out/h0.log" | tail -n 1 || true)
  d1=$(grep -o 'digest [0-9a-f]*' "$out/h1.log" | tail -n 1 || true)
  dist=$(grep -o 'dist: [0-9]* parameter averages, [0-9.]* ms each' "$out/h0.log" | tail -n 1 || true)
  local n ms
  n=$(echo "$dist" | awk '{print $2}')
  ms=$(echo "$dist" | awk '{print $5}')
  awk -v s="$start" -v e="$end" -v n="$n" -v ms="$ms" -v same="$([ "$d0" = "$d1" ] && [ -n "$d0" ] && echo yes || echo NO)" \
    'BEGIN { printf "%.2f %s %s %s\n", e - s, n, ms, same }'
}

echo "| rate | one-way delay | seconds | steps/s | averages | ms per average | same digest |"
echo "| --- | --- | --- | --- | --- | --- | --- |"
for spec in "- 0" "100mbit 0" "10mbit 0" "1mbit 0" "- 20" "100mbit 20"; do
  read -r rate delay <<< "$spec"
  net "$rate" "$delay"
  read -r secs n ms same < <(run)
  label=$rate
  [ "$rate" != - ] || label="none (veth)"
  awk -v l="$label" -v d="$delay" -v s="$secs" -v st="$steps" -v n="$n" -v ms="$ms" -v same="$same" \
    'BEGIN { printf "| %s | %s ms | %.2f | %.0f | %s | %s | %s |\n", l, d, s, st / s, n, ms, same }'
done
