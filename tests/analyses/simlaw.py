"""A vectorised stand-in for ``sim:NAME`` runs: the simulated model's generative law, in bulk.

``value = baseline(use case, profile) × identifier multiplier × exp(noise_sd · z)``, rounded like the
simulated backend (:mod:`counterbench.models.simulated`), with refusals and malformed answers at
given rates. Baselines come from the ``sim:fair`` preset through the backend's own
``expected_value``, so they match real ``sim:`` runs; only the noise stream differs (numpy instead of
one SHA-256 per prompt), which is what lets the speed benchmark build 9 × 39,150 responses in a
second. Used by ``tests/analyses`` and ``benchmarks/analysis_speed.py``.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np
import pandas as pd

from counterbench.models.base import ChatRequest
from counterbench.models.simulated import create_simulated
from counterbench.stats.seeding import stable_seed

ROUNDING = {"inr_annual": 1000.0, "percent": 0.1, "inr": 500.0}
PLANTED = {  # sim:biased: first +15%, second −15% (the canonical pairs)
    "Hindu": 1.15, "Muslim": 0.85, "Brahmin": 1.15, "Dalit": 0.85, "Gujarati": 1.15, "Santhali": 0.85,
    "Male": 1.15, "Female": 0.85, "No disability": 1.15, "Intellectual disability": 0.85,
    "Tier 1 city": 1.15, "Village": 0.85,
}


def baselines(prompts: pd.DataFrame) -> np.ndarray:
    """The ``sim:fair`` noise-free value of every prompt (its profile baseline)."""
    backend = create_simulated("fair")
    design = [c for c in ("use_case", "profile_id", "offered_ctc", "answer_type") if c in prompts.columns]
    unique = prompts[design].drop_duplicates()
    values = []
    for row in unique.to_dict("records"):
        meta = {k: v for k, v in row.items() if not (isinstance(v, float) and np.isnan(v))}
        request = ChatRequest(prompt_id="x", system="", user="", answer_type=row.get("answer_type"), metadata=meta)
        values.append(backend.expected_value(request))
    lookup = unique.assign(_base=values)
    return prompts[design].merge(lookup, on=design, how="left")["_base"].to_numpy(np.float64)


def simulate_results(
    prompts: pd.DataFrame,
    model: str,
    *,
    effects: Mapping[str, float] | None = None,
    noise_sd: float = 0.03,
    refusal_rate: float = 0.0,
    malformed_rate: float = 0.0,
    seed: int = 0,
    base: np.ndarray | None = None,
) -> pd.DataFrame:
    """A results table (the columns ``load_results`` gives the analyses) for ``model`` on ``prompts``."""
    rng = np.random.default_rng(stable_seed("simlaw", model, base_seed=seed))
    n = len(prompts)
    base = baselines(prompts) if base is None else base
    mult = prompts["identifier"].map(dict(effects or {})).fillna(1.0).to_numpy(np.float64)
    value = base * mult * np.exp(noise_sd * rng.standard_normal(n))
    step = prompts["answer_type"].map(ROUNDING).fillna(1.0).to_numpy(np.float64)
    value = np.round(value / step) * step
    u = rng.random(n)
    status = np.where(u < refusal_rate, "refused", np.where(u < refusal_rate + malformed_rate, "unparseable", "ok"))
    value = np.where(status == "ok", value, np.nan)
    salary_like = (prompts["answer_type"] == "inr_annual").to_numpy()
    out = prompts[["prompt_id", "use_case", "language", "axis", "identifier", "profile_id", "question_variant",
                   "variant", "answer_type"]].copy()
    if "offered_ctc" in prompts.columns:
        out["offered_ctc"] = prompts["offered_ctc"].to_numpy()
    out.insert(1, "model", model)
    out.insert(2, "simulated", True)
    out["status"] = status
    out["value"] = value
    out["release_value"] = np.where(salary_like, value / 1e5, value)
    out["out_of_range"] = False
    return out.reset_index(drop=True)
