"""Hundreds of generated studies through the real path: crashes, unexplained tables, planted and null marks.

The long version of ``tests/generated/test_generated_studies.py``. ``--studies`` (default 300) studies
of the seeded study generator (``tests/generated/studygen.py``: every outcome kind × design × option of
the study file format, effects drawn from ``--scale LOW HIGH`` times the generator's default) are each
audited against two local OpenAI-compatible servers — one planting an effect on one level of every use
case, its null twin answering the same without it — into a SQLite store, analysed from it and reported;
every ``--cli-every``-th study also goes through ``analyze``/``report --store``, ``check``, ``export``
and the viewer's pages (the viewer app in-process). Printed as JSON:

- ``tracebacks``: audits that raised (each one's seed and first line in ``examples``);
- ``failed_tables``, ``tables_missing_without_reason``, ``parse_health_missing``, ``cli_or_viewer_problems``;
- ``planted_marked_share_power_90``: the share of planted gap rows (use case × language) marked with the
  planted sign among those where power says ≥ 90% (``design_power`` at the planted pair, the known answer
  noise and the model's one family of marks, ``design_family_size``; for names grouped, the pair of two
  names — the group row has more answers, so this is conservative), with its Wilson 95% interval;
  ``planted_marked_share_all`` likewise over every planted row;
- ``null_marked_share``: the share of studies whose null twin has any mark in ``outcome_gaps`` (the
  rate within that table), with its Wilson interval; ``null_marked_share_other_tables``: any mark in another
  table (``language_gaps``, ``cpg``, ``kendalls_w``, ...);
- ``any_table_null_marked_share``: the share of studies whose null twin has a mark in *any* table, with its
  Wilson interval — the family-wise rate of the one family per model (``analyses/families.py``) that the
  report states as 5%.

Usage: ``python benchmarks/generated_studies.py [--studies 300] [--first-seed 0] [--cli-every 10]``.
"""

from __future__ import annotations

import argparse
import math
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT / "src"), str(ROOT)]

import pandas as pd  # noqa: E402
from bench_json import finish, load_average  # noqa: E402
from tests.conftest import run_cli_here  # noqa: E402
from tests.generated.audit_checks import Verdict, audit_study, cli_problems, viewer_problems  # noqa: E402
from tests.generated.coverage import features  # noqa: E402
from tests.generated.studygen import GeneratedStudy, generate, reply  # noqa: E402

import counterbench  # noqa: E402
from counterbench.analyses.family_size import design_family_size  # noqa: E402
from counterbench.analyses.power import ALL_USE_CASES, design_power  # noqa: E402
from counterbench.outcomes.units import gap_unit  # noqa: E402
from counterbench.studies.registry import load_study  # noqa: E402
from counterbench.testing._fakecore import FaultConfig, run_in_thread  # noqa: E402
from counterbench.testing.fake_openai import FakeOpenAIServer  # noqa: E402

POWER = 0.9


def wilson(k: int, n: int) -> list[float] | None:
    if n == 0:
        return None
    z, p = 1.959964, k / n
    centre, half = (p + z * z / (2 * n)) / (1 + z * z / n), z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n))
    return [round(max(0.0, centre - half / (1 + z * z / n)), 4), round(min(1.0, centre + half / (1 + z * z / n)), 4)]


def planted_power(study: GeneratedStudy, path: Path, prompts: pd.DataFrame) -> dict[tuple[str, str], bool]:
    """(use case, language) -> whether power says the planted gap is found ≥ 90% of the time."""
    the_study = load_study(str(path))
    standard = prompts[prompts["variant"].astype(str) == "standard"]
    family = design_family_size(prompts, the_study)  # the model's one family of marks
    where = study.planted
    if where.facet_kind == "group":  # two names, one of each group: the group row has more answers
        idents = standard.drop_duplicates("identifier")
        pair = (str(idents.loc[idents["group"] == where.reference, "identifier"].iloc[0]),
                str(idents.loc[idents["group"] == where.level, "identifier"].iloc[0]))
        key = str(where.axis)
    else:
        pair, key = (where.reference, where.level), str(where.axis or where.column)
    out = {}
    for uc, effect in study.effects.items():
        unit = gap_unit(effect.kind)
        part = standard[standard["use_case"] == uc]
        if part.empty:
            continue
        table = design_power(part, {key: pair}, effect.noise_in_unit, power=POWER, unit=unit, family=family)
        table = table[table["use_case"].astype(str) != ALL_USE_CASES] if len(table) else table
        r = effect.shift / 100
        size = 200 * abs(r) / (2 + r) if unit.relative else abs(effect.shift)  # in % of the pair's mean
        for row in table.itertuples():
            out[(uc, str(row.language))] = bool(row.testable) and math.isfinite(row.mde) and size >= row.mde
    return out


def viewer_get(store: Path) -> Any:
    from starlette.testclient import TestClient

    from counterbench.viewer.app import create_app
    from counterbench.viewer.server import open_catalog

    catalog = open_catalog(store)
    client = TestClient(create_app(catalog), base_url="http://127.0.0.1")

    def get(url: str) -> tuple[int, str]:
        answer = client.get(url)
        return answer.status_code, answer.text

    return catalog, get


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--studies", type=int, default=300)
    parser.add_argument("--first-seed", type=int, default=0)
    parser.add_argument("--scale", type=float, nargs=2, default=(0.4, 1.6))
    parser.add_argument("--cli-every", type=int, default=10, help="every K-th study also through the CLI and viewer")
    parser.add_argument("--bootstrap", type=int, default=200)
    args = parser.parse_args()
    before = load_average()
    started = time.perf_counter()
    studies = [generate(s, effect_scale=tuple(args.scale)) for s in
               range(args.first_seed, args.first_seed + args.studies)]
    counts: Counter[str] = Counter()
    covered: Counter[str] = Counter()
    examples: dict[str, list[str]] = {}
    planted_powered = planted_powered_marked = planted_all = planted_all_marked = 0
    by_kind: dict[str, list[int]] = {}
    null_studies = null_marked = null_other = null_any = 0
    null_by_kind: Counter[str] = Counter()  # use cases of each kind with a null mark
    kinds_run: Counter[str] = Counter()
    null_other_tables: Counter[str] = Counter()  # studies whose null twin has a mark in each other table

    def note(what: str, text: str) -> None:
        counts[what] += 1
        examples.setdefault(what, [])
        if len(examples[what]) < 5:
            examples[what].append(text)

    with tempfile.TemporaryDirectory() as tmp, \
            run_in_thread(FakeOpenAIServer(FaultConfig(reply=reply(studies, True)))) as planted_server, \
            run_in_thread(FakeOpenAIServer(FaultConfig(reply=reply(studies, False)))) as null_server:
        urls = {"planted": planted_server.base_url, "null": null_server.base_url}
        for i, study in enumerate(studies):
            covered.update(features(study))
            kinds_run.update(e.kind for e in study.effects.values())
            folder = Path(tmp) / study.name
            path = study.write(folder)
            verdict: Verdict = audit_study(study, path, folder / "cb.db", folder / "out", urls,
                                           bootstrap=args.bootstrap)
            if verdict.traceback:
                note("tracebacks", f"{study.describe()}: {verdict.traceback.splitlines()[0]}")
                continue
            for name, reason in verdict.failed_tables.items():
                note("failed_tables", f"seed {study.seed}: {name}: {reason}")
            for name in verdict.unexplained:
                note("tables_missing_without_reason", f"seed {study.seed}: {name}")
            for name in verdict.health_missing:
                note("parse_health_missing", f"seed {study.seed}: {name}")
            if args.cli_every and i % args.cli_every == 0:
                problems = cli_problems(run_cli_here, path, folder / "cb.db", folder)
                catalog, get = viewer_get(folder / "cb.db")
                try:
                    problems += viewer_problems(get, study.name)
                finally:
                    catalog.close()
                counts["studies_through_cli_and_viewer"] += 1
                for problem in problems:
                    note("cli_or_viewer_problems", f"seed {study.seed}: {problem}")
            prompts = counterbench.prompts(str(path), **study.run_filters)
            powered = planted_power(study, path, prompts)
            for row in verdict.planted:
                ok = row.marked and row.right_sign
                planted_all += 1
                planted_all_marked += ok
                if powered.get((row.use_case, row.language)):
                    planted_powered += 1
                    planted_powered_marked += ok
                    by_kind.setdefault(row.kind, [0, 0])
                    by_kind[row.kind][0] += 1
                    by_kind[row.kind][1] += ok
                    if not ok:
                        note("planted_missed_with_power_90", f"{study.describe()}: {row}")
                if row.marked and not row.right_sign:
                    note("planted_marked_wrong_sign", f"seed {study.seed}: {row}")
            null_studies += 1
            null_marked += bool(verdict.null_marked)
            null_other += bool(verdict.null_marked_other)
            null_any += bool(verdict.null_marked or verdict.null_marked_other)
            null_other_tables.update(set(verdict.null_marked_other))
            if verdict.null_marked:
                note("null_twin_marked", f"{study.describe()}: {verdict.null_marked}")
                for uc in {line.split("/", 1)[0] for line in verdict.null_marked}:
                    null_by_kind[study.effects[uc].kind] += 1
    result = {
        "studies": len(studies),
        "tracebacks": counts["tracebacks"],
        "failed_tables": counts["failed_tables"],
        "tables_missing_without_reason": counts["tables_missing_without_reason"],
        "parse_health_missing": counts["parse_health_missing"],
        "studies_through_cli_and_viewer": counts["studies_through_cli_and_viewer"],
        "cli_or_viewer_problems": counts["cli_or_viewer_problems"],
        "planted_rows_power_90": planted_powered,
        "planted_marked_share_power_90": (round(planted_powered_marked / planted_powered, 4) if planted_powered
                                          else None),
        "planted_marked_share_power_90_ci": wilson(planted_powered_marked, planted_powered),
        "planted_marked_share_power_90_by_kind": {k: {"rows": n, "marked": round(m / n, 4)}
                                                  for k, (n, m) in sorted(by_kind.items())},
        "planted_rows_all": planted_all,
        "planted_marked_share_all": round(planted_all_marked / planted_all, 4) if planted_all else None,
        "planted_marked_wrong_sign": counts["planted_marked_wrong_sign"],
        "null_studies": null_studies,
        "null_marked_share": round(null_marked / null_studies, 4) if null_studies else None,
        "null_marked_share_ci": wilson(null_marked, null_studies),
        "null_marked_use_cases_by_kind": {k: f"{null_by_kind[k]} of {n}" for k, n in sorted(kinds_run.items())},
        "null_marked_share_other_tables": round(null_other / null_studies, 4) if null_studies else None,
        "null_marked_other_tables_studies": dict(sorted(null_other_tables.items())),
        "any_table_null_marked_share": round(null_any / null_studies, 4) if null_studies else None,
        "any_table_null_marked_share_ci": wilson(null_any, null_studies),
        "features_covered": dict(sorted(covered.items())),
        "examples": examples,
        "seconds": round(time.perf_counter() - started, 1),
    }
    clean = all(result[k] == 0 for k in ("tracebacks", "failed_tables", "tables_missing_without_reason",
                                          "parse_health_missing", "cli_or_viewer_problems"))
    planted_ci, null_ci = result["planted_marked_share_power_90_ci"], result["any_table_null_marked_share_ci"]
    finish(result, before, goal="0 tracebacks, failed tables, tables missing without a reason, use cases missing "
                                "from parse_health and CLI/viewer problems; the planted gap marked with its sign in "
                                ">= 90% of the rows where power says >= 90% (its Wilson 95% interval reaches 90%); "
                                "the null twin marked in any table in <= 5% of studies, the family-wise rate the "
                                "report states (its Wilson 95% interval reaches 5%)",
           within_goal=clean and (planted_ci is None or planted_ci[1] >= POWER)
           and (null_ci is None or null_ci[0] <= 0.05))


if __name__ == "__main__":
    main()
