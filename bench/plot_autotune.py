#!/usr/bin/env python3
"""A picture of an autotune search, from the log `hvdrun --autotune
--autotune-log-file LOG` writes (docs/autotune.md, "Log"):

    /usr/bin/python3 bench/plot_autotune.py LOG.csv OUT.png [--title TEXT]

Top: each sample's score (GB/s of busy time) by phase (warmup, baseline,
trial, confirm), the median of each point's samples as a bar across them,
the defaults' median with the measured noise as a band, and the samples of
the point the search settled on ringed. Below: the parameters each sample
ran with (fusion threshold, cycle time, and the transport's chunk where it
has one), with the settled value dashed. A log without its `# settled:` line
(a job still tuning, or one that ended first) is drawn as far as it goes.
Needs matplotlib (python3-matplotlib); the Agg backend, no display.
"""
import argparse
import csv
import os
import re
import statistics
import sys
import textwrap

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import plots  # noqa: E402

HEADER = ["sample", "phase", "fusion_threshold", "cycle_time_ms", "chunk_bytes",
          "score_bytes_per_s"]
PHASES = {"warmup": "#9e9e9e", "baseline": "#1f77b4", "trial": "#ff7f0e", "confirm": "#2ca02c"}
PARAMETERS = [("fusion_threshold", "fusion threshold", plots.human_bytes),
              ("cycle_time_ms", "cycle time", lambda v: f"{v:g} ms"),
              ("chunk_bytes", "chunk", plots.human_bytes)]


def read_log(path):
    """(samples, settled): samples as dicts of numbers (phase a string);
    settled: the text after '# settled: ', or None."""
    samples, settled = [], None
    with open(path, encoding="utf-8") as f:
        lines = f.read().splitlines()
    if not lines or lines[0].strip().split(",") != HEADER:
        raise ValueError(f"{path}: not an autotune log (first line should be "
                         f"{','.join(HEADER)})")
    for line in lines[1:]:
        if line.startswith("# settled: "):
            settled = line[len("# settled: "):].strip()
        elif line.strip() and not line.startswith("#"):
            row = next(csv.DictReader([line], fieldnames=HEADER))
            samples.append({k: row[k] if k == "phase" else float(row[k]) for k in HEADER})
    return samples, settled


def settled_point(settled):
    """{parameter: value} of the settled line, and the noise (a fraction) it names."""
    if not settled:
        return {}, None
    head = settled.split(" after ")[0]
    point = {k: float(v) for k, v in re.findall(r"(\w+)=([-+.\deE]+)", head)}
    noise = re.findall(r"noise ([\d.]+)%", settled)
    return point, float(noise[-1]) / 100 if noise else None


def _key(s):
    return tuple(s[p] for p, _, _ in PARAMETERS)


def plot_search(samples, settled, path, title=None):
    """Draws the search at `path` (PNG). Returns `path`."""
    if not samples:
        raise ValueError("no samples in the log")
    plt = plots._pyplot()
    from matplotlib.ticker import FuncFormatter, MaxNLocator, NullFormatter
    point, noise = settled_point(settled)
    params = [p for p in PARAMETERS if any(s[p[0]] > 0 for s in samples)]  # chunk 0: none
    fig, axes = plt.subplots(1 + len(params), 1, sharex=True,
                             figsize=(7.5, 2.9 + 1.05 * len(params)),
                             gridspec_kw={"height_ratios": [3] + [1] * len(params)})
    ax = axes[0]
    xs = [int(s["sample"]) for s in samples]
    gbs = [s["score_bytes_per_s"] / 1e9 for s in samples]
    for phase, color in PHASES.items():
        pts = [(x, y) for x, y, s in zip(xs, gbs, samples) if s["phase"] == phase]
        if pts:
            ax.scatter([p[0] for p in pts], [p[1] for p in pts], s=18, color=color,
                       label=phase, zorder=3)
    others = sorted({s["phase"] for s in samples} - set(PHASES))
    for phase in others:
        pts = [(x, y) for x, y, s in zip(xs, gbs, samples) if s["phase"] == phase]
        ax.scatter([p[0] for p in pts], [p[1] for p in pts], s=18, color="black", marker="x",
                   label=phase, zorder=3)
    # A point's samples are consecutive within a phase: one median across
    # them. The confirmation interleaves two points: one median each across it.
    runs, confirm = [], {}
    for i, s in enumerate(samples):
        if s["phase"] == "confirm":
            confirm.setdefault(_key(s), []).append(i)
        elif s["phase"] != "warmup":
            if runs and samples[runs[-1][0]]["phase"] == s["phase"] and \
                    _key(samples[runs[-1][0]]) == _key(s) and runs[-1][-1] == i - 1:
                runs[-1].append(i)
            else:
                runs.append([i])
    for run in runs + list(confirm.values()):
        ax.hlines(statistics.median(gbs[j] for j in run), xs[run[0]] - 0.4, xs[run[-1]] + 0.4,
                  color="black", linewidth=1, zorder=2)
    base = [g for g, s in zip(gbs, samples) if s["phase"] == "baseline"]
    if base:
        median = statistics.median(base)
        ax.axhline(median, color=PHASES["baseline"], linestyle=":", linewidth=1)
        if noise:
            ax.axhspan(median * (1 - noise), median * (1 + noise), color=PHASES["baseline"],
                       alpha=0.08, label=f"defaults ± noise {noise * 100:.1f}%")
    if point:
        chosen = [(x, y) for x, y, s in zip(xs, gbs, samples)
                  if s["phase"] != "warmup" and all(abs(s[p] - point.get(p, s[p])) < 1e-9 * max(1, abs(s[p]))
                         for p, _, _ in params)]
        if chosen:
            ax.scatter([c[0] for c in chosen], [c[1] for c in chosen], s=70,
                       facecolors="none", edgecolors="red", linewidths=1.2,
                       label="settled point", zorder=4)
    ax.set_ylabel("score (GB/s busy)", fontsize=8)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=7, ncol=7, frameon=False, loc="lower left", bbox_to_anchor=(0, 1),
              handletextpad=0.2, columnspacing=0.8)
    ax.tick_params(labelsize=7)
    for a, (name, label, fmt) in zip(axes[1:], params):
        ys = [s[name] for s in samples]
        for phase, color in PHASES.items():
            pts = [(x, y) for x, y, s in zip(xs, ys, samples) if s["phase"] == phase]
            if pts:
                a.scatter([p[0] for p in pts], [p[1] for p in pts], s=10, color=color, zorder=3)
        a.step(xs, ys, where="mid", color="#555555", linewidth=0.8)
        if name in point:
            a.axhline(point[name], color="red", linestyle="--", linewidth=0.9)
        a.set_yscale("log", base=2)
        values = sorted(set(ys) | ({point[name]} if name in point else set()))
        a.set_yticks(values)
        a.yaxis.set_major_formatter(FuncFormatter(lambda v, _, f=fmt: f(v)))
        a.yaxis.set_minor_formatter(NullFormatter())
        lo, hi = values[0], values[-1]
        a.set_ylim(lo / 1.6, hi * 1.6)
        a.set_ylabel(label, fontsize=8)
        a.tick_params(labelsize=7)
        a.grid(alpha=0.3)
    axes[-1].set_xlabel("sample", fontsize=8)
    axes[-1].xaxis.set_major_locator(MaxNLocator(integer=True))
    if title is None:
        if point:
            chose = ", ".join(f"{label} {fmt(point[name])}" for name, label, fmt in params
                              if name in point)
            title = f"autotune search: settled on {chose} after {len(samples)} samples"
        else:
            title = f"autotune search: {len(samples)} samples, not settled (yet)"
    why = re.search(r"\((.*)\)\s*$", settled or "")
    text = title + ("\n" + "\n".join(textwrap.wrap(why.group(1), 110)) if why else "")
    fig.suptitle(text, fontsize=8, x=0.01, ha="left")
    fig.tight_layout(rect=(0, 0, 1, 0.99))
    return plots._save(fig, path)


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("log", help="the CSV file of --autotune-log-file")
    p.add_argument("out", help="the PNG to write")
    p.add_argument("--title", help="default: what it settled on")
    a = p.parse_args(argv)
    reason = plots.unavailable_reason()
    if reason:
        sys.exit(f"plot_autotune: {reason}")
    try:
        samples, settled = read_log(a.log)
        plot_search(samples, settled, a.out, a.title)
    except (OSError, ValueError) as e:
        sys.exit(f"plot_autotune: {e}")
    plots.wrote(a.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
