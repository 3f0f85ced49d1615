"""The amount analysis: every relative-gap table (leaderboard, Mean Δ%, W, canonical pair gaps, ...) from
one results table of ``amount`` answers — the relative-gap analysis of the
paper the built-in study reproduces, for any amount study.

``analyze(results, profile="default", bootstrap=2000, seed=0, tau=10.0)`` returns an
:class:`AnalysisResult` with ``tables`` (name → DataFrame; names, columns and meanings in
:mod:`counterbench.families.amount.tables`) and a JSON-able ``summary`` (models and simulated flags,
counts, profile, replicates, seed, interval methods, version, dates, the decisions taken, and
``unsupported``: table → what run would fill it, for tables the data cannot support).

Only ``variant == "standard"`` rows enter the main tables; ``fairness`` rows enter only
``fairness_ablation``. Every row-level rule (what counts as a value, duplicates, out-of-range
values, a study profile's quirks) is in :mod:`counterbench.analyses.prepare` and
:mod:`counterbench.analyses.profiles`. Pure: DataFrames in, DataFrames out, no I/O
(:mod:`counterbench.analyses.io` writes the tables).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import asdict
from datetime import UTC, datetime
from typing import Any

import numpy as np
import pandas as pd

from counterbench.analyses import health
from counterbench.analyses.findings import ci_methods, findings, marks_summary
from counterbench.analyses.isolation import FailedTables, isolated, merge_failures
from counterbench.analyses.power import power_table
from counterbench.analyses.prepare import (
    PreparedResults,
    out_of_range_counts,
    prepare_results,
    slot_adjusted,
    with_out_of_range_note,
)
from counterbench.analyses.profiles import AnalysisProfile, get_profile, profile_description
from counterbench.analyses.resampling import DEFAULT_BINS
from counterbench.analyses.result import AnalysisResult
from counterbench.analyses.slots import SlotResampler
from counterbench.errors import UserError
from counterbench.families.amount import identifiers, magnitude, ordering
from counterbench.families.amount.tables import (
    GENERIC_HINT,
    TABLE_COLUMNS,
    TABLE_DESCRIPTIONS,
    UNSUPPORTED_HINTS,
    TableLayout,
    conform,
    empty_table,
    language_hint,
)

__all__ = ["AnalysisResult", "analyze"]

CONFIDENCE = 0.95

def _check_settings(bootstrap: int, tau: float, seed: int) -> tuple[int, float, int]:
    if isinstance(bootstrap, bool) or not isinstance(bootstrap, int | np.integer) or int(bootstrap) < 0:
        raise UserError(f"--bootstrap must be a whole number of replicates ≥ 0 (2000 in the paper), got {bootstrap!r}")
    if isinstance(tau, bool) or not isinstance(tau, int | float | np.number) or not math.isfinite(float(tau)) \
            or float(tau) < 0:
        raise UserError(f"--tau must be a finite number of percent ≥ 0 (10 in the paper), got {tau!r}")
    if isinstance(seed, bool) or not isinstance(seed, int | np.integer):
        raise UserError(f"--seed must be a whole number, got {seed!r}")
    return int(bootstrap), float(tau), int(seed)


def _category_order(prepared: PreparedResults, col: str) -> list[str]:
    column = prepared.values[col]
    cats = column.cat.categories if isinstance(column.dtype, pd.CategoricalDtype) else column.unique()
    return [str(c) for c in cats]


def _order_rows(frame: pd.DataFrame, orders: Mapping[str, list[str]]) -> pd.DataFrame:
    if frame.empty:
        return frame
    keys = [c for c in ("model", "language", "variant", "use_case", "axis", "identifier", "reference")
            if c in frame.columns and c in orders]
    if not keys:
        return frame
    rank = {c: {v: i for i, v in enumerate(orders[c])} for c in keys}
    sort_cols = {f"__{c}": frame[c].astype(str).map(rank[c]).fillna(len(rank[c])) for c in keys}
    tmp = frame.assign(**sort_cols).sort_values(list(sort_cols), kind="stable")
    return tmp.drop(columns=list(sort_cols)).reset_index(drop=True)


def _unsupported(tables: Mapping[str, pd.DataFrame], prepared: PreparedResults,
                 languages: Sequence[str]) -> dict[str, str]:
    out: dict[str, str] = {}
    has_fairness = bool((prepared.values["variant"].astype(str) == "fairness").any())
    for name in TABLE_COLUMNS:
        frame = tables.get(name)
        if frame is not None and not frame.empty:
            continue
        if name == "fairness_ablation" and has_fairness:
            out[name] = "needs standard runs of the slots the fairness runs cover"
        elif name == "language_moderation":
            out[name] = language_hint(languages)
        else:
            out[name] = UNSUPPORTED_HINTS.get(name, GENERIC_HINT)
    return out


def _models_with_gaps(models: Iterable[str], tables: Mapping[str, pd.DataFrame]) -> list[str]:
    """``models`` that have a row in ``cpg_overall`` (the findings' models), in their order."""
    if "cpg_overall" not in tables:
        return []
    present = set(tables["cpg_overall"]["model"].astype(str))
    return [m for m in models if m in present]


def _ci_methods(n_boot: int, seed: int) -> dict[str, str]:
    return ci_methods(n_boot, seed, DEFAULT_BINS)


def _summary(prepared: PreparedResults, tables: dict[str, pd.DataFrame], fam: magnitude.GapFamily | None,
             rules: AnalysisProfile, n_boot: int, seed: int, tau: float,
             canonical_pairs: Mapping[str, tuple[str, str]], layout: TableLayout) -> dict[str, Any]:
    from counterbench.version import __version__

    values = prepared.values
    responses = prepared.responses
    pair_counts: dict[str, int] = {}
    lang_counts: dict[str, int] = {}
    if fam is not None and fam.pairs.n_pairs:
        keys = fam.boot.keys.astype(str)
        for m, n in pd.Series(fam.boot.n).groupby(keys["model"].to_numpy()).sum().items():
            pair_counts[str(m)] = int(n)
        for lang, n in pd.Series(fam.boot.n).groupby(keys["language"].to_numpy()).sum().items():
            lang_counts[str(lang)] = int(n)
    models: dict[str, dict[str, Any]] = {}
    for model in _category_order(prepared, "model") or sorted(prepared.simulated):
        models[model] = {
            "simulated": prepared.simulated.get(model, model.startswith("sim:")),
            "n_responses": int((responses["model"].astype(str) == model).sum()),
            "n_values": int((values["model"].astype(str) == model).sum()),
            "n_pairs": pair_counts.get(model, 0),
            "generation_configs": prepared.configs_per_model.get(model, 1),
        }
    unsupported = _unsupported(tables, prepared, layout.languages)
    notes = [f"{m}: answers from {n} generation configs are pooled (duplicates: "
             + ("first row kept)" if rules.dedup == "first" else "values averaged)")
             for m, n in prepared.configs_per_model.items() if n > 1]
    out_of_range = out_of_range_counts(prepared.responses)
    notes = with_out_of_range_note(notes, out_of_range, rules)
    studies = [str(s) for s in values["study"].dropna().unique()] if "study" in values.columns else []
    return {
        "study": studies[0] if len(studies) == 1 else "",
        "profile": rules.name,
        "counterbench_version": __version__,
        "analysed_at": datetime.now(UTC).isoformat(timespec="seconds"),
        **prepared.dates,
        "models": models,
        "simulated": {m: info["simulated"] for m, info in models.items()},
        **prepared.counts,
        "n_pairs": int(sum(pair_counts.values())),
        "n_pairs_by_language": lang_counts,
        "languages": _category_order(prepared, "language"),
        "use_cases": _category_order(prepared, "use_case"),
        "axes": _category_order(prepared, "axis"),
        "variants": _category_order(prepared, "variant"),
        "tau": tau,
        "bootstrap": {"replicates": n_boot, "seed": seed, "confidence": CONFIDENCE, "bins": DEFAULT_BINS},
        "ci_methods": _ci_methods(n_boot, seed),
        "marks": marks_summary(),
        "findings": findings(tables, _models_with_gaps(models, tables)),
        "canonical_pairs": {axis: list(pair) for axis, pair in canonical_pairs.items()},
        "rules": {**asdict(rules), "description": profile_description(rules.name)},
        "notes": notes,
        "out_of_range": out_of_range,
        "tables": {name: TABLE_DESCRIPTIONS.get(name, "") for name in TABLE_COLUMNS},
        "table_layout": {"languages": list(layout.languages), "heavy_axes": list(layout.heavy_axes)},
        "unsupported": unsupported,
    }


def language_moderation(fam: magnitude.GapFamily, adjusted: pd.DataFrame, rules: AnalysisProfile,
                        languages: Sequence[str], *, seed: int) -> pd.DataFrame:
    """The study's first language against each of its others: ρ of the identifier rankings and the
    shift in Mean Δ% per model × axis; with more than two languages a ``language`` column names the
    compared one."""
    if len(languages) < 2:
        return pd.DataFrame()
    first = languages[0]
    parts = []
    for second in languages[1:]:
        shift = magnitude.language_shift(fam, seed=seed, first=first, second=second)
        rho = ordering.language_rho(adjusted, rules, first, second)
        if not shift.empty and not rho.empty:
            part = rho.merge(shift, on=["model", "axis"], how="outer")
        elif not shift.empty:
            part = shift
        else:
            continue
        parts.append(part.assign(language=second) if len(languages) > 2 else part)
    return pd.concat(parts, ignore_index=True) if parts else pd.DataFrame()


def _with_pair_attributes(values: pd.DataFrame, results: pd.DataFrame,
                          pairs: Mapping[str, tuple[str, str]]) -> pd.DataFrame:
    """``values`` with the column of each canonical pair's attribute a crossed design varies (``race``),
    looked up from the results by use case and identifier (one identifier is one combination of levels)."""
    keys = ["use_case", "identifier"]
    attributes = [a for a in pairs if a in results.columns and a not in values.columns and a not in keys]
    if not attributes or values.empty:
        return values
    levels = results[[*keys, *attributes]].astype(str).drop_duplicates(keys)
    out = values.assign(**{k: values[k].astype(str) for k in keys}).merge(levels, on=keys, how="left")
    return out.assign(**{k: values[k].to_numpy() for k in keys})


def analyze(
    results: pd.DataFrame,
    *,
    profile: str = "default",
    bootstrap: int = 2000,
    seed: int = 0,
    tau: float = 10.0,
    canonical_pairs: Mapping[str, tuple[str, str]] | None = None,
    layout: TableLayout | None = None,
) -> AnalysisResult:
    """Every amount table for ``results`` (the output of ``load_results``).

    ``profile``: ``default`` (correct rules) or a study's own profile (its release's quirks);
    ``bootstrap``: replicates per interval (0 = no intervals); ``seed``: base seed of every stream;
    ``tau``: the Violation@τ threshold in percent; ``canonical_pairs``: axis → (reference,
    comparison), default: the pairs the results' (registered) study declares; ``layout``: the study's
    languages and largest axes, which name the per-language columns (default: the languages and axes
    of ``results``, in their order). User mistakes raise :class:`~counterbench.errors.UserError`.
    """
    rules = get_profile(profile)
    n_boot, tau, seed = _check_settings(bootstrap, tau, seed)
    if canonical_pairs is None:
        from counterbench.studies.registry import default_study

        studies: list[str] = ([str(s) for s in results["study"].dropna().unique()]
                              if "study" in results.columns else [default_study()])
        canonical_pairs = identifiers.study_canonical_pairs(studies)
    pairs_map = dict(canonical_pairs)
    prepared = prepare_results(results, rules)
    if layout is None:
        sizes = prepared.values.groupby("axis", observed=True, sort=False)["identifier"].nunique()
        layout = TableLayout.of(_category_order(prepared, "language"),
                                [(str(a), int(n)) for a, n in sizes.items()])
    variant = prepared.values["variant"].astype(str)
    standard = prepared.values[variant == "standard"]
    fairness = prepared.values[variant == "fairness"]
    if standard.empty:
        raise UserError(
            "no usable standard-prompt answers to analyse (every response is missing, refused, unparseable or an "
            "error); look at the raw answers (`counterbench export`), re-parse them (`counterbench parse`), or run "
            "the standard variant"
        )
    adjusted = standard
    if rules.adjust_missing:
        adjusted = standard.assign(value=slot_adjusted(standard, list(magnitude.SLOT_COLUMNS),
                                                       list(magnitude.STRATUM_COLUMNS)))
    tables: dict[str, pd.DataFrame] = {}
    failed = FailedTables()

    def put(names: str | tuple[str, ...], build: Callable[[], Mapping[str, pd.DataFrame]]) -> None:
        tables.update(isolated(names, build, dict, failed))  # a failing table is named, the others come out

    resampler = SlotResampler(standard, n_boot, seed)
    family = ("leaderboard", "axis_mean_delta", "use_case_mean_delta", "use_case_axis_mean_delta", "pairs_per_axis")
    fam = isolated(family, lambda: magnitude.gap_family(standard, rules, n_boot=n_boot, seed=seed, tau=tau,
                                                        confidence=CONFIDENCE, resampler=resampler), lambda: None,
                   failed)
    if fam is not None and fam.pairs.n_pairs:
        gaps = fam
        put("leaderboard", lambda: {"leaderboard": magnitude.leaderboard(gaps, prepared.simulated,
                                                                         layout.heavy_axes)})
        put("axis_mean_delta", lambda: {"axis_mean_delta": magnitude.axis_mean_delta(gaps)})
        put("use_case_mean_delta", lambda: {"use_case_mean_delta": magnitude.use_case_mean_delta(gaps)})
        put("use_case_axis_mean_delta",
            lambda: {"use_case_axis_mean_delta": magnitude.use_case_axis_mean_delta(gaps)})
        put("pairs_per_axis", lambda: {"pairs_per_axis": magnitude.pairs_per_axis(gaps)})
        moderation = isolated("language_moderation", lambda: language_moderation(
            gaps, adjusted, rules, layout.languages, seed=seed), pd.DataFrame, failed)
        if not moderation.empty:
            tables["language_moderation"] = moderation
    put(("kendalls_w", "kendalls_w_axis", "kendalls_w_model"), lambda: ordering.kendalls_w_tables(adjusted, rules))
    put(("qv_robustness", "qv_robustness_by_use_case", "qv_robustness_model"),
        lambda: ordering.qv_robustness_tables(adjusted, n_boot=n_boot, seed=seed))
    put("profile_rank_agreement", lambda: {"profile_rank_agreement": ordering.profile_rank_agreement_table(
        standard, n_boot=n_boot, seed=seed)})
    put("merit_sensitivity", lambda: {"merit_sensitivity": magnitude.merit_sensitivity(
        standard, rules, n_boot=n_boot, seed=seed, confidence=CONFIDENCE)})
    put(("cpg", "cpg_overall", "mog", "identifier_deviation"), lambda: identifiers.identifier_tables(
        standard, adjusted, rules, resampler=resampler, canonical_pairs=pairs_map, confidence=CONFIDENCE))
    put("fairness_ablation", lambda: {"fairness_ablation": magnitude.fairness_ablation(
        standard, fairness, rules, n_boot=n_boot, seed=seed, tau=tau, confidence=CONFIDENCE)})
    put("parse_health", lambda: {"parse_health": health.parse_health(prepared.responses)})
    put("power", lambda: {"power": power_table(_with_pair_attributes(standard, results, pairs_map), pairs_map)})

    board = tables.get("leaderboard")
    orders = {col: _category_order(prepared, col) for col in ("language", "variant", "use_case", "axis", "identifier")}
    orders["model"] = [str(m) for m in board["model"]] if board is not None else _category_order(prepared, "model")
    orders["reference"] = [ref for ref, _ in pairs_map.values()]
    final = {name: _order_rows(conform(name, tables[name], layout), orders) if name in tables
             else empty_table(name, layout) for name in TABLE_COLUMNS}
    summary = _summary(prepared, final, fam, rules, n_boot, seed, tau, pairs_map, layout)
    merge_failures(summary, failed)
    return AnalysisResult(tables=final, summary=summary)
