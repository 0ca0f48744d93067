#!/usr/bin/env python3
"""Pictures of the benchmarks' tables: PNG files drawn with matplotlib's Agg
backend (Debian's python3-matplotlib; no display needed), written beside the
text the scripts print. Every bench script that prints a table takes
`--plot FILE.png`; matplotlib is imported only then, and a missing one is
reported before the benchmark starts.

Two charts, both from a table (title, column names, rows):

  bars(...)   one group of bars per row (hvd beside its reference), the
              value on each bar, a ratio column written above its group
  lines(...)  values over a numeric column (message size, ranks) on log
              axes, one panel per op, the ratio in a second row of panels
              with a dashed line at 1

As a command, it plots a markdown table (the first one in the file, or the
first under a heading containing --section; '-' reads stdin), e.g. the
figures in bench/README.md:

    /usr/bin/python3 bench/plots.py bench/README.md out.png --section "Elastic recovery"
    /usr/bin/python3 bench/plots.py table.md out.png --kind lines --x 0 --ratio ratio
"""
import argparse
import math
import os
import re
import sys
import textwrap

# Cells like "0.062", "6.3 ±1.0", "2.193 (import torch: 0.870)", "16 MiB",
# "1.19x": the leading number, scaled by a size unit when one follows.
_NUMBER = re.compile(r"^\s*([-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?)"
                     r"(?:\s*(B|KiB|MiB|GiB|K|M|G)(?![A-Za-z]))?")
_UNITS = {None: 1, "B": 1, "K": 1 << 10, "KiB": 1 << 10, "M": 1 << 20, "MiB": 1 << 20,
          "G": 1 << 30, "GiB": 1 << 30}
_COLORS = ["#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2",
           "#7f7f7f"]


def unavailable_reason():
    """Why --plot cannot work here, or None."""
    try:
        import matplotlib  # noqa: F401
    except ImportError as e:
        return (f"matplotlib is not installed for {sys.executable} ({e}); "
                f"install python3-matplotlib (deploy/install-deps.sh --tests)")
    return None


def add_plot_argument(parser, what="its table"):
    parser.add_argument("--plot", metavar="FILE.png",
                        help=f"also write {what} as a PNG plot (matplotlib, bench/plots.py)")


def check_plot_argument(path, prog=None):
    """Exits at once, before a long benchmark, when `--plot FILE` cannot be written."""
    if not path:
        return
    prog = prog or os.path.basename(sys.argv[0])
    reason = unavailable_reason()
    if reason:
        sys.exit(f"{prog}: --plot: {reason}")
    folder = os.path.dirname(os.path.abspath(path))
    if not os.path.isdir(folder):
        sys.exit(f"{prog}: --plot: folder '{folder}' does not exist")


def number(cell):
    """The cell as a float (size units scaled to bytes), or None."""
    if cell is None:
        return None
    if isinstance(cell, (int, float)):
        return None if isinstance(cell, float) and math.isnan(cell) else float(cell)
    m = _NUMBER.match(str(cell).replace(",", ""))
    return float(m.group(1)) * _UNITS[m.group(2)] if m else None


def human_bytes(value):
    for unit, shift in (("GiB", 30), ("MiB", 20), ("KiB", 10)):
        if value >= 1 << shift:
            scaled = value / (1 << shift)
            return f"{scaled:g} {unit}" if scaled == int(scaled) else f"{scaled:.1f} {unit}"
    return f"{value:g} B"


def _pyplot():
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    return plt


def _column(columns, name):
    """Index of a column given by name or index."""
    if isinstance(name, int):
        return name
    try:
        return list(columns).index(name)
    except ValueError:
        raise ValueError(f"no column '{name}' in {list(columns)}") from None


def _as_list(value):
    if value is None:
        return []
    return [value] if isinstance(value, (str, int)) else list(value)


def _numeric_columns(columns, rows, skip):
    return [i for i in range(len(columns)) if i not in skip
            and any(number(r[i]) is not None for r in rows)]


def _title(fig, title):
    """The figure's title, wrapped to its width."""
    width = int(fig.get_figwidth() * 15)
    fig.suptitle("\n".join(w for line in str(title).splitlines()
                           for w in textwrap.wrap(line, width) or [""]),
                 fontsize=9, x=0.01, ha="left")


def _save(fig, path, note=None):
    if note:
        fig.text(0.01, 0.005, note, fontsize=7, color="#555555", ha="left", va="bottom")
    fig.savefig(path, dpi=100)
    import matplotlib.pyplot as plt
    plt.close(fig)
    return path


def _fmt(v):
    if v == 0:
        return "0"
    if abs(v) >= 100:
        return f"{v:.0f}"
    if abs(v) >= 10:
        return f"{v:.1f}"
    if abs(v) >= 1:
        return f"{v:.2f}"
    return f"{v:.3g}"


def bars(path, title, columns, rows, *, label=0, values=None, ratio=None, ylabel=None,
         note=None, per_row=False, wrap=18):
    """Grouped bars: one group per row, labelled by column `label`; one bar
    per column in `values` (default: every numeric column but `label` and
    `ratio`), its value written on it; the `ratio` column, if any, written
    above each group as "1.19x". per_row: one panel per row, each with its
    own scale (rows in different units). Returns `path`."""
    plt = _pyplot()
    li = _column(columns, label)
    ri = [_column(columns, r) for r in _as_list(ratio)]
    vi = ([_column(columns, v) for v in values] if values
          else _numeric_columns(columns, rows, {li, *ri}))
    labels = ["\n".join(w for line in str(r[li]).splitlines()
                        for w in textwrap.wrap(line, wrap)) or "-" for r in rows]
    if per_row:
        fig, axes = plt.subplots(1, len(rows), figsize=(max(4.0, 2.6 * len(rows)), 3.6),
                                 squeeze=False)
        panels = [(axes[0][i], [row], [labels[i]]) for i, row in enumerate(rows)]
    else:
        width = max(5.5, min(11.0, 1.1 + len(rows) * (0.45 * len(vi) + 0.6)))
        fig, axes = plt.subplots(figsize=(width, 3.8), squeeze=False)
        panels = [(axes[0][0], rows, labels)]
    for n, (ax, panel_rows, panel_labels) in enumerate(panels):
        step = 0.8 / max(1, len(vi))
        top = 0.0
        for k, i in enumerate(vi):
            xs = [g + (k - (len(vi) - 1) / 2) * step for g in range(len(panel_rows))]
            ys = [number(r[i]) for r in panel_rows]
            drawn = [(x, y) for x, y in zip(xs, ys) if y is not None]
            if not drawn:
                continue
            bar = ax.bar([x for x, _ in drawn], [y for _, y in drawn], step * 0.92,
                         color=_COLORS[k % len(_COLORS)], label=columns[i] if n == 0 else None)
            ax.bar_label(bar, labels=[_fmt(y) for _, y in drawn], fontsize=7, padding=1)
            top = max(top, max(y for _, y in drawn))
        for g, r in enumerate(panel_rows):
            text = "  ".join(f"{columns[i]} {_fmt(number(r[i]))}x" if len(ri) > 1
                             else f"{_fmt(number(r[i]))}x"
                             for i in ri if number(r[i]) is not None)
            if text:
                ax.annotate(text, (g, top * 1.12), ha="center", fontsize=8, fontweight="bold")
        ax.set_xticks(range(len(panel_rows)))
        ax.set_xticklabels(panel_labels, fontsize=8)
        ax.set_ylim(0, top * 1.25 if top > 0 else 1)
        ax.grid(axis="y", alpha=0.3)
        if ylabel and (n == 0 or per_row):
            ax.set_ylabel(ylabel if isinstance(ylabel, str) else ylabel[n], fontsize=8)
        ax.tick_params(axis="y", labelsize=8)
    if vi:
        axes[0][0].legend(loc="lower left", bbox_to_anchor=(0, 1), fontsize=7,
                          ncol=min(4, len(vi)), frameon=False)
    if ri:
        title += f"\n(above the bars: {', '.join(columns[i] for i in ri)})"
    _title(fig, title)
    fig.tight_layout(rect=(0, 0.03 if note else 0, 1, 0.98))
    return _save(fig, path, note)


def lines(path, title, columns, rows, *, x=0, values=None, ratio=None, group=None, series=None,
          logx=True, logy=True, xlabel=None, ylabel=None, bytes_x=None, markers=True, note=None,
          reference=1.0):
    """Lines over the numeric column `x`: one per column in `values` (and per
    distinct `series` value: rows in long format), one panel per distinct
    `group` value (e.g. the op); the `ratio` column(s) in a second row of
    panels with a dashed line at `reference`. bytes_x: label the x axis in
    KiB/MiB (default: when the column's name says bytes or size)."""
    plt = _pyplot()
    from matplotlib.ticker import FuncFormatter, LogLocator, NullFormatter
    xi = _column(columns, x)
    ri = [_column(columns, r) for r in _as_list(ratio)]
    gi = None if group is None else _column(columns, group)
    si = None if series is None else _column(columns, series)
    skip = {xi, *ri} | ({gi} if gi is not None else set()) | ({si} if si is not None else set())
    vi = [_column(columns, v) for v in values] if values else _numeric_columns(columns, rows, skip)
    if bytes_x is None:  # the column's name says so, or its cells carry a unit
        bytes_x = bool(re.search(r"byte|size|\(B\)", str(columns[xi]), re.I) or any(
            re.search(r"\d\s*(B|KiB|MiB|GiB)\b", str(r[xi])) for r in rows))
    xs = sorted({number(r[xi]) for r in rows if number(r[xi]) is not None})
    xticks = xs[::max(1, math.ceil(len(xs) / 8))]
    groups = [None] if gi is None else list(dict.fromkeys(r[gi] for r in rows))
    nrows = 2 if ri else 1
    fig, axes = plt.subplots(nrows, len(groups), squeeze=False, sharex="col",
                             figsize=(max(5.5, 3.6 * len(groups)), 3.4 + 1.8 * (nrows - 1)),
                             gridspec_kw={"height_ratios": [2.2, 1][:nrows]})

    def xfmt(v, _):
        return human_bytes(v) if bytes_x else f"{v:g}"

    for n, g in enumerate(groups):
        grows = [r for r in rows if gi is None or r[gi] == g]
        ax = axes[0][n]
        names = [None] if si is None else list(dict.fromkeys(r[si] for r in grows))
        k = 0
        for s in names:
            srows = [r for r in grows if si is None or r[si] == s]
            for i in vi:
                pts = sorted((number(r[xi]), number(r[i])) for r in srows
                             if number(r[xi]) is not None and number(r[i]) is not None)
                if not pts:
                    continue
                name = columns[i] if s is None else (str(s) if len(vi) == 1
                                                     else f"{s}: {columns[i]}")
                ax.plot([p[0] for p in pts], [p[1] for p in pts], marker="o" if markers else None,
                        markersize=3, linewidth=1.2, color=_COLORS[k % len(_COLORS)], label=name)
                k += 1
        if g is not None:
            ax.set_title(str(g), fontsize=9)
        if n == 0:
            ax.set_ylabel(ylabel or "", fontsize=8)
        ax.legend(fontsize=7, frameon=False)
        for i_ax, a in enumerate(axes[:, n]):
            if logx:
                a.set_xscale("log", base=2)
            if xticks and (logx or len(xs) <= 8):
                a.set_xticks(xticks)
            a.xaxis.set_major_formatter(FuncFormatter(xfmt))
            a.xaxis.set_minor_formatter(NullFormatter())
            a.grid(alpha=0.3, which="both" if i_ax == 0 else "major")
            a.tick_params(labelsize=7)
        if logy:
            ax.set_yscale("log")
            ax.yaxis.set_major_locator(LogLocator(base=10, subs=(1, 2, 5)))
            ax.yaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:g}"))
            ax.yaxis.set_minor_formatter(NullFormatter())
        if ri:
            rax = axes[1][n]
            drawn = 0
            for k, i in enumerate(ri):
                pts = sorted((number(r[xi]), number(r[i])) for r in grows
                             if number(r[xi]) is not None and number(r[i]) is not None)
                drawn += len(pts)
                # "allreduce / torch" takes the colour of the line "allreduce".
                same = [j for j, v in enumerate(vi) if si is None
                        and str(columns[i]).startswith(f"{columns[v]} ")]
                color = _COLORS[same[0] % len(_COLORS)] if same else _COLORS[-1 - k]
                if pts:
                    rax.plot([p[0] for p in pts], [p[1] for p in pts], marker="s", markersize=3,
                             linewidth=1.2, color=color, label=columns[i])
            rax.axhline(reference, color="black", linestyle="--", linewidth=0.8)
            if not drawn:
                rax.text(0.5, 0.5, "no ratio: no reference figures", transform=rax.transAxes,
                         ha="center", va="center", fontsize=8, color="#555555")
            if n == 0:
                rax.set_ylabel("ratio", fontsize=8)
            if len(ri) > 1 or n == 0:
                rax.legend(fontsize=7, frameon=False)
            rax.set_xlabel(xlabel or str(columns[xi]), fontsize=8)
        else:
            ax.set_xlabel(xlabel or str(columns[xi]), fontsize=8)
    _title(fig, title)
    fig.tight_layout(rect=(0, 0.03 if note else 0, 1, 0.98))
    return _save(fig, path, note)


def table(path, title, columns, rows, kind="bars", **options):
    """A table (title, column names, rows) as a PNG at `path`: kind 'bars' or
    'lines' (the options of bars() or lines()). Returns `path`."""
    if not rows:
        raise ValueError(f"{title}: no rows to plot")
    return {"bars": bars, "lines": lines}[kind](path, title, columns, rows, **options)


def wrote(path):
    """The scripts' one line about the file, on stderr (stdout stays the table)."""
    print(f"plot: wrote {path}", file=sys.stderr, flush=True)


# ---------------------------------------------------------------- markdown tables

def markdown_tables(text):
    """[(heading, columns, rows)] of every markdown table in `text`; heading:
    the last '#' line above it."""
    found, heading, block = [], "", []

    def flush():
        if len(block) >= 2 and set(block[1].replace("|", "").strip()) <= set("-: "):
            cells = [[c.strip().replace("`", "") for c in line.strip().strip("|").split("|")]
                     for line in block]
            found.append((heading, cells[0], [c for c in cells[2:] if len(c) == len(cells[0])]))
        block.clear()

    for line in text.splitlines():
        if line.lstrip().startswith("|"):
            block.append(line)
            continue
        flush()
        if line.startswith("#"):
            heading = line.lstrip("#").strip().replace("`", "")
    flush()
    return found


def main(argv=None):
    p = argparse.ArgumentParser(description="Plot a markdown table as a PNG.")
    p.add_argument("table", help="a markdown file ('-': stdin)")
    p.add_argument("out", help="the PNG to write")
    p.add_argument("--section", default="", help="the first table under a heading containing this")
    p.add_argument("--index", type=int, default=0, help="which table (after --section), from 0")
    p.add_argument("--kind", choices=("bars", "lines"), default="bars")
    p.add_argument("--title", help="default: the heading above the table")
    p.add_argument("--x", default="0", help="bars: the label column; lines: the x column")
    p.add_argument("--values", help="columns to draw, comma-separated (default: every numeric one)")
    p.add_argument("--ratio", help="ratio column(s), comma-separated")
    p.add_argument("--group", help="lines: one panel per value of this column")
    p.add_argument("--ylabel")
    p.add_argument("--linear", action="store_true", help="lines: linear axes")
    a = p.parse_args(argv)
    text = sys.stdin.read() if a.table == "-" else open(a.table, encoding="utf-8").read()
    tables = [t for t in markdown_tables(text) if a.section.lower() in t[0].lower()]
    if len(tables) <= a.index:
        sys.exit(f"plots: no table {a.index} under a heading containing '{a.section}'")
    heading, columns, rows = tables[a.index]

    def col(name):
        return int(name) if name.isdigit() else name

    options = {"ylabel": a.ylabel,
               "values": [col(v) for v in a.values.split(",")] if a.values else None,
               "ratio": [col(r) for r in a.ratio.split(",")] if a.ratio else None}
    if a.kind == "bars":
        options["label"] = col(a.x)
    else:
        options.update(x=col(a.x), group=col(a.group) if a.group else None,
                       logx=not a.linear, logy=not a.linear)
    table(a.out, a.title or heading, columns, rows, kind=a.kind, **options)
    wrote(a.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
