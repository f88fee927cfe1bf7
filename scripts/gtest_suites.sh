#!/usr/bin/env bash
# Runs a GoogleTest binary one test suite per process, JOBS suites at a
# time, each within TIMEOUT seconds; prints one line per suite and, for a
# suite that failed, its output. Exits 1 when any suite failed.
# Usage: scripts/gtest_suites.sh BINARY JOBS TIMEOUT [NEGATIVE_FILTER]
#
# Why (scripts/sanitize.sh): ctest runs every test in a process of its
# own, and under AddressSanitizer each start of a binary that links
# LibTorch costs seconds (LibTorch's static initialisers through ASan's
# allocator, LeakSanitizer's scan at exit): with ~760 tests that was most of
# the sanitizer stage's time. A suite's tests share one process, as they do
# whenever the binary is run by hand.
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
# Suites with the most tests first, so that the long ones start early.
"$bin" --gtest_list_tests |
  awk '/^[^ ]/ { sub(/\..*$/, ""); suite = $0; next }
       /^  / { count[suite]++ }
       END { for (s in count) print count[s], s }' |
  sort -k1,1nr -k2 | awk '{ print $2 }' > "$work/suites"
run_suite() {
  local suite=$1
  local log=$work/$(printf '%s' "$suite" | tr '/' '_').log
  local filter="$suite.*"
  [ -n "$exclude" ] && filter="$filter-$exclude"
  local start=$SECONDS status=0
  timeout --kill-after=10 "$limit" "$bin" --gtest_filter="$filter" \
    > "$log" 2>&1 || status=$?
  local took=$((SECONDS - start))
  if [ "$status" -eq 0 ]; then
    echo "ok     $suite (${took} s)"
  else
    [ "$status" -eq 124 ] && echo "timeout after ${limit} s" >> "$log"
    echo "FAILED $suite (status $status, ${took} s)"
    cp "$log" "$work/failed.$(basename "$log")"
  fi
}
export -f run_suite
export bin limit exclude work
xargs -P "$jobs" -I{} bash -c 'run_suite "$1"' _ {} < "$work/suites" |
  tee "$work/results"
failed=$(grep -c '^FAILED' "$work/results" || true)
total=$(wc -l < "$work/suites")
for log in "$work"/failed.*; do
  [ -e "$log" ] || continue
  echo "==== output of ${log#"$work"/failed.}"
  cat "$log"
done
echo "$(basename "$bin"): $((total - failed)) of $total suites passed"
[ "$failed" -eq 0 ]
