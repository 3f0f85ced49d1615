"""The amount analysis one model at a time, so memory grows with one model's answers.

Every table of :func:`counterbench.families.amount.analysis.analyze` is made of per-model cells whose
numbers depend on that model's answers alone (each cell has its own bootstrap stream, keyed by the
cell). Three things span models and are redone on the combined tables:

* the leaderboard's ``rank`` (models sorted by overall Mean Δ%, as in the joint analysis);
* the paper's Benjamini–Hochberg q-values of Kendall's W (``q_bh_all`` over every included cell or axis,
  ``q_bh_within_axis`` per language × axis, ``q_bh`` per language); the ``significant`` marks are
  corrected within each model's rows (:mod:`counterbench.stats.inference`; the caller then re-marks
  them in the model's one family, :mod:`counterbench.analyses.families`), so they stay as computed;
* the summary (counts added up, lists united, dates widened, findings in leaderboard order,
  ``unsupported`` recomputed).

Rows come out in the joint analysis's order (models in leaderboard order, each model's rows as its
own analysis ordered them). ``tests/analyses/test_by_model.py`` checks every table against the
joint analysis of the same answers.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd

from counterbench.analyses.prepare import with_out_of_range_note
from counterbench.analyses.profiles import get_profile
from counterbench.analyses.result import AnalysisResult
from counterbench.analyses.table_families import MapModels
from counterbench.errors import UserError
from counterbench.families.amount.analysis import analyze
from counterbench.families.amount.ordering import _bh
from counterbench.families.amount.tables import TableLayout

__all__ = ["analyze_by_model", "combine_results"]

_COUNTS = ("n_responses", "n_ok", "n_out_of_range", "n_out_of_range_excluded", "n_duplicates", "n_values",
           "n_pairs")
_LISTS = ("languages", "use_cases", "axes", "variants")


def analyze_by_model(
    load: Callable[[str], pd.DataFrame],
    models: Sequence[str],
    *,
    profile: str,
    bootstrap: int,
    seed: int,
    tau: float,
    canonical_pairs: Mapping[str, tuple[str, str]] | None,
    layout: TableLayout | None = None,
    extra_tables: Callable[[pd.DataFrame], Mapping[str, pd.DataFrame]] | None = None,
    map_models: MapModels | None = None,
) -> AnalysisResult:
    """Analyse ``models`` one at a time (``load(model)`` gives that model's results) and combine the tables;
    ``extra_tables`` adds more per-model tables from the same answers (the generic outcome tables, marked
    within each model); ``map_models`` runs each model's share (default: one after another in this process;
    the study analysis passes one that runs them in worker processes, :mod:`counterbench.analyses.model_workers`)."""
    wanted = list(models)

    def one(model: str) -> tuple[AnalysisResult | None, UserError | None]:
        results = load(model)
        try:
            part = analyze(results, profile=profile, bootstrap=bootstrap, seed=seed, tau=tau,
                           canonical_pairs=canonical_pairs, layout=layout)
            if extra_tables is not None:
                part.tables.update(extra_tables(results))
            return part, None
        except UserError as err:  # no usable answer of this model: left out, like the joint analysis does
            return None, err

    done = map_models(one, wanted) if map_models is not None else [one(model) for model in wanted]
    parts = [part for part, _ in done if part is not None]
    unusable = [(model, err) for model, (_, err) in zip(wanted, done, strict=True) if err is not None]
    if not parts:
        raise unusable[0][1] if unusable else UserError("no responses of these models")
    combined = combine_results(parts)
    for model, _ in unusable:
        combined.summary["notes"].append(f"{model}: no usable standard-prompt answers; left out of the analysis")
    return combined


def combine_results(parts: Sequence[AnalysisResult]) -> AnalysisResult:
    """One :class:`AnalysisResult` from the analyses of disjoint sets of models."""
    boards = [p.tables["leaderboard"] for p in parts]
    board = pd.concat([b for b in boards if not b.empty] or boards[:1], ignore_index=True)
    board = board.sort_values("overall_mean_delta", kind="stable", na_position="last").reset_index(drop=True)
    board["rank"] = np.arange(1, len(board) + 1)
    order = [str(m) for m in board["model"]]
    for p in parts:  # models without pairs keep their place after the ranked ones
        order += [m for m in p.summary.get("models", {}) if m not in order]
    rank = {m: i for i, m in enumerate(order)}
    tables: dict[str, pd.DataFrame] = {"leaderboard": board}
    for name in parts[0].tables:
        if name == "leaderboard":
            continue
        pieces = [p.tables[name] for p in parts]
        filled = [t for t in pieces if not t.empty]
        if not filled:
            tables[name] = pieces[0]
            continue
        if "model" in filled[0].columns:
            filled.sort(key=lambda t: rank.get(str(t["model"].iloc[0]), len(rank)))
        tables[name] = pd.concat(filled, ignore_index=True)
    _correct_kendalls_w(tables)
    tables = {name: tables[name] for name in parts[0].tables}
    return AnalysisResult(tables=tables, summary=_summary(parts, tables, order))


def _correct_kendalls_w(tables: dict[str, pd.DataFrame]) -> None:
    """The paper's Benjamini–Hochberg q-values over every model at once, as :func:`ordering.kendalls_w_tables`
    computes them (the ``significant`` marks are per model and need no recomputation)."""
    per_cell = tables.get("kendalls_w")
    if per_cell is not None and not per_cell.empty:
        per_cell["q_bh_all"] = _bh(per_cell["p_value"].where(per_cell["included"].astype(bool)))
    per_axis = tables.get("kendalls_w_axis")
    if per_axis is not None and not per_axis.empty:
        per_axis["q_bh_within_axis"] = np.nan
        for _, idx in per_axis.groupby(["language", "axis"], sort=False).groups.items():
            per_axis.loc[idx, "q_bh_within_axis"] = _bh(per_axis.loc[idx, "p_fisher"])
        per_axis["q_bh_all"] = _bh(per_axis["p_fisher"])
    by_model = tables.get("kendalls_w_model")
    if by_model is not None and not by_model.empty:
        by_model["q_bh"] = np.nan
        for _, idx in by_model.groupby("language", sort=False).groups.items():
            by_model.loc[idx, "q_bh"] = _bh(by_model.loc[idx, "p_fisher"])


def _summary(parts: Sequence[AnalysisResult], tables: dict[str, pd.DataFrame], order: list[str]) -> dict[str, Any]:
    summaries = [p.summary for p in parts]
    out = dict(summaries[0])
    models = {m: info for s in summaries for m, info in s.get("models", {}).items()}
    out["models"] = {m: models[m] for m in order if m in models}
    out["simulated"] = {m: info["simulated"] for m, info in out["models"].items()}
    for key in _COUNTS:
        out[key] = sum(int(s.get(key, 0)) for s in summaries)
    by_language: dict[str, int] = {}
    for s in summaries:
        for lang, n in s.get("n_pairs_by_language", {}).items():
            by_language[lang] = by_language.get(lang, 0) + int(n)
    out["n_pairs_by_language"] = by_language
    out["findings"] = [line for m in order for s in summaries if m in s.get("models", {})
                       for line in s.get("findings", [])]
    for key in _LISTS:
        out[key] = list(dict.fromkeys(v for s in summaries for v in s.get(key, [])))
    firsts = [s["first_response"] for s in summaries if s.get("first_response")]
    lasts = [s["last_response"] for s in summaries if s.get("last_response")]
    out["first_response"] = min(firsts) if firsts else None
    out["last_response"] = max(lasts) if lasts else None
    out["out_of_range"] = {m: c for s in summaries for m, c in (s.get("out_of_range") or {}).items()}
    out["notes"] = with_out_of_range_note([n for s in summaries for n in s.get("notes", [])], out["out_of_range"],
                                          get_profile(str(out.get("profile") or "default")))
    hints = {name: hint for s in summaries for name, hint in s.get("unsupported", {}).items()}
    out["unsupported"] = {name: hints.get(name, "") for name, frame in tables.items() if frame.empty}
    failed = {name: reason for s in summaries for name, reason in s.get("failed_tables", {}).items()}
    if failed:  # a table that failed for one model is named (its other models' rows are kept)
        out["failed_tables"] = failed
        for name in failed:
            out["unsupported"].pop(name, None)
    return out
