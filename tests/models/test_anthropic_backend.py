"""The anthropic backend, through the real SDK, against the fake Messages server on 127.0.0.1."""

from __future__ import annotations

import importlib.util
import re

import pytest

from counterbench.models import BackendError, ChatRequest, ChatResult, GenerationConfig, create_backend
from counterbench.testing import ThreadedServer, answer_text
from tests.models.conftest import PLANTED_KEY, SYSTEM_INR, run

if importlib.util.find_spec("anthropic") is None:  # found, not imported: collection stays light
    pytest.skip("the anthropic SDK (optional extra) is not installed", allow_module_level=True)


def _backend(server: ThreadedServer, key: str = PLANTED_KEY, timeout_s: float = 5.0):  # type: ignore[no-untyped-def]
    return create_backend(
        "anthropic:claude-haiku-4.5",
        env={"ANTHROPIC_API_KEY": key, "ANTHROPIC_BASE_URL": server.base_url},
        timeout_s=timeout_s,
    )


def _request(user: str = "I am Dalit. My CGPA is 7.2/10.", **config: object) -> ChatRequest:
    return ChatRequest("p1", SYSTEM_INR, user, config=GenerationConfig(**config), answer_type="inr_annual")  # type: ignore[arg-type]


def _complete(server: ThreadedServer, request: ChatRequest, **kwargs: object) -> ChatResult:
    backend = _backend(server, **kwargs)  # type: ignore[arg-type]

    async def go() -> ChatResult:
        try:
            return await backend.complete(request)
        finally:
            await backend.aclose()

    return run(go())


def _error(server: ThreadedServer, request: ChatRequest, **kwargs: object) -> BackendError:
    with pytest.raises(BackendError) as err:
        _complete(server, request, **kwargs)
    return err.value


def test_answers_and_sends_the_config(fake_anthropic: ThreadedServer) -> None:
    result = _complete(fake_anthropic, _request())
    assert result.text == answer_text(SYSTEM_INR, "I am Dalit. My CGPA is 7.2/10.")
    assert result.finish_reason == "stop" and result.output_tokens == 6 and result.input_tokens
    assert result.model_reported == "claude-haiku-4.5"
    body = fake_anthropic.counters.recent_bodies[-1]
    assert body["system"] == SYSTEM_INR and body["temperature"] == 0.0 and body["max_tokens"] == 64
    assert body["messages"] == [{"role": "user", "content": "I am Dalit. My CGPA is 7.2/10."}]
    assert "seed" not in body and "thinking" not in body


def test_structured_output_is_a_forced_tool_by_default(fake_anthropic: ThreadedServer) -> None:
    result = _complete(fake_anthropic, _request(structured=True))
    assert re.fullmatch(r"### (0|[1-9][0-9]{0,8}) INR", result.text or "")
    assert result.finish_reason == "stop"  # tool_use maps to stop
    body = fake_anthropic.counters.recent_bodies[-1]
    assert body["tool_choice"] == {"type": "tool", "name": "answer"}
    (tool,) = body["tools"]
    assert tool["name"] == "answer"
    assert tool["input_schema"]["properties"]["answer"]["pattern"] == r"^### (0|[1-9][0-9]{0,8}) INR$"
    assert "output_config" not in body


def test_structured_modes_json_schema_and_none(fake_anthropic: ThreadedServer) -> None:
    from counterbench.models.anthropic_backend import AnthropicBackend

    backend = _backend(fake_anthropic)
    assert isinstance(backend, AnthropicBackend)
    if backend._has_output_config:
        result = _complete(fake_anthropic, _request(structured=True, structured_mode="json_schema"))
        assert re.fullmatch(r"### (0|[1-9][0-9]{0,8}) INR", result.text or "")
        body = fake_anthropic.counters.recent_bodies[-1]
        assert body["output_config"]["format"]["type"] == "json_schema" and "tools" not in body
    plain = _complete(fake_anthropic, _request(structured=True, structured_mode="none"))
    assert plain.text == answer_text(SYSTEM_INR, "I am Dalit. My CGPA is 7.2/10.")
    body = fake_anthropic.counters.recent_bodies[-1]
    assert "tools" not in body and "output_config" not in body
    from counterbench.errors import UserError

    with pytest.raises(UserError, match="not available for anthropic models"):
        backend.build_params(_request(structured=True, structured_mode="regex"))


def test_reasoning_effort_turns_on_thinking(fake_anthropic: ThreadedServer) -> None:
    _complete(fake_anthropic, _request(reasoning_effort="medium", max_tokens=100))
    body = fake_anthropic.counters.recent_bodies[-1]
    assert body["thinking"] == {"type": "enabled", "budget_tokens": 4096}
    assert body["max_tokens"] == 4196 and "temperature" not in body


@pytest.mark.parametrize(
    ("fault", "retryable", "status", "retry_after"),
    [
        ("429", True, 429, 0.05),
        ("529", True, 529, 0.05),
        ("500", True, 500, None),
        ("400", False, 400, None),
        ("reset", True, None, None),
        ("malformed", True, None, None),
        ("hang", True, None, None),
    ],
)
def test_faults(
    fake_anthropic: ThreadedServer, fault: str, retryable: bool, status: int | None, retry_after: float | None
) -> None:
    error = _error(fake_anthropic, _request(f"q [[fault:{fault}]]"), timeout_s=0.5)
    assert (error.retryable, error.status, error.retry_after) == (retryable, status, retry_after)
    assert str(error).startswith("anthropic:claude-haiku-4.5: ") and PLANTED_KEY not in str(error)
    if fault == "hang":
        assert "timeout" in str(error)


@pytest.mark.parametrize(
    ("fault", "finish"), [("empty", "stop"), ("length", "length"), ("content_filter", "content_filter")]
)
def test_stop_reasons(fake_anthropic: ThreadedServer, fault: str, finish: str) -> None:
    user = f"q [[fault:{fault}]]"
    result = _complete(fake_anthropic, _request(user))
    expected = answer_text(SYSTEM_INR, user)[:6] if fault == "length" else ""
    assert (result.text, result.finish_reason) == (expected, finish)


def test_wrong_key_never_appears(fake_anthropic: ThreadedServer) -> None:
    wrong = "sk-test-PLANTED-anthropic-wrong-999"
    error = _error(fake_anthropic, _request(), key=wrong)
    assert error.status == 401 and not error.retryable
    assert wrong not in str(error) and "***" in str(error)
    assert wrong not in repr(_backend(fake_anthropic, key=wrong))


def test_backend_is_usable_again_after_aclose(fake_anthropic: ThreadedServer) -> None:
    """The engine closes backends when a run ends; a later run (another event loop) reopens the client."""
    backend = _backend(fake_anthropic)
    for _ in range(2):

        async def go() -> ChatResult:
            try:
                return await backend.complete(_request())
            finally:
                await backend.aclose()

        assert run(go()).text == answer_text(SYSTEM_INR, "I am Dalit. My CGPA is 7.2/10.")


def test_a_refused_tool_falls_back_to_free_text_once(fake_anthropic: ThreadedServer) -> None:
    fake_anthropic.config.reject_fields = ("tools",)
    fake_anthropic.config.reject_status = 400
    backend = _backend(fake_anthropic)
    requests = [_request(user=f"I am Dalit. My CGPA is 7.{i}/10.", structured=True) for i in range(4)]

    async def go() -> list[ChatResult]:
        import asyncio

        try:
            return list(await asyncio.gather(*(backend.complete(r) for r in requests)))
        finally:
            await backend.aclose()

    results = run(go())
    assert [r.text for r in results] == [answer_text(SYSTEM_INR, r.user) for r in requests]
    assert fake_anthropic.counters.outcomes["rejected"] == 1  # the tool was offered once, never again
    assert sum("tools" in b for b in fake_anthropic.counters.recent_bodies) == 1
    (notice,) = backend.structured_state.notices()
    assert "refused the tool structured-output constraint (HTTP 400" in notice
