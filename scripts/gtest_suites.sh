#!/usr/bin/env bash
# Runs a GoogleTest binary one test suite per process (a large suite split
# into shards of about 8 tests), JOBS processes at a time, each within
# TIMEOUT seconds; prints one line per process and, for one that failed,
# its output. Exits 1 when any failed.
# Usage: scripts/gtest_suites.sh BINARY JOBS TIMEOUT [NEGATIVE_FILTER]
#
# Why (scripts/sanitize.sh): under AddressSanitizer each start of a binary
# that links LibTorch costs seconds (LibTorch's static initialisers through
# ASan's allocator, LeakSanitizer's scan at exit): one process per test was
# most of the sanitizer stage's time. A suite's tests share one process, as
# they do whenever the binary is run by hand; CTest groups them the same way
# (cmake/gtest_shards.cmake), and this script adds a negative filter and
# prints each process's time.
set -euo pipefail
if [ $# -lt 3 ]; then
  echo "usage: $0 BINARY JOBS TIMEOUT [NEGATIVE_FILTER]" >&2
  exit 2
fi
bin=$1
jobs=$2
limit=$3
exclude=${4:-}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
# A suite of more than `per` tests runs as several processes (GoogleTest's
# sharding: shard i of n takes every n-th test), so that no one process
# holds the run up or nears the limit. Largest suites first, so that the
# long ones start early. Lines: "suite shard shards".
per=8
"$bin" --gtest_list_tests |
  awk -v per="$per" '/^[^ ]/ { sub(/\..*$/, ""); suite = $0; next }
       /^  / { count[suite]++ }
       END { for (s in count) {
               n = int((count[s] + per - 1) / per)
               for (i = 0; i < n; i++) print count[s], s, i, n } }' |
  sort -k1,1nr -k2,2 -k3,3n | awk '{ print $2, $3, $4 }' > "$work/suites"
run_suite() {
  local suite=$1 shard=$2 shards=$3
  local name=$suite
  [ "$shards" -gt 1 ] && name="$suite [shard $((shard + 1))/$shards]"
  local log=$work/$(printf '%s.%s' "$suite" "$shard" | tr '/' '_').log
  local filter="$suite.*"
  [ -n "$exclude" ] && filter="$filter-$exclude"
  local start=$SECONDS status=0
  GTEST_TOTAL_SHARDS=$shards GTEST_SHARD_INDEX=$shard \
    timeout --kill-after=10 "$limit" "$bin" --gtest_filter="$filter" \
    > "$log" 2>&1 || status=$?
  local took=$((SECONDS - start))
  if [ "$status" -eq 0 ]; then
    echo "ok     $name (${took} s)"
  else
    [ "$status" -eq 124 ] && echo "timeout after ${limit} s" >> "$log"
    echo "FAILED $name (status $status, ${took} s)"
    cp "$log" "$work/failed.$(basename "$log")"
  fi
}
export -f run_suite
export bin limit exclude work
xargs -P "$jobs" -L 1 bash -c 'run_suite "$@"' _ < "$work/suites" |
  tee "$work/results"
failed=$(grep -c '^FAILED' "$work/results" || true)
total=$(wc -l < "$work/suites")
for log in "$work"/failed.*; do
  [ -e "$log" ] || continue
  echo "==== output of ${log#"$work"/failed.}"
  cat "$log"
done
echo "$(basename "$bin"): $((total - failed)) of $total processes passed"
[ "$failed" -eq 0 ]
