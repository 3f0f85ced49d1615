"""Log-probabilities of the allowed answers of label and choice use cases: read from the backend's token
log-probabilities, stored as JSON in ``responses.answer_logprobs``, absent when not asked for or not
given; older stores gain the column when opened."""

from __future__ import annotations

import json
import math
import sqlite3
from pathlib import Path

import pandas as pd
import pytest

import counterbench
from counterbench.outcomes.logprobs import allowed_answers, answer_logprobs, answer_position, answer_probabilities
from counterbench.run.results import load_results
from counterbench.run.store import open_store
from counterbench.run.store_schema import SCHEMA_VERSION
from counterbench.testing._fakecore import label_probabilities
from counterbench.testing.fake_openai import FakeOpenAIServer, FaultConfig, run_in_thread
from tests.conftest import REPO

from .conftest import fake_model


def test_answer_position_and_matching() -> None:
    top = ((" yes", -0.2), (" no", -1.8), (" Yes", -0.9), ("cannot", -4.0))
    assert answer_logprobs(["yes", "no", "cannot decide"], [("###", 0.0, ()), (" yes", -0.2, top)]) == pytest.approx({
        "yes": math.log(math.exp(-0.2) + math.exp(-0.9)), "no": -1.8, "cannot decide": -4.0})
    # case-insensitive, every spelling summed; a long answer by its first token
    split = [("##", 0.0, ()), ("#", 0.0, ()), (" ", -0.1, ()), ("B", -0.3, (("B", -0.3), ("A", -1.5)))]
    assert answer_logprobs(["A", "B", "C"], split) == {"A": -1.5, "B": -0.3}  # C absent: left out, not guessed
    wrapped = [('{"answer": "', 0.0, ()), ("###", 0.0, ()), (" no", -0.4, ((" no", -0.4), (" yes", -1.2))),
               ('"}', 0.0, ())]
    assert answer_logprobs(["yes", "no"], wrapped) == {"yes": -1.2, "no": -0.4}
    bare = [("Yes", -0.1, (("Yes", -0.1), ("No", -2.4), ("yes", -4.0)))]  # DiscrimEval's format: no ###
    assert answer_logprobs(["yes", "no"], bare) == pytest.approx({"yes": math.log(math.exp(-0.1) + math.exp(-4.0)),
                                                                  "no": -2.4})
    bare_json = [('{"', 0.0, ()), ('answer', 0.0, ()), ('":"', 0.0, ()), ("no", -0.3, (("no", -0.3), ("yes", -1.4))),
                 ('"}', 0.0, ())]
    assert answer_logprobs(["yes", "no"], bare_json) == {"yes": -1.4, "no": -0.3}
    glued = [('{"answer": ', 0.0, ()), ('"yes', -0.5, (('"yes', -0.5), ('"no', -1.0), ("no", -9.0))), ('"}', 0.0, ())]
    assert answer_logprobs(["yes", "no"], glued) == pytest.approx({"yes": -0.5, "no": math.log(math.exp(-1.0)
                                                                                              + math.exp(-9.0))})
    prose = [("I", -0.1, (("I", -0.1), ("Yes", -3.0))), (" would say yes", -0.2, ())]
    assert answer_logprobs(["yes", "no"], prose) == {"yes": -3.0}  # read at the first token whatever was sampled
    assert answer_logprobs(["yes", "no"], [("**", -0.1, (("**", -0.1),)), ("Yes", -0.1, ())]) is None
    assert answer_logprobs(["yes"], None) is None
    assert answer_position('  {"rationale": "x ### y", "answer": "### no"}') == 42
    assert answer_position("\n Yes") == 2 and answer_position("Because.\n### A") == 13
    assert answer_position("   ") is None and answer_position('{"answer": 3}') is None


def test_decision_probabilities_are_normalised_over_the_allowed_answers() -> None:
    both = answer_probabilities(json.dumps({"yes": math.log(0.6), "no": math.log(0.2)}), ["yes", "no"])
    assert both == pytest.approx({"yes": 0.75, "no": 0.25})
    # an allowed answer missing: incomplete, so no value (missing, never 0) — unless the stored flag says
    # the missing ones cannot matter (the reading bounded them), when they count as 0
    assert answer_probabilities({"A": -1.0}, ["A", "B", "C"]) is None
    assert answer_probabilities({"A": -1.0}, ["A", "B", "C"], complete=1) == {"A": 1.0, "B": 0.0, "C": 0.0}
    assert answer_probabilities({"A": -1.0, "B": -2.0}, ["A", "B"], complete=0.0) is None
    assert answer_probabilities({"A": -1.0, "B": -2.0}, ["A", "B"], complete=float("nan")) is not None
    for nothing in (None, float("nan"), "", "not json", "[1]", json.dumps({"maybe": -0.1})):
        assert answer_probabilities(nothing, ["yes", "no"]) is None
    assert allowed_answers("label:yes|no|cannot decide") == ("yes", "no", "cannot decide")
    assert allowed_answers("choice:A|B") == ("A", "B") and allowed_answers("score:1:10") == ()


@pytest.fixture(scope="module")
def label_prompts() -> pd.DataFrame:
    table = counterbench.prompts(str(REPO / "examples" / "approval_crossed.yaml"))
    return table.head(12).reset_index(drop=True)


def _stored(store: Path) -> pd.DataFrame:
    results = load_results(store)
    return results.set_index("prompt_id")


def test_fake_server_logprobs_are_stored_per_allowed_label(tmp_path: Path, label_prompts: pd.DataFrame) -> None:
    with run_in_thread(FakeOpenAIServer(FaultConfig())) as server:
        summary = counterbench.run_prompts(label_prompts, [fake_model(server)], store=tmp_path / "cb.db",
                                           logprobs=5, handle_signals=False)
        bodies = list(server.counters.recent_bodies)
    assert summary.complete
    assert all(b.get("logprobs") is True and b.get("top_logprobs") == 5 for b in bodies)
    stored = _stored(tmp_path / "cb.db")
    for row in label_prompts.itertuples():
        truth = label_probabilities(row.system, row.user)
        assert truth is not None and set(truth) == {"yes", "no"}
        got = json.loads(stored.loc[row.prompt_id, "answer_logprobs"])
        assert got == pytest.approx({label: math.log(p) for label, p in truth.items()}, abs=1e-12)
        assert stored.loc[row.prompt_id, "response"] == f"### {max(truth, key=truth.__getitem__)}"
        assert stored.loc[row.prompt_id, "status"] == "ok"


def test_no_logprobs_unless_asked_or_for_other_answers(tmp_path: Path, label_prompts: pd.DataFrame) -> None:
    from tests.run.conftest import make_prompts

    amounts = make_prompts(4)
    with run_in_thread(FakeOpenAIServer(FaultConfig())) as server:
        counterbench.run_prompts(label_prompts.head(4), [fake_model(server)], store=tmp_path / "off.db",
                                 handle_signals=False)
        counterbench.run_prompts(amounts, [fake_model(server)], store=tmp_path / "amounts.db", logprobs=5,
                                 handle_signals=False)
        bodies = list(server.counters.recent_bodies)
    assert not any("logprobs" in b for b in bodies)  # off by default; never for amounts
    for name in ("off.db", "amounts.db"):
        assert _stored(tmp_path / name)["answer_logprobs"].isna().all()


def test_a_version_1_store_gains_the_column(tmp_path: Path) -> None:
    path = tmp_path / "old.db"
    with open_store(path) as store:
        store.conn.execute("INSERT INTO responses (prompt_id, prompt_hash, model, config_fp, request_fp, status, "
                           "response) VALUES ('p1', 'h', 'm', 'c', 'r', 'ok', '### yes')")
        store.conn.commit()
    with sqlite3.connect(path) as conn:  # what a store written before the column existed looks like
        conn.execute("ALTER TABLE responses DROP COLUMN answer_logprobs")
        conn.execute("PRAGMA user_version = 1")
    with open_store(path) as store:
        assert store.conn.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION == 3
        row = store.conn.execute("SELECT response, answer_logprobs, answer_complete, answer_mass, answer_forced "
                                 "FROM responses").fetchone()
    assert row == ("### yes", None, None, None, None)


def test_a_version_2_store_gains_the_reading_columns_and_is_read_as_before(tmp_path: Path) -> None:
    """A store written before ``answer_complete``/``answer_mass``/``answer_forced``: opened, migrated, and its
    stored log-probabilities still give p(yes) (complete when every allowed answer is stored)."""
    import counterbench.run.store as store_module

    path = tmp_path / "v2.db"
    with open_store(path) as store:
        store.conn.execute("INSERT INTO responses (prompt_id, prompt_hash, model, config_fp, request_fp, status, "
                           "response, answer_logprobs) VALUES ('p1', 'h', 'm', 'c', 'r', 'ok', '### yes', ?)",
                           (json.dumps({"yes": math.log(0.6), "no": math.log(0.2)}),))
        store.conn.commit()
    with sqlite3.connect(path) as conn:
        for column in ("answer_complete", "answer_mass", "answer_forced"):
            conn.execute(f"ALTER TABLE responses DROP COLUMN {column}")
        conn.execute("PRAGMA user_version = 2")
    stored = load_results(path)  # a reader migrates too
    assert stored.loc[0, ["answer_complete", "answer_mass", "answer_forced"]].isna().all()
    assert answer_probabilities(stored.loc[0, "answer_logprobs"], ["yes", "no"],
                                stored.loc[0, "answer_complete"]) == pytest.approx({"yes": 0.75, "no": 0.25})
    with sqlite3.connect(path) as conn:
        assert conn.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION
        names = {row[1] for row in conn.execute("PRAGMA table_info(responses)")}
    assert set(store_module.READING_COLUMNS) <= names


def test_the_cli_option_reaches_the_store(tmp_path: Path) -> None:
    from .conftest import cli

    with run_in_thread(FakeOpenAIServer(FaultConfig())) as server:
        proc = cli("run", str(REPO / "examples" / "approval_crossed.yaml"), "--model", fake_model(server),
                   "--sample-slots", "2", "--logprobs", "3", "--store", str(tmp_path / "cli.db"), "--no-progress",
                   cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    stored = load_results(tmp_path / "cli.db")
    assert len(stored) > 0 and stored["answer_logprobs"].notna().all()
    assert all(set(json.loads(v)) == {"yes", "no"} for v in stored["answer_logprobs"])


@pytest.mark.parametrize("structured", [False, True], ids=["bare", "json-bare"])
def test_bare_answers_are_read_too(tmp_path: Path, label_prompts: pd.DataFrame, structured: bool) -> None:
    """DiscrimEval's bare ``yes`` (and ``{"answer": "yes"}``): the answer is the first token."""
    with run_in_thread(FakeOpenAIServer(FaultConfig(bare_answers=True))) as server:
        summary = counterbench.run_prompts(label_prompts, [fake_model(server)], store=tmp_path / "cb.db",
                                           logprobs=2, structured=structured, handle_signals=False)
        bodies = list(server.counters.recent_bodies)
    assert summary.complete and all(("response_format" in b) is structured for b in bodies)
    stored = _stored(tmp_path / "cb.db")
    for row in label_prompts.itertuples():
        truth = label_probabilities(row.system, row.user)
        assert truth is not None
        got = json.loads(stored.loc[row.prompt_id, "answer_logprobs"])
        assert got == pytest.approx({label: math.log(p) for label, p in truth.items()}, abs=1e-12)
        assert stored.loc[row.prompt_id, "status"] == "ok"
        if not structured:
            assert stored.loc[row.prompt_id, "response"] == max(truth, key=truth.__getitem__)
