#!/usr/bin/env python3
"""Plots what each seed's run left, measured three ways, per task of a suite
directory (scripts/experiments/suite.sh): the best periodic evaluation (the
mean that chose best/), best/ and the final agent each evaluated on the same
100 fresh episodes with the greedy action (final_eval.tsv), and the task's
bar. Writes DIR/final-agents.svg.

Usage: scripts/experiments/final_agents_plot.py DIR
Only Python's standard library is used.
"""

import os
import sys

WIDTH, PANEL_H, TOP, LEFT = 760, 180, 64, 70
COLOURS = {"chosen": "#999999", "best": "#1f77b4", "final": "#d62728"}


def read_tsv(path):
    with open(path, encoding="utf-8") as f:
        lines = f.read().splitlines()
    header = lines[0].split("\t")
    return [dict(zip(header, line.split("\t"))) for line in lines[1:]]


def main():
    if len(sys.argv) != 2:
        raise SystemExit("usage: scripts/experiments/final_agents_plot.py DIR")
    root = sys.argv[1]
    tasks = []
    with open(os.path.join(root, "tasks.tsv"), encoding="utf-8") as f:
        for line in f:
            name, bar = line.split("\t")[:2]
            tasks.append((name, float(bar)))
    height = TOP + PANEL_H * len(tasks) + 20
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{WIDTH}" '
           f'height="{height}" font-family="sans-serif" font-size="11">',
           '<rect width="100%" height="100%" fill="white"/>']
    legend = [("chosen", "best periodic evaluation (10 episodes, as the run evaluates)"),
              ("best", "best/, 100 fresh episodes, greedy"),
              ("final", "final agent, 100 fresh episodes, greedy")]
    for i, (key, text) in enumerate(legend):
        y = 14 + 16 * i
        out.append(f'<circle cx="{LEFT}" cy="{y}" r="4" fill="{COLOURS[key]}"/>')
        out.append(f'<text x="{LEFT + 8}" y="{y + 4}">{text}</text>')
    for t, (task, bar) in enumerate(tasks):
        task_dir = os.path.join(root, "runs", task)
        if not os.path.isdir(task_dir):
            continue
        seeds = sorted(os.listdir(task_dir), key=int)
        points = []
        for seed in seeds:
            rows = read_tsv(os.path.join(task_dir, seed, "final_eval.tsv"))
            greedy = {r["agent"]: r for r in rows if r["action"] == "deterministic"}
            chosen = greedy.get("best", {}).get("chosen_score")
            points.append((seed,
                           float(chosen) if chosen else None,
                           float(greedy["best"]["mean"]) if "best" in greedy else None,
                           float(greedy["final"]["mean"]) if "final" in greedy else None))
        values = [v for p in points for v in p[1:] if v is not None] + [bar]
        lo, hi = min(values), max(values)
        pad = (hi - lo) * 0.1 or 1.0
        lo, hi = lo - pad, hi + pad
        y0 = TOP + t * PANEL_H
        plot_h = PANEL_H - 60

        def py(v):
            return y0 + 24 + plot_h * (hi - v) / (hi - lo)

        out.append(f'<text x="{LEFT}" y="{y0 + 12}" font-weight="bold">{task}</text>')
        out.append(f'<line x1="{LEFT}" x2="{WIDTH - 20}" y1="{py(bar):.1f}" '
                   f'y2="{py(bar):.1f}" stroke="#444" stroke-dasharray="4 3"/>')
        out.append(f'<text x="{WIDTH - 20}" y="{py(bar) - 3:.1f}" text-anchor="end">'
                   f'bar {bar:g}</text>')
        for v in (lo + pad, hi - pad):
            out.append(f'<text x="{LEFT - 6}" y="{py(v) + 4:.1f}" text-anchor="end">'
                       f'{v:.4g}</text>')
        step = (WIDTH - LEFT - 40) / max(len(points), 1)
        for k, (seed, chosen, best, final) in enumerate(points):
            x = LEFT + 20 + step * k
            out.append(f'<text x="{x + 12:.1f}" y="{y0 + PANEL_H - 20}" '
                       f'text-anchor="middle">seed {seed}</text>')
            for dx, key, v in ((0, "chosen", chosen), (12, "best", best),
                               (24, "final", final)):
                if v is not None:
                    out.append(f'<circle cx="{x + dx:.1f}" cy="{py(v):.1f}" r="4" '
                               f'fill="{COLOURS[key]}"/>')
    out.append("</svg>")
    with open(os.path.join(root, "final-agents.svg"), "w", encoding="utf-8") as f:
        f.write("\n".join(out) + "\n")


if __name__ == "__main__":
    main()
