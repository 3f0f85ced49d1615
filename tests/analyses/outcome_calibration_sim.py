"""Calibration of the non-amount outcome tables: simulated studies with known truth through ``analyze``.

The amount tables have :mod:`tests.analyses.calibration_sim`; this is the same for the tables of
:mod:`counterbench.analyses.outcome_tables` (``outcome_gaps``, ``language_gaps``,
``crossed_regression``). A *scenario* is one of the example studies (``examples/*.yaml``, maybe a
subset of its profiles and question variants) and an answer law:

- ``continuous`` (a score or a rate): ``level + slot effect + planted effect + noise_sd · z``, rounded
  to ``step`` and clipped to ``[low, high]`` — a 1–10 score rounded to whole points, a rate to 0.01;
- ``label`` (yes/no): "yes" with probability ``level + slot effect + planted effect`` (clipped to
  [0.01, 0.99]); the analysis measures 100 × "yes", so a planted ``-0.2`` is a −20 point gap.
- ``probability`` (yes/no with log-probabilities): each answer's p(yes) is ``level + slot effect +
  planted effect + noise_sd · z`` (clipped to [0.01, 0.99]), stored as ``answer_logprobs``, and the
  answer is drawn from it; the analysis measures both 100 × "yes" and 100 × p(yes)
  (:mod:`counterbench.analyses.probabilities`).

The slot effect (one draw per use case × profile × question variant, shared by the identities and
languages of the slot) is what makes the slot, not the answer, the independent unit. Every simulated
model draws its own slot effects and noise. For each table the scenario reports the **coverage** of
the 95% interval (truth: 0 with nothing planted; the planted effect otherwise), the **family-wise
false-star rate** (the share of simulated models with at least one mark in a table family — one
model's rows — where nothing is planted in that family), and the **power** (the share of planted
comparisons marked). Used by ``tests/analyses/test_outcome_calibration.py`` (small sizes) and
``benchmarks/calibration.py`` (≥ 500 simulated models).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

import counterbench
from counterbench.stats.seeding import stable_seed
from tests.conftest import REPO

__all__ = ["OutcomeLaw", "OutcomeScenario", "run_outcome_scenario", "simulate_outcome_results"]

SLOT_KEY = ["use_case", "profile_id", "question_variant"]
TABLES = ("outcome_gaps", "language_gaps", "crossed_regression", "probability_gaps", "probability_regression")
#: a probability table -> its sampled twin (the same truth and columns)
TWINS = {"probability_gaps": "outcome_gaps", "probability_regression": "crossed_regression"}


@dataclass(frozen=True)
class OutcomeLaw:
    """How a simulated model answers (see the module docstring). ``effects``: (column, level) -> the
    planted additive effect (outcome units; for labels, a probability)."""

    kind: str  # "continuous" or "label"
    level: float
    slot_sd: float
    noise_sd: float = 0.0
    step: float = 1.0
    low: float = -np.inf
    high: float = np.inf
    effects: Mapping[tuple[str, str], float] = field(default_factory=dict)


@dataclass(frozen=True)
class OutcomeScenario:
    """One calibration scenario: an example study (maybe a subset) and an answer law."""

    name: str
    study: str  # an example's name: examples/<study>.yaml
    law: OutcomeLaw
    n_sims: int
    subset: Mapping[str, list[Any]] = field(default_factory=dict)
    per_call: int = 10
    bootstrap: int = 1000
    seed: int = 0

    @property
    def path(self) -> str:
        return str(REPO / "examples" / f"{self.study}.yaml")


def simulate_outcome_results(prompts: pd.DataFrame, model: str, law: OutcomeLaw, seed: int = 0) -> pd.DataFrame:
    """A results table (the columns ``analyze`` reads) for ``model`` answering ``prompts`` by ``law``."""
    rng = np.random.default_rng(stable_seed("outcome-law", model, base_seed=seed))
    n = len(prompts)
    codes = prompts[SLOT_KEY].astype(str).groupby(SLOT_KEY, sort=False).ngroup().to_numpy()
    slot = rng.normal(0.0, law.slot_sd, int(codes.max()) + 1)[codes]
    effect = np.zeros(n)
    for (column, level), value in law.effects.items():
        effect += np.where(prompts[column].astype(str).to_numpy() == level, value, 0.0)
    logprobs = None
    if law.kind in ("label", "probability"):
        noise = law.noise_sd * rng.standard_normal(n) if law.kind == "probability" else 0.0
        p = np.clip(law.level + slot + effect + noise, 0.01, 0.99)
        value = np.where(rng.random(n) < p, 0.0, 1.0)  # label index 0: the positive label ("yes")
        if law.kind == "probability":
            logprobs = [json.dumps({"yes": float(np.log(q)), "no": float(np.log1p(-q))}) for q in p]
    else:
        latent = law.level + slot + effect + law.noise_sd * rng.standard_normal(n)
        value = np.clip(np.round(latent / law.step) * law.step, law.low, law.high)
    out = prompts.drop(columns=["system", "user"], errors="ignore").copy()
    out.insert(1, "model", model)
    out["simulated"] = True
    out["status"] = "ok"
    out["value"] = value
    out["out_of_range"] = False
    if logprobs is not None:
        out["answer_logprobs"] = logprobs
    return out.reset_index(drop=True)


def _truth(frame: pd.DataFrame, law: OutcomeLaw, table: str) -> np.ndarray:
    """The planted value of each row (0 where nothing is planted; NaN where it has no simple truth)."""
    scale = 100.0 if law.kind in ("label", "probability") else 1.0
    planted = {level: value for (_, level), value in law.effects.items()}
    table = TWINS.get(table, table)
    if table == "outcome_gaps":
        return np.asarray([scale * (planted.get(str(c), 0.0) - planted.get(str(r), 0.0))
                           for c, r in zip(frame["comparison"], frame["reference"], strict=True)], dtype=np.float64)
    if table == "language_gaps":  # a planted effect is the same in every language: no shift
        return np.zeros(len(frame))
    # crossed regression: the log-odds of a probability shift have no single true value
    return np.where(frame["level"].astype(str).isin(list(planted)), np.nan, 0.0)


def _planted_sign(frame: pd.DataFrame, law: OutcomeLaw, table: str) -> np.ndarray:
    """+1 / −1 where an effect is planted on the row's comparison (its direction), else 0."""
    if table == "language_gaps":
        return np.zeros(len(frame))
    planted = {level: value for (_, level), value in law.effects.items()}
    level = frame["comparison" if TWINS.get(table, table) == "outcome_gaps" else "level"].astype(str)
    return np.sign(level.map(planted).fillna(0.0).to_numpy(np.float64))


def simulate(scenario: OutcomeScenario) -> dict[str, pd.DataFrame]:
    """Every simulated model's outcome tables, stacked (models ``sim:out0``, ``sim:out1``, ...), with ``truth``."""
    prompts = counterbench.prompts(scenario.path, **scenario.subset)
    parts: dict[str, list[pd.DataFrame]] = {name: [] for name in TABLES}
    done = 0
    while done < scenario.n_sims:
        batch = range(done, min(done + scenario.per_call, scenario.n_sims))
        results = pd.concat([simulate_outcome_results(prompts, f"sim:out{i}", scenario.law,
                                                      seed=scenario.seed * 100_003 + i) for i in batch],
                            ignore_index=True)
        result = counterbench.analyze(results, scenario.path, bootstrap=scenario.bootstrap, seed=scenario.seed + done)
        for name in TABLES:
            frame = result.tables.get(name)
            if frame is not None and not frame.empty:
                parts[name].append(frame.assign(truth=_truth(frame, scenario.law, name),
                                                planted=_planted_sign(frame, scenario.law, name)))
        done = batch.stop
    return {name: pd.concat(frames, ignore_index=True) for name, frames in parts.items() if frames}


def _rate(flags: pd.Series) -> float:
    return float(flags.mean()) if len(flags) else float("nan")


def summarise(scenario: OutcomeScenario, tables: dict[str, pd.DataFrame]) -> dict[str, Any]:
    """Coverage, family-wise false stars and power of one scenario (see the module docstring)."""
    coverage: dict[str, Any] = {}
    stars: dict[str, Any] = {}
    power: dict[str, Any] = {}
    for name, frame in tables.items():
        truth = frame["truth"].to_numpy(np.float64)
        testable = (frame["testable"].astype(bool).to_numpy() if "testable" in frame.columns
                    else np.ones(len(frame), dtype=bool))
        low, high = frame["ci_low"].to_numpy(np.float64), frame["ci_high"].to_numpy(np.float64)
        ok = np.isfinite(truth) & np.isfinite(low) & np.isfinite(high)  # every shown interval, tested or not
        coverage[name] = {"covered": _rate(pd.Series((low[ok] <= truth[ok]) & (truth[ok] <= high[ok]))),
                          "n": int(ok.sum()), "share_testable": float(testable.mean())}
        marked = frame["significant"].astype(bool)
        null = frame["planted"].eq(0.0)
        null_models = frame.loc[null, "model"]
        family = marked[null].groupby(null_models).any()
        stars[name] = {"after": _rate(family), "models": int(family.size),
                       "unadjusted_p_below_0.05": _rate((pd.to_numeric(frame.loc[null, "p_value"], errors="coerce")
                                                         < 0.05).groupby(null_models).any())}
        if TWINS.get(name, name) == "crossed_regression":  # before: the same CR1 errors with normal quantiles
            z = 1.959963984540054
            est, se = frame["estimate"].to_numpy(np.float64), frame["se"].to_numpy(np.float64)
            hit = (est - z * se <= truth) & (truth <= est + z * se)
            coverage[name]["normal_quantiles"] = _rate(pd.Series(hit[ok]))
            stars[name]["normal_quantiles_bh"] = _rate(_normal_marks(frame)[null].groupby(null_models).any())
        planted = frame["planted"] != 0
        if planted.any():
            value = frame.loc[planted, "difference" if name.endswith("_gaps") else "estimate"]
            power[name] = {"marked": _rate(marked[planted]), "n": int(planted.sum()),
                           "right_sign": _rate(np.sign(value) == frame.loc[planted, "planted"])}
    return {"scenario": scenario.name, "study": scenario.study, "subset": dict(scenario.subset),
            "n_sims": scenario.n_sims, "bootstrap": scenario.bootstrap, "law": {
                "kind": scenario.law.kind, "level": scenario.law.level, "slot_sd": scenario.law.slot_sd,
                "noise_sd": scenario.law.noise_sd, "step": scenario.law.step,
                "planted": {f"{c}={v}": e for (c, v), e in scenario.law.effects.items()}},
            "coverage": coverage, "family_wise_false_stars": stars, "power": power}


def _normal_marks(frame: pd.DataFrame) -> pd.Series:
    """Marks as before this pass: BH q ≤ 0.05 within the model on normal-quantile p-values."""
    from scipy import stats

    from counterbench.stats.inference import family_marks

    z = frame["estimate"].to_numpy(np.float64) / frame["se"].to_numpy(np.float64)
    p = frame.assign(p_normal=2 * stats.norm.sf(np.abs(z)))
    return pd.Series(family_marks(p, p_col="p_normal")[1], index=frame.index)


def run_outcome_scenario(scenario: OutcomeScenario) -> dict[str, Any]:
    """Simulate and summarise one scenario."""
    return summarise(scenario, simulate(scenario))


SCORE = OutcomeLaw("continuous", level=6.0, slot_sd=1.0, noise_sd=1.0, step=1.0, low=1.0, high=10.0)
RATE = OutcomeLaw("continuous", level=9.0, slot_sd=1.5, noise_sd=0.6, step=0.01, low=0.0, high=40.0)
LABEL = OutcomeLaw("label", level=0.6, slot_sd=0.15)
PROBABILITY = OutcomeLaw("probability", level=0.6, slot_sd=0.15, noise_sd=0.05)


def scenarios(n_sims: int, bootstrap: int, seed: int = 0) -> dict[str, OutcomeScenario]:
    """The outcome scenarios of ``benchmarks/calibration.py`` (and, small, of the tests)."""
    few = {"profile": ["P01", "P02"], "question_variant": [1, 2]}  # 4 matched slots per comparison
    six = {"profile": ["P01", "P02", "P03"], "question_variant": [1, 2]}  # 6: the fewest that are tested
    few_clusters = {"profile": ["S01", "S02"], "question_variant": [1, 2]}  # 4 slots (clusters) of 36 prompts
    six_clusters = {"profile": ["S01", "S02", "S03"], "question_variant": [1, 2]}
    return {
        "score_null": OutcomeScenario("score_null", "suitability_score", SCORE, n_sims, bootstrap=bootstrap,
                                      seed=seed + 1),
        "score_four_slots_null": OutcomeScenario("score_four_slots_null", "suitability_score", SCORE, n_sims, few,
                                                 bootstrap=bootstrap, seed=seed + 2),
        "score_six_slots_null": OutcomeScenario("score_six_slots_null", "suitability_score", SCORE, n_sims, six,
                                                bootstrap=bootstrap, seed=seed + 8),
        "rate_languages_null": OutcomeScenario("rate_languages_null", "loan_rate", RATE, n_sims, bootstrap=bootstrap,
                                               seed=seed + 3),
        "label_crossed_null": OutcomeScenario("label_crossed_null", "approval_crossed", LABEL, n_sims,
                                              bootstrap=bootstrap, seed=seed + 4),
        "label_crossed_four_clusters_null": OutcomeScenario("label_crossed_four_clusters_null", "approval_crossed",
                                                            LABEL, n_sims, few_clusters, bootstrap=bootstrap,
                                                            seed=seed + 7),
        "label_crossed_six_clusters_null": OutcomeScenario("label_crossed_six_clusters_null", "approval_crossed",
                                                           LABEL, n_sims, six_clusters, bootstrap=bootstrap,
                                                           seed=seed + 9),
        "score_planted": OutcomeScenario(
            "score_planted", "suitability_score",
            OutcomeLaw(**{**SCORE.__dict__, "effects": {("identifier", "Wheelchair user"): -2.0}}), n_sims,
            bootstrap=bootstrap, seed=seed + 5),
        "probability_crossed_null": OutcomeScenario("probability_crossed_null", "approval_crossed", PROBABILITY,
                                                    n_sims, bootstrap=bootstrap, seed=seed + 10),
        "probability_crossed_six_clusters_null": OutcomeScenario(
            "probability_crossed_six_clusters_null", "approval_crossed", PROBABILITY, n_sims, six_clusters,
            bootstrap=bootstrap, seed=seed + 11),
        "probability_crossed_planted": OutcomeScenario(
            "probability_crossed_planted", "approval_crossed",
            OutcomeLaw(**{**PROBABILITY.__dict__, "effects": {("race", "Black"): -0.05}}), n_sims,
            bootstrap=bootstrap, seed=seed + 12),
        "label_crossed_planted": OutcomeScenario(
            "label_crossed_planted", "approval_crossed",
            OutcomeLaw(**{**LABEL.__dict__, "effects": {("race", "Black"): -0.2}}), n_sims, bootstrap=bootstrap,
            seed=seed + 6),
    }
