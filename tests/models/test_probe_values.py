"""``models --probe`` judges the value, not only the format, and tells a cut answer from an ignored mode.

Through the fake OpenAI-compatible server (real HTTP on 127.0.0.1) with a planted answer: a model that
answers ``### 100000000 INR`` to "2 notes of 100 rupees" is not ``works`` in any mode, an answer stopped
at the token budget (``finish_reason=length``) is ``cut``, not ``ignored``, and the right value works.
"""

from __future__ import annotations

from counterbench.models.probe import PROBE_EXPECTED, PROBE_MAX_TOKENS, probe
from counterbench.testing import FaultConfig, run_in_thread
from counterbench.testing.fake_openai import FakeOpenAIServer


def _status(config: FaultConfig) -> tuple[dict[str, str], list[str], list[dict]]:
    with run_in_thread(FakeOpenAIServer(config)) as server:
        report = probe(f"openai-compatible:{server.base_url}:fake-model", env={}, timeout_s=5.0)
        bodies = list(server.counters.recent_bodies)
    return {m.mode: m.status for m in report.modes}, report.lines(), bodies


def test_a_wrong_value_in_the_format_is_not_works() -> None:
    status, lines, _ = _status(FaultConfig(reply=lambda system, user: "### 100000000 INR"))
    assert set(status.values()) == {"wrong"}, status
    assert lines[-2] == "structured modes the server honours: json_schema, json_object, grammar, regex"
    assert lines[-1] == (f"wrong value ({PROBE_EXPECTED} was asked for) in: json_schema, json_object, grammar, "
                         "regex, free-text -- the format holds, the model's answers may not")
    assert f"but {PROBE_EXPECTED} was asked for" in next(x for x in lines if x.strip().startswith("grammar"))


def test_the_right_value_works_and_the_budget_fits_a_json_answer() -> None:
    status, lines, bodies = _status(FaultConfig(reply=lambda system, user: f"### {PROBE_EXPECTED} INR"))
    assert set(status.values()) == {"works"}, status
    assert lines[-1] == "structured modes the server honours: json_schema, json_object, grammar, regex"
    assert PROBE_MAX_TOKENS >= 64 and {b["max_tokens"] for b in bodies} == {PROBE_MAX_TOKENS}


def test_a_cut_answer_is_cut_not_ignored() -> None:
    status, lines, _ = _status(FaultConfig(force="length"))
    assert set(status.values()) == {"cut"}, status
    assert lines[-1] == "structured modes the server honours: none"
    assert "finish_reason=length" in next(x for x in lines if x.strip().startswith("json_schema"))
