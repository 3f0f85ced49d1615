"""How well ``--stop-when decided`` (issue 35) keeps its promises, on the real English RupeeBias design.

Measures, with simulated per-slot answers (numpy, not the HTTP path) fed to the shipped stopping logic
(:func:`counterbench.analyses.sequential.family`, ``slot_rounds``, ``with_last_rounds``, ``replay_looks``),
looks every ``--look-every`` prompts:

1. null: family-wise rate of any false "gap" verdict (goal ≤ 5%) and the share of prompts sent;
2. biased (every comparison −30%): median share of prompts sent (goal ≤ 50%) and agreement with the
   fixed analysis (Bonferroni t-test at 0.05/m on all slots);
3. fair, margin 5: share of models whose comparisons all end "no gap above the margin" (or undecided with
   their design exhausted), median share of prompts (goal ≤ 70%);
4. power: the comparison with the most slots planted at the gap the fixed analysis (the same Bonferroni
   t-test) finds 80% of the time (noncentral t), every other comparison null: how often the sequential
   audit says "gap" with the planted sign (goal ≥ 76%), and the fixed test's own power on the same draws.
   The margin there is half the planted gap (``--power-margin``): a gap smaller than the margin is one the
   user called negligible, and the audit rightly stops on "no gap above the margin" (with the default margin
   of 5%, far above this design's 1.8% 80%-power gap, that is what it says).

A slot's amounts are a_ref = exp(N(0, σ)), a_cmp = (1 + effect)·exp(N(0, σ)) (the base cancels in the
pair-mean gap 100·(a_cmp − a_ref)/((a_cmp + a_ref)/2)); ``--tails 4`` draws t(4) noise scaled to SD σ.
σ: ``--sigma``, default 0.0283: measured — the canonical-pair slot gaps of ``sim:fair`` on the full English
design (a real run through the store) have a standard deviation of 4.00% of the pair's mean, and a slot gap of
two answers with log-noise σ has ≈ 100·√2·σ.

Run: PYTHONPATH=src python benchmarks/sequential_check.py --models 1000 [--tails 4] [--scenarios null,biased,fair,power]
Prints JSON.
"""

from __future__ import annotations

import argparse
import dataclasses
import math
from typing import Any

import numpy as np
from scipy import stats as sstats

from counterbench.analyses.sequential import cell_rows, family, replay_looks, slot_rounds, with_last_rounds
from counterbench.options import StoppingRule

SIGMA_SOURCE = ("--sigma; default 0.0283: sim:fair's canonical-pair slot gaps on the full English design have "
                "SD 4.00% of the pair's mean (measured from a stored run), = 100·sqrt(2)·sigma")
EFFECTS = {"null": 0.0, "biased": -0.30, "fair": 0.0, "power": 0.0}


def fixed_power_gap(n: int, sd: float, alpha: float, power: float = 0.8) -> float:
    """The slot gap (in the gap's unit) a two-sided one-sample t-test at ``alpha`` on ``n`` slots of SD ``sd``
    finds with probability ``power`` (noncentral t)."""
    from scipy.optimize import brentq

    crit = sstats.t.ppf(1 - alpha / 2, n - 1)

    def shortfall(delta: float) -> float:
        nc = delta * math.sqrt(n) / sd
        return float(sstats.nct.sf(crit, n - 1, nc) + sstats.nct.cdf(-crit, n - 1, nc)) - power

    return float(brentq(shortfall, 1e-9, 20 * sd))


def wilson(k: int, n: int, z: float = 1.96) -> list[float]:
    if n == 0:
        return [math.nan, math.nan]
    p = k / n
    d = 1 + z * z / n
    c = (p + z * z / (2 * n)) / d
    h = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / d
    return [round(c - h, 4), round(c + h, 4)]


def design(look_every: int, seed: int) -> dict[str, Any]:
    from counterbench.prompts import prompts
    from counterbench.studies.registry import load_study
    study = load_study("rupeebias")
    table = prompts("rupeebias", language=["en"])
    rule = StoppingRule(look_every=look_every, seed=seed)
    rounds = slot_rounds(table, study.slot_columns, rule.seed, rule.look_every)
    comps = with_last_rounds(family(study, table, rule), table, rounds)
    frame = table.assign(_round=rounds)
    slot_r = []
    for c in comps:
        part = cell_rows(frame, c)
        part = part[part[c.column].astype(str).isin([c.reference, c.comparison])]
        keys = [k for k in study.slot_columns if k in part.columns and k != c.column]
        slot_r.append(part.groupby(keys, observed=True)["_round"].max().to_numpy(np.int64))
    cum = np.cumsum(np.bincount(rounds))
    return {"comparisons": comps, "slot_rounds": slot_r, "last_round": int(rounds.max()), "cum": cum,
            "prompts": len(table), "rule": rule}


def _noise(rng: np.random.Generator, size: int, sigma: float, tails: float) -> np.ndarray:
    if tails > 0:
        return sigma * rng.standard_t(tails, size) / math.sqrt(tails / (tails - 2))
    return rng.normal(0.0, sigma, size)


def run(models: int, scenarios: list[str], sigma: float, tails: float = 0.0, look_every: int = 100,
        seed: int = 0, d: dict[str, Any] | None = None, power_margin: float | None = None) -> dict[str, Any]:
    d = d or design(look_every, seed)
    comps, m = d["comparisons"], len(d["comparisons"])
    rng = np.random.default_rng(seed)
    out: dict[str, Any] = {"sigma": sigma, "sigma_source": SIGMA_SOURCE, "tails_df": tails or None,
                           "look_every": look_every, "comparisons": m, "prompts": d["prompts"],
                           "fixed_analysis": "Bonferroni two-sided t-test at 0.05/m on all slots"}
    target = int(np.argmax([len(r) for r in d["slot_rounds"]]))  # the power scenario's planted comparison
    n_target = len(d["slot_rounds"][target])
    planted_gap = -fixed_power_gap(n_target, 100.0 * math.sqrt(2.0) * sigma, 0.05 / m)
    planted_effect = 2.0 * planted_gap / (200.0 - planted_gap)  # a_cmp = (1 + e)·a gives the pair-mean gap
    margin = abs(planted_gap) / 2.0 if power_margin is None else power_margin
    for name in scenarios:
        effect = EFFECTS[name]
        used = [dataclasses.replace(c, margin=margin) for c in comps] if name == "power" else comps
        shares, any_false, all_nogap, agree, found, fixed_found = [], 0, 0, 0, 0, 0
        for _ in range(models):
            gaps = []
            for i, r in enumerate(d["slot_rounds"]):
                a = np.exp(_noise(rng, len(r), sigma, tails))
                own = planted_effect if name == "power" and i == target else effect
                b = (1 + own) * np.exp(_noise(rng, len(r), sigma, tails))
                gaps.append((r, 100.0 * (b - a) / ((a + b) / 2.0)))
            res = replay_looks(gaps, used, d["rule"], d["last_round"])
            stop = res.stop_look if res.stop_look is not None else d["last_round"]
            shares.append(float(d["cum"][stop]) / d["prompts"])
            said = res.verdicts["verdict"].astype(str)
            any_false += int(effect == 0 and (said == "gap").any())
            all_nogap += int((said != "gap").all() and (said == "no gap above the margin").mean() > 0)
            fixed = [sstats.ttest_1samp(g, 0.0).pvalue < 0.05 / m for _, g in gaps]
            agree += int(all((s == "gap") == f for s, f in zip(said, fixed, strict=True)))
            if name == "power":
                found += int(said.iloc[target] == "gap" and float(res.verdicts["mean"].iloc[target]) < 0)
                fixed_found += int(fixed[target] and float(np.mean(gaps[target][1])) < 0)
        q = np.percentile(shares, [25, 50, 75]).round(4).tolist()
        row: dict[str, Any] = {"models": models, "share_prompts_quartiles": q}
        if name == "null":
            row.update(false_gap_rate=any_false / models, ci=wilson(any_false, models), goal="<= 0.05",
                       within_goal=any_false / models <= 0.05)
        elif name == "biased":
            row.update(agree_with_fixed=agree / models, ci=wilson(agree, models), goal="median share <= 0.50",
                       within_goal=q[1] <= 0.50)
        elif name == "power":
            c = comps[target]
            row.update(comparison=f"{c.use_case} {c.facet} {c.comparison} vs {c.reference}", design_slots=n_target,
                       planted_gap_pct=round(planted_gap, 3), margin=round(margin, 3), sequential_power=found / models,
                       ci=wilson(found, models), fixed_power=fixed_found / models,
                       fixed_ci=wilson(fixed_found, models), goal="sequential power >= 0.76",
                       within_goal=found / models >= 0.76)
        else:
            row.update(all_no_gap=all_nogap / models, ci=wilson(all_nogap, models), goal="median share <= 0.70",
                       within_goal=q[1] <= 0.70)
        out[name] = row
    return out


def main() -> None:
    # imported here: tests/analyses/test_sequential_check_smoke.py imports this file without benchmarks/ on sys.path
    from bench_json import finish, load_average

    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--models", type=int, default=1000)
    p.add_argument("--scenarios", default="null,biased,fair,power")
    p.add_argument("--sigma", type=float, default=0.0283)
    p.add_argument("--tails", type=float, default=0.0, help="t df for heavier tails (0: normal)")
    p.add_argument("--look-every", type=int, default=100)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--power-margin", type=float, default=None,
                   help="the margin of the power scenario (default: half the planted gap; a gap below the margin "
                        "is one the user called negligible, and the audit stops there on 'no gap above the margin')")
    a = p.parse_args()
    before = load_average()
    names = a.scenarios.split(",")
    out = run(a.models, names, a.sigma, a.tails, a.look_every, a.seed, power_margin=a.power_margin)
    finish(out, before, goal="every scenario run meets its own goal (its within_goal; null: false gap rate <= 0.05, "
                             "biased: median share of prompts <= 0.50, fair: median share <= 0.70, power: "
                             "sequential power >= 0.76)",
           within_goal=all(out[name]["within_goal"] for name in names))


if __name__ == "__main__":
    main()
