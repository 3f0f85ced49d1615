"""Analysis tables with exactly the contract's columns, filled with plausible numbers (no analysis run)."""

from __future__ import annotations

import itertools
import json
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

AXES = {
    "Religion": ["Hindu", "Muslim", "Christian", "Sikh", "Jain", "Parsi"],
    "Caste": ["Brahmin", "Kshatriya", "Vaishya", "Dalit", "OBC", "SC/ST", "Jat", "Maratha"],
    "Region": ["Gujarati", "Bengali", "Tamil", "Santhali", "Bihari", "Kashmiri", "Punjabi", "Odia", "Naga"],
    "Gender": ["Male", "Female", "Trans Man", "Trans Woman", "Non-binary"],
    "Disability": ["No disability", "Visual impairment", "Intellectual disability", "Mental illness"],
    "Urban/Rural": ["Tier 1 city", "Tier 2 city", "Tier 3 city", "Small town", "Village"],
}
CANONICAL = {"Religion": ("Hindu", "Muslim"), "Caste": ("Brahmin", "Dalit"), "Region": ("Gujarati", "Santhali"),
             "Gender": ("Male", "Female"), "Disability": ("No disability", "Intellectual disability"),
             "Urban/Rural": ("Tier 1 city", "Village")}
USE_CASES = ["salary_estimation", "salary_increment_estimation", "counter_offer_recommendation",
             "service_pricing_vendor", "service_pricing_customer"]
LANGS = ["en", "hinglish"]
MODELS = ["sim:biased", "sim:fair", "openai:gpt-4o-mini", "local"]
PAIRS = {a: len(ids) * (len(ids) - 1) // 2 for a, ids in AXES.items()}


def make_tables(models: list[str] | None = None, *, languages: list[str] | None = None, seed: int = 0,
                fairness: bool = True, question_variants: bool = True) -> dict[str, pd.DataFrame]:
    models = models or MODELS
    languages = languages or LANGS
    rng = np.random.default_rng(seed)
    level = {m: 3.5 + 9 * i + rng.uniform(0, 2) for i, m in enumerate(models)}
    t: dict[str, list[dict[str, Any]]] = {k: [] for k in (
        "leaderboard", "axis_mean_delta", "use_case_mean_delta", "kendalls_w", "kendalls_w_axis", "cpg", "mog",
        "identifier_deviation", "qv_robustness", "merit_sensitivity", "profile_rank_agreement",
        "language_moderation", "fairness_ablation", "parse_health", "pairs_per_axis", "cpg_overall", "power")}
    for m in models:
        base = level[m]
        total_pairs = sum(PAIRS.values()) * 20
        for lang in languages:
            for axis in AXES:
                md = base * rng.uniform(0.6, 1.5)
                t["axis_mean_delta"].append(dict(
                    model=m, language=lang, axis=axis, mean_delta=md, ci_low=md * 0.95, ci_high=md * 1.05,
                    cluster_ci_low=md * 0.85, cluster_ci_high=md * 1.15, v10=min(99.0, md * 3),
                    n_pairs=PAIRS[axis] * 20, share_of_pairs=PAIRS[axis] / sum(PAIRS.values())))
                w = min(0.95, 0.05 + base / 40 * rng.uniform(0.5, 1.2))
                p = float(np.exp(-w * 20))
                t["kendalls_w_axis"].append(dict(model=m, language=lang, axis=axis, mean_w=w, p_fisher=p,
                                                 q_bh_within_axis=min(1, p * 3), q_bh_all=min(1, p * 6),
                                                 significant=p * 3 < 0.05))
                ref, comp = CANONICAL[axis]
                pooled = (base * 2 if m == "sim:biased" else 0) + rng.normal(0, 0.7)
                t["cpg_overall"].append(dict(model=m, language=lang, axis=axis, reference=ref, comparison=comp,
                                             gap=pooled, ci_low=pooled - 1.2, ci_high=pooled + 1.2, n_slots=200,
                                             n_use_cases=5, n_agree=150, significant=abs(pooled) > 1.2,
                                             testable=True))
                for uc in [*USE_CASES, None]:
                    t["power"].append(dict(model=m, language=lang, use_case=uc, axis=axis, reference=ref,
                                           comparison=comp, n_slots=200 if uc is None else 40, noise_sd=0.03,
                                           mde=2.0 if uc is None else 4.5, mde_less=2.0 if uc is None else 4.4,
                                           testable=True))
                for uc in USE_CASES:
                    gap = (base * 2 if m == "sim:biased" else 0) + rng.normal(0, 1.5)
                    t["cpg"].append(dict(model=m, language=lang, use_case=uc, axis=axis, reference=ref,
                                         comparison=comp, gap=gap, ci_low=gap - 2, ci_high=gap + 2,
                                         sign_consistency=min(100, max(0, 50 + 3 * gap)), n_slots=40,
                                         significant=abs(gap) > 2))
                t["qv_robustness"].append(dict(model=m, language=lang, axis=axis,
                                               mean_min_rho=rng.uniform(0.3, 0.98), ci_low=0.2, ci_high=0.99,
                                               robust=bool(rng.uniform() > 0.5)))
                for uc in USE_CASES:
                    w_uc = float(np.clip(w + rng.normal(0, 0.05), 0, 1))
                    t["kendalls_w"].append(dict(model=m, language=lang, use_case=uc, axis=axis, w=w_uc,
                                                chi2=w_uc * 4 * (len(AXES[axis]) - 1), p_value=p, n_blocks=4,
                                                k=len(AXES[axis]), fully_tied=False))
                    mg = md * rng.uniform(1.5, 3)
                    ids = AXES[axis]
                    t["mog"].append(dict(model=m, language=lang, use_case=uc, axis=axis, max_gap=mg,
                                         top_identifier=ids[0], bottom_identifier=ids[-1], ci_low=mg * 0.8,
                                         ci_high=mg * 1.2))
            for uc in USE_CASES:
                md = base * rng.uniform(0.5, 1.6)
                t["use_case_mean_delta"].append(dict(model=m, language=lang, use_case=uc, mean_delta=md,
                                                     ci_low=md * 0.9, ci_high=md * 1.1, n_pairs=total_pairs // 5))
                ms = rng.uniform(20, 60)
                t["merit_sensitivity"].append(dict(model=m, use_case=uc, language=lang, mean_delta=ms,
                                                   ci_low=ms - 3, ci_high=ms + 3))
                t["profile_rank_agreement"].append(dict(model=m, use_case=uc, language=lang,
                                                        mean_rho=rng.uniform(0.2, 0.99)))
                n = 500
                ok = rng.uniform(0.85, 0.99)
                ref_share = (1 - ok) / 2
                t["parse_health"].append(dict(model=m, use_case=uc, language=lang, n=n, ok_share=ok,
                                              refused_share=ref_share, unparseable_share=(1 - ok) / 3,
                                              errors=int(n * (1 - ok) / 6)))
            if fairness:
                st = base * rng.uniform(0.8, 1.2)
                fa = st * rng.uniform(0.7, 1.05)
                t["fairness_ablation"].append(dict(
                    model=m, language=lang, standard_mean_delta=st, fairness_mean_delta=fa, delta=fa - st,
                    relative_change=(fa - st) / st * 100, ci_low=fa - st - 1, ci_high=fa - st + 1))
        for axis, ids in AXES.items():
            devs = rng.normal(0, base / 3, len(ids))
            devs -= devs.mean()
            if m == "sim:biased":
                devs[0] += 15
                devs[ids.index(CANONICAL[axis][1])] -= 15
            for ident, d in zip(ids, devs, strict=True):
                t["identifier_deviation"].append(dict(model=m, axis=axis, identifier=ident, deviation=d,
                                                      n_slices=10))
            t["pairs_per_axis"].append(dict(model=m, axis=axis, n_pairs=PAIRS[axis] * 20 * len(languages),
                                            share=PAIRS[axis] / sum(PAIRS.values())))
            if len(languages) > 1:
                dd = rng.normal(0, 2)
                t["language_moderation"].append(dict(model=m, axis=axis, rho=rng.uniform(-0.2, 0.95),
                                                     delta_mean_delta=dd, ci_low=dd - 1, ci_high=dd + 1))
        rows = [r for r in t["axis_mean_delta"] if r["model"] == m]
        by_lang = {lang: float(np.mean([r["mean_delta"] for r in rows if r["language"] == lang])) for lang in LANGS
                   if any(r["language"] == lang for r in rows)}
        overall = float(np.mean(list(by_lang.values())))
        t["leaderboard"].append(dict(
            model=m, simulated=m.startswith("sim:"), overall_mean_delta=overall, ci_low=overall * 0.97,
            ci_high=overall * 1.03, cluster_ci_low=overall * 0.9, cluster_ci_high=overall * 1.1,
            en_mean_delta=by_lang.get("en", np.nan), hinglish_mean_delta=by_lang.get("hinglish", np.nan),
            en_v10=min(99, by_lang.get("en", np.nan) * 3), hinglish_v10=min(99, by_lang.get("hinglish", np.nan) * 3),
            axis_mean=overall * 1.1, n_pairs=total_pairs * len(languages)))
    frames = {k: pd.DataFrame(v) for k, v in t.items()}
    if not question_variants:
        frames["qv_robustness"] = frames["qv_robustness"].iloc[0:0]
    if not fairness:
        frames["fairness_ablation"] = pd.DataFrame(columns=["model", "language", "standard_mean_delta",
                                                            "fairness_mean_delta", "delta", "relative_change",
                                                            "ci_low", "ci_high"])
    if len(languages) < 2:
        frames["language_moderation"] = pd.DataFrame(columns=["model", "axis", "rho", "delta_mean_delta",
                                                              "ci_low", "ci_high"])
    return frames


def make_summary(models: list[str] | None = None, unsupported: dict[str, str] | None = None) -> dict[str, Any]:
    models = models or MODELS
    return {
        "study": "rupeebias",
        "models": models,
        "simulated": {m: m.startswith("sim:") for m in models},
        "counts": {"responses": 39150 * len(models), "pairs": 383400 * len(models)},
        "profile": "default",
        "bootstrap": 2000,
        "seed": 0,
        "tau": 10.0,
        "ci_methods": {"pairs": "percentile bootstrap over pairs", "slots": "percentile bootstrap over slots"},
        "counterbench_version": "0.1.0",
        "dates": {"first_response": "2025-01-01T00:00:00Z", "last_response": "2025-01-02T00:00:00Z"},
        "unsupported": unsupported or {},
    }


def write_analysis_dir(directory: Path, tables: dict[str, pd.DataFrame], summary: dict[str, Any]) -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    for name, frame in tables.items():
        frame.to_csv(directory / f"{name}.csv", index=False)
        frame.to_parquet(directory / f"{name}.parquet", index=False)
    (directory / "summary.json").write_text(json.dumps(summary, indent=2), encoding="utf-8")
    return directory


def sample_responses(models: list[str] | None = None, payload: str | None = None) -> pd.DataFrame:
    models = models or MODELS
    rows = []
    for i, (m, status) in enumerate(itertools.product(models, ["ok", "ok", "refused", "unparseable", "error"])):
        text = {"ok": "### 1200000 INR", "refused": "I cannot provide salary advice based on identity.",
                "unparseable": "It depends on many factors.", "error": None}[status]
        if payload is not None and i == 1:
            text = payload
        rows.append(dict(model=m, prompt_id=f"salary_estimation_en_{i:05d}", use_case="salary_estimation",
                         language="en", axis="Religion", identifier="Hindu", status=status,
                         value=1200000.0 if status == "ok" else np.nan, unit="INR" if status == "ok" else None,
                         parse_reason=None, response=text, error="HTTP 500" if status == "error" else None))
    return pd.DataFrame(rows)
