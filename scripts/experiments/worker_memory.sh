#!/usr/bin/env bash
# Memory of a running train_a3c per worker process (issue 11): RSS, PSS
# (proportional set size: shared pages divided among the processes that map
# them) and private memory (what each worker adds on its own: pages no other
# process maps, mostly its heap, its copy-on-write writes and its local
# parameters), read from /proc/<pid>/smaps_rollup while a run trains.
#
# Usage: scripts/experiments/worker_memory.sh [PROCESSES] [extra train_a3c flags...]
#   PROCESSES defaults to 16; the run trains CartPole-v1 with the defaults
#   (16 environments per process) and is stopped with SIGINT after the
#   sample. Needs build/apps/train_a3c.
set -euo pipefail
cd "$(dirname "$0")/../.."
processes=${1:-16}
shift || true
bin=build/apps/train_a3c
[ -x "$bin" ] || { echo "worker_memory: build $bin first" >&2; exit 1; }
out=$(mktemp -d)
parent=
# On any exit, the run goes too (SIGTERM: it saves and stops).
cleanup() {
  if [ -n "$parent" ] && kill -0 "$parent" 2>/dev/null; then
    kill -TERM "$parent" 2>/dev/null || true
    wait "$parent" 2>/dev/null || true
  fi
  rm -rf "$out"
}
trap cleanup EXIT

"$bin" --env CartPole-v1 --processes "$processes" --steps 2000000000 \
  --eval-interval 100000 --outdir "$out/run" "$@" > "$out/log" 2>&1 &
parent=$!

# Wait (bounded) until every worker has forked and trained a while: the
# status line reports steps.
for _ in $(seq 1 120); do
  workers=$( (pgrep -P "$parent" || true) | wc -l)
  if [ "$workers" -ge "$processes" ] && grep -q "steps/s" "$out/log"; then
    break
  fi
  sleep 0.5
done
sleep 5  # Let the heaps reach their steady size.

kb() {  # kb FIELD FILE: the field's value in kB.
  awk -v f="$1:" '$1 == f {print $2}' "$2"
}
{
  for pid in $(pgrep -P "$parent"); do
    f=/proc/$pid/smaps_rollup
    [ -r "$f" ] || continue
    echo "$pid $(kb Rss "$f") $(kb Pss "$f") $(kb Private_Clean "$f") $(kb Private_Dirty "$f")"
  done
  echo "parent $(kb Rss /proc/$parent/smaps_rollup) $(kb Pss /proc/$parent/smaps_rollup) 0 0"
} | awk '
  BEGIN { printf "%-8s %8s %8s %11s\n", "pid", "rss_mb", "pss_mb", "private_mb" }
  $1 == "parent" { parent_pss = $3; next }
  {
    private = $4 + $5
    printf "%-8s %8.1f %8.1f %11.1f\n", $1, $2 / 1024, $3 / 1024, private / 1024
    n++; rss += $2; pss += $3; priv += private
  }
  END {
    printf "workers %d: mean rss %.1f MB, mean pss %.1f MB, mean private %.1f MB\n",
      n, rss / n / 1024, pss / n / 1024, priv / n / 1024
    printf "parent pss %.1f MB; all processes pss %.1f MB\n",
      parent_pss / 1024, (pss + parent_pss) / 1024
  }'
