"""The parts of an analysis summary every study shares: its models and their counts, the study's names and
design, and the version and date (:func:`counterbench.analyses.study.analyze_study` assembles them)."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pandas as pd

from counterbench.analyses import outcome_tables as ot
from counterbench.models.sim_check import planted_reach
from counterbench.studies.base import Study
from counterbench.studies.hooks import hook

__all__ = ["base_summary", "count_other_use_cases", "study_summary"]


def count_other_use_cases(summary: dict[str, Any], others: pd.DataFrame) -> None:
    """Add the answers of the use cases the amount analysis did not see to its per-model counts (responses,
    values used), so a mixed study's model table counts every answer the report's tables use."""
    models = summary.get("models")
    if not isinstance(models, dict):
        return
    for model, part in others.groupby(others["model"].astype(str), sort=False):
        entry = models.setdefault(str(model), {"simulated": str(model).startswith("sim:")})
        entry["n_responses"] = int(entry.get("n_responses", 0)) + len(part)
        entry["n_values"] = int(entry.get("n_values", 0)) + int(part["status"].astype(str).eq("ok").sum())


def base_summary(results: pd.DataFrame, bootstrap: int, seed: int) -> dict[str, Any]:
    """What every non-amount analysis summary holds: version, date, models and their simulated flags."""
    from counterbench.version import __version__

    models: dict[str, dict[str, Any]] = {}
    for model, part in results.groupby("model", sort=False):
        simulated = (bool(part["simulated"].astype(bool).any()) if "simulated" in part.columns
                     else str(model).startswith("sim:"))
        models[str(model)] = {"simulated": simulated, "n_responses": len(part),
                              "n_values": int(part["status"].astype(str).eq("ok").sum())}
    return {
        "profile": "default",
        "counterbench_version": __version__,
        "analysed_at": datetime.now(UTC).isoformat(timespec="seconds"),
        "models": models,
        "simulated": {m: info["simulated"] for m, info in models.items()},
        "bootstrap": {"replicates": bootstrap, "seed": seed, "confidence": ot.CONFIDENCE},
        "notes": [],
    }


def study_summary(study: Study, results: pd.DataFrame) -> dict[str, Any]:
    """The study's part of the summary: its names, languages, axes, use cases and kinds present in ``results``."""
    present = set(results["language"].astype(str)) if "language" in results.columns else set()
    uc_present = set(results["use_case"].astype(str)) if "use_case" in results.columns else set()
    return {
        "study": study.name,
        "title": study.title,
        "description": getattr(study, "description", ""),
        "languages": [lang for lang in study.languages if lang in present] or sorted(present),
        "language_names": dict(study.languages),
        "use_case_names": dict(hook(study, "use_case_labels")),
        "axes": list(study.axes),
        "use_cases": [uc for uc in study.outcomes if uc in uc_present] or sorted(uc_present),
        "outcome_kinds": {uc: spec.kind for uc, spec in study.outcomes.items() if uc in uc_present},
        "canonical_pairs": {axis: list(pair) for axis, pair in study.canonical_pairs.items()},
        "facets": [{"name": f.name, "kind": f.kind, "reference": f.reference, "levels": list(f.levels)}
                   for f in study.facets],
        #: per simulated model with effects: whether any of them reaches this study's prompts
        "planted_here": planted_reach(results),
    }
