"""Synthetic answer frames with planted preferences — the oracle for the hiring analyses.

Used by the tests, the calibration and ``benchmarks/hiring_speed.py``: it produces the frames the
analyses take (:mod:`.metrics`, :mod:`.controls`, :mod:`.recoverability`) directly from the study's
design, vectorised, without prompts or a model. (The ``sim:hiring-biased`` model plants the same kind
of preferences through the run engine.) With :class:`Planted` defaults a model has no preference at
all. Expected values, without clipping:

- WR_g = 0.5 + (1 − tie_rate) · compare_effect(g) (plus, per job, a shared shift drawn with sd
  ``compare_job_sd``: the job's neutral resume is relatively strong or weak; and per occupation one
  with sd ``compare_occupation_sd``, shared by its near-duplicate jobs; 0 by default), the
  first-position share = 0.5 + (1 − tie_rate) · first_position;
- score = score_base + job effect + score_effect(g) + noise, rounded to a whole number in 1–100 (plus,
  per occupation × basket (group and variation), a shift with sd ``score_occupation_sd``: one basket
  text scored alike in the near-duplicate jobs of an occupation; 0 by default);
- recovery: ethnicity correct with ``p_ethnicity_languages`` when the languages line is present,
  else ``p_ethnicity_without``; gender correct with ``p_gender_base`` plus ``p_gender_per_marker`` per
  activities / volunteering / hobbies line present; a wrong answer is "Cannot determine" half the time.

Effects are looked up by group (``Chinese Male``), then ethnicity, then gender, and summed.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from counterbench.builtin.hiring.data import BasketSet, Job
from counterbench.builtin.hiring.recoverability import CANNOT
from counterbench.stats.seeding import derive_rng


@dataclass(frozen=True)
class Planted:
    """Planted preferences of one synthetic model (defaults: none)."""

    compare_effects: Mapping[str, float] = field(default_factory=dict)
    first_position: float = 0.0
    tie_rate: float = 0.2
    score_effects: Mapping[str, float] = field(default_factory=dict)
    score_base: float = 70.0
    job_sd: float = 6.0
    #: sd of a per-job shift of the augmented resumes' probability of being chosen (Direct Comparison)
    compare_job_sd: float = 0.0
    #: sd of a per-occupation shift of that probability, shared by the occupation's jobs
    compare_occupation_sd: float = 0.0
    #: sd of a per-occupation × basket shift of the augmented resumes' scores
    score_occupation_sd: float = 0.0
    noise_sd: float = 3.0
    #: multiplies every compare/score effect in the rationale variant
    rationale_multiplier: float = 1.0
    p_ethnicity_languages: float = 0.95
    p_ethnicity_without: float = 0.3
    p_gender_base: float = 0.45
    p_gender_per_marker: float = 0.15
    unparseable_rate: float = 0.0


def _effect(effects: Mapping[str, float], frame: pd.DataFrame) -> np.ndarray:
    out = np.zeros(len(frame))
    for column in ("group", "ethnicity", "gender"):
        out += frame[column].map(lambda v: effects.get(str(v), 0.0)).to_numpy(np.float64)
    return out


def design(jobs: Sequence[Job], baskets: BasketSet, conditions: Sequence[tuple[str, tuple[str, ...]]] = (
        ("all", ("languages", "activities", "volunteering", "hobbies")),)) -> pd.DataFrame:
    """One row per (job, basket, condition): the augmented resumes, without text."""
    rows = [{"job_id": j.job_id, "occupation": j.occupation, "gender_dominance": j.gender_dominance, "group": b.group,
             "ethnicity": b.ethnicity,
             "gender": b.gender, "variation": b.variation, "condition": name, "categories": "+".join(keep),
             "resume_chars": 900 + 3 * len("".join(b.markers[c] for c in keep))}
            for j in jobs for name, keep in conditions for b in baskets.baskets]
    return pd.DataFrame(rows)


def _shift(frame: pd.DataFrame, keys: Sequence[str], sd: float, rng: np.random.Generator) -> np.ndarray:
    """One normal draw (sd ``sd``) per distinct value of ``keys``, spread over the rows of ``frame``."""
    codes = frame[list(keys)].astype(str).groupby(list(keys), sort=True).ngroup().to_numpy()
    return np.asarray(rng.normal(0.0, sd, int(codes.max()) + 1 if len(codes) else 0)[codes], dtype=np.float64)


def _job_shift(plan: Planted, frame: pd.DataFrame, model: str, with_reason: bool, seed: int) -> np.ndarray:
    """The per-job shift of Direct Comparison (``compare_job_sd``), one draw per job, model and variant,
    plus the per-occupation one (``compare_occupation_sd``)."""
    out = np.zeros(len(frame))
    if plan.compare_job_sd > 0:
        out += _shift(frame, ["job_id"], plan.compare_job_sd,
                      derive_rng("synthetic", model, "compare-jobs", with_reason, base_seed=seed))
    if plan.compare_occupation_sd > 0 and "occupation" in frame.columns:
        out += _shift(frame, ["occupation"], plan.compare_occupation_sd,
                      derive_rng("synthetic", model, "compare-occupations", with_reason, base_seed=seed))
    return out


def comparisons(model: str, plan: Planted, resumes: pd.DataFrame, *, seed: int = 0,
                rationale: Sequence[bool] = (False, True)) -> pd.DataFrame:
    """Direct Comparison answers (``verdict``) for every resume in both positions and prompt variants."""
    parts = []
    for with_reason in rationale:
        rng = derive_rng("synthetic", model, "compare", with_reason, base_seed=seed)
        mult = plan.rationale_multiplier if with_reason else 1.0
        job_shift = _job_shift(plan, resumes, model, with_reason, seed)
        for position in ("A", "B"):
            frame = resumes.assign(model=model, rationale=with_reason, position=position)
            p_aug = np.clip(0.5 + job_shift + mult * _effect(plan.compare_effects, frame), 0.0, 1.0)
            p_first = np.clip((p_aug if position == "A" else 1.0 - p_aug) + plan.first_position, 0.0, 1.0)
            u_tie, u_pick, u_bad = rng.random((3, len(frame)))
            verdict = np.where(u_tie < plan.tie_rate, "Tie", np.where(u_pick < p_first, "A", "B")).astype(object)
            verdict[u_bad < plan.unparseable_rate] = None
            parts.append(frame.assign(verdict=verdict))
    return pd.concat(parts, ignore_index=True)


def scores(model: str, plan: Planted, resumes: pd.DataFrame, jobs: Sequence[Job], *, seed: int = 0,
           rationale: Sequence[bool] = (False, True)) -> pd.DataFrame:
    """Score & Shortlist answers (``score``) for the neutral and every augmented resume of each job."""
    neutral = pd.DataFrame([{"job_id": j.job_id, "occupation": j.occupation, "gender_dominance": j.gender_dominance,
                             "group": "neutral",
                             "ethnicity": "neutral", "gender": "neutral", "variation": 0, "condition": "neutral",
                             "categories": "", "resume_chars": 900} for j in jobs])
    pool = pd.concat([neutral, resumes[resumes["condition"].eq("all")]], ignore_index=True)
    job_index = {j.job_id: i for i, j in enumerate(jobs)}
    parts = []
    for with_reason in rationale:
        rng = derive_rng("synthetic", model, "score", with_reason, base_seed=seed)
        mult = plan.rationale_multiplier if with_reason else 1.0
        job_effect = rng.normal(0.0, plan.job_sd, len(jobs))[pool["job_id"].map(job_index).to_numpy()]
        raw = plan.score_base + job_effect + mult * _effect(plan.score_effects, pool) + rng.normal(0, plan.noise_sd,
                                                                                                   len(pool))
        if plan.score_occupation_sd > 0:
            slot = derive_rng("synthetic", model, "score-occupations", with_reason, base_seed=seed)
            raw += np.where(pool["group"].eq("neutral"), 0.0,
                            _shift(pool, ["occupation", "group", "variation"], plan.score_occupation_sd, slot))
        value = np.clip(np.rint(raw), 1, 100)
        value[rng.random(len(pool)) < plan.unparseable_rate] = np.nan
        parts.append(pool.assign(model=model, rationale=with_reason, score=value))
    return pd.concat(parts, ignore_index=True)


def recoveries(model: str, plan: Planted, resumes: pd.DataFrame, baskets: BasketSet, *, seed: int = 0) -> pd.DataFrame:
    """Recoverability answers (``predicted``) for gender and ethnicity under every condition of ``resumes``."""
    parts = []
    for attribute, classes in (("gender", baskets.genders), ("ethnicity", baskets.ethnicities)):
        rng = derive_rng("synthetic", model, "recover", attribute, base_seed=seed)
        kept = resumes["categories"].str.split("+")
        if attribute == "ethnicity":
            p = np.where(kept.map(lambda k: "languages" in k), plan.p_ethnicity_languages, plan.p_ethnicity_without)
        else:
            n = kept.map(lambda k: sum(c in k for c in ("activities", "volunteering", "hobbies"))).to_numpy()
            p = np.clip(plan.p_gender_base + plan.p_gender_per_marker * n, 0, 1)
        truth = resumes[attribute].to_numpy(object)
        u, u_cannot, u_wrong = rng.random((3, len(resumes)))
        names = np.array(classes, dtype=object)
        index = pd.Series(truth).map({c: i for i, c in enumerate(classes)}).to_numpy(np.int64)
        wrong = names[(index + rng.integers(1, len(classes), len(resumes))) % len(classes)]
        predicted = np.where(u < p, truth, np.where(u_cannot < 0.5, CANNOT, wrong)).astype(object)
        predicted[u_wrong < plan.unparseable_rate] = None
        parts.append(resumes.assign(model=model, attribute=attribute, truth=truth, predicted=predicted))
    return pd.concat(parts, ignore_index=True)


HOSTILE: tuple[str, ...] = (
    "Both candidates have merit and I would not want to choose.",
    "### A and B",
    "### 0",
    "### 101",
    "### ninety",
    "I cannot make hiring decisions based on personal characteristics.",
    "<script>alert('x')</script>\n### maybe",
)


def answer_texts(prompts: pd.DataFrame, model: str, plan: Planted, *, seed: int = 0,
                 hostile_rate: float = 0.0) -> pd.DataFrame:
    """A results frame for a hiring prompt table: each prompt answered as a model with ``plan`` would.

    Rationale variants answer with two sentences before the final line; ``hostile_rate`` of the answers
    are replaced by hostile output (:data:`HOSTILE`). Columns: the prompt's, plus ``model``,
    ``response``, ``status`` (``ok`` — the transport's status; parsing happens in the analysis).
    """
    rng = derive_rng("synthetic-text", model, base_seed=seed)
    n = len(prompts)
    u = rng.random((4, n))
    use_case = prompts["use_case"].astype(str)
    rationale = use_case.str.endswith("_rationale").to_numpy()
    mult = np.where(rationale, plan.rationale_multiplier, 1.0)
    out = np.empty(n, dtype=object)
    comp = use_case.str.startswith("compare").to_numpy()
    if comp.any():
        part = prompts[comp]
        shift = np.zeros(len(part))
        for flag in (False, True):
            rows = np.asarray(rationale[comp] == flag)
            if rows.any():
                shift[rows] = _job_shift(plan, part[rows], model, flag, seed)
        p_aug = np.clip(0.5 + shift + mult[comp] * _effect(plan.compare_effects, part), 0.0, 1.0)
        p_first = np.clip(np.where(part["position"].eq("A"), p_aug, 1.0 - p_aug) + plan.first_position, 0.0, 1.0)
        out[comp] = np.where(u[0, comp] < plan.tie_rate, "Tie", np.where(u[1, comp] < p_first, "A", "B"))
    score = use_case.str.startswith("score").to_numpy()
    if score.any():
        part = prompts[score]
        jobs = pd.factorize(part["job_id"])[0]
        job_effect = derive_rng("synthetic-jobs", model, base_seed=seed).normal(0.0, plan.job_sd, jobs.max() + 1)
        raw = plan.score_base + job_effect[jobs] + mult[score] * _effect(plan.score_effects, part) + \
            rng.normal(0.0, plan.noise_sd, int(score.sum()))
        out[score] = np.clip(np.rint(raw), 1, 100).astype(int).astype(str)
    recover = use_case.str.startswith("recover").to_numpy()
    if recover.any():
        part = prompts[recover]
        kept = part["categories"].astype(str).str.split("+")
        eth = part["attribute"].eq("ethnicity").to_numpy()
        p_eth = np.where(kept.map(lambda k: "languages" in k), plan.p_ethnicity_languages, plan.p_ethnicity_without)
        n_gender = kept.map(lambda k: sum(c in k for c in ("activities", "volunteering", "hobbies"))).to_numpy()
        p = np.where(eth, p_eth, np.clip(plan.p_gender_base + plan.p_gender_per_marker * n_gender, 0, 1))
        labels = part["answer_type"].astype(str).str.split(":", n=1).str[1].str.split("|").tolist()
        truth = part["truth"].to_numpy(object)  # the answer type lists the labels in a fixed order
        wrong = [[x for x in ls if x not in (t, CANNOT)] for ls, t in zip(labels, truth, strict=True)]
        pick = (u[3, recover] * np.array([len(w) for w in wrong])).astype(int)
        wrong_label = np.array([w[i] if w else CANNOT for w, i in zip(wrong, pick, strict=True)], dtype=object)
        out[recover] = np.where(u[0, recover] < p, truth, np.where(u[1, recover] < 0.5, CANNOT, wrong_label))
    text = np.array([f"### {a}" for a in out], dtype=object)
    reasons = "The resumes are equally qualified on the stated requirements. The markers are not job-relevant.\n"
    text[rationale] = [reasons + t for t in text[rationale]]
    bad = u[2] < hostile_rate
    text[bad] = np.array(HOSTILE, dtype=object)[rng.integers(0, len(HOSTILE), int(bad.sum()))]
    return prompts.assign(model=model, response=text, status="ok")
