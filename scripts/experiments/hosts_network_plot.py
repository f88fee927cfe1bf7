#!/usr/bin/env python3
"""Bar chart of steps/s per link from hosts_network.sh tables.

Usage: hosts_network_plot.py OUT.svg LABEL=TABLE.md [LABEL=TABLE.md ...]

Each TABLE.md is the markdown table hosts_network.sh prints; each link
(rate and delay) gets one bar per table, labelled by LABEL in the legend.
"""
import sys
from xml.sax.saxutils import escape

COLORS = ["#9e9e9e", "#1f77b4", "#ff7f0e", "#2ca02c"]


def read_table(path):
    rows = []
    with open(path, encoding="utf-8") as f:
        for line in f:
            cells = [c.strip() for c in line.strip().strip("|").split("|")]
            if len(cells) < 4 or cells[0] in ("rate", "---"):
                continue
            rows.append((f"{cells[0]}, {cells[1]}", float(cells[3])))
    if not rows:
        sys.exit(f"hosts_network_plot: no rows in {path}")
    return rows


def main():
    if len(sys.argv) < 3 or any("=" not in a for a in sys.argv[2:]):
        sys.exit(__doc__.strip().splitlines()[2])
    series = []
    for arg in sys.argv[2:]:
        label, path = arg.split("=", 1)
        series.append((label, dict(read_table(path)), [k for k, _ in read_table(path)]))
    links = series[0][2]
    top = max(v for _, values, _ in series for v in values.values())
    width, height, left, bottom, top_pad = 760, 360, 70, 90, 40
    plot_w, plot_h = width - left - 20, height - bottom - top_pad
    group = plot_w / len(links)
    bar = group * 0.8 / len(series)
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
           'font-family="sans-serif" font-size="12">',
           f'<text x="{width / 2}" y="20" text-anchor="middle" font-size="14">'
           'Two hosts: steps/s by link (rate, one-way delay)</text>']
    for i in range(6):
        v = top * i / 5
        y = top_pad + plot_h - plot_h * i / 5
        out.append(f'<line x1="{left}" y1="{y:.1f}" x2="{width - 20}" y2="{y:.1f}" stroke="#ddd"/>')
        out.append(f'<text x="{left - 6}" y="{y + 4:.1f}" text-anchor="end">{v / 1000:.0f}k</text>')
    for g, link in enumerate(links):
        x0 = left + g * group + group * 0.1
        for s, (label, values, _) in enumerate(series):
            v = values.get(link, 0.0)
            h = plot_h * v / top
            x = x0 + s * bar
            out.append(f'<rect x="{x:.1f}" y="{top_pad + plot_h - h:.1f}" width="{bar - 2:.1f}" '
                       f'height="{h:.1f}" fill="{COLORS[s % len(COLORS)]}"/>')
        cx = left + g * group + group / 2
        rate, delay = link.split(", ", 1)
        out.append(f'<text x="{cx:.1f}" y="{top_pad + plot_h + 16}" text-anchor="middle">'
                   f'{escape(rate)}</text>')
        out.append(f'<text x="{cx:.1f}" y="{top_pad + plot_h + 31}" text-anchor="middle">'
                   f'{escape(delay)}</text>')
    for s, (label, _, _) in enumerate(series):
        y = height - 25
        x = left + s * 220
        out.append(f'<rect x="{x}" y="{y - 10}" width="12" height="12" fill="{COLORS[s % len(COLORS)]}"/>')
        out.append(f'<text x="{x + 18}" y="{y}">{escape(label)}</text>')
    out.append("</svg>")
    with open(sys.argv[1], "w", encoding="utf-8") as f:
        f.write("\n".join(out) + "\n")


if __name__ == "__main__":
    main()
