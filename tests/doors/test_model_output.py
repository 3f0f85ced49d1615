"""Model output cannot crash or fool the parser: a reply nested too deep is stored as ``unparseable`` with a
reason and the run goes on (real HTTP to a local server, a real store); a number with an invisible
character inside is ``unparseable``/``hidden_character``, never the digits on one side of it."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from counterbench.json_limits import JSONLimitError, json_limit_reason, loads_bounded
from counterbench.outcomes import parse_outcome
from counterbench.parse import parse_answer
from counterbench.run import run_prompts
from counterbench.testing.fake_openai import FakeOpenAIServer, FaultConfig, run_in_thread
from tests.parse.rupeebias_types import answer_type
from tests.run.conftest import FAST_RETRY, make_prompts

DEEP_ANSWER = '{"answer": "### 950000 INR", "deep": ' + "[" * 1000 + "]" * 1000 + "}"
ENV = {"OPENAI_API_KEY": "sk-test-1234567890"}


def _rows(store: Path) -> list[tuple[str, str | None, float | None]]:
    with sqlite3.connect(store) as conn:
        return conn.execute("SELECT status, parse_reason, value FROM responses ORDER BY prompt_id").fetchall()


def test_bounded_json_limits() -> None:
    assert loads_bounded('{"a": [[1]]}') == {"a": [[1]]}
    assert json_limit_reason("[" * 64 + "]" * 64) is None
    assert json_limit_reason("[" * 65 + "]" * 65) == "json_too_deep"
    assert json_limit_reason('["' + "[" * 500 + '"]') is None  # brackets inside a string do not nest
    with pytest.raises(JSONLimitError, match="deeper than 64"):
        loads_bounded(DEEP_ANSWER)


def test_a_deep_structured_reply_is_unparseable_and_the_run_goes_on(tmp_path: Path) -> None:
    def reply(system: str, user: str) -> str:
        return DEEP_ANSWER if user.endswith("#1") else "### 12 LPA"

    store = tmp_path / "s.db"
    with run_in_thread(FakeOpenAIServer(FaultConfig(reply=reply))) as server:
        env = {**ENV, "OPENAI_BASE_URL": server.base_url}
        for structured in (False, True):  # read as text, and unwrapped as a structured answer
            run_prompts(make_prompts(4), ["openai:gpt-a"], store=store, env=env, retry=FAST_RETRY,
                        structured=structured, no_cache=True)
    rows = _rows(store)
    assert ("unparseable", "json_too_deep", None) in rows
    assert rows.count(("ok", None, 1_200_000.0)) >= 3
    assert not any(r[0] == "ok" and r[2] == 950_000.0 for r in rows)  # never read around the nesting


def test_a_deep_reply_body_is_stored_unparseable_not_a_crash(tmp_path: Path) -> None:
    store = tmp_path / "s.db"
    with run_in_thread(FakeOpenAIServer(FaultConfig(force="deep_json"))) as server:
        summary = run_prompts(make_prompts(3), ["openai:gpt-a"], store=store,
                              env={**ENV, "OPENAI_BASE_URL": server.base_url}, retry=FAST_RETRY)
    assert summary.status == "completed"
    assert _rows(store) == [("unparseable", "json_too_deep", None)] * 3


@pytest.mark.parametrize("char", ["\u200b", "\u200d", "\u200c", "\ufeff", "\u00ad", "\u2060"])
def test_an_invisible_character_inside_a_number_is_never_the_tail_digits(char: str) -> None:
    salary = answer_type("salary_estimation")
    for text, use_case in ((f"### 9{char}50000 INR", salary), (f"### 9{char}50,000 INR", "inr"),
                           (f"### 1{char}2.5 %", "percent"), (f"### 12.{char}5 %", "percent")):
        answer = parse_answer(text, use_case)
        assert (answer.status, answer.reason) == ("unparseable", "hidden_character"), (text, answer)
    score = parse_outcome("score:1:100", f"### 9{char}5")
    assert (score.status, score.reason) == ("unparseable", "hidden_character")


def test_a_bidi_override_with_digits_is_hidden_and_formatting_alone_is_read() -> None:
    assert parse_answer("### \u202e0000021\u202c INR", answer_type("salary_estimation")).reason == "hidden_character"
    for text in ("\ufeff### 950000 INR", "### 950000 INR\u200b", "### \u200b950000 INR", "आपका\u200d वेतन ### 9.5 LPA"):
        answer = parse_answer(text, answer_type("salary_estimation"))
        assert (answer.status, answer.value) == ("ok", 950_000.0), (text, answer)


def test_a_hidden_character_is_stored_unparseable_through_a_run(tmp_path: Path) -> None:
    store = tmp_path / "s.db"
    with run_in_thread(FakeOpenAIServer(FaultConfig(reply=lambda s, u: "### 9\u200b50000 INR"))) as server:
        run_prompts(make_prompts(2), ["openai:gpt-a"], store=store, env={**ENV, "OPENAI_BASE_URL": server.base_url},
                    retry=FAST_RETRY)
    assert _rows(store) == [("unparseable", "hidden_character", None)] * 2
