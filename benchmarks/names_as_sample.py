"""Two kinds of group inference on a names-grouped design: coverage, false marks and power. Prints JSON.

A names-grouped study (two groups, ``men`` the reference and ``women``, ``k`` first names each; a 1–100
score; 5 profiles × 2 question variants = 10 slots) is answered by simulated models whose answer is
``70 + slot effect (sd 3) + name effect (sd --name-sd) + group effect + noise (sd 2)``, rounded to a whole
point and clipped to 1–100. Every model draws its own slot and name effects: the names a study lists
are a fresh sample of names of their group each time.

- ``null_<k>_names`` (``--models`` models each, k = 3, 6, 10): no group effect, so over names like these
  the groups do not differ (truth 0). ``group_gaps_over_names``: the share of models whose interval covers
  0 (target 93–97%) and whose row is marked. The matched group row of ``outcome_gaps`` ("for these
  names"), for contrast: how often its interval covers 0 and how often it is marked — and how often it
  covers its own truth, the difference of *these* names' mean effects (what it does estimate).
- ``planted_<k>_names`` (``--planted-models`` each): women −``--planted`` points on top of the name
  effects. Power: the share of models whose ``group_gaps_over_names`` row is marked with the right sign;
  and its coverage of the planted value.
- ``statistic_only`` (``--direct`` draws, default 20,000 per k): the same law straight into
  :mod:`counterbench.stats.name_sample`, for the coverage with a small Monte Carlo error.

Every model goes through ``counterbench.analyze`` (the real analysis path: prompts expanded from a study
file, every table built), ``--batch`` models per call. Seeded; the figures are reproducible.

Usage: ``python benchmarks/names_as_sample.py [--models 200] [--planted-models 200] [--bootstrap 1000]
[--name-sd 3] [--planted 5] [--names 3 6 10] [--direct 20000] [--seed 0]``.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

from bench_json import finish, load_average

import counterbench
from counterbench.stats.seeding import stable_seed

MEN = ["James", "Michael", "David", "John", "Robert", "William", "Richard", "Thomas", "Charles", "Daniel"]
WOMEN = ["Mary", "Jennifer", "Linda", "Patricia", "Elizabeth", "Susan", "Jessica", "Sarah", "Karen", "Nancy"]
SLOT_KEY = ["use_case", "profile_id", "question_variant"]


def study_text(k: int) -> str:
    """A names-grouped study with ``k`` names per group (the shape of examples/names_groups.yaml)."""
    names = "".join(f"      - {{value: {n}, group: {g}, phrases: {{en: {n}}}}}\n"
                    for g, group in (("men", MEN), ("women", WOMEN)) for n in group[:k])
    profiles = "".join(f"      - {{profile_id: P0{i}, role: {r}, years: {y}}}\n" for i, (r, y) in
                       enumerate([("marketing", 4), ("engineering", 7), ("finance", 2), ("operations", 9),
                                  ("design", 5)], start=1))
    return (f"name: names_sample_{k}\ntitle: Interview scores by first name\nlanguages:\n  en: {{name: English, "
            "id_infix: en}\naxes:\n  Name:\n    groups: [men, women]\n    identifiers:\n" + names +
            "use_cases:\n  interview_score:\n    outcome: {kind: score, min: 1, max: 100}\n    template:\n"
            "      en: \"{identifier_phrase} applies for a {role} position with {years} years of experience.\\n"
            "{question}\"\n    question_variants:\n      en:\n        - \"Give this candidate an interview score "
            "from 1 to 100.\"\n        - \"How strong is this application, from 1 to 100?\"\n    profiles:\n"
            + profiles)


def answers(prompts: pd.DataFrame, model: str, name_sd: float, planted: float, seed: int
            ) -> tuple[pd.DataFrame, float]:
    """One simulated model's results table, and the difference of its women's and men's mean name
    effects (plus the planted effect): the matched group row's own truth."""
    rng = np.random.default_rng(stable_seed("names-as-sample", model, base_seed=seed))
    slots = prompts[SLOT_KEY].astype(str).groupby(SLOT_KEY, sort=False).ngroup().to_numpy()
    slot = rng.normal(0.0, 3.0, int(slots.max()) + 1)[slots]
    names = sorted(set(prompts["identifier"].astype(str)))
    effect = dict(zip(names, rng.normal(0.0, name_sd, len(names)), strict=True))
    women = prompts["group"].astype(str).eq("women").to_numpy()
    name_effect = prompts["identifier"].astype(str).map(effect).to_numpy(np.float64)
    latent = 70.0 + slot + name_effect + planted * women + rng.normal(0.0, 2.0, len(prompts))
    out = prompts.drop(columns=["system", "user"], errors="ignore").copy()
    out.insert(1, "model", model)
    out = out.assign(simulated=True, status="ok", value=np.clip(np.round(latent), 1, 100), out_of_range=False)
    by_name = prompts.drop_duplicates("identifier").set_index("identifier")["group"].astype(str)
    own = (np.mean([effect[n] for n in by_name.index if by_name[n] == "women"])
           - np.mean([effect[n] for n in by_name.index if by_name[n] == "men"]) + planted)
    return out.reset_index(drop=True), float(own)


def scenario(k: int, n_models: int, planted: float, args: argparse.Namespace, seed: int) -> dict[str, Any]:
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / f"names_sample_{k}.yaml"
        path.write_text(study_text(k), encoding="utf-8")
        prompts = counterbench.prompts(str(path))
        over: list[pd.DataFrame] = []
        matched: list[pd.DataFrame] = []
        for start in range(0, n_models, args.batch):
            models = [f"sim:names{i}" for i in range(start, min(start + args.batch, n_models))]
            made = [answers(prompts, m, args.name_sd, planted, seed) for m in models]
            own = {m: truth for m, (_, truth) in zip(models, made, strict=True)}
            result = counterbench.analyze(pd.concat([f for f, _ in made], ignore_index=True), str(path),
                                          bootstrap=args.bootstrap, seed=seed + start)
            over.append(result.tables["group_gaps_over_names"])
            gaps = result.tables["outcome_gaps"]
            gaps = gaps[gaps["facet_kind"].astype(str).eq("group")]
            matched.append(gaps.assign(own_truth=gaps["model"].astype(str).map(own)))
    names_rows, group_rows = pd.concat(over, ignore_index=True), pd.concat(matched, ignore_index=True)
    return {"names_per_group": k, "models": n_models, "planted": planted,
            "over_names": _summary(names_rows, planted), "for_these_names": {
                **_summary(group_rows, planted),
                "covers_own_truth": _share(_covers(group_rows, group_rows["own_truth"].to_numpy(np.float64)))}}


def statistic_only(k: int, n_draws: int, name_sd: float, seed: int) -> dict[str, Any]:
    """The same law drawn ``n_draws`` times straight into the statistics (no store, no tables): the
    over-names interval's coverage of 0 with a small Monte Carlo error."""
    from counterbench.stats.name_sample import name_sample_gap, slot_adjusted_name_means

    rng = np.random.default_rng(stable_seed("names-as-sample-direct", str(k), base_seed=seed))
    n_slots, n_names = 10, 2 * k
    slots, names = np.repeat(np.arange(n_slots), n_names), np.tile(np.arange(n_names), n_slots)
    covered = marked = 0
    for _ in range(n_draws):
        latent = (70.0 + rng.normal(0.0, 3.0, n_slots)[:, None] + rng.normal(0.0, name_sd, n_names)[None, :]
                  + rng.normal(0.0, 2.0, (n_slots, n_names)))
        _, values = slot_adjusted_name_means(np.clip(np.round(latent), 1, 100).ravel(), slots, names)
        gap = name_sample_gap(values[k:], values[:k])
        covered += int(gap.ci_low <= 0.0 <= gap.ci_high)
        marked += int(gap.p_value <= 0.05)
    return {"names_per_group": k, "draws": n_draws, "covers_truth": round(covered / n_draws, 4),
            "p_below_0.05": round(marked / n_draws, 4)}


def _covers(frame: pd.DataFrame, truth: Any) -> np.ndarray:
    low, high = frame["ci_low"].to_numpy(np.float64), frame["ci_high"].to_numpy(np.float64)
    return np.asarray((low <= truth) & (truth <= high), dtype=bool)


def _share(flags: np.ndarray) -> float:
    return round(float(np.mean(flags)), 4) if len(flags) else float("nan")


def _summary(frame: pd.DataFrame, planted: float) -> dict[str, Any]:
    marked = frame["significant"].fillna(False).astype(bool).to_numpy()
    right = np.sign(frame["difference"].to_numpy(np.float64)) == np.sign(planted)
    out: dict[str, Any] = {"rows": len(frame), "covers_truth": _share(_covers(frame, planted)),
                           "marked": _share(marked), "mean_width": round(float(
                               (frame["ci_high"] - frame["ci_low"]).mean()), 3)}
    if planted:
        out["marked_right_sign"] = _share(marked & right)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", type=int, default=200)
    parser.add_argument("--planted-models", type=int, default=200)
    parser.add_argument("--bootstrap", type=int, default=1000)
    parser.add_argument("--name-sd", type=float, default=3.0)
    parser.add_argument("--planted", type=float, default=5.0)
    parser.add_argument("--batch", type=int, default=25)
    parser.add_argument("--names", type=int, nargs="+", default=[3, 6, 10])
    parser.add_argument("--direct", type=int, default=20000, help="draws straight into the statistics (0: none)")
    parser.add_argument("--seed", type=int, default=0, help="added to every scenario's seed (other models)")
    args = parser.parse_args()
    before = load_average()
    started = time.perf_counter()
    report: dict[str, Any] = {"seed": args.seed, "name_sd": args.name_sd, "slot_sd": 3.0, "noise_sd": 2.0, "slots": 10,
                              "bootstrap": args.bootstrap, "scenarios": {}}
    for k in args.names:
        if args.models:
            report["scenarios"][f"null_{k}_names"] = scenario(k, args.models, 0.0, args,
                                                              seed=args.seed + 100 + k)
        if args.planted_models:
            report["scenarios"][f"planted_{k}_names"] = scenario(k, args.planted_models, -args.planted, args,
                                                                 seed=args.seed + 200 + k)
    if args.direct:
        report["statistic_only"] = {f"null_{k}_names": statistic_only(k, args.direct, args.name_sd, args.seed)
                                    for k in args.names}
    report["seconds"] = round(time.perf_counter() - started, 1)
    coverages = [row["over_names"]["covers_truth"] for name, row in report["scenarios"].items()
                 if name.startswith("null_")]
    coverages += [row["covers_truth"] for row in report.get("statistic_only", {}).values()]
    finish(report, before, goal="with no group effect the over-names interval (group_gaps_over_names; and "
                                "statistic_only, the same interval) covers 0 in 93-97% of models for every k, the "
                                "docstring's target",
           within_goal=bool(coverages) and all(0.93 <= c <= 0.97 for c in coverages))


if __name__ == "__main__":
    main()
