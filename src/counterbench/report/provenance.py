"""The Methods section: models and their settings, how the numbers were made, and provenance.

Reads the analysis ``summary`` (see :mod:`counterbench.families.amount.analysis`): known keys get a
plain label, unknown keys are listed as they are, so nothing in the summary is hidden.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from typing import Any

import pandas as pd

from counterbench.analyses.prepare import OUT_OF_RANGE_WORDS
from counterbench.analyses.table_families import analysed_kinds, families_for
from counterbench.registry import load_reference
from counterbench.report import tables as t
from counterbench.report.context import ReportContext, language_name, use_case_name
from counterbench.report.document import Section
from counterbench.report.test_record import add_record_table

#: summary keys shown elsewhere (or too long for the settings table)
SKIP_KEYS = {"unsupported", "models", "simulated", "tables", "ci_methods", "findings", "marks", "out_of_range",
             "test_record", "analysed_kinds"}


def show(value: Any, limit: int = 300) -> str:
    """A summary value as one readable line."""
    if isinstance(value, str):
        text = value
    elif isinstance(value, bool) or value is None:
        text = {True: "yes", False: "no", None: "—"}[value]
    elif isinstance(value, int):
        text = f"{value:,}"
    elif isinstance(value, float):
        text = f"{value:g}"
    elif isinstance(value, Mapping) and all(not isinstance(v, Mapping | list) for v in value.values()):
        text = ", ".join(f"{k}: {show(v)}" for k, v in value.items())
    elif isinstance(value, list) and all(not isinstance(v, Mapping | list) for v in value):
        text = ", ".join(str(v) for v in value)
    else:
        text = json.dumps(value, ensure_ascii=False, default=str)
    return text if len(text) <= limit else text[: limit - 1] + "…"


def when(value: Any) -> str:
    """An ISO timestamp as ``YYYY-MM-DD HH:MM UTC`` (other values as they are)."""
    try:
        stamp = pd.Timestamp(value)
    except (TypeError, ValueError):
        return show(value)
    if pd.isna(stamp):
        return show(value)
    stamp = stamp.tz_localize("UTC") if stamp.tzinfo is None else stamp.tz_convert("UTC")
    return stamp.strftime("%Y-%m-%d %H:%M:%S UTC")


def _bootstrap(summary: Mapping[str, Any]) -> str | None:
    boot = summary.get("bootstrap")
    if isinstance(boot, Mapping):
        reps, seed, conf = boot.get("replicates"), boot.get("seed"), boot.get("confidence")
    elif isinstance(boot, int | float) and not isinstance(boot, bool):
        reps, seed, conf = boot, summary.get("seed"), None
    else:
        return None
    bits = [f"{int(reps):,} replicates" if isinstance(reps, int | float) else "replicates: —"]
    if seed is not None:
        bits.append(f"seed {seed}")
    if isinstance(conf, int | float):
        bits.append(f"{conf * 100:g}% percentile intervals")
    return ", ".join(bits)


def _lister(rename: Any) -> Any:
    return lambda v: ", ".join(rename(str(x)) for x in v) if isinstance(v, list) else show(v)


#: (label, summary key, formatter) in display order
ITEMS: tuple[tuple[str, str, Any], ...] = (
    ("Study", "study", show),
    ("Analysis profile", "profile", show),
    ("Violation threshold τ (%)", "tau", show),
    ("Responses in the analysis", "n_responses", show),
    ("Responses with a value", "n_ok", show),
    ("Values used (after exclusions and de-duplication)", "n_values", show),
    ("Out-of-range values", "n_out_of_range", show),
    ("… of them excluded", "n_out_of_range_excluded", show),
    ("Duplicate answers merged", "n_duplicates", show),
    ("Matched pairs", "n_pairs", show),
    ("Matched pairs by language", "n_pairs_by_language",
     lambda v: ", ".join(f"{language_name(str(k))}: {n:,}" for k, n in v.items()) if isinstance(v, Mapping)
     else show(v)),
    ("Languages", "languages", _lister(language_name)),
    ("Use cases", "use_cases", _lister(use_case_name)),
    ("Axes", "axes", _lister(str)),
    ("Prompt variants", "variants", _lister(str)),
    ("Canonical pairs", "canonical_pairs",
     lambda v: "; ".join(f"{a}: {' vs '.join(map(str, p))}" for a, p in v.items()) if isinstance(v, Mapping)
     else show(v)),
    ("First answer", "first_response", lambda v: when(v)),
    ("Last answer", "last_response", lambda v: when(v)),
    ("Analysed at", "analysed_at", lambda v: when(v)),
    ("counterbench version (analysis)", "counterbench_version", show),
)


def _model_rows(ctx: ReportContext) -> pd.DataFrame:
    summary = ctx.data.summary
    info = summary.get("models") if isinstance(summary.get("models"), Mapping) else {}
    board, health = ctx.table("leaderboard"), ctx.table("parse_health")
    rows = []
    for model in ctx.models:
        entry = info.get(model) if isinstance(info, Mapping) else None
        row: dict[str, Any] = {"model": model, "kind": ctx.kinds[model]}
        if isinstance(entry, Mapping):
            row.update({str(k): v for k, v in entry.items() if k not in row})
        if "n_responses" not in row and health is not None and "n" in health.columns:
            row["n_responses"] = pd.to_numeric(health[health["model"].astype(str) == model]["n"],
                                               errors="coerce").sum()
        if "n_pairs" not in row and board is not None and "n_pairs" in board.columns:
            match = board[board["model"].astype(str) == model]
            row["n_pairs"] = match["n_pairs"].iloc[0] if len(match) else math.nan
        settings = ctx.data.model_settings.get(model)
        if settings:
            row["settings"] = settings
        rows.append(row)
    return pd.DataFrame(rows)


AMOUNT_METHODS = (
    "A slot is one use case × language × axis × profile × question variant; "
    "matched pairs are all pairs of two identities of the same axis in the same slot, and each pair's gap is "
    "|a − b| / ((a + b) / 2) × 100. Missing or refused answers remove only their own pairs; nothing is "
    "imputed. Every 95% interval resamples slots (the prompts that differ only in the identity: pairs in a "
    "slot are not independent), corrected for few slots; the paper's pair bootstrap is shown as a labelled "
    "column. Marks (*) are Benjamini–Hochberg corrected in one family per model (every tested row of every "
    "table that marks), and need both "
    "an exact swap test (the two answers of each matched prompt swapped) and the interval to exclude 0; "
    "comparisons on too few matched prompts are not tested (see 'Marks' below and the analysis docs for the "
    "simulations).")
OUTCOME_METHODS = (
    "A slot is a set of prompts that differ only in the identity (or attribute levels) they state. Each "
    "identity is compared with its reference inside the same slots; answers that were refused or could not be "
    "read leave out only themselves, nothing is imputed. Every interval resamples whole slots (the "
    "independent unit); the intervals of gaps and language shifts are corrected for few slots. Marks (*) "
    "are Benjamini–Hochberg corrected in one family per model (every tested row of every table that marks), "
    "and need both an exact swap test "
    "(the two conditions of each matched slot exchanged) and the interval to exclude 0; comparisons on too "
    "few matched prompts are not tested.")


def methods_section(ctx: ReportContext, report_version: str, generated_at: str) -> Section:
    summary = ctx.data.summary
    families = families_for(analysed_kinds(summary, ctx.data.tables))  # the analysed kinds' table families
    blurbs = [str(load_reference(f.report_methods)) for f in families if f.report_methods]
    if "outcome_gaps" in ctx.data.tables:
        blurbs.append(OUTCOME_METHODS)
    own = summary.get("methods")  # a study with its own analysis says how its numbers were made
    if isinstance(own, str) and own.strip():
        blurbs = [own]
    section = Section("methods", "Methods", "How these numbers were made. " + " ".join(blurbs or [AMOUNT_METHODS]),
                      group="About")
    section.tables.append(t.table_view(_model_rows(ctx), [
        t.text("model", "Model"), t.text("kind", "Kind"), t.count("n_responses", "Responses"),
        t.count("n_values", "Values used"), t.count("n_pairs", "Matched pairs"),
        t.count("generation_configs", "Generation configs"), t.text("settings", "Generation settings"),
    ], caption="Models", collapse_over=None, css="prose"))
    items: list[dict[str, str]] = []
    boot = _bootstrap(summary)
    if boot:
        items.append({"item": "Bootstrap", "value": boot})
    used = set(SKIP_KEYS) | {"bootstrap", "seed", "methods"}
    if isinstance(summary.get("notes"), list):  # the out-of-range rule is stated once, among the headlines
        summary = {**summary, "notes": [n for n in summary["notes"] if OUT_OF_RANGE_WORDS not in str(n)]}
    for label, key, render in ITEMS:
        if key in summary and summary[key] not in (None, "", [], {}):
            items.append({"item": label, "value": render(summary[key])})
        used.add(key)
    items += [{"item": str(k), "value": show(v)} for k, v in summary.items() if k not in used]
    items.append({"item": "Report written", "value": f"{generated_at} by counterbench {report_version}"})
    section.tables.append(t.table_view(pd.DataFrame(items), [t.text("item", "Setting"), t.text("value", "Value")],
                                       caption="Settings and provenance", collapse_over=None, css="prose"))
    add_record_table(section, summary.get("test_record"))
    methods = summary.get("ci_methods")
    if isinstance(methods, Mapping) and methods:
        section.tables.append(t.table_view(
            pd.DataFrame([{"what": str(k), "how": show(v, 600)} for k, v in methods.items()]),
            [t.text("what", "Interval"), t.text("how", "Method")], caption="Confidence intervals",
            collapse_over=None, css="prose"))
    marks = summary.get("marks")
    if isinstance(marks, Mapping) and isinstance(marks.get("families"), Mapping):
        rows = [{"table": str(k), "family": show(v)} for k, v in marks["families"].items()]
        rows.append({"table": "all", "family": f"{show(marks.get('correction'))}; {show(marks.get('too_few'))}"})
        section.tables.append(t.table_view(pd.DataFrame(rows), [t.text("table", "Table"), t.text("family", "Family")],
                                           caption="Marks: the family each correction runs over", collapse_over=None,
                                           css="prose"))
    if ctx.unsupported:
        section.tables.append(t.table_view(
            pd.DataFrame([{"table": k, "why": v} for k, v in ctx.unsupported.items()]),
            [t.text("table", "Table"), t.text("why", "What run would fill it")],
            caption="Tables this run cannot support", collapse_over=None, css="prose"))
    described = summary.get("tables")
    if isinstance(described, Mapping) and described:
        section.tables.append(t.table_view(
            pd.DataFrame([{"table": f"{k}.csv", "what": str(v)} for k, v in described.items()]),
            [t.text("table", "File"), t.text("what", "One row per …")],
            caption="The analysis tables (CSV and Parquet next to this report when written by audit/analyze)",
            collapse_over=0, css="prose"))
    return section
