#!/usr/bin/env bash
# A markdown table of the runs scripts/experiments/wall_time.sh wrote to a TSV file:
# per configuration (rows in first-seen order) the median wall time
# (unsolved runs count as slower than every solved one; a median that falls
# on one is shown as "-"), the runs solved, the median steps of the solved
# runs, the best evaluation mean over all runs and each run's wall time
# (marked * where it did not solve: the whole budget).
#
# Usage: scripts/experiments/targets_table.sh RUNS.tsv
set -euo pipefail
[ $# -eq 1 ] || { echo "usage: $0 RUNS.tsv" >&2; exit 2; }
awk -F'\t' '
  NR == 1 { next }
  {
    if (!($1 in n)) order[++configs] = $1
    i = ++n[$1]
    wall[$1, i] = ($3 == 1) ? $4 : 1e18
    if ($3 == 1) { solved[$1]++; steps[$1, solved[$1]] = $5 }
    if (!($1 in best) || $6 + 0 > best[$1]) best[$1] = $6 + 0
    seeds[$1] = seeds[$1] (seeds[$1] == "" ? "" : " ") $4 ($3 == 1 ? "" : "*")
  }
  function median(arr, key, count,    k, j, t, v) {
    for (k = 1; k <= count; k++) v[k] = arr[key, k]
    for (k = 2; k <= count; k++)
      for (j = k; j > 1 && v[j - 1] > v[j]; j--) { t = v[j]; v[j] = v[j - 1]; v[j - 1] = t }
    return (count % 2) ? v[(count + 1) / 2] : (v[count / 2] + v[count / 2 + 1]) / 2
  }
  END {
    print "| configuration | median wall s | solved | median steps (solved) | best mean | wall s per seed |"
    print "| --- | --- | --- | --- | --- | --- |"
    for (c = 1; c <= configs; c++) {
      k = order[c]
      m = median(wall, k, n[k])
      ms = (m >= 1e17) ? "-" : sprintf("%.1f", m)
      st = solved[k] ? sprintf("%d", median(steps, k, solved[k])) : "-"
      printf "| %s | %s | %d/%d | %s | %s | %s |\n", k, ms, solved[k], n[k], st, best[k], seeds[k]
    }
    print ""
    print "\\* not solved: the wall time of the whole step budget."
  }' "$1"
