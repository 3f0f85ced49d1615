"""The test record: what a reader needs to tell which audit a published table came from.

Written into every analysis summary as ``test_record`` (and beside every report as ``test_record.json``,
:mod:`counterbench.report.test_record`), so a table can be traced to its study, prompts, models, runs and
software, and ``counterbench verify`` can check it against a store.

Decisions:

- **Study hash** (``study_hash``): SHA-256 of the study's definition as canonical JSON — name, source, slot
  and counterfactual columns, languages, axes, facets, canonical pairs, every outcome's kind and parameters
  (its ``answer_type``) and presets. The prompts' wording is in the prompt-table hash.
- **Prompt-table hash** (per model, ``prompt_table_hash``): SHA-256 over the sorted
  ``prompt_id<TAB>prompt_hash`` lines of the prompts whose answers the analysis read for that model (a
  prompt's hash covers its text, system prompt and design), so changing one prompt changes it; models
  that answered the same prompts share one value (``same_prompts`` says whether all do).
- **Per model**: answers read, prompts, the generation-config fingerprints and run ids they came from, the
  first and last answer's time. The model string and endpoint of each run are in the store's run record;
  the report adds them where the analysis was read from a store (never a key: the store holds none).
- **Options that change numbers**: the analysis profile, bootstrap replicates and seed, τ, canonical pairs;
  and the software: counterbench, Python, NumPy, pandas, SciPy and the platform.
"""

from __future__ import annotations

import hashlib
import json
import platform
import sys
from collections.abc import Mapping
from datetime import UTC, datetime
from importlib import metadata
from typing import Any

import pandas as pd

__all__ = ["RECORD_VERSION", "build_test_record", "model_records", "prompt_table_hash", "record_options", "software",
           "study_hash"]

#: the record's own format version (a reader refuses a newer one)
RECORD_VERSION = 1
_PACKAGES = ("numpy", "pandas", "scipy", "statsmodels")


def _sha256(lines: Any) -> str:
    digest = hashlib.sha256()
    for line in lines:
        digest.update(str(line).encode("utf-8"))
        digest.update(b"\n")
    return digest.hexdigest()


def prompt_table_hash(prompt_ids: pd.Series, prompt_hashes: pd.Series) -> str:
    """SHA-256 over the sorted, distinct ``prompt_id<TAB>prompt_hash`` lines."""
    # as lists: iterating an Arrow-backed column yields the same values one slow step at a time
    pairs = sorted(set(zip(prompt_ids.astype(str).tolist(), prompt_hashes.astype(str).tolist(), strict=True)))
    return _sha256(f"{pid}\t{phash}" for pid, phash in pairs)


def study_hash(study: Any) -> str:
    """SHA-256 of ``study``'s definition as canonical JSON (module notes)."""
    from counterbench.outcomes import encode

    outcomes = getattr(study, "outcomes", {}) or {}
    facets = [{"name": f.name, "kind": f.kind, "column": f.column, "levels": list(f.levels),
               "reference": f.reference, "axis": f.axis} for f in getattr(study, "facets", ()) or ()]
    definition = {
        "name": study.name, "source": getattr(study, "source", ""),
        "slot_columns": list(getattr(study, "slot_columns", ()) or ()),
        "counterfactual_column": getattr(study, "counterfactual_column", ""),
        "languages": dict(getattr(study, "languages", {}) or {}), "axes": list(getattr(study, "axes", ()) or ()),
        "facets": facets,
        "canonical_pairs": {str(a): list(p) for a, p in (getattr(study, "canonical_pairs", {}) or {}).items()},
        "outcomes": {str(uc): encode(spec) for uc, spec in outcomes.items()},
        "presets": getattr(study, "presets", {}) or {},
    }
    return hashlib.sha256(json.dumps(definition, sort_keys=True, ensure_ascii=False, default=str)
                          .encode("utf-8")).hexdigest()


def _when(values: pd.Series, how: str) -> str | None:
    stamps = pd.to_datetime(values, errors="coerce", utc=True).dropna()
    if stamps.empty:
        return None
    stamp = stamps.min() if how == "min" else stamps.max()
    return str(stamp.isoformat(timespec="seconds"))


def model_records(results: pd.DataFrame) -> dict[str, dict[str, Any]]:
    """Per model in ``results``: the analysed answers' prompts (hash and count), configs, runs and dates."""
    if results.empty or "model" not in results.columns:
        return {}
    out: dict[str, dict[str, Any]] = {}
    for model, part in results.groupby("model", sort=False, observed=True):
        record: dict[str, Any] = {"n_answers": len(part), "n_prompts": int(part["prompt_id"].nunique())}
        if "prompt_hash" in part.columns:
            record["prompt_table_hash"] = prompt_table_hash(part["prompt_id"], part["prompt_hash"])
        for column, key in (("config_fp", "config_fps"), ("run_id", "run_ids")):
            if column in part.columns:
                values = part[column].dropna()
                record[key] = sorted({int(v) for v in values} if column == "run_id" else {str(v) for v in values})
        record["first_answer"] = _when(part["started_at"], "min") if "started_at" in part.columns else None
        record["last_answer"] = _when(part["finished_at"], "max") if "finished_at" in part.columns else None
        out[str(model)] = record
    return out


def record_options(profile: str, bootstrap: int, seed: int, tau: float,
                   pairs: Mapping[str, tuple[str, str]]) -> dict[str, Any]:
    """The analysis options that change numbers, as the record holds them."""
    return {"profile": profile, "bootstrap": bootstrap, "seed": seed, "tau": tau,
            "canonical_pairs": {str(axis): list(pair) for axis, pair in pairs.items()}}


def software() -> dict[str, str]:
    """The versions of counterbench, Python, the numeric packages and the platform."""
    from counterbench.version import __version__

    found = {"counterbench": __version__, "python": sys.version.split()[0], "platform": platform.platform()}
    for name in _PACKAGES:
        try:
            found[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            continue
    return found


def build_test_record(study: Any, models: Mapping[str, Mapping[str, Any]],
                      options: Mapping[str, Any]) -> dict[str, Any]:
    """The analysis's test record (module notes); ``options``: the analysis options that change numbers."""
    hashes = {str(r.get("prompt_table_hash")) for r in models.values() if r.get("prompt_table_hash")}
    return {
        "record_version": RECORD_VERSION,
        "study": study.name,
        "study_hash": study_hash(study),
        "models": {str(m): dict(r) for m, r in models.items()},
        "same_prompts": len(hashes) == 1 and all(r.get("prompt_table_hash") for r in models.values()),
        "options": dict(options),
        "software": software(),
        "analysed_at": datetime.now(UTC).isoformat(timespec="seconds"),
    }

