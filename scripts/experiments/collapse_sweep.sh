#!/usr/bin/env bash
# Many workers and the collapsed policy (docs/results/2026-12-06-many-workers.md):
# CartPole-v1 runs to an evaluation mean of 475 within 2M steps, one line per
# run appended to docs/collapse/runs.tsv.
#
#   scripts/experiments/collapse_sweep.sh TAG PROCESSES "SEEDS" [train_a3c flags...]
#   scripts/experiments/collapse_sweep.sh --summary [runs.tsv]   (table; also draws
#       docs/collapse/reached.svg: the share of runs that reached 475 against
#       --lr, per --rmsprop-epsilon and number of processes)
#
# e.g. scripts/experiments/collapse_sweep.sh lr6e-3 16 "0 1 2 3 4 5" --lr 6e-3
# PREFIX is put before the command (e.g. PREFIX="taskset -c 0").
# A run counts as collapsed when its last average_entropy is below 1e-3
# (CartPole's two actions: ln 2 = 0.69 is uniform).
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
tsv=${TSV:-$root/docs/collapse/runs.tsv}
if [[ ${1:-} == --summary ]]; then
  python3 - "${2:-$tsv}" <<'PY'
import csv, statistics, sys
groups = {}
for row in csv.DictReader(open(sys.argv[1]), delimiter="\t"):
    groups.setdefault((row["tag"], row["processes"]), []).append(row)
print("tag\tprocesses\truns\treached_475\tcollapsed\tmedian_steps_to_475")
for (tag, procs), rows in groups.items():
    # A run that never reached 475 counts as slower than any that did.
    steps = [float(r["reached_475_at"]) if r["reached_475_at"] != "-"
             else float("inf") for r in rows]
    med = statistics.median(steps)
    print("\t".join([tag, procs, str(len(rows)),
                     str(sum(r["reached_475_at"] != "-" for r in rows)),
                     str(sum(float(r["final_entropy"]) < 1e-3 for r in rows)),
                     "> 2M" if med > 2e6 else "%.0fk" % (med / 1000)]))

# The plot: tags "defaults", "lr<LR>", "eps<EPS>", "lr<LR>-eps<EPS>".
import math, os, re
curves = {}
for (tag, procs), rows in groups.items():
    m = re.fullmatch(r"(?:lr([0-9.]+e-[0-9]+))?-?(?:eps([0-9.]+(?:e-[0-9]+)?))?", tag)
    if tag != "defaults" and not (m and (m.group(1) or m.group(2))):
        continue
    lr = float(m.group(1)) if tag != "defaults" and m.group(1) else 2e-3
    eps = m.group(2) if tag != "defaults" and m.group(2) else "1e-5"
    share = sum(r["reached_475_at"] != "-" for r in rows) / len(rows)
    curves.setdefault((eps, int(procs)), {}).setdefault(lr, []).append(
        (share, len(rows)))
W, H, L, B = 560, 320, 60, 40
def x(lr): return L + (math.log10(lr) - math.log10(1.5e-3)) / (math.log10(3e-2) - math.log10(1.5e-3)) * (W - L - 150)
def y(f): return H - B - f * (H - B - 20)
colors = {2: "#1b9e77", 16: "#d95f02", 64: "#7570b3", 32: "#e7298a"}
out = ['<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" font-family="sans-serif" font-size="11">' % (W, H),
       '<rect width="100%" height="100%" fill="white"/>',
       '<text x="%d" y="14">CartPole-v1: share of runs reaching 475 within 2M steps</text>' % L]
for f in (0, 0.5, 1):
    out.append('<line x1="%d" x2="%d" y1="%.1f" y2="%.1f" stroke="#ddd"/><text x="%d" y="%.1f" text-anchor="end">%g</text>' % (L, W - 150, y(f), y(f), L - 4, y(f) + 4, f))
for lr in (2e-3, 6e-3, 1.2e-2, 2.4e-2):
    out.append('<text x="%.1f" y="%d" text-anchor="middle">%g</text>' % (x(lr), H - B + 16, lr))
out.append('<text x="%d" y="%d" text-anchor="middle">--lr</text>' % ((L + W - 150) / 2, H - 6))
ly = 40
for (eps, procs), pts in sorted(curves.items()):
    xs = sorted(pts)
    dash = {"1e-3": "", "0.1": ' stroke-dasharray="1,3"'}.get(eps, ' stroke-dasharray="5,3"')
    shares = [sum(a * n for a, n in pts[v]) / sum(n for a, n in pts[v]) for v in xs]
    out.append('<polyline fill="none" stroke="%s" stroke-width="2"%s points="%s"/>' % (
        colors.get(procs, "#666"), dash, " ".join("%.1f,%.1f" % (x(v), y(f)) for v, f in zip(xs, shares))))
    for v, f in zip(xs, shares):
        out.append('<circle cx="%.1f" cy="%.1f" r="3" fill="%s"/>' % (x(v), y(f), colors.get(procs, "#666")))
    out.append('<line x1="%d" x2="%d" y1="%d" y2="%d" stroke="%s" stroke-width="2"%s/><text x="%d" y="%d">eps %s, %d processes</text>' % (
        W - 140, W - 115, ly, ly, colors.get(procs, "#666"), dash, W - 110, ly + 4, eps, procs))
    ly += 16
out.append("</svg>")
svg = os.path.join(os.path.dirname(os.path.abspath(sys.argv[1])), "reached.svg")
open(svg + ".tmp", "w").write("\n".join(out) + "\n")
os.replace(svg + ".tmp", svg)
PY
  exit 0
fi
tag=$1 procs=$2 seeds=$3
shift 3
bin=${TRAIN_A3C:-$root/build/apps/train_a3c}
[[ -f $tsv ]] || printf 'tag\tprocesses\tseed\treached_475_at\tbest\tfinal_entropy\tpolicy_lag_mean\tpolicy_lag_max\telapsed_s\tflags\n' > "$tsv"
for seed in $seeds; do
  out=$(mktemp -d)
  ${PREFIX:-} "$bin" --processes "$procs" --steps 2000000 --seed "$seed" \
    --successful-score 475 --eval-interval 20000 --collapse-entropy 0 \
    --quiet --outdir "$out" "$@" > "$out/log" 2>&1 || {
    echo "run failed (tag $tag, seed $seed): $out/log" >&2; exit 1; }
  scores=$(ls -d "$out"/*/ | head -1)scores.txt
  awk -F'\t' -v tag="$tag" -v P="$procs" -v s="$seed" -v f="$*" '
    NR == 1 { for (i = 1; i <= NF; i++) c[$i] = i; next }
    { if ($c["mean"] > best) best = $c["mean"]
      if (!reach && $c["mean"] >= 475) reach = $c["steps"]
      ent = $c["average_entropy"]; lag += $c["policy_lag"]; n++; w = $c["elapsed"]
      if ($c["policy_lag_max"] > lm) lm = $c["policy_lag_max"] }
    END { printf "%s\t%d\t%d\t%s\t%.1f\t%.3g\t%.1f\t%d\t%.1f\t%s\n", tag, P, s,
            (reach ? reach : "-"), best, ent, lag / n, lm, w, f }' \
    "$scores" | tee -a "$tsv"
  rm -rf "$out"
done
