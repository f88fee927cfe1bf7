#!/usr/bin/env python3
"""Plots scripts/experiments/learner_ab.sh's and learner_games_ab.sh's runs:
per task (DIR/<task>/<mode>/seed*/<run>/scores.txt), a scores.txt column
(the evaluation mean unless COLUMN is given: a game's loss_minimax or
judge) of every seed's run against the steps and against the training time
(scores.txt's elapsed), Hogwild and --learner, with each mode's median over
the seeds in bold. Writes OUT (DIR/learner-ab.svg unless given).

Usage: scripts/experiments/learner_plot.py DIR [COLUMN [OUT]]
Only Python's standard library is used.
"""

import glob
import os
import statistics
import sys

PANEL_W, PANEL_H, TOP, LEFT, GAP = 340, 200, 56, 64, 70
COLOURS = {"hogwild": "#1f77b4", "learner": "#d62728"}


def read_scores(path, column):
    with open(path, encoding="utf-8") as f:
        lines = f.read().splitlines()
    header = lines[0].split("\t")
    if column not in header:
        return None  # Another task's column (a game's judge).
    rows = [dict(zip(header, line.split("\t"))) for line in lines[1:]]
    return [(float(r["steps"]), float(r["elapsed"]), float(r[column]))
            for r in rows]


def runs(root, task, mode, column):
    out = []
    for path in sorted(glob.glob(os.path.join(root, task, mode, "seed*", "*",
                                              "scores.txt"))):
        curve = read_scores(path, column)
        if curve:
            out.append(curve)
    return out


def median_curve(curves, axis):
    n = min(len(c) for c in curves)
    return [(statistics.median(c[i][axis] for c in curves),
             statistics.median(c[i][2] for c in curves)) for i in range(n)]


def polyline(points, sx, sy, colour, width, opacity):
    pts = " ".join(f"{sx(x):.1f},{sy(y):.1f}" for x, y in points)
    return (f'<polyline points="{pts}" fill="none" stroke="{colour}" '
            f'stroke-width="{width}" stroke-opacity="{opacity}"/>')


def panel(x0, y0, title, xlabel, data, axis):
    xmax = max(p[axis] for curves in data.values() for c in curves for p in c)
    ymax = max(p[2] for curves in data.values() for c in curves for p in c)
    ymax = ymax * 1.05 or 1.0
    sx = lambda x: x0 + x / xmax * PANEL_W
    sy = lambda y: y0 + PANEL_H - y / ymax * PANEL_H
    svg = [f'<rect x="{x0}" y="{y0}" width="{PANEL_W}" height="{PANEL_H}" '
           'fill="none" stroke="#888"/>',
           f'<text x="{x0}" y="{y0 - 8}" font-size="13">{title}</text>',
           f'<text x="{x0 + PANEL_W / 2}" y="{y0 + PANEL_H + 32}" '
           f'font-size="11" text-anchor="middle">{xlabel}</text>']
    for i in range(5):
        y = ymax * i / 4
        svg.append(f'<text x="{x0 - 6}" y="{sy(y) + 4:.1f}" font-size="10" '
                   f'text-anchor="end">{y:.3g}</text>')
        x = xmax * i / 4
        label = f"{x / 1e6:.3g}M" if axis == 0 else f"{x:.0f} s"
        svg.append(f'<text x="{sx(x):.1f}" y="{y0 + PANEL_H + 14}" '
                   f'font-size="10" text-anchor="middle">{label}</text>')
    for mode, curves in data.items():
        for c in curves:
            svg.append(polyline([(p[axis], p[2]) for p in c], sx, sy,
                                COLOURS[mode], 1, 0.35))
        svg.append(polyline(median_curve(curves, axis), sx, sy,
                            COLOURS[mode], 2.5, 1))
    return svg


def main():
    if not 2 <= len(sys.argv) <= 4:
        raise SystemExit(
            "usage: scripts/experiments/learner_plot.py DIR [COLUMN [OUT]]")
    root = sys.argv[1]
    column = sys.argv[2] if len(sys.argv) > 2 else "mean"
    path = (sys.argv[3] if len(sys.argv) > 3 else
            os.path.join(root, "learner-ab.svg"))
    tasks = sorted(d for d in os.listdir(root)
                   if os.path.isdir(os.path.join(root, d)))
    # Per task, the modes with runs that have the column.
    plotted = []
    for task in tasks:
        data = {mode: runs(root, task, mode, column) for mode in COLOURS}
        data = {m: c for m, c in data.items() if c}
        if data:
            plotted.append((task, data))
    if not plotted:
        raise SystemExit(f"learner_plot: no run under {root} has a scores.txt "
                         f"column {column!r}; accepted: a column of their "
                         "scores.txt header (mean, judge, loss_minimax, ...)")
    width = LEFT + 2 * PANEL_W + GAP + 20
    height = TOP + len(plotted) * (PANEL_H + GAP)
    svg = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" '
           f'height="{height}" font-family="sans-serif">',
           f'<rect width="{width}" height="{height}" fill="white"/>',
           f'<text x="{LEFT}" y="20" font-size="14">Evaluation {column}, '
           'each seed thin, median bold</text>']
    x = LEFT
    for mode, colour in COLOURS.items():
        name = "Hogwild" if mode == "hogwild" else "--learner"
        svg.append(f'<text x="{x}" y="38" font-size="12" fill="{colour}">'
                   f'{name}</text>')
        x += 140
    for i, (task, data) in enumerate(plotted):
        y0 = TOP + 20 + i * (PANEL_H + GAP)
        svg += panel(LEFT, y0, f"{task}: against steps", "steps", data, 0)
        svg += panel(LEFT + PANEL_W + GAP, y0, f"{task}: against time",
                     "training time", data, 1)
    svg.append("</svg>")
    with open(path, "w", encoding="utf-8") as f:
        f.write("\n".join(svg) + "\n")
    print(f"learner_plot: {path}")


if __name__ == "__main__":
    main()
