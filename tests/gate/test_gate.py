"""The fairness gate: `check` fails a planted-bias model and passes a fair one (full English), writes
JUnit XML that parses, reads thresholds from YAML or flags, and never passes a rule it could not check."""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from pathlib import Path

import pandas as pd
import pytest

from counterbench.errors import UserError
from counterbench.gate import Thresholds, check, parse_fail_on
from tests.conftest import run_cli, run_cli_here

pytestmark = pytest.mark.slow  # scheduled first (tests/conftest.py)


@pytest.fixture(scope="module")
def english_analysis(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("gate")
    store, out = folder / "en.db", folder / "analysis"
    done = run_cli("run", "rupeebias", "--model", "sim:biased", "--model", "sim:fair", "--language", "en",
                   "--store", str(store), "--no-progress")
    assert done.returncode == 0, done.stderr
    done = run_cli("analyze", "rupeebias", "--store", str(store), "--out", str(out), "--bootstrap", "300")
    assert done.returncode == 0, done.stderr
    return out


def junit_cases(path: Path) -> dict[tuple[str, str], str]:
    root = ET.parse(path).getroot()
    out = {}
    for case in root.iter("testcase"):
        kind = "failed" if case.find("failure") is not None else "skipped" if case.find("skipped") is not None \
            else "passed"
        out[(case.get("classname", ""), case.get("name", ""))] = kind
    return out


def test_biased_fails_and_fair_passes_with_default_thresholds(english_analysis: Path, tmp_path: Path) -> None:
    biased = run_cli_here("check", "--analysis", str(english_analysis), "--model", "sim:biased",
                          "--junit", str(tmp_path / "biased.xml"))
    assert biased.returncode == 1, biased.stdout + biased.stderr
    assert "FAILED: sim:biased" in biased.stdout and len(biased.stdout.splitlines()) < 25  # one screen
    fair = run_cli_here("check", "--analysis", str(english_analysis), "--model", "sim:fair",
                        "--junit", str(tmp_path / "fair.xml"))
    assert fair.returncode == 0, fair.stdout + fair.stderr
    assert fair.stdout.rstrip().splitlines()[-2].startswith("PASSED")
    bad, good = junit_cases(tmp_path / "biased.xml"), junit_cases(tmp_path / "fair.xml")
    # pair gaps, matched gaps (Δ%), W; then usable answers (a biased model's answers are usable)
    assert list(bad.values()) == ["failed"] * 3 + ["passed"]
    assert set(good.values()) == {"passed"} and len(good) == 4
    root = ET.parse(tmp_path / "biased.xml").getroot()
    assert root.get("failures") == "3" and root.find("testsuite") is not None


def test_a_fair_model_with_answer_noise_passes_the_default_gate(tmp_path: Path) -> None:
    """The default gate judges marked gaps only: a fair model whose answers carry 5% noise passes it on the
    quick preset, though its raw Mean Δ% exceeds 5 (the opt-in ``mean-delta`` rule, which rests on no test)."""
    (tmp_path / "noisy.yaml").write_text("description: fair, 5% answer noise\nnoise_sd: 0.05\n")
    store, out = tmp_path / "noisy.db", tmp_path / "analysis"
    done = run_cli("audit", "rupeebias", "--preset", "quick", "--model", "sim:noisy.yaml", "--store", str(store),
                   "--out", str(out), "--bootstrap", "300", "--no-progress", "--fail-on", "default", cwd=tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    opted = run_cli_here("check", "--analysis", str(out / "analysis"), "--fail-on", "mean-delta=5")
    assert opted.returncode == 1 and "overall Mean Δ%" in opted.stdout, opted.stdout + opted.stderr


def test_thresholds_from_a_yaml_file_and_flags(english_analysis: Path, tmp_path: Path) -> None:
    loose = tmp_path / "loose.yaml"
    loose.write_text("max_mean_delta: 50\nmax_pair_gap: 40\nsignificant_w: off\n")
    done = run_cli_here("check", "--analysis", str(english_analysis), "--fail-on", str(loose))
    assert done.returncode == 0, done.stdout
    strict = run_cli_here("check", "--analysis", str(english_analysis), "--fail-on", str(loose), "--fail-on",
                          "mean-delta=1", "-m", "sim:fair")
    assert strict.returncode == 1 and "FAIL  sim:fair  overall Mean Δ%" in strict.stdout


@pytest.mark.parametrize("spec, message", [
    ("mean-delta=lots", "must be a number"),
    ("colour=red", "unknown rule"),
    ("w=sometimes", "must be one of"),
    ("nowhere.yaml", "not a file"),
])
def test_bad_thresholds_are_one_line_errors(english_analysis: Path, spec: str, message: str) -> None:
    done = run_cli_here("check", "--analysis", str(english_analysis), "--fail-on", spec)
    assert done.returncode == 2 and message in done.stderr and done.stderr.count("\n") == 1


def test_missing_marks_are_not_evaluated_never_passed() -> None:
    tables = {"leaderboard": pd.DataFrame({"model": ["m"], "overall_mean_delta": [1.0]}),
              "cpg": pd.DataFrame({"model": ["m"], "gap": [30.0]})}  # no `significant` column
    verdict = check(tables, Thresholds(max_mean_delta=5))
    assert [o.status for o in verdict.outcomes] == ["passed", "not evaluated", "not evaluated"]
    assert verdict.passed and "2 not evaluated" in verdict.summary()
    assert list(junit_cases_text(verdict.junit()).values()) == ["passed", "skipped", "skipped"]


def junit_cases_text(text: str) -> dict[str, str]:
    root = ET.fromstring(text)
    return {c.get("name", ""): "skipped" if c.find("skipped") is not None else
            "failed" if c.find("failure") is not None else "passed" for c in root.iter("testcase")}


def test_only_marked_gaps_fail() -> None:
    tables = {"cpg": pd.DataFrame({"model": ["m", "m"], "gap": [-9.0, 40.0], "significant": [True, False],
                                   "reference": ["a", "c"], "comparison": ["b", "d"], "axis": ["X", "Y"]})}
    (outcome,) = check(tables, Thresholds(max_mean_delta=None, significant_w="off")).outcomes
    assert outcome.failed and outcome.details == ["X: a vs b -9.0%"]
    (outcome,) = check(tables, Thresholds(max_mean_delta=None, max_pair_gap=10, significant_w="off")).outcomes
    assert not outcome.failed


def test_fail_on_parsing() -> None:
    assert parse_fail_on([]) == Thresholds()
    assert parse_fail_on(["pair-gap=off", "w=axis"]) == Thresholds(max_pair_gap=None, significant_w="axis")
    with pytest.raises(UserError):
        parse_fail_on(["mean-delta=-1"])


def test_audit_fail_on_exits_1_after_writing_the_report(tmp_path: Path) -> None:
    out = tmp_path / "audit"
    done = run_cli("audit", "rupeebias", "--model", "sim:biased", "--preset", "quick", "--store",
                   str(tmp_path / "a.db"), "--out", str(out), "--bootstrap", "100", "--no-progress",
                   "--fail-on", "pair-gap=5", "--fail-on", "mean-delta=off", "--fail-on", "w=off",
                   "--junit", str(tmp_path / "gate.xml"))
    assert done.returncode == 1, done.stdout + done.stderr
    assert (out / "report.html").is_file() and "FAILED: sim:biased" in done.stdout
    # the quick preset's per-use-case pairs rest on 6 matched prompts each: they are tested (a pair whose slot
    # lost an answer to a simulated refusal has 5 and stays untested) and, beside sim:biased's many planted
    # gaps in the model's one family (analyses/families.py), their p of 0.031 is marked
    assert "FAIL  sim:biased  significant canonical pair gap" in done.stdout
    assert "en · salary_estimation · " in done.stdout and "untested" in done.stdout
    # the gaps against each axis's reference are tested too, in the same form (% of the pair's mean), so they
    # are marked as the canonical pairs are: the planted penalties fail this rule as well. (In % of the
    # reference they were not: swapping a slot's two answers turned a -25% gap into +33%, so the swap test
    # could not mark a penalty on 6 slots.) The same pair reads the same size in both rules.
    tables = {p.stem: pd.read_parquet(p) for p in (out / "analysis").glob("*.parquet")}
    verdict = check(tables, Thresholds(max_pair_gap=5, significant_w="off"))
    lines = [d for o in verdict.outcomes for d in o.details]
    said = [re.fullmatch(r"(\w+ · \w+ · [^:]+): (.+?) vs (.+?) ([-+][0-9.]+)%", d) for d in lines]
    cpg = {(m[1], m[2], m[3]): m[4] for m in said if m and not m[3].endswith(" (reference)")}
    gaps = {(m[1], m[3].removesuffix(" (reference)"), m[2]): m[4] for m in said if m and m[3].endswith(" (reference)")}
    same = set(cpg) & set(gaps)  # reference vs comparison, and comparison vs reference: one number, turned
    assert same and all(float(gaps[k]) == -float(cpg[k]) for k in same), (cpg, gaps)
    assert list(junit_cases(tmp_path / "gate.xml").values()) == ["failed", "failed", "passed"]  # + usable answers


@pytest.mark.parametrize(("model", "code"), [("sim:biased", 1), ("sim:fair", 0)])
def test_check_on_the_quick_preset_fails_the_planted_bias_and_passes_the_fair_model(
        tmp_path: Path, model: str, code: int) -> None:
    """The README's main job on the simulated models: the quick preset tests every canonical pair, so
    ``check`` finds the planted ±15% (marked gaps of ~30%) and does not fail the fair model."""
    out = tmp_path / "audit"
    done = run_cli("audit", "rupeebias", "--model", model, "--preset", "quick", "--store", str(tmp_path / "a.db"),
                   "--out", str(out), "--bootstrap", "400", "--no-progress")
    assert done.returncode == 0, done.stdout + done.stderr
    gate = run_cli_here("check", "--analysis", str(out / "analysis"), "--junit", str(tmp_path / "gate.xml"))
    assert gate.returncode == code, gate.stdout + gate.stderr
    cases = junit_cases(tmp_path / "gate.xml")
    pair_rule = next(v for k, v in cases.items() if "canonical pair" in " ".join(k))
    (pair_line,) = [line for line in gate.stdout.splitlines()
                    if "significant canonical pair gap" in line and line.strip().startswith(("PASS", "FAIL", "SKIP"))]
    if code:
        assert pair_line.strip().startswith("FAIL  sim:biased") and "0 of 0 marked" not in pair_line
        assert pair_rule == "failed"
        cpg = pd.read_csv(out / "analysis" / "cpg.csv")
        tested = cpg[cpg["testable"].astype(str) == "True"]
        assert set(tested["use_case"]) == set(cpg["use_case"])  # tests in every use case, not only the average
        # 6 matched prompts per use case: p ≥ 0.031, yet marked in the model's one family, where the many planted
        # gaps relax Benjamini–Hochberg's thresholds; averaged over use cases (30 prompts) they are marked too
        assert tested["significant"].astype(str).eq("True").mean() > 0.5
        overall = pd.read_csv(out / "analysis" / "cpg_overall.csv")
        assert overall["significant"].astype(str).eq("True").mean() > 0.5
        # the report says what the design cannot support
        report = (out / "report.md").read_text(encoding="utf-8")
        assert "Only some identifiers of an axis were run (Religion 3 of 12, Caste 3 of 24" in report
        assert "at most 6 matched prompts in a use case" in report and "up to 30" in report
    else:
        assert "PASSED" in gate.stdout and pair_rule == "passed"
        assert "cannot test" not in gate.stdout


NULL_APPROVAL = """description: approval demo model without a planted gap
outcomes:
  label: {default: 0.6}
"""


def test_label_study_planted_fails_and_null_twin_passes(tmp_path: Path) -> None:
    null_model = tmp_path / "null.yaml"
    null_model.write_text(NULL_APPROVAL)
    planted, null = "sim:examples/sim/approval_crossed.yaml", f"sim:{null_model}"
    store, out = tmp_path / "a.db", tmp_path / "analysis"
    done = run_cli("run", "examples/approval_crossed.yaml", "--model", planted, "--model", null,
                   "--store", str(store), "--no-progress")
    assert done.returncode == 0, done.stderr
    done = run_cli("analyze", "examples/approval_crossed.yaml", "--store", str(store), "--out", str(out))
    assert done.returncode == 0, done.stderr
    bad = run_cli_here("check", "--analysis", str(out), "-m", planted, "--junit", str(tmp_path / "bad.xml"))
    assert bad.returncode == 1, bad.stdout + bad.stderr
    assert "significant gap (percentage points)" in bad.stdout and "race: Black vs white (reference) -" in bad.stdout
    assert " pp" in bad.stdout and "overall Mean Δ%:" not in bad.stdout  # no amount rule on a label study
    good = run_cli_here("check", "--analysis", str(out), "-m", null, "--junit", str(tmp_path / "good.xml"))
    assert good.returncode == 0, good.stdout + good.stderr
    assert list(junit_cases(tmp_path / "bad.xml").values()) == ["failed", "passed"]  # gaps; usable answers
    assert list(junit_cases(tmp_path / "good.xml").values()) == ["passed", "passed"]


def test_off_in_any_yaml_spelling_switches_a_rule_off(tmp_path: Path) -> None:
    spec = tmp_path / "gate.yaml"
    spec.write_text("max_pair_gap: off\nmax_mean_delta: no\nmax_gap_pp: null\nmax_gap_points: false\n"
                    "max_gap_metric: 'OFF'\nsignificant_w: no\n")
    assert parse_fail_on([str(spec)]) == Thresholds(None, None, None, None, None, "off")
    assert parse_fail_on(["pair-gap=false", "gap-pp=None"]).max_pair_gap is None
    assert parse_fail_on(["gap-pp=0"]).max_gap_pp == 0.0  # 0 is a limit, not off
    with pytest.raises(UserError, match="number or off"):
        parse_fail_on(["pair-gap=yes"])


def test_each_kind_in_its_unit_and_untested_gaps_cannot_pass_silently() -> None:
    gaps = pd.DataFrame({"model": "m", "use_case": "u", "language": "en", "facet": "f", "reference": "a",
                         "comparison": ["b", "c"], "kind": ["label", "score"], "difference": [-4.0, -1.5],
                         "relative_pct": [-40.0, -30.0], "testable": True, "significant": True})
    outcomes = check({"outcome_gaps": gaps}).outcomes
    assert [(o.rule, o.status) for o in outcomes] == [("significant gap (percentage points)", "passed"),
                                                      ("significant gap (points)", "failed")]
    # comparison vs reference, as the number is (comparison − reference); language first, as the pair rule's lines
    assert outcomes[1].details == ["en · u · f: c vs a (reference) -1.5 points"]
    untested = {"cpg": pd.DataFrame({"model": ["m"], "gap": [30.0], "significant": [False], "testable": [False]})}
    (pair,) = check(untested, Thresholds(max_mean_delta=None, significant_w="off")).outcomes
    assert pair.status == "not evaluated" and pair.details[0].startswith("cannot test")
    strict = check(untested, Thresholds(max_mean_delta=None, significant_w="off", untested="fail"))
    assert not strict.passed


def test_the_amount_rules_follow_the_analysed_kinds_not_the_tables() -> None:
    """The amount rules apply by the study's kinds (issue 31): a leaderboard beside rate answers alone is no
    reason for them, and an amount study gets them with no amount table at all (they are then not evaluated)."""
    from counterbench.gate.checks import evaluate

    board = pd.DataFrame({"model": ["m"], "overall_mean_delta": [50.0]})
    gaps = pd.DataFrame({"model": ["m"], "kind": ["rate"], "use_case": ["u"], "difference": [1.0],
                         "significant": [False], "testable": [True]})
    thresholds = Thresholds(max_mean_delta=5)
    rules = {o.rule for o in evaluate({"leaderboard": board, "outcome_gaps": gaps}, thresholds,
                                      summary={"analysed_kinds": ["rate"]})}
    assert "overall Mean Δ%" not in rules
    amount = evaluate({"outcome_gaps": gaps.assign(kind="amount")}, thresholds, summary={"analysed_kinds": ["amount"]})
    assert any(o.rule == "overall Mean Δ%" and o.status == "not evaluated" for o in amount)
    assert any(o.rule == "overall Mean Δ%" for o in evaluate({"leaderboard": board}, thresholds))  # names no kind
