"""The report's comparison of models: a ranking of every headline measure in its unit, with joint 95% rank
intervals (``model_ranks``), and the paired differences between models (``model_differences``)."""

from __future__ import annotations

from collections.abc import Callable, Sequence

import pandas as pd

from counterbench.report import tables as t
from counterbench.report.context import ReportContext
from counterbench.report.document import Section, attach_table

__all__ = ["model_sections"]


def _measure(frame: pd.DataFrame, ctx: ReportContext) -> pd.Series:
    """The measure with where it was measured: ``Female vs Male (Gender) · salary estimation · English``."""
    parts = [frame["label"].astype(str)]
    for column, name in (("use_case", ctx.use_case_label), ("language", ctx.language_label)):
        values = frame[column].fillna("").astype(str)
        parts.append(values.map(lambda v, name=name: f" · {name(v)}" if v else ""))
    unit = frame["unit"].fillna("").astype(str).map(lambda u: f" [{u}]" if u else "")
    out = parts[0]
    for part in parts[1:]:
        out = out + part
    return out + unit


def model_sections(ctx: ReportContext) -> list[Section]:
    """The ranking and the paired differences, when the analysis compared two or more models (none with one)."""
    if ctx.nonempty("model_ranks") is None and ctx.nonempty("model_differences") is None:
        return []
    ranks = Section("model-ranks", "Ranking the models",
                    "Each model's rank on each headline measure (1 = the smallest gap), with a joint 95% rank "
                    "interval: with 95% confidence every model's true rank lies in its interval at once, so models "
                    "whose intervals overlap are not told apart. A model flagged for degenerate answers is not "
                    "ranked.", group="Overview")
    differences = Section("model-differences", "Differences between models",
                          "Each pair of models on each headline measure, paired on the slots both answered (one "
                          "bootstrap resampling those slots for both models): A's value − B's with its 95% interval. "
                          "A mark (*) needs Benjamini–Hochberg q ≤ 0.05 within the pair's measures, the interval "
                          "excluding 0 and at least 6 shared slots.", group="Overview")
    return [
        _by_measure(ctx, ranks, "model_ranks", [
            t.text("model", "Model"), t.num("estimate", "Value", signed=True),
            t.text("rank", "#"), t.rank_range(), t.count("n_slots", "Slots"), t.text("flag", "Not ranked because"),
        ], prepare=_in_rank_order, muted=lambda r: bool(r["flag"])),
        _by_measure(ctx, differences, "model_differences", [
            t.text("model_a", "A"), t.text("model_b", "B"),
            t.num("estimate_a", "A's value", signed=True), t.num("estimate_b", "B's value", signed=True),
            t.num("difference", "A − B", signed=True), t.ci("ci_low", "ci_high", "95% CI"),
            t.pvalue("q_value", "q"), t.mark("Mark (BH within the pair)", unit="shared slots"),
        ]),
    ]


def _by_measure(ctx: ReportContext, section: Section, name: str, columns: Sequence[t.Col], *,
                prepare: Callable[[pd.DataFrame], pd.DataFrame] | None = None,
                muted: Callable[[t.Row], bool] | None = None) -> Section:
    """``section`` with table ``name`` (after ``prepare``), its first column the measure (:func:`_measure`),
    then ``columns``; or why the table is empty."""
    frame = attach_table(section, ctx, name)
    if frame is not None:
        frame = frame.assign(where=_measure(frame, ctx))
        if prepare is not None:
            frame = prepare(frame)
        section.tables.append(t.table_view(frame, [t.text("where", "Measure"), *columns], source=f"{name}.csv",
                                           muted=muted))
    return section


def _in_rank_order(frame: pd.DataFrame) -> pd.DataFrame:
    """The ranks measure by measure (as analysed, best rank first), then by rank; no flag is an empty one."""
    frame = frame.assign(flag=frame["flag"].fillna("").astype(str))
    order = {w: i for i, w in enumerate(dict.fromkeys(frame["where"]))}  # measures as analysed, best rank first
    frame = frame.assign(_m=frame["where"].map(order), _r=pd.to_numeric(frame["rank"], errors="coerce"))
    return frame.sort_values(["_m", "_r"], kind="stable", na_position="last")
