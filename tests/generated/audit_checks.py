"""A generated study through the real path, and what must hold of it (shared by the CI test and the benchmark).

:func:`audit_study` runs ``counterbench audit`` (the CLI, in this process) on a generated study against two
local OpenAI-compatible servers (the planted model and its null twin) into a SQLite store, and
:func:`check_audit` reads what it wrote (the analysis folder, read back):

- every registered table (and every table the summary lists) is produced or refused with a stated reason,
  and none failed (a failed table is a bug the generator found);
- ``parse_health`` lists every use case run, for both models;
- the planted level's gap row (per use case × language) of the planted model is marked with the planted
  sign, and no row of the null twin is marked in any table (one family per model: analyses/families.py).

:func:`cli_problems` then analyses the store again with the CLI (``analyze --store``, ``report --store``,
``check``, ``export``), and :func:`viewer_problems` reads the viewer's pages for the study.
"""

from __future__ import annotations

import html
import math
import re
import traceback
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd

import counterbench
from counterbench.analyses.table_registry import TABLES
from tests.generated.studygen import Effect, GeneratedStudy

MODELS = ("planted", "null")


@dataclass
class PlantedRow:
    use_case: str
    kind: str
    language: str
    truth: float
    found: bool  # the row exists
    marked: bool
    right_sign: bool
    estimate: float = math.nan
    power: float = math.nan  # whether power says ≥ 90%: filled by the benchmark


@dataclass
class Verdict:
    study: GeneratedStudy
    traceback: str = ""
    failed_tables: dict[str, str] = field(default_factory=dict)
    unexplained: list[str] = field(default_factory=list)  # tables neither produced nor refused with a reason
    health_missing: list[str] = field(default_factory=list)
    planted: list[PlantedRow] = field(default_factory=list)
    null_marked: list[str] = field(default_factory=list)  # the null twin's marked outcome_gaps rows
    null_marked_other: list[str] = field(default_factory=list)  # its marks in other tables (the same family)
    other: list[str] = field(default_factory=list)  # CLI and viewer problems
    result: Any = None

    def problems(self, *, require_planted: bool = True) -> list[str]:
        out = [f"traceback: {self.traceback}"] if self.traceback else []
        out += [f"table {n} failed: {r}" for n, r in self.failed_tables.items()]
        out += [f"table {n} missing without a reason" for n in self.unexplained]
        out += [f"parse_health lacks {u}" for u in self.health_missing]
        if require_planted:
            out += [f"planted {p.use_case}/{p.language} ({p.kind}, truth {p.truth:+.3g}): "
                    f"{'no row' if not p.found else 'not marked' if not p.marked else 'wrong sign'}"
                    f" (estimate {p.estimate:+.3g})" for p in self.planted if not (p.marked and p.right_sign)]
        out += [f"null twin marked: {r}" for r in self.null_marked]
        out += [f"null twin marked in {n}" for n in dict.fromkeys(self.null_marked_other)]  # one family per model
        return [*out, *self.other]


def audit_study(study: GeneratedStudy, path: Path, store: Path, out: Path, urls: dict[str, str], *,
                bootstrap: int = 200) -> Verdict:
    """``counterbench audit`` of ``study`` (written at ``path``) on the models at ``urls`` (name -> base URL),
    through the CLI in this process, and the checks of what it wrote (``OUT/analysis``, read back)."""
    from counterbench.report.context import load_analysis_dir
    from tests.conftest import run_cli_here

    verdict = Verdict(study)
    args = ["audit", str(path), "--store", str(store), "--out", str(out), "--bootstrap", str(bootstrap),
            "--concurrency", "16", "--no-progress"]
    for model in MODELS:
        args += ["--model", f"{model}=openai-compatible:{urls[model]}:gen"]
    if study.run_filters.get("preset"):
        args += ["--preset", str(study.run_filters["preset"])]
    for variant in study.run_filters.get("variant") or ():
        args += ["--variant", str(variant)]
    try:
        done = run_cli_here(*args, cwd=path.parent)
    except Exception as err:  # the generator's purpose: every crash is reported, not raised
        verdict.traceback = "".join(traceback.format_exception_only(err)).strip() + "\n" + traceback.format_exc()
        return verdict
    if done.returncode not in (0, 1) or "Traceback" in done.stderr or not (out / "report.html").is_file():
        verdict.traceback = f"audit exit {done.returncode}: {done.stderr.strip()[-2000:]}"
        return verdict
    data = load_analysis_dir(out / "analysis")
    verdict.result = data
    check_audit(verdict, data.tables, data.summary, counterbench.prompts(str(path), **study.run_filters))
    return verdict


def check_audit(verdict: Verdict, tables: dict[str, pd.DataFrame], summary: dict[str, Any],
                prompts: pd.DataFrame) -> None:
    study = verdict.study
    verdict.failed_tables = dict(summary.get("failed_tables") or {})
    unsupported = summary.get("unsupported") or {}
    for name in dict.fromkeys([*TABLES.names(), *(summary.get("tables") or {})]):
        made = tables.get(name)
        if (made is None or made.empty) and not str(unsupported.get(name) or "").strip() \
                and name not in verdict.failed_tables:
            verdict.unexplained.append(name)
    health = tables.get("parse_health", pd.DataFrame())
    for model in MODELS:
        have = set(health.loc[health["model"].astype(str) == model, "use_case"].astype(str)) if len(health) else set()
        verdict.health_missing += [f"{model}/{uc}" for uc in study.effects if uc not in have]
    gaps = tables.get("outcome_gaps", pd.DataFrame())
    languages = list(dict.fromkeys(prompts["language"].astype(str)))
    where = study.planted
    for uc, effect in study.effects.items():
        for lang in languages:
            mine = prompts[(prompts["use_case"] == uc) & (prompts["language"] == lang)]
            if {where.level, where.reference} <= set(mine[where.column].astype(str)):  # a sample may drop a level
                verdict.planted.append(_planted_row(gaps, study, uc, effect, lang))
    if len(gaps):
        null = gaps[(gaps["model"].astype(str) == "null") & gaps["significant"].fillna(False).astype(bool)]
        verdict.null_marked = [f"{r.use_case}/{r.language} {r.comparison} vs {r.reference} (q {r.q_value:.3g})"
                               for r in null.itertuples()]
    for name, table in tables.items():
        if name == "outcome_gaps" or "significant" not in table.columns or "model" not in table.columns:
            continue
        marked = table[(table["model"].astype(str) == "null") & table["significant"].fillna(False).astype(bool)]
        verdict.null_marked_other += [name] * len(marked)


def _planted_row(gaps: pd.DataFrame, study: GeneratedStudy, uc: str, effect: Effect, lang: str) -> PlantedRow:
    where = study.planted
    row = PlantedRow(uc, effect.kind, lang, effect.shift, False, False, False)
    if gaps.empty:
        return row
    rows = gaps[(gaps["model"].astype(str) == "planted") & (gaps["use_case"].astype(str) == uc)
                & (gaps["language"].astype(str) == lang) & (gaps["facet_kind"].astype(str) == where.facet_kind)
                & (gaps["comparison"].astype(str) == where.level) & (gaps["reference"].astype(str) == where.reference)]
    if len(rows) != 1:
        return row
    found = rows.iloc[0]
    columns = ("relative_pct", "relative_ci_low", "relative_ci_high") if effect.kind == "amount" \
        else ("difference", "ci_low", "ci_high")
    estimate, low, high = (float(found[c]) for c in columns)
    row.found, row.estimate = True, estimate
    row.marked = bool(found["significant"])
    row.right_sign = (high < 0) if effect.shift < 0 else (low > 0)
    return row


def cli_problems(run_cli: Callable[..., Any], study: Path, store: Path, tmp: Path, *, analyze: bool = True,
                 report: bool = True) -> list[str]:
    """``analyze --store`` and ``report --store`` (each when asked: both recompute every table from the
    store), ``check`` (on the audit's analysis, or the new one) and ``export`` on the audited store: no
    traceback, exit 0 (``check``: 0 or 1, a verdict)."""
    problems: list[str] = []

    def call(name: str, *args: str, codes: tuple[int, ...] = (0,)) -> Any:
        done = run_cli(*args, cwd=tmp)
        if "Traceback" in done.stderr or done.returncode not in codes:
            problems.append(f"{name}: exit {done.returncode}: {done.stderr.strip()[-400:]}")
        return done

    analysis = tmp / "out" / "analysis"
    if analyze:
        analysis = tmp / "again"
        call("analyze", "analyze", str(study), "--store", str(store), "-o", str(analysis), "--bootstrap", "200")
    if report:
        call("report", "report", str(study), "--store", str(store), "-o", str(tmp / "again.html"),
             "--bootstrap", "200")
        if not (tmp / "again.html").is_file():
            problems.append("report --store wrote no report")
    gate = call("check", "check", "--analysis", str(analysis), codes=(0, 1))
    if not gate.stdout.strip():
        problems.append("check printed no verdict")
    exported = call("export", "export", "--store", str(store), "-o", str(tmp / "export.csv"))
    if exported.returncode == 0 and pd.read_csv(tmp / "export.csv").empty:
        problems.append("export wrote no rows")
    return problems


_SLOT_LINK = re.compile(r'href="(/slot\?[^"]+)"')


def viewer_problems(get: Callable[[str], tuple[int, str]], study: str) -> list[str]:
    """The viewer's responses, slots and one slot page for ``study``: each 200, with the study's rows."""
    problems = []
    pages = {"responses": f"/?study={study}", "slots": f"/slots?study={study}"}
    texts = {}
    for name, url in pages.items():
        status, text = get(url)
        texts[name] = text
        if status != 200 or "Traceback" in text:
            problems.append(f"viewer {name} page: status {status}")
    link = _SLOT_LINK.search(texts.get("slots", ""))
    if link is None:
        problems.append("viewer slots page links no slot")
    else:
        status, text = get(html.unescape(link.group(1)))
        if status != 200 or "Traceback" in text:
            problems.append(f"viewer slot page: status {status}")
    return problems
