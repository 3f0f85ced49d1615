"""``--stop-when decided`` through the real path: generated studies of every outcome kind and design over HTTP
to 127.0.0.1 into SQLite, the report's section, user mistakes, and the Python API."""

from __future__ import annotations

import html
from pathlib import Path

import pandas as pd
import pytest

import counterbench
from counterbench.analyses.sequential import family
from counterbench.options import StoppingRule
from counterbench.studies.registry import load_study
from counterbench.table_files import write_table
from counterbench.testing._fakecore import FaultConfig, run_in_thread
from counterbench.testing.fake_openai import FakeOpenAIServer
from tests.conftest import run_cli_here
from tests.generated.studygen import GeneratedStudy, generate, reply
from tests.run.conftest import make_prompts, one_error_line

pytestmark = pytest.mark.slow  # scheduled first (tests/conftest.py)

#: single, grouped and crossed designs, each pair of studies covering amount, rate, score, label, choice and text
SEEDS = (1020, 1082, 1003, 1070, 1045, 1057)
SCALE = (1.5, 1.5)
SECTION = "When each model's verdict was decided"


def _read(path: Path) -> pd.DataFrame:
    return pd.read_csv(path, keep_default_na=False, na_values=[""])  # a model named "null" stays "null"


@pytest.fixture(scope="module")
def audited(tmp_path_factory: pytest.TempPathFactory) -> list[tuple[GeneratedStudy, Path, Path, object]]:
    root = tmp_path_factory.mktemp("seqgen")
    studies = [generate(seed, effect_scale=SCALE) for seed in SEEDS]
    out = []
    with run_in_thread(FakeOpenAIServer(FaultConfig(reply=reply(studies, True)))) as planted, \
            run_in_thread(FakeOpenAIServer(FaultConfig(reply=reply(studies, False)))) as null:
        for study in studies:
            path = study.write(root / study.name)
            report = root / study.name / "out"
            args = ["audit", str(path), "--store", str(root / "cb.db"), "--out", str(report), "--bootstrap", "50",
                    "--concurrency", "8", "--no-progress", "--stop-when", "decided", "--look-every", "40",
                    "--model", f"planted=openai-compatible:{planted.base_url}:gen",
                    "--model", f"null=openai-compatible:{null.base_url}:gen"]
            if study.run_filters.get("preset"):
                args += ["--preset", str(study.run_filters["preset"])]
            for variant in study.run_filters.get("variant") or ():
                args += ["--variant", str(variant)]
            out.append((study, path, report, run_cli_here(*args, cwd=path.parent)))
    return out


@pytest.mark.parametrize("index", range(len(SEEDS)))
def test_every_kind_and_design_decides_through_http(audited: list, index: int) -> None:
    study, path, report, done = audited[index]
    assert done.returncode == 0, (study.describe(), done.stdout[-2000:], done.stderr[-3000:])
    assert "Traceback" not in done.stderr
    verdicts = _read(report / "analysis" / "sequential_verdicts.csv")
    table = counterbench.prompts(str(path), **study.run_filters)
    comparisons = family(load_study(str(path)), table, StoppingRule())
    want = sorted((c.use_case, c.language, c.facet, c.reference, c.comparison) for c in comparisons)
    assert {e for e in study.effects} <= {c.use_case for c in comparisons}, "a use case left out of the family"
    for model in ("planted", "null"):
        mine = verdicts[verdicts["model"].astype(str) == model]
        got = sorted(zip(mine["use_case"].astype(str), mine["language"].astype(str), mine["facet"].astype(str),
                         mine["reference"].astype(str), mine["comparison"].astype(str), strict=True))
        assert got == want, (model, study.describe())
    page = html.unescape((report / "report.html").read_text(encoding="utf-8"))
    assert SECTION in page
    null = verdicts[verdicts["model"].astype(str) == "null"]
    assert not (null["verdict"] == "gap").any(), null.to_string()
    where = study.planted
    planted = verdicts[(verdicts["model"].astype(str) == "planted")
                       & (verdicts["comparison"].astype(str) == where.level)
                       & (verdicts["reference"].astype(str) == where.reference)]
    assert len(planted), f"{study.describe()}: the planted comparison is not in the family"
    for row in planted.itertuples():
        sign = 1.0 if study.effects[row.use_case].shift > 0 else -1.0
        if row.verdict == "gap":
            assert sign * row.mean > 0 and sign * row.cs_low > 0 and sign * row.cs_high > 0, row
        # every design here has ≥ 13 matched slots per planted comparison: large enough to decide the gap
        assert row.verdict == "gap", (study.describe(), row)


@pytest.mark.parametrize(("verb", "flags", "says"), [
    ("audit", ["--margin", "5"], "go with --stop-when"),
    ("run", ["--look-every", "10"], "go with --stop-when"),
    ("audit", ["--stop-when", "foo"], "--stop-when takes"),
    ("run", ["--stop-when", "decided", "--margin", "abc"], "--margin takes"),
    ("audit", ["--stop-when", "decided", "--look-every", "0"], "--look-every"),
])
def test_stopping_mistakes_get_one_line(tmp_path: Path, verb: str, flags: list[str], says: str) -> None:
    store = tmp_path / "s.db"
    done = run_cli_here(verb, "rupeebias", "--model", "sim:biased", "--store", str(store), "--out" if verb == "audit"
                        else "--no-progress", *([str(tmp_path / "rep")] if verb == "audit" else []), *flags,
                        cwd=tmp_path)
    assert says in one_error_line(done)
    assert not store.exists()


def test_stop_when_with_prompts_alone_is_refused(tmp_path: Path) -> None:
    prompts = write_table(make_prompts(4), tmp_path / "p.parquet")
    done = run_cli_here("run", "--prompts", str(prompts), "--model", "sim:biased", "--store", str(tmp_path / "s.db"),
                        "--stop-when", "decided", cwd=tmp_path)
    assert "needs a study" in one_error_line(done)
    assert not (tmp_path / "s.db").exists()


def test_the_python_api_writes_the_verdicts(tmp_path: Path) -> None:
    study = generate(1038, effect_scale=SCALE)
    path = study.write(tmp_path / study.name)
    with run_in_thread(FakeOpenAIServer(FaultConfig(reply=reply([study], True)))) as server:
        done = counterbench.audit(str(path), [f"planted=openai-compatible:{server.base_url}:gen"],
                                  stop_when="decided", margin=5, look_every=40, store=tmp_path / "s.db",
                                  out=tmp_path / "rep", bootstrap=50, **study.run_filters)
    verdicts = _read(tmp_path / "rep" / "analysis" / "sequential_verdicts.csv")
    assert len(verdicts) and (verdicts["margin"] == 5).all()
    assert set(verdicts["model"].astype(str)) == {"planted"}
    assert (verdicts["prompts_sent"] < verdicts["prompts_design"]).all()  # stopped before the full design
    assert "sequential_verdicts" in done.analysis.tables


def test_max_cost_ends_a_sequential_audit_with_the_verdicts_so_far(tmp_path: Path) -> None:
    """A budget of 100 answers (6 output tokens at 1000 USD per 1M) ends the run mid-way: exit 3, the report
    with the verdicts reached so far, the rest undecided, and the store's spend within the budget."""
    import sqlite3

    from tests.run.conftest import PER_ANSWER

    study = generate(1038, effect_scale=SCALE)
    path = study.write(tmp_path / study.name)
    prices = tmp_path / "prices.yaml"
    prices.write_text('prices:\n  "openai-compatible:*": {input: 0, output: 1000}\n')
    budget = 100 * PER_ANSWER
    with run_in_thread(FakeOpenAIServer(FaultConfig(reply=reply([study], False)))) as server:
        done = run_cli_here("audit", str(path), "--model", f"null=openai-compatible:{server.base_url}:gen",
                            "--store", str(tmp_path / "s.db"), "--out", str(tmp_path / "rep"), "--bootstrap", "20",
                            "--no-progress", "--prices", str(prices), "--max-cost", f"{budget}", "--max-tokens", "6",
                            "--stop-when", "decided", "--look-every", "40", cwd=tmp_path)
    assert done.returncode == 3, (done.stdout[-2000:], done.stderr[-2000:])
    assert "Traceback" not in done.stderr
    assert (tmp_path / "rep" / "report.html").is_file()
    verdicts = _read(tmp_path / "rep" / "analysis" / "sequential_verdicts.csv")
    assert len(verdicts) and set(verdicts["stopped"].astype(str)) == {"budget"}
    assert (verdicts["verdict"] == "undecided").any()
    assert (verdicts["prompts_sent"] < verdicts["prompts_design"]).all()
    with sqlite3.connect(tmp_path / "s.db") as conn:
        spent = float(conn.execute("SELECT total(cost_usd) FROM responses").fetchone()[0])
    assert 0 < spent <= budget + 1e-9


def test_batch_sequential_audit_matches_one_at_a_time(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """--batch with --stop-when decided against the fake batch API: the same answers, verdicts and prompt count
    as the same sequential audit sent one request at a time."""
    import sqlite3

    from counterbench.testing.fake_batch import BatchConfig, FakeOpenAIBatchServer

    study = generate(1038, effect_scale=SCALE)
    path = study.write(tmp_path / study.name)
    outs = {}
    with run_in_thread(FakeOpenAIBatchServer(FaultConfig(reply=reply([study], True)),
                                             batch=BatchConfig(processing_s=0.05))) as server:
        monkeypatch.setenv("OPENAI_API_KEY", "sk-test-batch-key")
        monkeypatch.setenv("OPENAI_BASE_URL", server.base_url)
        for name, extra in (("batch", ["--batch", "--batch-poll", "0.1"]), ("plain", [])):
            done = run_cli_here("audit", str(path), "--model", "openai:gpt-4o-mini", "--store",
                                str(tmp_path / f"{name}.db"), "--out", str(tmp_path / name), "--bootstrap", "20",
                                "--no-progress", "--stop-when", "decided", "--look-every", "40", *extra, cwd=tmp_path)
            assert done.returncode == 0, (name, done.stdout[-2000:], done.stderr[-2000:])
            outs[name] = _read(tmp_path / name / "analysis" / "sequential_verdicts.csv")
        assert server.server.batch.jobs > 1  # one job a round
    batch, plain = outs["batch"], outs["plain"]
    for column in ("verdict", "prompts_sent", "n_slots", "decided_at_look"):
        assert batch[column].tolist() == plain[column].tolist(), column
    assert (batch["mean"] - plain["mean"]).abs().max() <= 1e-9
    rows = {}
    for name in outs:
        with sqlite3.connect(tmp_path / f"{name}.db") as conn:
            rows[name] = conn.execute("SELECT prompt_id, status, response, value FROM responses "
                                      "ORDER BY prompt_id").fetchall()
    assert rows["batch"] == rows["plain"] and len(rows["batch"]) == int(batch["prompts_sent"].iloc[0])
