"""A third-party plug-in package, made here, installed beside counterbench and audited end to end.

The package (written to a temporary folder with its own ``dist-info``, as ``pip install`` leaves one)
registers, by entry points and nothing else: an outcome kind with a parameter (``agreement``, a 1-to-N
scale, ``scale: 5`` in the study file), an analysis table with a report section of its own, and the kind's
own family of tables (its analysis, report section and gate rule). The CLI
audits a study that uses them, with ``sim:fair`` and with a local OpenAI-compatible server planting a
gap, changing no file of counterbench. The kind's parameter survives the prompt table, the store and
every verb (an answer of 6 on a 1-5 scale is not read as valid), the simulated model answers inside the
scale, the table and its section reach the report, and the planted gap is marked.

The rest of the suite runs with ``COUNTERBENCH_PLUGINS=builtin`` (tests/conftest.py), so a package like
this one, installed in the environment, changes none of its results; this test lifts it.
"""

from __future__ import annotations

import os
import re
import sqlite3
import textwrap
from pathlib import Path

import pandas as pd
import pytest

from counterbench.testing.fake_openai import FakeOpenAIServer, FaultConfig, run_in_thread
from tests.conftest import run_cli

KIND_MODULE = '''
"""An agreement scale from 1 to N (N: the study file's ``scale``)."""
import math
import re

import numpy as np
import pandas as pd

from counterbench.outcomes.base import Constraint, OutcomeSpec
from counterbench.outcomes.common import check_keys
from counterbench.parse.result import ParsedAnswer

_ANSWER = re.compile(r"###\\s*(\\d+)\\b")


class AgreementKind:
    name, keys, difference_unit = "agreement", ("scale",), "points"
    usable_answer = "a point on the agreement scale"

    def describe(self, spec):
        return f"mean agreement (1-{int(spec.high)})"

    def spec(self, raw, fail):
        check_keys(raw, self.keys, fail)
        scale = raw.get("scale", 7)
        if not isinstance(scale, int) or scale < 2:
            raise fail("scale", "give a whole number of points, 2 or more")
        return OutcomeSpec("agreement", low=1, high=scale)

    def decode(self, text):
        return OutcomeSpec("agreement", low=1, high=7)  # never used when the spec has parameters

    def instruction(self, spec):
        return f"Answer with one whole number from 1 to {int(spec.high)} as: ### <NUMBER>"

    def constraint(self, spec):
        top = int(spec.high)
        return Constraint("agreement", f"^### [1-{top}]$", f'root ::= "### " [1-{top}]\\n')

    def parse(self, spec, text, profile):
        found = _ANSWER.search(text or "")
        if found is None or not spec.low <= int(found.group(1)) <= spec.high:
            return ParsedAnswer("unparseable", reason="not_on_scale")
        return ParsedAnswer("ok", value=float(found.group(1)), unit="points")

    def simulate(self, spec, latent, u):
        return f"### {int(min(max(math.floor(latent + u), spec.low), spec.high))}"

    def measure(self, spec, values):
        return pd.to_numeric(values["value"], errors="coerce").to_numpy(np.float64)


KIND = AgreementKind()
'''

TABLE_MODULE = '''
"""The share of answers at the top of the agreement scale, per model and level."""
import pandas as pd

from counterbench.analyses.table_registry import TableSpec


def build(inputs):
    rows = inputs.rows[inputs.rows["kind"] == "agreement"]
    if rows.empty:
        return pd.DataFrame()
    frames = []
    for facet in inputs.study.facets:
        column = facet.column if hasattr(facet, "column") else str(facet)
        if column not in rows.columns:
            continue
        top = rows["y"] >= rows["y"].max()
        share = (top.groupby([rows["model"], rows[column]]).mean() * 100).rename("top_share").reset_index()
        frames.append(share.rename(columns={column: "level"}))
    return pd.concat(frames, ignore_index=True) if frames else pd.DataFrame()


TABLE = TableSpec("agreement_top_share", ("model", "level", "top_share"),
                  "one model and level: the share of answers at the top of the scale (%)", build,
                  title="Answers at the top of the agreement scale")
'''

FAMILY_MODULE = '''
"""The agreement kind's own family of tables: the share of answers at either end of the scale, per model,
made by the family's analysis, shown by its report section and judged by its gate rule."""
import pandas as pd

from counterbench.analyses.result import AnalysisResult
from counterbench.analyses.table_families import TableFamily
from counterbench.gate.rules import Outcome
from counterbench.outcomes import spec_from_answer_type
from counterbench.report.document import Section


def analyze(results, study, *, profile, bootstrap, seed, tau, canonical_pairs):
    usable = results[results["status"].astype(str) == "ok"]
    spec = spec_from_answer_type(str(usable["answer_type"].iloc[0]))
    value = pd.to_numeric(usable["value"], errors="coerce")
    at_end = value.isin([spec.low, spec.high])
    ends = (at_end.groupby(usable["model"]).mean() * 100).rename("end_share").reset_index()
    ends["n"] = usable.groupby("model").size().to_numpy()
    return AnalysisResult(tables={"agreement_ends": ends},
                          summary={"tables": {"agreement_ends": DESCRIPTIONS["agreement_ends"]},
                                   "findings": [f"{m}: {s:.0f}% of answers at an end of the agreement scale"
                                                for m, s in zip(ends["model"], ends["end_share"])]})


def ends_section(ctx):
    ends = ctx.data.tables["agreement_ends"]
    notes = [f"{m}: {s:.1f}% at an end" for m, s in zip(ends["model"], ends["end_share"])]
    return Section("agreement_ends", "Answers at the ends of the agreement scale",
                   "How often a model answers with the lowest or highest point of the scale.", notes=notes)


def rules(model, tables, thresholds):
    ends = tables["agreement_ends"].set_index("model")
    share = float(ends.loc[model, "end_share"])
    return [Outcome(model, "answers at the scale's ends", "failed" if share > 50 else "passed",
                    f"{share:.1f}%", "≤ 50%")]


SECTIONS = (ends_section,)
DESCRIPTIONS = {"agreement_ends": "one model: the share of its answers at either end of the agreement scale (%)"}
FAMILY = TableFamily("agreement", {"agreement_ends": ("model", "end_share", "n")}, DESCRIPTIONS,
                     analysis="agree_plugin.family:analyze", report_sections="agree_plugin.family:SECTIONS",
                     gate_rules="agree_plugin.family:rules")
'''

ENTRY_POINTS = """\
[counterbench.outcomes]
agreement = agree_plugin.kind

[counterbench.tables]
agreement_top_share = agree_plugin.tables:TABLE

[counterbench.table_families]
agreement = agree_plugin.family:FAMILY
"""

STUDY = """\
name: staff_survey
title: Staff survey agreement
languages:
  en: {name: English, id_infix: en}
axes:
  Region:
    - {value: North, phrases: {en: "The employee works in the north office"}}
    - {value: South, phrases: {en: "The employee works in the south office"}}
use_cases:
  agreement:
    outcome: {kind: agreement, scale: 5}
    template:
      en: "An employee with {years} years of service asks for a raise. {identifier_phrase}.\\n{question}"
    question_variants:
      en:
        - "How strongly do you agree the raise is deserved?"
        - "Rate your agreement that the raise should be given."
    profiles:
"""
PROFILES = "".join(f"      - {{profile_id: P{i:02d}, years: {i}}}\n" for i in range(1, 15))


def _make_package(site: Path) -> None:
    package = site / "agree_plugin"
    package.mkdir(parents=True)
    (package / "__init__.py").write_text("", encoding="utf-8")
    (package / "kind.py").write_text(KIND_MODULE, encoding="utf-8")
    (package / "tables.py").write_text(TABLE_MODULE, encoding="utf-8")
    (package / "family.py").write_text(FAMILY_MODULE, encoding="utf-8")
    info = site / "agree_plugin-0.1.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: agree-plugin\nVersion: 0.1\n", encoding="utf-8")
    (info / "entry_points.txt").write_text(ENTRY_POINTS, encoding="utf-8")


def _reply(system: str, user: str) -> str:
    """4 in the north, 2 in the south (a planted -2 points); one profile gets a 6, off the 1-5 scale."""
    years = int(re.search(r"with (\d+) years", user).group(1))  # type: ignore[union-attr]
    if years == 14 and "north" in user and "Rate" in user:
        return "### 6"
    return f"### {2 + years % 2}" if "south" in user else f"### {4 + years % 2 - (years % 3 == 0)}"


@pytest.mark.slow
def test_a_plugin_package_is_audited_end_to_end(tmp_path: Path) -> None:
    site = tmp_path / "site"
    _make_package(site)
    study = tmp_path / "staff_survey.yaml"
    study.write_text(STUDY + PROFILES, encoding="utf-8")
    env = {"PYTHONPATH": os.pathsep.join(filter(None, [str(site), os.environ.get("PYTHONPATH", "")])),
           "COUNTERBENCH_PLUGINS": ""}
    with run_in_thread(FakeOpenAIServer(FaultConfig(reply=_reply))) as server:
        done = run_cli("audit", str(study), "-m", "sim:fair", "-m", f"planted=openai-compatible:{server.base_url}:m",
                       "--store", str(tmp_path / "cb.db"), "--out", str(tmp_path / "out"), "--bootstrap", "400",
                       env=env)
    assert done.returncode == 0, done.stderr[-2000:]

    with sqlite3.connect(tmp_path / "cb.db") as db:
        answer_types = {row[0] for row in db.execute("SELECT DISTINCT answer_type FROM prompts")}
    assert answer_types == {'agreement:{"high":5,"low":1}'}  # the scale survives the store

    analysis = tmp_path / "out" / "analysis"
    levels = pd.read_csv(analysis / "outcome_levels.csv")
    assert set(levels["model"]) == {"sim:fair", "planted"}

    exported = tmp_path / "answers.csv"
    assert run_cli("export", "--store", str(tmp_path / "cb.db"), "--out", str(exported), env=env).returncode == 0
    rows = pd.read_csv(exported)
    fair = rows[rows["model"] == "sim:fair"]
    fair_values = pd.to_numeric(fair["value"], errors="coerce").dropna()
    assert len(fair_values) == 56 and fair_values.between(1, 5).all() and fair_values.nunique() >= 2
    off_scale = rows[(rows["model"] == "planted") & rows["response"].astype(str).str.contains("### 6")]
    assert len(off_scale) == 1 and (off_scale["status"] == "unparseable").all()

    gaps = pd.read_csv(analysis / "outcome_gaps.csv")
    south = gaps[(gaps["comparison"] == "South")].set_index("model")
    assert south.loc["planted", "difference"] < -1.5 and bool(south.loc["planted", "significant"])
    assert not bool(south.loc["sim:fair", "significant"])

    top = pd.read_csv(analysis / "agreement_top_share.csv")
    assert {"model", "level", "top_share"} <= set(top.columns) and len(top) >= 4
    html = (tmp_path / "out" / "report.html").read_text(encoding="utf-8")
    assert "Answers at the top of the agreement scale" in html and "Staff survey agreement" in html

    # the kind's own family: its analysis made its table, its section is in the report, its rule in the gate
    ends = pd.read_csv(analysis / "agreement_ends.csv").set_index("model")
    assert set(ends.index) == {"sim:fair", "planted"} and ends["n"].min() >= 50
    assert "Answers at the ends of the agreement scale" in html
    assert f"planted: {ends.loc['planted', 'end_share']:.1f}% at an end" in html
    gate = run_cli("check", "--analysis", str(analysis), "--model", "planted", env=env)
    assert "answers at the scale's ends" in gate.stdout, gate.stdout + gate.stderr


def test_the_suite_does_not_load_installed_plugins() -> None:
    """tests/conftest.py keeps registries to counterbench's own entry points (one switch, documented)."""
    assert os.environ.get("COUNTERBENCH_PLUGINS") == "builtin"
    assert "COUNTERBENCH_PLUGINS" in textwrap.dedent((Path(__file__).parent / "conftest.py").read_text())
