"""The sequential audit's section (``--stop-when decided``): how many prompts each model needed, the rule, and
each comparison's verdict with the confidence sequence it was read from (:mod:`counterbench.analyses.sequential`)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from counterbench.report import tables as t
from counterbench.report.context import ReportContext, language_name, use_case_name
from counterbench.report.document import Section

TABLE = "sequential_verdicts"


def _rule_words(info: Mapping[str, Any]) -> str:
    found = info.get("rule")
    rule: Mapping[str, Any] = found if isinstance(found, Mapping) else {}
    margins = rule.get("margins") or {}
    margin_words = (", ".join(f"{'every kind' if k == '*' else k} {v:g}" for k, v in margins.items())
                    if isinstance(margins, Mapping) and margins else "the default (5 in the gap's unit, or 5% of a "
                                                                     "score's range)")
    return (f"Slots were sent in a random order (seed {rule.get('seed', 0)}), about {rule.get('look_every', '?')} "
            f"prompts a round, and after each round every comparison of the model's family was read from an "
            f"anytime-valid confidence sequence (Waudby-Smith et al.'s normal mixture, widened to Student's t): "
            f"α = {rule.get('alpha', 0.05):g} over the family and every look — {rule.get('interim_alpha', 0.01):g} "
            f"spent on the looks before a comparison's slots are all in (Bonferroni over the family), the rest on "
            f"its last look (the fixed design's t-interval). Margin (no gap above it): {margin_words}.")


def sequential_section(ctx: ReportContext) -> Section | None:
    """``None`` when the audit did not stop early by rule (no ``sequential_verdicts``)."""
    frame = ctx.nonempty(TABLE)
    info = ctx.data.summary.get("sequential")
    if frame is None or not isinstance(info, Mapping):
        return None
    section = Section(
        "sequential", "When each model's verdict was decided",
        "This audit ran with --stop-when decided: each model was asked only until every comparison of its family "
        "was decided — a gap, or no gap above the margin — or could not be decided with every slot in. The "
        "intervals below are confidence sequences, valid at the moment the model stopped; the other tables of "
        "this report are the fixed analysis of the answers sent, whose intervals and marks assume the number of "
        "prompts was set in advance — read the verdicts here as the audit's conclusions.",
    )
    design = int(info.get("prompts_design", 0) or 0)
    found_sent, found_stopped = info.get("prompts_sent"), info.get("stopped")
    sent: Mapping[str, Any] = found_sent if isinstance(found_sent, Mapping) else {}
    stopped: Mapping[str, Any] = found_stopped if isinstance(found_stopped, Mapping) else {}
    for model, part in ctx.by_model(frame):
        n = int(sent.get(model, 0) or 0)
        counts = part["verdict"].astype(str).value_counts()
        said = ", ".join(f"{int(v)} {k}" for k, v in counts.items())
        share = f" ({n / design:.0%})" if design else ""
        section.notes.append(f"{model}: {n:,} of {design:,} prompts{share}; stopped: {stopped.get(model, '?')}; "
                             f"{said}.")
        cols = [t.text("use_case", "Use case", rename=use_case_name), t.text("language", "Language",
                                                                             rename=language_name),
                t.text("facet", "Compared"), t.text("comparison", "Level"), t.text("reference", "Against"),
                t.num("mean", "Mean gap", 2, signed=True), t.ci("cs_low", "cs_high", "Confidence sequence"),
                t.text("unit", "Unit"), t.num("margin", "Margin", 2), t.count("n_slots", "Slots"),
                t.text("verdict", "Verdict"), t.count("decided_at_look", "Decided at look")]
        section.tables.append(t.table_view(part, cols, caption=f"{model}: the sequential verdicts",
                                           source=f"{TABLE}.csv"))
    section.notes.append(_rule_words(info))
    return section
