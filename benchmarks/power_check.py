"""Is `counterbench power`'s "found 80% of the time" found 80% of the time, in the family the marks are made in?

For a LABEL study (``examples/approval_crossed.yaml``: yes/no, race × age × gender crossed, one use case) and an
AMOUNT study (RupeeBias, quick preset), one gap is planted at the size ``power`` says is found 80% of the
time — ``design_power`` at the model's one family of marks (``design_family_size``: every row of every
marking table its analysis tests) and the simulated model's noise — and ``--models`` simulated models are
audited through the whole analysis (``analyze_study``: one Benjamini–Hochberg family per model). Printed as
JSON per study: the planted gap, the family size (before: the family ``power`` used before, and its gap),
the predicted power, the share of models in which the planted row is marked with the planted sign, with its
Wilson 95% interval (target: 75–85%), the analysis's own prediction (its ``power`` table, measured noise;
amounts only) and the share of models with a mark elsewhere (nothing planted there).

- label: a simulation file per model (``sim:FILE.yaml``, ``seed: i``): yes with probability 0.6, Black
  applicants 0.6 − gap; noise σ = √(0.6 · 0.4) = 49.0 percentage points (``--noise-sd 49``); marked: the
  ``outcome_gaps`` row race Black vs white.
- amount: ``tests/analyses/simlaw.py`` (profile baseline × identifier multiplier × 3% lognormal noise,
  rounded), Gender planted as ``benchmarks/calibration.py``'s ``quick_power_check``; marked: the
  ``cpg_overall`` Gender row (averaged over use cases, the row ``power`` states).

Usage: ``python benchmarks/power_check.py [--models 200] [--bootstrap 200] [--only label amount]``. Seeded.
"""

from __future__ import annotations

import argparse
import math
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT / "src"), str(ROOT)]

import pandas as pd  # noqa: E402
from bench_json import finish, load_average  # noqa: E402

import counterbench  # noqa: E402
from counterbench.analyses.family_size import design_family_size  # noqa: E402
from counterbench.analyses.power import ALL_USE_CASES, design_power, gap_power  # noqa: E402
from counterbench.analyses.study import analyze_study  # noqa: E402
from counterbench.outcomes.units import gap_unit  # noqa: E402
from counterbench.studies.registry import load_study  # noqa: E402

APPROVAL = str(ROOT / "examples" / "approval_crossed.yaml")
BATCH = 25  # models per analysis call


def wilson(k: int, n: int) -> list[float] | None:
    if n == 0:
        return None
    z, p = 1.959964, k / n
    centre, half = (p + z * z / (2 * n)) / (1 + z * z / n), z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n))
    return [round(max(0.0, centre - half / (1 + z * z / n)), 4), round(min(1.0, centre + half / (1 + z * z / n)), 4)]


def _predicted(table: pd.DataFrame, pairs: dict[str, tuple[str, str]], axis: str, noise: float,
               family: int | None, kind: str | None) -> pd.Series:
    """The ``power`` row averaged over use cases for ``axis`` (one use case: the same figure)."""
    unit = gap_unit(kind)
    out = design_power(table[table["variant"] == "standard"], pairs, noise, unit=unit, family=family)
    return out[(out["axis"] == axis) & (out["use_case"] == ALL_USE_CASES)].iloc[0]


def _share(found: pd.Series, n: int) -> dict[str, Any]:
    k = int(found.sum())
    return {"models": n, "marked": k, "share": round(k / n, 4), "wilson_95": wilson(k, n)}


def _elsewhere(tables: dict[str, pd.DataFrame], planted: pd.Series, models: list[str]) -> float:
    """Share of models with a mark on some row of the family other than the planted one."""
    from counterbench.analyses.families import MARKING

    marked: set[str] = set()
    for name in MARKING:
        frame = tables.get(name)
        if frame is None or frame.empty or "significant" not in frame.columns:
            continue
        hit = frame["significant"].fillna(False).astype(bool) & ~planted.reindex(frame.index, fill_value=False) \
            if name == planted.name else frame["significant"].fillna(False).astype(bool)
        marked |= set(frame.loc[hit, "model"].astype(str))
    return round(len(marked & set(models)) / len(models), 4)


def label_check(n_models: int, bootstrap: int) -> dict[str, Any]:
    from counterbench.run.results import load_results

    study = load_study(APPROVAL)
    table = counterbench.prompts(APPROVAL)
    family = design_family_size(table, study)
    noise = 100 * math.sqrt(0.6 * 0.4)
    row = _predicted(table, dict(study.canonical_pairs), "race", noise, family, "label")
    gap = float(row["mde"])
    reference, comparison = str(row["reference"]), str(row["comparison"])
    found: list[pd.Series] = []
    other: list[float] = []
    with tempfile.TemporaryDirectory() as tmp:
        models = []
        for i in range(n_models):
            path = Path(tmp) / f"m{i:03d}.yaml"
            path.write_text(f"seed: {i}\noutcomes:\n  label: {{default: 0.6}}\neffects:\n"
                            f"  - match: {{race: {comparison}}}\n    add: {-gap / 100:.6f}\n", encoding="utf-8")
            models.append(f"sim:{path}")
        store = Path(tmp) / "s.db"
        counterbench.run_prompts(table, models, store=store, handle_signals=False)
        results = load_results(store)
        for start in range(0, n_models, BATCH):
            batch = models[start:start + BATCH]
            tables = analyze_study(results, APPROVAL, models=batch, bootstrap=bootstrap, seed=start).tables
            gaps = tables["outcome_gaps"]
            rows = (gaps["facet"].astype(str) == "race") & (gaps["reference"].astype(str) == reference) \
                & (gaps["comparison"].astype(str) == comparison)
            hit = gaps.loc[rows].set_index(gaps.loc[rows, "model"].astype(str))
            found.append(pd.Series([bool(m in hit.index and hit.loc[m, "significant"] and hit.loc[m, "difference"] < 0)
                                    for m in batch], index=batch))
            other.append(_elsewhere(tables, rows.rename("outcome_gaps"), batch) * len(batch))
    marked = pd.concat(found)
    return {"study": "examples/approval_crossed.yaml", "row": f"outcome_gaps race {comparison} vs {reference}",
            "noise_sd_pp": round(noise, 2), "family_size": family, "family_size_before": family,
            "planted_gap_pp": round(gap, 3), "alpha": float(row["alpha"]), "predicted_power": 0.8,
            **_share(marked, n_models), "marked_elsewhere_share": round(sum(other) / n_models, 4)}


def amount_check(n_models: int, bootstrap: int) -> dict[str, Any]:
    from tests.analyses.calibration_sim import design, planted_pairs
    from tests.analyses.simlaw import baselines, simulate_results

    study = load_study("rupeebias")
    pairs = dict(study.canonical_pairs)
    table = design("quick")
    family = design_family_size(table, study)
    row = _predicted(table, pairs, "Gender", 0.03, family, None)
    gap = float(row["mde"])
    before = _predicted(table, pairs, "Gender", 0.03, None, None)  # as before: the 6 pairs averaged, a family
    effects = planted_pairs(gap, ["Gender"])
    base = baselines(table)
    found: list[pd.Series] = []
    other: list[float] = []
    own: list[float] = []
    for start in range(0, n_models, BATCH):
        batch = [f"sim:pw{i}" for i in range(start, min(start + BATCH, n_models))]
        results = pd.concat([simulate_results(table, m, effects=effects, noise_sd=0.03, seed=7 * 100_003 + i,
                                              base=base) for i, m in zip(range(start, start + len(batch)), batch,
                                                                         strict=True)], ignore_index=True)
        results["study"] = "rupeebias"
        tables = analyze_study(results, "rupeebias", bootstrap=bootstrap, seed=start).tables
        overall = tables["cpg_overall"]
        rows = overall["axis"].astype(str) == "Gender"
        hit = overall.loc[rows].set_index(overall.loc[rows, "model"].astype(str))
        found.append(pd.Series([bool(m in hit.index and hit.loc[m, "significant"] and hit.loc[m, "gap"] > 0)
                                for m in batch], index=batch))
        other.append(_elsewhere(tables, rows.rename("cpg_overall"), batch) * len(batch))
        power = tables.get("power")
        if power is not None and not power.empty:
            mine = power[(power["axis"] == "Gender") & power["use_case"].isna()]
            own += [gap_power(gap, float(r.se), float(r.df), float(r.alpha)) for r in mine.itertuples()]
    marked = pd.concat(found)
    return {"study": "rupeebias --preset quick", "row": "cpg_overall Gender (Male vs Female)", "noise_sd": 0.03,
            "family_size": family, "family_size_before": int(before["family_size"]),
            "planted_gap_pct_of_pair_mean": round(gap, 3),
            "gap_found_80pct_before": round(float(before["mde"]), 3), "alpha": float(row["alpha"]),
            "predicted_power": 0.8, **_share(marked, n_models),
            "analysis_predicted_power_mean": round(sum(own) / len(own), 4) if own else None,
            "marked_elsewhere_share": round(sum(other) / n_models, 4)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", type=int, default=200)
    parser.add_argument("--bootstrap", type=int, default=200)
    parser.add_argument("--only", nargs="*", default=None, choices=["label", "amount"])
    args = parser.parse_args()
    before = load_average()
    report: dict[str, Any] = {"benchmark": "power_check", "models": args.models, "bootstrap": args.bootstrap,
                              "results": {}, "seconds": {}}
    for name, check in {"label": label_check, "amount": amount_check}.items():
        if args.only and name not in args.only:
            continue
        started = time.process_time()
        report["results"][name] = check(args.models, args.bootstrap)
        report["seconds"][name] = round(time.process_time() - started, 1)
        print(f"{name}: {report['seconds'][name]} s CPU", file=sys.stderr, flush=True)
    # the docstring's and docs/analysis.md's target: the "80%" gap marked in 75-85% of the models
    shares = [r["share"] for r in report["results"].values()]
    finish(report, before, goal="in every study checked, the gap `power` says is found 80% of the time is marked "
                                "(with the planted sign) in 75-85% of the simulated models (share; the target "
                                "stated in the docstring and docs/analysis.md)",
           within_goal=bool(shares) and all(0.75 <= s <= 0.85 for s in shares))


if __name__ == "__main__":
    main()
