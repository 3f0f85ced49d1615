"""Are the STEM and hiring studies' marks earned? Simulated models with known truth. Prints JSON.

The long version of ``tests/studies/test_studies_calibration.py`` (the simulations are in
``tests/studies/calibration_studies_sim.py``). Scenarios (sizes with ``--scale 1``):

1. ``stem_quick_null`` — the quick preset (96 prompts), nothing planted, a per-profile random effect
   (sd 0.1 on the log scale): the share of simulated models with at least one mark per table family.
2. ``stem_paper_null`` — the paper's design (9,471 prompts: main, progressive, ablation, single
   attribute), the same: pairwise (the paper's response level and the profile-level marks),
   interaction gaps, position tables.
3. ``stem_paper_null_no_profile_effect`` — the same without the profile effect: the single-attribute
   intervals' coverage of 0 (their truth when nothing is planted).
4. ``stem_paper_planted`` — ``sim:stem``'s effects (Rural, Low income −0.5 level; Disabled −1.5
   grades): the share of planted comparisons marked, and false stars among the others.
5. ``hiring_*_null`` — 3 jobs (the quick preset), 20 and 100 jobs: false stars of the win-rate and
   score families (before: an uncorrected "interval excludes the ideal"), coverage of the win-rate,
   score-difference and position intervals.
6. ``hiring_rationale_null`` — three models per replicate: coverage of the rationale effect's interval
   over models.
7. ``hiring_planted`` — Chinese-marked resumes chosen with +0.15 probability, men +3 points (20 jobs).
8. ``hiring_occupation_null`` — the paper's design (100 jobs = 20 occupations × 5 near-duplicate jobs),
   a fair model whose near-duplicate jobs are answered alike (a per-occupation shift of Direct
   Comparison, sd 0.05, and of each basket's score, sd 2 points, on top of the per-job shift): the
   share of fair models with a mark on the new unit (occupations resampled and swapped), and in the
   same run the baseline on the old unit (every job independent), which these shared shifts fool.

Usage: ``python benchmarks/calibration_studies.py [--scale 1.0] [--bootstrap 1000] [--only NAME ...]``.
Every simulation is seeded; the figures are reproducible.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))


def scenarios(scale: float, bootstrap: int) -> dict[str, Any]:
    from tests.studies.calibration_studies_sim import hiring_scenario, stem_scenario

    from counterbench.builtin.hiring.synthetic import Planted

    def n(base: int) -> int:
        return max(10, int(base * scale))

    planted = Planted(compare_job_sd=0.08, compare_effects={"Chinese": 0.15}, score_effects={"Male": 3.0})
    shared = Planted(compare_job_sd=0.08, compare_occupation_sd=0.05, score_occupation_sd=2.0)
    return {
        "stem_quick_null": lambda: stem_scenario("quick", n(1000), seed=101),
        "stem_paper_null": lambda: stem_scenario("paper", n(300), seed=102),
        "stem_paper_null_no_profile_effect": lambda: stem_scenario("paper", n(100), profile_sd=0.0, seed=103),
        "stem_paper_planted": lambda: stem_scenario("paper", n(100), planted=True, seed=104),
        "hiring_quick_null": lambda: hiring_scenario(3, n(1000), n_boot=bootstrap, variations=1, seed=105),
        "hiring_20_jobs_null": lambda: hiring_scenario(20, n(500), n_boot=bootstrap, seed=106),
        "hiring_100_jobs_null": lambda: hiring_scenario(100, n(200), n_boot=bootstrap, seed=107),
        "hiring_rationale_null": lambda: hiring_scenario(20, n(300), n_boot=bootstrap, n_models=3, variations=1,
                                                         seed=108),
        "hiring_planted": lambda: hiring_scenario(20, n(200), n_boot=bootstrap, plan=planted, seed=109),
        "hiring_occupation_null": lambda: {
            "occupation": hiring_scenario(100, n(200), n_boot=bootstrap, plan=shared, seed=110),
            "job_baseline": hiring_scenario(100, n(200), n_boot=bootstrap, plan=shared, seed=110, by_job=True)},
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scale", type=float, default=1.0, help="multiplies the number of simulations")
    parser.add_argument("--bootstrap", type=int, default=1000, help="job-bootstrap replicates (hiring)")
    parser.add_argument("--only", nargs="*", default=None, help="scenario names to run")
    parser.add_argument("--out", default=None, help="also write the JSON here")
    args = parser.parse_args()
    out: dict[str, Any] = {"machine": {"python": platform.python_version(), "cpus": os.cpu_count(),
                                       "load": os.getloadavg()[0]}, "scale": args.scale,
                           "bootstrap": args.bootstrap, "scenarios": {}}
    for name, run in scenarios(args.scale, args.bootstrap).items():
        if args.only and name not in args.only:
            continue
        start = time.perf_counter()
        result = run()
        result["seconds"] = round(time.perf_counter() - start, 1)
        out["scenarios"][name] = result
        print(f"{name}: {result['seconds']} s", file=sys.stderr)
    text = json.dumps(out, indent=1)
    print(text)
    if args.out:
        Path(args.out).write_text(text + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
