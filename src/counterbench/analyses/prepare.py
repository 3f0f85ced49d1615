"""From the results table to the analysis values: validation, profile rules, deduplication.

Input: the results table of :func:`counterbench.run.store.load_results` (one row per stored
response), or any frame with the same key columns. Output: :class:`PreparedResults`, whose
``values`` frame has one row per design cell (model × variant × use case × language × axis ×
profile × question variant × identifier) with a usable value, key columns as categoricals in
order of first appearance (the prompt table's axis → identifier order).

Decisions (switches in :mod:`counterbench.analyses.profiles`):

- **Usable value**: ``status == "ok"`` and a finite ``value``. ``refused``, ``unparseable`` and
  ``error`` rows only enter parse health. Nothing is imputed: a missing value removes only its own
  pairs downstream.
- **Out-of-range values** (``out_of_range`` flag of the parser's plausibility bounds): excluded
  under ``default`` (counted in parse health and the summary), kept under the release profile.
- **Duplicates** (the same cell answered twice, e.g. two generation configs of one model): the
  mean of the usable values under ``default``; under the release profile the first row of (identifier,
  profile, question variant) per model × variant × use case × language in input (store) order,
  *before* missing values are dropped, as the release did.
- **A study profile's value rule** (``rewrite_values``): applied to the rows before anything else,
  with the full results (design columns included) at hand — the built-in study's release profile
  analyses counter-offers as a markup over the offer this way.
- A use case stored under another name its (registered) study declares (``use_case_aliases``, e.g. a
  published release's name) is analysed under the study's own name.
- Missing optional columns: ``variant`` → ``standard``; ``simulated`` → true for ``sim:`` models;
  ``out_of_range`` → false.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from counterbench.errors import UserError
from counterbench.parse.profiles import AnalysisProfile

__all__ = [
    "CELL_COLUMNS",
    "PreparedResults",
    "as_categories",
    "out_of_range_counts",
    "out_of_range_excluded",
    "out_of_range_note",
    "prepare_results",
    "with_excluded_unusable",
    "with_out_of_range_note",
]

#: the key of one design cell; a slot is this without ``identifier`` (and with ``variant`` fixed)
CELL_COLUMNS: tuple[str, ...] = (
    "model",
    "variant",
    "use_case",
    "language",
    "axis",
    "profile_id",
    "question_variant",
    "identifier",
)
REQUIRED_COLUMNS: tuple[str, ...] = (
    "model", "use_case", "language", "axis", "identifier", "profile_id", "question_variant", "status", "value"
)
RELEASE_DEDUP_COLUMNS: tuple[str, ...] = (
    "model", "variant", "use_case", "language", "profile_id", "question_variant", "identifier"
)
@dataclass(frozen=True)
class PreparedResults:
    """The analysis inputs derived from one results table.

    ``values``: :data:`CELL_COLUMNS` + ``value`` (float), one row per cell with a usable value.
    ``responses``: every input row's ``model, variant, use_case, language, status, value,
    out_of_range, usable`` (for parse health). ``simulated``: model → flag. ``counts``: row counts for the summary.
    """

    values: pd.DataFrame
    responses: pd.DataFrame
    simulated: dict[str, bool]
    counts: dict[str, int]
    dates: dict[str, str | None] = field(default_factory=dict)
    configs_per_model: dict[str, int] = field(default_factory=dict)


def as_categories(column: pd.Series) -> pd.Series:
    """``column`` as a categorical whose categories are in order of first appearance."""
    if isinstance(column.dtype, pd.CategoricalDtype):
        return column.cat.remove_unused_categories()
    codes, uniques = pd.factorize(column, sort=False, use_na_sentinel=True)
    return pd.Series(pd.Categorical.from_codes(codes, categories=pd.Index(uniques)), index=column.index,
                     name=column.name)


def _check_columns(results: pd.DataFrame) -> None:
    if not isinstance(results, pd.DataFrame):
        raise UserError("analyze needs a results table (a pandas DataFrame) or a store path")
    missing = [c for c in REQUIRED_COLUMNS if c not in results.columns]
    if missing:
        raise UserError(
            f"the results table lacks column(s) {', '.join(missing)}; pass the output of "
            "counterbench.run.load_results(store) (or a file written by `counterbench export`)"
        )
    if results.empty:
        raise UserError("the results table is empty: run some prompts first (`counterbench run`)")


def use_case_aliases(study_names: Iterable[str]) -> dict[str, str]:
    """Another name of a use case -> its study's own name, as the registered studies named declare them (the
    ``use_case_aliases`` hook); a study that is not registered (a study file) declares none here."""
    from counterbench.studies.hooks import hook
    from counterbench.studies.registry import STUDIES, load_study

    aliases: dict[str, str] = {}
    for name in dict.fromkeys(study_names):
        if name in STUDIES:
            for alias, own in dict(hook(load_study(name), "use_case_aliases")).items():
                aliases.setdefault(str(alias), str(own))
    return aliases


def _with_defaults(results: pd.DataFrame) -> pd.DataFrame:
    cols = [c for c in (*REQUIRED_COLUMNS, "variant", "simulated", "out_of_range", "release_value",
                        "config_fp", "started_at", "finished_at", "repeat") if c in results.columns]
    frame = results[cols].copy()
    if "variant" not in frame.columns:
        frame["variant"] = "standard"
    frame["variant"] = frame["variant"].fillna("standard")
    if "simulated" not in frame.columns:
        frame["simulated"] = frame["model"].astype(str).str.startswith("sim:")
    if "out_of_range" not in frame.columns:
        frame["out_of_range"] = False
    frame["out_of_range"] = frame["out_of_range"].fillna(False).astype(bool)
    frame["use_case"] = frame["use_case"].astype(str)
    aliases = use_case_aliases(results["study"].dropna().astype(str).unique() if "study" in results.columns else ())
    if aliases:
        frame["use_case"] = frame["use_case"].replace(aliases)
    frame["value"] = pd.to_numeric(frame["value"], errors="coerce").astype("float64")
    frame["status"] = frame["status"].astype(str)
    return frame


def _dates(frame: pd.DataFrame) -> dict[str, str | None]:
    out: dict[str, str | None] = {"first_response": None, "last_response": None}
    for key, col, how in (("first_response", "started_at", "min"), ("last_response", "finished_at", "max")):
        if col in frame.columns:
            stamps = pd.to_datetime(frame[col], errors="coerce", utc=True)
            value: Any = getattr(stamps, how)()
            out[key] = None if pd.isna(value) else pd.Timestamp(value).isoformat()
    return out


def out_of_range_excluded(frame: pd.DataFrame, profile: AnalysisProfile) -> np.ndarray:
    """The one out-of-range rule every table, chart, headline and gate of an analysis follows: the rows whose
    parsed value lies outside the plausibility bounds, when ``profile`` leaves them out (none otherwise)."""
    if not profile.exclude_out_of_range or "out_of_range" not in frame.columns:
        return np.zeros(len(frame), dtype=bool)
    oor = frame["out_of_range"].fillna(False).astype(bool).to_numpy()
    return oor & frame["status"].astype(str).eq("ok").to_numpy()


#: what every out-of-range note says (one note per analysis: a joint one replaces its parts')
OUT_OF_RANGE_WORDS = "outside the plausibility bounds"


def out_of_range_counts(results: pd.DataFrame) -> dict[str, list[int]]:
    """Per model with any: [answers outside the plausibility bounds, answers with a value]."""
    if "out_of_range" not in results.columns or results.empty:
        return {}
    ok = results["status"].astype(str).eq("ok")
    oor = results["out_of_range"].fillna(False).astype(bool) & ok
    model = results["model"].astype(str)
    counts = pd.DataFrame({"oor": oor, "ok": ok}).groupby(model, sort=False).sum()
    return {str(m): [int(r.oor), int(r.ok)] for m, r in counts.iterrows() if r.oor}


def out_of_range_note(counts: Mapping[str, Sequence[int]], profile: AnalysisProfile) -> str | None:
    """The one sentence that states the out-of-range rule of an analysis: how many answers (per model,
    :func:`out_of_range_counts`) lie outside the plausibility bounds and that every table, chart, headline and
    gate leaves them out — or, under a profile that keeps them, keeps them; ``None`` when none lies outside."""
    if not counts:
        return None
    parts = "; ".join(f"{m}: {n:,} of {of:,}" for m, (n, of) in counts.items())
    how = "left out of" if profile.exclude_out_of_range else "kept in"
    total = sum(n for n, _ in counts.values())
    return (f"{total:,} answers {OUT_OF_RANGE_WORDS} ({parts}) are {how} every table, chart, headline and gate "
            f"of this analysis (profile {profile.name}; see parse_health.n_out_of_range)")


def with_out_of_range_note(notes: Sequence[str], counts: Mapping[str, Sequence[int]],
                           profile: AnalysisProfile) -> list[str]:
    """``notes`` with its out-of-range notes replaced by the one :func:`out_of_range_note` of ``counts``."""
    note = out_of_range_note(counts, profile)
    return [n for n in notes if OUT_OF_RANGE_WORDS not in n] + ([note] if note else [])


def with_excluded_unusable(results: pd.DataFrame, profile: AnalysisProfile) -> pd.DataFrame:
    """``results`` with the rows :func:`out_of_range_excluded` leaves out given the status ``out_of_range`` (the
    generic outcome tables' input: they count the same answers as the amount tables, and the impact ratios count
    these with the other answers that could not be used)."""
    drop = out_of_range_excluded(results, profile)
    if not drop.any():
        return results
    marked = results.copy()
    marked.loc[drop, "status"] = "out_of_range"
    return marked


def prepare_results(results: pd.DataFrame, profile: AnalysisProfile) -> PreparedResults:
    """Validate ``results`` and apply ``profile``'s rules; see the module docstring."""
    _check_columns(results)
    frame = _with_defaults(results)
    n_rows = len(frame)
    if profile.rewrite_values:  # a study profile's own value rule, e.g. a markup over an offer
        from counterbench.parse.profiles import study_profile

        rewrite = study_profile(profile.name).rewrite_values
        if rewrite is not None:
            frame = rewrite(frame, results)
    oor = frame["out_of_range"].to_numpy(dtype=bool)
    ok = (frame["status"] == "ok").to_numpy() & np.isfinite(frame["value"].to_numpy())
    excluded_oor = ok & out_of_range_excluded(frame, profile)
    usable = ok & ~excluded_oor
    responses = frame[["model", "variant", "use_case", "language", "status", "value", "out_of_range"]].copy()
    responses["usable"] = usable

    n_duplicates = 0
    repeated = "repeat" in frame.columns
    if profile.dedup == "first":  # the first answer of each repeat (--repeats), the repeats averaged below
        first = ~frame.duplicated([*RELEASE_DEDUP_COLUMNS, *(["repeat"] if repeated else [])], keep="first").to_numpy()
        n_duplicates = int(n_rows - first.sum())
        kept = frame.loc[first & usable, [*CELL_COLUMNS, "value"]]
    else:
        kept = frame.loc[usable, [*CELL_COLUMNS, "value"]]
    values = kept.reset_index(drop=True)
    for col in CELL_COLUMNS:
        values[col] = as_categories(values[col])
    if profile.dedup == "first" and repeated and values.duplicated(list(CELL_COLUMNS)).any():
        values = values.groupby(list(CELL_COLUMNS), observed=True, sort=False)["value"].mean().reset_index()
        for col in CELL_COLUMNS:
            values[col] = as_categories(values[col])
    if profile.dedup == "mean":
        dup = values.duplicated(list(CELL_COLUMNS), keep=False)
        if dup.any():
            n_before = len(values)
            grouped = values.groupby(list(CELL_COLUMNS), observed=True, sort=False)["value"].mean()
            values = grouped.reset_index()
            for col in CELL_COLUMNS:
                values[col] = as_categories(values[col])
            n_duplicates = n_before - len(values)
            if repeated:  # a prompt's repeats (--repeats) are averaged too, but are no duplicates
                repeats = frame.loc[usable, [*CELL_COLUMNS, "repeat"]]
                n_duplicates -= int((~repeats.duplicated()).sum()) - len(values)

    simulated = frame.groupby("model", sort=False)["simulated"].agg(lambda s: bool(s.fillna(False).any()))
    configs: dict[str, int] = {}
    if "config_fp" in frame.columns:  # a later repeat's config (--repeats) is its repeat 0's
        own = frame if "repeat" not in frame.columns else frame[frame["repeat"].fillna(0).eq(0)]
        configs = {str(m): max(1, int(n)) for m, n in own.groupby("model", sort=False)["config_fp"].nunique().items()}
    counts = {
        "n_responses": n_rows,
        "n_ok": int(ok.sum()),
        "n_out_of_range": int((ok & oor).sum()),
        "n_out_of_range_excluded": int(excluded_oor.sum()),
        "n_duplicates": n_duplicates,
        "n_values": len(values),
    }
    return PreparedResults(
        values=values,
        responses=responses,
        simulated={str(m): bool(v) for m, v in simulated.items()},
        counts=counts,
        dates=_dates(frame),
        configs_per_model=configs,
    )


def slot_adjusted(values: pd.DataFrame, slot_cols: list[str], cell_cols: list[str]) -> pd.Series:
    """Values with their slot's level replaced by the cell's: ``v − v̄_slot + Ḡ_cell``.

    ``v̄_slot`` is the mean of the available values of the slot (over identifiers); ``Ḡ_cell`` the
    unweighted mean of the cell's slot means. The plain mean of the adjusted values of an identifier
    is its mean *had it answered every slot*, under an additive slot effect: identical to the plain
    identifier mean when the design is complete, and free of the bias a missing answer in a high- or
    low-paying profile otherwise puts into identifier means (default profile: identifier deviation,
    MOG, Kendall's W, question-variant robustness, language ρ).
    """
    slot_mean = values.groupby(slot_cols, observed=True, sort=False)["value"].transform("mean")
    first = ~values.duplicated(slot_cols)
    slot_level = values.loc[first, cell_cols].assign(level=slot_mean[first])
    cell_mean = slot_level.groupby(cell_cols, observed=True, sort=False)["level"].mean().rename("cell_level")
    grand = values[cell_cols].join(cell_mean, on=cell_cols)["cell_level"]
    return (values["value"] - slot_mean + grand).astype("float64")
