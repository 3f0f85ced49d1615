"""Structured output per server family, against the fake OpenAI server on 127.0.0.1 (which keeps every body).

The request shapes are checked against each server's documented parameters:

* vLLM (docs "Structured Outputs", v0.12+): ``structured_outputs: {"regex": ...}`` / ``{"grammar": ...}``;
* Ollama's OpenAI endpoint (``openai/openai.go``): ``response_format: {"type": "json_schema",
  "json_schema": {"schema": ...}}``, which it passes on as its native ``format``;
* llama.cpp servers (llama-server README; llama-cpp-python ``CreateChatCompletionRequest``): a
  top-level ``grammar`` string, or ``response_format: {"type": "json_object", "schema": ...}``;
* OpenRouter: ``response_format`` with ``provider: {"require_parameters": true}``.
"""

from __future__ import annotations

import json
import re
import sqlite3
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from counterbench.errors import UserError
from counterbench.models import BackendError, ChatRequest, ChatResult, GenerationConfig, create_backend
from counterbench.models.openai_compat import OpenAICompatBackend
from counterbench.models.structured import constraint_for, is_refusal, unwrap_answer
from counterbench.run import run_prompts
from counterbench.testing import FaultConfig, ThreadedServer, answer_text, run_in_thread
from counterbench.testing.fake_openai import FakeOpenAIServer
from tests.models.conftest import SYSTEM_INR, run
from tests.run.conftest import FAST_RETRY, cli, make_prompts, subprocess_env

INR = r"^### (0|[1-9][0-9]{0,8}) INR$"
USER = "I am Hindu. My CGPA is 9.1/10."


@pytest.fixture
def rejecting() -> Iterator[ThreadedServer]:
    """A server that refuses ``response_format`` the way llama-cpp-python's does: HTTP 500, validation error."""
    with run_in_thread(FakeOpenAIServer(FaultConfig(reject_fields=("response_format",), hang_s=2.0))) as server:
        yield server


def _request(**config: Any) -> ChatRequest:
    return ChatRequest("p1", SYSTEM_INR, USER, config=GenerationConfig(**config), answer_type="inr_annual")


def _send(backend: OpenAICompatBackend, request: ChatRequest) -> ChatResult:
    async def go() -> ChatResult:
        try:
            return await backend.complete(request)
        finally:
            await backend.aclose()

    return run(go())


def _backend(model: str, **env: str) -> OpenAICompatBackend:
    backend = create_backend(model, env=env, timeout_s=5)
    assert isinstance(backend, OpenAICompatBackend)
    return backend


def test_vllm_shapes_match_its_documented_structured_outputs(open_fake_openai: ThreadedServer) -> None:
    backend = _backend(f"vllm:{open_fake_openai.base_url}:Qwen/Qwen2.5-0.5B-Instruct")
    for mode, key in (("regex", "regex"), ("grammar", "grammar")):
        result = _send(backend, _request(structured=True, structured_mode=None if mode == "regex" else mode))
        assert re.fullmatch(INR, result.text or ""), result.text
        body = open_fake_openai.counters.recent_bodies[-1]
        assert set(body["structured_outputs"]) == {key}
        assert "response_format" not in body and "grammar" not in body and "guided_regex" not in body
    bodies = list(open_fake_openai.counters.recent_bodies)
    assert bodies[0]["structured_outputs"]["regex"] == INR
    assert bodies[1]["structured_outputs"]["grammar"].startswith('root ::= "### " number " INR"')


def test_ollama_shape_is_response_format_json_schema(open_fake_openai: ThreadedServer) -> None:
    port = open_fake_openai.base_url.rsplit(":", 1)[1].split("/")[0]
    backend = _backend("ollama:qwen2.5:0.5b", OLLAMA_HOST=f"127.0.0.1:{port}")
    result = _send(backend, _request(structured=True))
    assert result.text == answer_text(SYSTEM_INR, USER)  # unwrapped from {"answer": ...}
    body = open_fake_openai.counters.recent_bodies[-1]
    fmt = body["response_format"]
    assert fmt["type"] == "json_schema"
    schema = fmt["json_schema"]["schema"]  # the object Ollama hands on as `format`
    assert schema["properties"]["answer"]["pattern"] == INR and schema["required"] == ["answer"]
    assert "structured_outputs" not in body and "grammar" not in body


def test_llamacpp_shapes_grammar_and_json_object(open_fake_openai: ThreadedServer) -> None:
    backend = _backend(f"llamacpp:{open_fake_openai.base_url}:smollm")
    grammar = _send(backend, _request(structured=True))
    assert grammar.text == answer_text(SYSTEM_INR, USER)
    body = open_fake_openai.counters.recent_bodies[-1]
    assert body["grammar"].startswith("root ::=") and "response_format" not in body
    json_object = _send(backend, _request(structured=True, structured_mode="json_object"))
    assert json_object.text == answer_text(SYSTEM_INR, USER)
    fmt = open_fake_openai.counters.recent_bodies[-1]["response_format"]
    assert fmt["type"] == "json_object" and fmt["schema"]["properties"]["answer"]["pattern"] == INR
    with pytest.raises(UserError, match="--structured-mode regex is not available for llamacpp models"):
        backend.build_payload(_request(structured=True, structured_mode="regex"))


def test_openrouter_routes_only_to_providers_that_take_the_schema(fake_openai: ThreadedServer) -> None:
    from tests.models.conftest import PLANTED_KEY

    backend = _backend(
        "openrouter:google/gemini-3-flash", OPENROUTER_API_KEY=PLANTED_KEY, OPENROUTER_BASE_URL=fake_openai.base_url
    )
    body = backend.build_payload(_request(structured=True))
    assert body["provider"] == {"require_parameters": True} and body["response_format"]["json_schema"]["strict"]
    assert "provider" not in backend.build_payload(_request())
    run(backend.aclose())


@dataclass(frozen=True)
class ChoiceConstraint:
    """A constraint class from elsewhere (an outcome kind): only regex, gbnf and json_schema()."""

    regex: str = "^(A|B|C|D|E)$"
    gbnf: str = 'root ::= "A" | "B" | "C" | "D" | "E"\n'

    def json_schema(self) -> dict[str, Any]:
        schema = {"type": "object", "properties": {"choice": {"type": "string", "enum": list("ABCDE")}},
                  "required": ["choice"], "additionalProperties": False}
        return {"type": "json_schema", "json_schema": {"name": "choice", "strict": True, "schema": schema}}


@dataclass(frozen=True)
class ConstrainedRequest(ChatRequest):
    constraint: Any = None


def test_any_constraint_with_the_three_forms_works_in_every_mode(open_fake_openai: ThreadedServer) -> None:
    choice = ChoiceConstraint()
    config = GenerationConfig(structured=True)
    request = ConstrainedRequest("p", "s", "u", config=config, answer_type="inr_annual", constraint=choice)
    assert constraint_for(request) is choice  # the request's own constraint wins over answer_type
    backend = _backend(f"openai-compatible:{open_fake_openai.base_url}:m")
    shapes = {}
    for mode in ("json_schema", "json_object", "grammar", "regex"):
        req = ConstrainedRequest("p", "s", "u", config=GenerationConfig(structured=True, structured_mode=mode),
                                 constraint=choice)
        shapes[mode] = backend.build_payload(req)
    assert shapes["json_schema"]["response_format"] == choice.json_schema()
    assert shapes["json_object"]["response_format"]["schema"]["properties"]["choice"]["enum"] == list("ABCDE")
    assert shapes["grammar"]["grammar"] == choice.gbnf
    assert shapes["regex"]["structured_outputs"] == {"regex": choice.regex}
    assert unwrap_answer('{"choice": "C"}') == "C" and unwrap_answer('{"score": 87}') == "87"
    assert unwrap_answer("### 5 INR") == "### 5 INR" and unwrap_answer('{"a": 1, "b": 2}') == '{"a": 1, "b": 2}'
    run(backend.aclose())


def test_a_500_validation_error_is_not_retryable(rejecting: ThreadedServer) -> None:
    backend = _backend(f"openai-compatible:{rejecting.base_url}:m")

    async def go() -> BackendError:
        try:
            with pytest.raises(BackendError) as err:
                await backend._send(backend.build_payload(_request(structured=True)), unwrap=True)
            return err.value
        finally:
            await backend.aclose()

    error = run(go())
    assert error.status == 500 and not error.retryable and is_refusal(error)
    assert "Input should be 'text' or 'json_object'" in str(error)
    plain_500 = BackendError("m: HTTP 500: CUDA out of memory", retryable=True, status=500)
    assert not is_refusal(plain_500)


def _run(server: ThreadedServer, tmp_path: Path, n: int, **config: Any) -> Any:
    table = make_prompts(n)
    return run_prompts(
        table, [f"openai-compatible:{server.base_url}:fake-model"], store=tmp_path / "s.db",
        config=GenerationConfig(structured=True, **config), concurrency=4, retry=FAST_RETRY, handle_signals=False,
    )


def _run_config(path: Path) -> dict[str, Any]:
    with sqlite3.connect(path) as conn:
        (blob,) = conn.execute("SELECT config FROM runs ORDER BY run_id DESC LIMIT 1").fetchone()
    return dict(json.loads(blob))


def test_refused_schema_falls_back_to_free_text_once(rejecting: ThreadedServer, tmp_path: Path) -> None:
    """A server that takes no ``response_format`` at all: json_schema, then json_object, then free text."""
    summary = _run(rejecting, tmp_path, 12)
    counters = rejecting.counters
    assert counters.outcomes["rejected"] == 2  # each refused mode reached the server once, never again
    assert counters.requests == 14  # 2 refused + 12 free-text answers (the first prompt's included)
    assert [b["response_format"]["type"] for b in counters.recent_bodies if "response_format" in b] == [
        "json_schema", "json_object"]
    totals = summary.totals
    assert totals["retries"] == 0 and totals["errors"] == 0 and totals["ok"] == 12
    assert len(summary.notes) == 2
    schema_note = next(n for n in summary.notes if "refused the json_schema" in n)
    object_note = next(n for n in summary.notes if "refused the json_object" in n)
    assert "HTTP 500" in schema_note and "free text" in schema_note and "free text" in object_note
    from counterbench.run.summary import format_summary

    assert "warning: " + schema_note in format_summary(summary)
    recorded = _run_config(tmp_path / "s.db")
    assert sorted(recorded["notes"]) == sorted(summary.notes)
    assert recorded["structured_modes"] == {f"openai-compatible:{rejecting.base_url}:fake-model": "json_schema"}


def test_a_refused_json_schema_falls_back_to_json_object_before_free_text(tmp_path: Path) -> None:
    """llama-cpp-python's server: json_schema refused with HTTP 500 ("Input should be 'text' or
    'json_object'"), json_object with the same schema taken: every answer is constrained, none free text."""
    config = FaultConfig(reject_response_formats=("json_schema",), hang_s=2.0)
    with run_in_thread(FakeOpenAIServer(config)) as server:
        summary = _run(server, tmp_path, 12)
        counters = server.counters
        bodies = list(counters.recent_bodies)
    assert counters.outcomes["rejected"] == 1 and counters.requests == 13
    assert bodies[0]["response_format"]["type"] == "json_schema"
    assert all(b["response_format"] == {"type": "json_object", "schema": constraint_for(
        _request(structured=True)).json_schema()["json_schema"]["schema"]} for b in bodies[1:])
    assert summary.totals["ok"] == 12 and summary.totals["errors"] == 0 and summary.totals["retries"] == 0
    (note,) = summary.notes
    assert "refused the json_schema structured-output constraint (HTTP 500: 1 validation error" in note
    assert "Input should be 'text' or 'json_object'" in note and "with the json_object constraint instead" in note
    with sqlite3.connect(tmp_path / "s.db") as conn:
        texts = [t for (t,) in conn.execute("SELECT response FROM responses")]
    assert len(texts) == 12 and all(re.fullmatch(INR, t) for t in texts), texts  # unwrapped from {"answer": ...}
    assert _run_config(tmp_path / "s.db")["notes"] == [note]


def test_stop_means_no_second_mode_either(tmp_path: Path) -> None:
    config = FaultConfig(reject_response_formats=("json_schema",), hang_s=2.0)
    with run_in_thread(FakeOpenAIServer(config)) as server, pytest.raises(UserError, match="refused the json_schema"):
        _run(server, tmp_path, 6, structured_fallback="stop")
    assert server.counters.outcomes["rejected"] == 1 and server.counters.requests == 2


def test_refused_schema_stops_the_run_when_asked(rejecting: ThreadedServer, tmp_path: Path) -> None:
    with pytest.raises(UserError, match="refused the json_schema structured-output constraint") as err:
        _run(rejecting, tmp_path, 12, structured_fallback="stop")
    assert "--structured-fallback free-text" in str(err.value) and "nothing was stored" in str(err.value)
    assert rejecting.counters.outcomes["rejected"] == 1
    assert rejecting.counters.requests == 2  # the refused request and one free-text check, nothing else
    assert not (tmp_path / "s.db").exists()  # a failed first run leaves no store behind


def test_a_mode_the_server_takes_is_used_for_every_request(open_fake_openai: ThreadedServer, tmp_path: Path) -> None:
    summary = _run(open_fake_openai, tmp_path, 8, structured_mode="json_object")
    assert summary.totals["ok"] == 8 and not summary.notes
    bodies = list(open_fake_openai.counters.recent_bodies)
    assert len(bodies) == 8 and all(b["response_format"]["type"] == "json_object" for b in bodies)
    assert _run_config(tmp_path / "s.db")["generation"]["structured_mode"] == "json_object"


def test_the_structured_fields_leave_old_fingerprints_alone() -> None:
    import hashlib

    before = {"temperature": 0.0, "max_tokens": 64, "seed": None, "reasoning_effort": None, "structured": True}
    blob = json.dumps(before, sort_keys=True, separators=(",", ":"))
    assert GenerationConfig(structured=True).fingerprint() == hashlib.sha256(blob.encode()).hexdigest()[:16]
    assert GenerationConfig(structured=True).as_dict() == before
    changed = {GenerationConfig(structured=True, structured_mode="grammar").fingerprint(),
               GenerationConfig(structured=True, structured_fallback="stop").fingerprint()}
    assert GenerationConfig(structured=True).fingerprint() not in changed and len(changed) == 2


def test_cli_probe_on_the_fake_server(rejecting: ThreadedServer, tmp_path: Path) -> None:
    rejecting.config.reply = lambda system, user: "### 200 INR"  # the probe's known answer (2 notes of 100)
    proc = cli("models", "--probe", f"openai-compatible:{rejecting.base_url}:fake-model", "--timeout", "5",
               cwd=tmp_path, env=subprocess_env())
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    assert lines[1] == "server models: fake-model"
    status = {line.split()[0]: line.split()[1] for line in lines[2:-1]}
    assert status == {"json_schema": "refused", "json_object": "refused", "grammar": "works", "regex": "works",
                      "free-text": "works"}
    assert "HTTP 500: 1 validation error" in next(x for x in lines if x.strip().startswith("json_schema"))
    assert lines[-1] == "structured modes the server honours: grammar, regex"
    bad = cli("run", "rupeebias", "--model", "sim:fair", "--structured-mode", "yaml", cwd=tmp_path)
    assert bad.returncode == 2 and "--structured-mode must be one of" in bad.stderr


def test_generation_options_for_structured_options() -> None:
    from counterbench.options import GenerationOptions

    def config(**options: Any) -> GenerationConfig:
        return GenerationOptions(**{"max_tokens": 64, **options}).config(["openai:gpt-4o-mini"])

    assert config() == GenerationConfig()
    assert config(structured_mode="json_object") == GenerationConfig(structured=True, structured_mode="json_object")
    assert config(structured=True, structured_mode="none").fingerprint() == GenerationConfig().fingerprint()
    assert config(structured_fallback="stop") == GenerationConfig()  # free text: nothing to fall back from
    stop = config(structured=True, structured_fallback="stop")
    assert stop.structured and stop.structured_fallback == "stop"
    with pytest.raises(UserError, match="--structured-fallback must be one of free-text, stop"):
        config(structured=True, structured_fallback="retry")


@pytest.mark.parametrize("status", [400, 401, 403, 404, 422])
def test_requests_that_cannot_succeed_are_not_retried(open_fake_openai: ThreadedServer, status: int) -> None:
    open_fake_openai.config.reject_fields = ("seed",)
    open_fake_openai.config.reject_status = status
    backend = _backend(f"openai-compatible:{open_fake_openai.base_url}:m")
    with pytest.raises(BackendError) as err:
        _send(backend, _request(seed=1))
    assert err.value.status == status and not err.value.retryable
