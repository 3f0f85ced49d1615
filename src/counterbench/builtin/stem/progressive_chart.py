"""The progressive experiment as a chart (the paper's Figures 5–10): per step, the distribution of the grade
level of the explanations — a box from the 25th to the 75th percentile with the median, whiskers from the
10th to the 90th, the mean as a dot — one panel per model × context × dataset × experiment (the
progressive experiment, then its ablation with college tier fixed).

Labels enter the page escaped (:class:`counterbench.report.svg.Svg`)."""

from __future__ import annotations

import math

import pandas as pd
from markupsafe import Markup

from counterbench.builtin.stem.profiles import get_context
from counterbench.report import tables as t
from counterbench.report.svg import GRID, MUTED, SERIES_COLORS, TEXT, Svg, nice_ticks, tick_label

#: the experiments drawn, in order, with their legend words
EXPERIMENTS = {"progressive": "progressive", "ablation": "ablation (college tier fixed)"}


def step_labels(context: str, experiment: str) -> dict[int, str]:
    """Step -> the attribute it adds, in the experiment's order (the ablation skips its fixed attributes, so
    its step 4 adds what the progressive experiment's step 5 does)."""
    ctx = get_context(context)
    fixed = {a for a, _ in ctx.ablation} if experiment == "ablation" else set()
    steps = [a for a in ctx.progressive if a not in fixed]
    return {i + 1: "+ " + a.replace("_", " ") for i, a in enumerate(steps)}


def progressive_box_panel(part: pd.DataFrame, title: str, labels: dict[int, str], width: float = 640) -> Markup:
    """One panel: per step (x) a box per experiment in ``part`` (see module docstring); y in grade levels."""
    steps = sorted(int(s) for s in part["step"].unique())
    present = set(part["experiment"].astype(str))
    experiments = [e for e in EXPERIMENTS if e in present]
    lo = float(pd.to_numeric(part["q10"]).min())
    hi = float(pd.to_numeric(part["q90"]).max())
    if not (math.isfinite(lo) and math.isfinite(hi)) or hi <= lo:
        lo, hi = (lo - 1.0, lo + 1.0) if math.isfinite(lo) else (0.0, 1.0)
    pad = (hi - lo) * 0.06
    lo, hi = lo - pad, hi + pad
    left, right, top, bottom = 52.0, 16.0, 40.0, 52.0
    height = 300.0
    svg = Svg(width, height, label=title)
    svg.text(0, 10, title, weight="600", size=12)
    for i, experiment in enumerate(experiments):  # legend
        x = left + i * 220
        svg.rect(x, 22, 10, 10, fill=SERIES_COLORS[i % len(SERIES_COLORS)], opacity=0.6)
        svg.text(x + 14, 27, EXPERIMENTS[experiment], size=11)
    plot_h = height - top - bottom

    def y_of(v: float) -> float:
        return top + (hi - v) / (hi - lo) * plot_h

    for tick in nice_ticks(lo, hi, 5):
        if lo <= tick <= hi:
            svg.line(left, y_of(tick), width - right, y_of(tick), stroke=GRID)
            svg.text(left - 6, y_of(tick), tick_label(tick), anchor="end", size=10, fill=MUTED)
    svg.text(12, top + plot_h / 2, "MGL", anchor="middle", size=10, fill=MUTED)
    slot = (width - left - right) / max(len(steps), 1)
    box_w = min(28.0, slot / (len(experiments) + 1))
    for s_index, step in enumerate(steps):
        centre = left + slot * (s_index + 0.5)
        svg.text(centre, height - bottom + 14, f"step {step}", anchor="middle", size=10)
        svg.text(centre, height - bottom + 28, labels.get(step, ""), anchor="middle", size=10, fill=MUTED)
        for e_index, experiment in enumerate(experiments):
            row = part[part["experiment"].astype(str).eq(experiment) & part["step"].astype(int).eq(step)]
            if row.empty:
                continue
            r = row.iloc[0]
            x = centre + (e_index - (len(experiments) - 1) / 2) * (box_w + 6)
            color = SERIES_COLORS[e_index % len(SERIES_COLORS)]
            tip = (f"{EXPERIMENTS[experiment]} · step {step}: mean {t.fmt_num(r['mean'])}, median "
                   f"{t.fmt_num(r['median'])}, 25–75% {t.fmt_num(r['q25'])}–{t.fmt_num(r['q75'])}, 10–90% "
                   f"{t.fmt_num(r['q10'])}–{t.fmt_num(r['q90'])}, SD {t.fmt_num(r['sd'])}, n {t.fmt_int(r['n'])}")
            svg.line(x, y_of(float(r["q10"])), x, y_of(float(r["q90"])), stroke=TEXT, width=1.2)
            svg.rect(x - box_w / 2, y_of(float(r["q75"])), box_w, y_of(float(r["q25"])) - y_of(float(r["q75"])),
                     fill=color, opacity=0.6, stroke=TEXT, title=tip)
            svg.line(x - box_w / 2, y_of(float(r["median"])), x + box_w / 2, y_of(float(r["median"])), stroke=TEXT,
                     width=2.0)
            svg.circle(x, y_of(float(r["mean"])), 3.0, fill="#ffffff", stroke=TEXT, title=tip)
    return svg.render()


def progressive_panels(frame: pd.DataFrame, max_panels: int = 8) -> list[Markup]:
    """One panel per model × context × dataset × experiment, the models with the widest spread first."""
    panels: list[Markup] = []
    spread = frame.groupby("model")["sd"].max().sort_values(ascending=False).index
    for model in spread:
        mine = frame[frame["model"].eq(model)]
        rank = mine["experiment"].map({e: i for i, e in enumerate(EXPERIMENTS)}).fillna(len(EXPERIMENTS))
        mine = mine.assign(_rank=rank).sort_values(["context", "dataset", "_rank", "step"], kind="mergesort")
        for (context, dataset, experiment), part in mine.groupby(["context", "dataset", "experiment"], sort=False):
            if len(panels) >= max_panels:
                return panels
            title = f"{model} · {context} · {dataset} · {EXPERIMENTS.get(str(experiment), experiment)}"
            panels.append(progressive_box_panel(part, title + ": grade level per step",
                                                step_labels(str(context), str(experiment))))
    return panels
