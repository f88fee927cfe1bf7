#!/usr/bin/env python3
"""Summarises the runs of scripts/experiments/suite.sh: one table and one SVG per task.

Usage: scripts/experiments/suite_report.py DIR
DIR holds DIR/tasks.tsv (task, bar, budget, whether runs stop at the bar,
flags: written by suite.sh) and
DIR/runs/<task>/<seed>/scores.txt plus DIR/runs/<task>/<seed>/wall_s (the
whole process's wall time) and, where train_a3c wrote one,
DIR/runs/<task>/<seed>/final_eval.tsv (the final agent and best/ evaluated
on fresh episodes when the run ended). Writes DIR/README.md (the table) and
DIR/<task>.svg (every seed's evaluation means against steps, the bar dashed).

Per task and seed: "best" is the best evaluation mean, "final" the mean of
the last three evaluations (fewer if the run has fewer), "final agent,
fresh" and "best/, fresh" the final_eval.tsv means (greedy and sampled
actions), "steps to bar" and
"time to bar" the step and the elapsed seconds (scores.txt's own clock,
start-up excluded) of the first evaluation whose mean reaches the bar.
Across seeds: median, interquartile mean (IQM: the mean of the middle half,
a quarter trimmed from each end, as rliable computes it) and a 95% percentile
bootstrap interval of the IQM (10,000 resamples of the seeds, a generator
seeded 0 for each interval, so an interval depends on its values alone: the
file is the same on every run of the report, whatever the tasks' order).
Only Python's standard library is used.
"""

import math
import os
import random
import statistics
import sys

BOOTSTRAP_SAMPLES = 10000


def read_scores(path):
    """Rows of (steps, elapsed, mean, train) from a scores.txt; train is the
    train_mean column (the mean return of the last 100 training episodes),
    None where the file has no such column or the cell is nan."""
    rows = []
    with open(path, encoding="utf-8") as f:
        header = f.readline().rstrip("\n").split("\t")
        col = {name: i for i, name in enumerate(header)}
        for name in ("steps", "elapsed", "mean"):
            if name not in col:
                raise SystemExit(f"{path}: header has no '{name}' column: {header}")
        for line in f:
            fields = line.rstrip("\n").split("\t")
            if len(fields) < len(header):
                continue
            train = None
            if "train_mean" in col:
                train = float(fields[col["train_mean"]])
                if math.isnan(train):
                    train = None
            rows.append((int(fields[col["steps"]]), float(fields[col["elapsed"]]),
                         float(fields[col["mean"]]), train))
    return rows


def iqm(values):
    """Mean of the middle half: floor(n/4) values trimmed from each end."""
    v = sorted(values)
    k = len(v) // 4
    middle = v[k:len(v) - k]
    return sum(middle) / len(middle)


def bootstrap_interval(values, rng):
    """95% percentile bootstrap interval of the IQM."""
    n = len(values)
    stats = sorted(iqm([values[rng.randrange(n)] for _ in range(n)])
                   for _ in range(BOOTSTRAP_SAMPLES))
    return stats[int(0.025 * BOOTSTRAP_SAMPLES)], stats[int(0.975 * BOOTSTRAP_SAMPLES) - 1]


def fmt(v):
    if v is None or (isinstance(v, float) and math.isinf(v)):
        return "-"
    if abs(v) >= 1000:
        return f"{v:,.0f}"
    if abs(v) >= 100:
        return f"{v:.1f}"
    return f"{v:.2f}"


def summary(values):
    lo, hi = bootstrap_interval(values, random.Random(0))
    return f"{fmt(statistics.median(values))} / {fmt(iqm(values))} [{fmt(lo)}, {fmt(hi)}]"


def median_reached(values):
    """Median where None (never reached) sorts after everything."""
    v = sorted(values, key=lambda x: math.inf if x is None else x)
    m = v[len(v) // 2] if len(v) % 2 else None
    if len(v) % 2 == 0:
        a, b = v[len(v) // 2 - 1], v[len(v) // 2]
        m = None if a is None or b is None else (a + b) / 2
    return m


def svg(task, bar, budget, runs):
    width, height, left, right, top, bottom = 720, 420, 80, 110, 40, 50
    points = [(s, m) for _, rows in runs for s, _, m, _ in rows]
    trains = [t for _, rows in runs for _, _, _, t in rows if t is not None]
    ys = [m for _, m in points] + trains + [bar]
    y0, y1 = min(ys), max(ys)
    if y1 == y0:
        y1 = y0 + 1
    pad = 0.05 * (y1 - y0)
    y0, y1 = y0 - pad, y1 + pad
    x1 = max([budget] + [s for s, _ in points])

    def px(s):
        return left + (width - left - right) * s / x1

    def py(m):
        return top + (height - top - bottom) * (1 - (m - y0) / (y1 - y0))

    colours = ["#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd",
               "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22", "#17becf"]
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
           f'font-family="sans-serif" font-size="12">',
           f'<rect width="{width}" height="{height}" fill="white"/>',
           f'<text x="{left}" y="24" font-size="14">{task}: evaluation mean per seed '
           f'(bar {fmt(bar)} dashed'
           f'{"; dotted: mean of the last 100 training episodes" if trains else ""})'
           f'</text>']
    for i in range(6):
        s = x1 * i / 5
        out.append(f'<text x="{px(s):.1f}" y="{height - bottom + 18}" '
                   f'text-anchor="middle">{s:,.0f}</text>')
        m = y0 + (y1 - y0) * i / 5
        out.append(f'<text x="{left - 6}" y="{py(m) + 4:.1f}" text-anchor="end">{fmt(m)}</text>')
        out.append(f'<line x1="{left}" x2="{width - right}" y1="{py(m):.1f}" y2="{py(m):.1f}" '
                   f'stroke="#eee"/>')
    out.append(f'<text x="{(left + width - right) / 2}" y="{height - 10}" '
               f'text-anchor="middle">steps</text>')
    out.append(f'<rect x="{left}" y="{top}" width="{width - left - right}" '
               f'height="{height - top - bottom}" fill="none" stroke="#444"/>')
    out.append(f'<line x1="{left}" x2="{width - right}" y1="{py(bar):.1f}" y2="{py(bar):.1f}" '
               f'stroke="#000" stroke-dasharray="6,4"/>')
    for i, (seed, rows) in enumerate(runs):
        colour = colours[i % len(colours)]
        path = " ".join(f"{px(s):.1f},{py(m):.1f}" for s, _, m, _ in rows)
        out.append(f'<polyline points="{path}" fill="none" stroke="{colour}" stroke-width="1.5"/>')
        train_path = " ".join(f"{px(s):.1f},{py(t):.1f}" for s, _, _, t in rows
                              if t is not None)
        if train_path:
            out.append(f'<polyline points="{train_path}" fill="none" stroke="{colour}" '
                       f'stroke-width="1" stroke-dasharray="2,3"/>')
        y = top + 16 * (i + 1)
        out.append(f'<line x1="{width - right + 10}" x2="{width - right + 30}" y1="{y - 4}" '
                   f'y2="{y - 4}" stroke="{colour}" stroke-width="2"/>')
        out.append(f'<text x="{width - right + 35}" y="{y}">seed {seed}</text>')
    out.append("</svg>")
    return "\n".join(out) + "\n"


def read_final_eval(path):
    """{(agent, action): mean} of a final_eval.tsv, {} if there is none."""
    if not os.path.exists(path):
        return {}
    out = {}
    with open(path, encoding="utf-8") as f:
        header = f.readline().rstrip("\n").split("\t")
        for line in f:
            row = dict(zip(header, line.rstrip("\n").split("\t")))
            out[(row["agent"], row["action"])] = float(row["mean"])
    return out


def fresh_text(evals, agent, action, seeds):
    """The summary of one final_eval.tsv figure over the seeds that have it."""
    values = [e[(agent, action)] for e in evals if (agent, action) in e]
    if not values:
        return "-"
    text = summary(values)
    if len(values) < seeds:
        text += f" ({len(values)} seeds)"
    return text


def main():
    if len(sys.argv) != 2:
        raise SystemExit("usage: scripts/experiments/suite_report.py DIR")
    root = sys.argv[1]
    tasks_path = os.path.join(root, "tasks.tsv")
    if not os.path.exists(tasks_path):
        raise SystemExit(f"{tasks_path}: missing; run scripts/experiments/suite.sh first")
    lines = ["| task | bar | within | seeds reaching | best: median / IQM [95% CI] | "
             "final (last 3): median / IQM [95% CI] | "
             "final, training (last 100 episodes): median / IQM [95% CI] | "
             "final agent, fresh episodes (greedy / sampled): median / IQM [95% CI] | "
             "best/, fresh episodes (greedy / sampled): median / IQM [95% CI] | "
             "steps to bar (median) | "
             "time to bar (median, s) | whole run (median, s) |",
             "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |"]
    commands = []
    curve_tasks = []
    with open(tasks_path, encoding="utf-8") as f:
        for line in f:
            task, bar, budget, stop, flags = line.rstrip("\n").split("\t", 4)
            bar, budget = float(bar), int(budget)
            task_dir = os.path.join(root, "runs", task)
            if not os.path.isdir(task_dir):
                continue
            runs = []
            for seed in sorted(os.listdir(task_dir), key=int):
                scores = os.path.join(task_dir, seed, "scores.txt")
                if os.path.exists(scores):
                    rows = read_scores(scores)
                    if rows:
                        runs.append((seed, rows))
            if not runs:
                continue
            best = [max(m for _, _, m, _ in rows) for _, rows in runs]
            final = [statistics.fmean(m for _, _, m, _ in rows[-3:]) for _, rows in runs]
            # The paper's measure at the run's end: the last row's window.
            final_train = [rows[-1][3] for _, rows in runs if rows[-1][3] is not None]
            reach = [next(((s, e) for s, e, m, _ in rows if m >= bar and s <= budget), None)
                     for _, rows in runs]
            walls = []
            for seed, _ in runs:
                with open(os.path.join(task_dir, seed, "wall_s"), encoding="utf-8") as w:
                    walls.append(float(w.read()))
            reached = sum(r is not None for r in reach)
            steps_to = median_reached([r[0] if r else None for r in reach])
            time_to = median_reached([r[1] if r else None for r in reach])
            steps_text = fmt(float(steps_to)) if steps_to is not None else "not reached"
            time_text = fmt(time_to) if time_to is not None else "not reached"
            final_text = (summary(final) if stop != "yes"
                          else "- (stops at the bar)")
            if stop == "yes":
                train_text = "- (stops at the bar)"
            elif not final_train:
                train_text = "- (not recorded)"
            else:
                train_text = summary(final_train)
                if len(final_train) < len(runs):
                    train_text += f" ({len(final_train)} seeds)"
            evals = [read_final_eval(os.path.join(task_dir, seed, "final_eval.tsv"))
                     for seed, _ in runs]
            fresh = (fresh_text(evals, "final", "deterministic", len(runs)) + " / " +
                     fresh_text(evals, "final", "sampled", len(runs)))
            fresh_best = (fresh_text(evals, "best", "deterministic", len(runs)) + " / " +
                          fresh_text(evals, "best", "sampled", len(runs)))
            lines.append(f"| {task} | {fmt(bar)} | {budget:,} | {reached}/{len(runs)} | "
                         f"{summary(best)} | {final_text} | {train_text} | {fresh} | "
                         f"{fresh_best} | {steps_text} | "
                         f"{time_text} | {fmt(statistics.median(walls))} |")
            commands.append(f"- {task}: `train_a3c {flags} --seed S` "
                            f"(seeds {', '.join(s for s, _ in runs)})")
            with open(os.path.join(root, f"{task}.svg"), "w", encoding="utf-8") as out:
                out.write(svg(task, bar, budget, runs))
            curve_tasks.append(task)
    with open(os.path.join(root, "README.md"), "w", encoding="utf-8") as out:
        out.write("# The benchmark suite (written by scripts/experiments/suite_report.py)\n\n")
        out.write("\n".join(lines) + "\n\n")
        out.write("Median / IQM [95% bootstrap interval of the IQM] over the seeds; "
                  "\"final\" is the mean of the last three evaluations, \"final, "
                  "training\" scores.txt's `train_mean` in its last row: the mean "
                  "return of the last 100 training episodes (the MinAtar paper's "
                  "measure; exploring, in the environment's units); \"fresh "
                  "episodes\" the agent the run ended with (\"final agent\": "
                  "<steps>_finish/ or successful/) and best/, each evaluated when "
                  "the run ended on the same fresh episodes (train_a3c's "
                  "`--final-eval-n-runs`, 100 by default; final_eval.tsv), free of "
                  "the selection that flatters \"best\"; steps and time "
                  "to the bar are medians over all seeds, a seed that never reaches it "
                  "counting as slower than any that does. Time to bar is scores.txt's "
                  "`elapsed` (training only); the whole run includes start-up and the "
                  "evaluations after the bar. Each task's curves: `<task>.svg`, "
                  "below.\n\n")
        out.write("Commands (`--outdir` and `--quiet` added by scripts/experiments/suite.sh):\n\n")
        out.write("\n".join(commands) + "\n")
        out.write("\n## Curves\n\nEvery seed's evaluation means against steps; "
                  "the bar dashed.\n\n")
        for task in curve_tasks:
            out.write(f"![{task}]({task}.svg)\n\n")


if __name__ == "__main__":
    main()
