"""A rationale under structured output: the constraint allows a bounded rationale line, then the final line.

Checked on the constraint itself (regex, JSON schema with ``jsonschema``), through a real OpenAI-compatible
HTTP server on 127.0.0.1 (the fake server, JSON-schema and grammar modes) and the hiring analysis. The
embedded model and the real llama.cpp server are exercised in ``tests/models`` (slow tests).
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import jsonschema
import pytest

import counterbench
from counterbench.builtin.hiring.analysis import analyze_hiring
from counterbench.builtin.hiring.answers import parse_score, parse_verdict
from counterbench.models import ChatRequest, GenerationConfig
from counterbench.models.structured import constraint_for, unwrap_answer
from counterbench.outcomes.base import RATIONALE_MAX_CHARS, RationaleConstraint, rationale_chars
from counterbench.run.results import load_results
from counterbench.testing.fake_openai import FAKE_RATIONALE, FakeOpenAIServer, FaultConfig, run_in_thread

REASON = "Candidate A has the asked-for experience, while B lacks one secondary skill."


def _request(answer_type: str, rationale: object, max_tokens: int = 256) -> ChatRequest:
    return ChatRequest("p", "sys", "user", GenerationConfig(max_tokens=max_tokens, structured=True), answer_type,
                       {"use_case": "compare_rationale", "rationale": rationale})


def test_a_prompt_asking_for_a_rationale_gets_a_rationale_line_before_the_final_line():
    constraint = constraint_for(_request("choice:A|B|Tie", True))
    assert isinstance(constraint, RationaleConstraint)
    regex = re.compile(constraint.regex)
    assert regex.match(f"{REASON}\n### A") and regex.match(f"{REASON}\n### Tie")
    assert not regex.match("### A")  # the rationale the prompt asks for is required
    assert not regex.match(f"{REASON}\n### C")
    assert not regex.match(f"# {REASON}\n### A")  # no second '#' line before the final one
    assert not regex.match("x" * (RATIONALE_MAX_CHARS + 1) + "\n### A")  # bounded
    for flag in (False, None, "false", 0):
        plain = constraint_for(_request("choice:A|B|Tie", flag))
        assert not isinstance(plain, RationaleConstraint) and plain is not None and plain.regex == "^### (A|B|Tie)$"
    assert isinstance(constraint_for(_request("score:1:100", "True")), RationaleConstraint)  # as read from a CSV
    # no room for a rationale in the token limit: just the final line
    assert not isinstance(constraint_for(_request("choice:A|B|Tie", True, max_tokens=16)), RationaleConstraint)


def test_the_rationale_is_sized_so_the_final_line_fits_in_the_token_limit():
    assert rationale_chars(64) == 144 and rationale_chars(1000) == RATIONALE_MAX_CHARS and rationale_chars(10) == 0
    short = constraint_for(_request("score:1:100", True, max_tokens=64))
    assert isinstance(short, RationaleConstraint) and "{10,144}" in short.regex and "{10,144}" in short.gbnf
    assert short.gbnf.startswith('root ::= cb-rationale "\\n" cb-final\n') and "\ncb-final ::= \"### \" (" in short.gbnf


def test_json_schema_reply_round_trips_to_the_stored_text_and_parses():
    constraint = constraint_for(_request("score:1:100", True))
    assert constraint is not None
    schema = constraint.json_schema()["json_schema"]["schema"]
    assert list(schema["properties"]) == ["rationale", "answer"] and schema["required"] == ["rationale", "answer"]
    jsonschema.validate({"rationale": REASON, "answer": "### 72"}, schema)
    for bad in ({"answer": "### 72"}, {"rationale": REASON, "answer": "### 101"},
                {"rationale": "x" * 601, "answer": "### 72"}, {"rationale": REASON, "answer": "### 7", "x": 1}):
        with pytest.raises(jsonschema.ValidationError):
            jsonschema.validate(bad, schema)
    text = unwrap_answer(json.dumps({"rationale": f" {REASON} ", "answer": "### 72"}))
    assert text == f"{REASON}\n### 72"
    parsed = parse_score(text)
    assert parsed.status == "ok" and parsed.value == 72.0


def _reply(system: str, user: str) -> str:
    return "### 72" if "scale from 1 to 100" in user else "### A"


@pytest.mark.parametrize("mode", ["json_schema", "grammar"])
def test_rationale_variants_through_a_real_http_server_store_the_rationale(tmp_path: Path, mode: str):
    table = counterbench.prompts("hiring", use_case=["compare", "compare_rationale", "score", "score_rationale"],
                                 profile=["civeng_1"], question_variant=[0, 1], axis=["all"])
    table = table.groupby("use_case", group_keys=False).head(3).reset_index(drop=True)
    store = tmp_path / "h.db"
    with run_in_thread(FakeOpenAIServer(FaultConfig(reply=_reply))) as server:
        counterbench.run_prompts(table, [f"openai-compatible:{server.base_url}:fake-model"], store=str(store),
                                 config=GenerationConfig(structured=True, structured_mode=mode, max_tokens=200))
        bodies = list(server.counters.recent_bodies)
    assert len(bodies) == len(table) == 12
    if mode == "json_schema":
        schemas = [b["response_format"]["json_schema"]["schema"] for b in bodies]
        assert sum("rationale" in s["properties"] for s in schemas) == 6  # the two _rationale use cases
    else:
        assert sum("cb-rationale" in b["grammar"] for b in bodies) == 6
    results = load_results(store)
    with_reason = results[results["use_case"].str.endswith("_rationale")]
    plain = results[~results["use_case"].str.endswith("_rationale")]
    assert with_reason["response"].str.startswith(FAKE_RATIONALE + "\n### ").all()  # the rationale is stored
    assert plain["response"].str.fullmatch(r"### (A|72)").all()
    tables, _ = analyze_hiring(results, bootstrap=50)
    health = tables["hiring_parse_health"]
    assert set(health["status"]) == {"ok"} and health["n"].sum() == 12
    per_use_case = health.groupby("use_case")["with_rationale"].sum()
    assert per_use_case.to_dict() == {"compare": 0, "compare_rationale": 3, "score": 0, "score_rationale": 3}
    assert health.loc[health["with_rationale"].gt(0), "rationale_median_chars"].eq(len(FAKE_RATIONALE)).all()
    assert {parse_verdict(t).unit for t in with_reason.loc[with_reason["use_case"].eq("compare_rationale"),
                                                             "response"]} == {"A"}
