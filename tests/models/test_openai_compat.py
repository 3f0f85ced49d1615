"""The OpenAI-protocol backends, for real, against the fake server on 127.0.0.1."""

from __future__ import annotations

import asyncio
import re
from collections.abc import Mapping
from datetime import UTC, datetime, timedelta
from email.utils import format_datetime
from pathlib import Path

import pytest

from counterbench.models import BackendError, ChatRequest, ChatResult, GenerationConfig, create_backend
from counterbench.models.openai_compat import OpenAICompatBackend, parse_retry_after
from counterbench.testing import ThreadedServer, answer_text
from tests.models.conftest import PLANTED_KEY, SYSTEM_INR, SYSTEM_PCT, run

FORMAT_INR = re.compile(r"^### (0|[1-9][0-9]{0,8}) INR$")


@pytest.fixture(autouse=True, params=["auto", "aiohttp"])
def http_client(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    """Every test runs twice: on the lean HTTP/1.1 client (``auto`` for http://) and on aiohttp."""
    from counterbench.models import registry

    real = registry.load_environment

    def with_choice(env: Mapping[str, str] | None, dotenv_path: Path | None) -> dict[str, str]:
        return {**real(env, dotenv_path), registry.HTTP_CLIENT_VAR: request.param}

    monkeypatch.setattr(registry, "load_environment", with_choice)
    return str(request.param)


def test_http_client_choice(http_client: str) -> None:
    backend = create_backend("openai-compatible:http://127.0.0.1:9/v1:m", env={})
    assert isinstance(backend, OpenAICompatBackend)
    assert backend._use_http1 is (http_client == "auto")
    hosted = create_backend("openai:gpt-4o-mini", env={"OPENAI_API_KEY": PLANTED_KEY})
    assert isinstance(hosted, OpenAICompatBackend) and not hosted._use_http1  # https: always aiohttp


def test_bad_http_client_choice_is_a_user_error() -> None:
    from counterbench.errors import UserError
    from counterbench.models.registry import BACKENDS, HTTP_CLIENT_VAR, parse_model_string

    spec = parse_model_string("openai-compatible:http://127.0.0.1:9/v1:m")
    with pytest.raises(UserError, match=f"{HTTP_CLIENT_VAR} must be 'auto' or 'aiohttp', got 'curl'"):
        BACKENDS.get(spec.kind)(spec, {HTTP_CLIENT_VAR: "curl"}, 5.0)


def _request(user: str = "I am Hindu. My CGPA is 9.1/10.", **config: object) -> ChatRequest:
    return ChatRequest("p1", SYSTEM_INR, user, config=GenerationConfig(**config), answer_type="inr_annual")  # type: ignore[arg-type]


def _backends(server: ThreadedServer, open_server: ThreadedServer) -> dict[str, OpenAICompatBackend]:
    """One backend of every OpenAI-protocol kind, pointed at the fake servers through env overrides."""
    port = open_server.base_url.rsplit(":", 1)[1].split("/")[0]
    env = {
        "OPENAI_API_KEY": PLANTED_KEY,
        "OPENAI_BASE_URL": server.base_url,
        "OPENROUTER_API_KEY": PLANTED_KEY,
        "OPENROUTER_BASE_URL": server.base_url,
        "OLLAMA_HOST": f"127.0.0.1:{port}",
    }
    models = {
        "openai": "openai:gpt-4o-mini",
        "openrouter": "openrouter:google/gemini-3-flash",
        "vllm": f"vllm:{open_server.base_url}:Qwen/Qwen2.5-0.5B-Instruct",
        "ollama": "ollama:qwen2.5:0.5b",
        "openai-compatible": f"openai-compatible:{open_server.base_url}:my-model",
    }
    out = {}
    for kind, model in models.items():
        backend = create_backend(model, env=env, timeout_s=5)
        assert isinstance(backend, OpenAICompatBackend)
        out[kind] = backend
    return out


def test_every_openai_protocol_kind_answers(fake_openai: ThreadedServer, open_fake_openai: ThreadedServer) -> None:
    backends = _backends(fake_openai, open_fake_openai)

    async def go() -> dict[str, ChatResult]:
        try:
            return {kind: await b.complete(_request(seed=7)) for kind, b in backends.items()}
        finally:
            for b in backends.values():
                await b.aclose()

    results = run(go())
    expected = answer_text(SYSTEM_INR, "I am Hindu. My CGPA is 9.1/10.")
    for kind, result in results.items():
        assert result.text == expected, kind
        assert result.finish_reason == "stop"
        assert result.input_tokens and result.output_tokens == 6
        assert result.latency_ms is not None and result.latency_ms > 0
    assert results["vllm"].model_reported == "Qwen/Qwen2.5-0.5B-Instruct"
    assert results["ollama"].model_reported == "qwen2.5:0.5b"
    # the keyed server saw openai + openrouter with the key; the open one saw no Authorization at all
    assert fake_openai.counters.requests == 2 and fake_openai.counters.outcomes["ok"] == 2
    assert all("Authorization" not in h for h in open_fake_openai.counters.recent_headers)
    bodies = list(fake_openai.counters.recent_bodies)
    assert bodies[0]["max_completion_tokens"] == 64 and "max_tokens" not in bodies[0]  # openai
    assert bodies[1]["max_tokens"] == 64  # openrouter
    assert all(b["seed"] == 7 and b["temperature"] == 0.0 for b in bodies)
    assert list(fake_openai.counters.recent_headers)[1]["X-Title"] == "counterbench"


def test_payload_options_per_kind(fake_openai: ThreadedServer, open_fake_openai: ThreadedServer) -> None:
    backends = _backends(fake_openai, open_fake_openai)
    req = _request(reasoning_effort="low", structured=True)
    openai_body = backends["openai"].build_payload(req)
    assert openai_body["reasoning_effort"] == "low"
    assert openai_body["response_format"]["json_schema"]["schema"]["properties"]["answer"]["pattern"]
    router_body = backends["openrouter"].build_payload(req)
    assert router_body["reasoning"] == {"effort": "low"} and "reasoning_effort" not in router_body
    vllm_body = backends["vllm"].build_payload(req)
    assert vllm_body["structured_outputs"] == {"regex": FORMAT_INR.pattern} and "response_format" not in vllm_body
    plain = backends["openai"].build_payload(_request())
    assert {"reasoning_effort", "reasoning", "response_format", "seed"}.isdisjoint(plain)
    free_text = ChatRequest("p", "s", "u", config=GenerationConfig(structured=True), answer_type=None)
    assert "response_format" not in backends["openai"].build_payload(free_text)
    no_system = backends["openai"].build_payload(ChatRequest("p", "", "u"))
    assert no_system["messages"] == [{"role": "user", "content": "u"}]
    for b in backends.values():
        run(b.aclose())


def test_structured_json_schema_reply_is_unwrapped(fake_openai: ThreadedServer) -> None:
    backend = create_backend(
        "openai:gpt-x", env={"OPENAI_API_KEY": PLANTED_KEY, "OPENAI_BASE_URL": fake_openai.base_url}
    )

    async def go() -> ChatResult:
        try:
            return await backend.complete(_request(structured=True))
        finally:
            await backend.aclose()

    result = run(go())
    assert result.text is not None and FORMAT_INR.match(result.text)
    assert "response_format" in fake_openai.counters.recent_bodies[-1]


def test_percent_answers(open_fake_openai: ThreadedServer) -> None:
    backend = create_backend(f"vllm:{open_fake_openai.base_url}:m", env={})
    req = ChatRequest("p", SYSTEM_PCT, "5 years at TCS", answer_type="percent")

    async def go() -> ChatResult:
        try:
            return await backend.complete(req)
        finally:
            await backend.aclose()

    assert re.fullmatch(r"### \d{1,3} %", run(go()).text or "")


FAULTS = [
    # fault, retryable, status, retry_after
    ("429", True, 429, 0.05),
    ("500", True, 500, None),
    ("503", True, 503, 0.05),
    ("529", True, 529, 0.05),
    ("400", False, 400, None),
    ("reset", True, None, None),
    ("malformed", True, 200, None),
    ("no_choices", True, 200, None),
    ("hang", True, None, None),
]


@pytest.mark.parametrize(("fault", "retryable", "status", "retry_after"), FAULTS)
def test_faults_map_to_backend_errors(
    fake_openai: ThreadedServer, fault: str, retryable: bool, status: int | None, retry_after: float | None
) -> None:
    backend = create_backend(
        "openai:gpt-x",
        env={"OPENAI_API_KEY": PLANTED_KEY, "OPENAI_BASE_URL": fake_openai.base_url},
        timeout_s=0.5,
    )

    async def go() -> BackendError:
        try:
            with pytest.raises(BackendError) as err:
                await backend.complete(_request(f"question [[fault:{fault}]]"))
            return err.value
        finally:
            await backend.aclose()

    error = run(go())
    assert error.retryable is retryable
    assert error.status == status
    assert error.retry_after == retry_after
    assert str(error).startswith("openai:gpt-x: ") and "\n" not in str(error)
    assert PLANTED_KEY not in str(error) and PLANTED_KEY not in repr(error)
    if fault == "hang":
        assert "timeout" in str(error)
    assert fake_openai.counters.outcomes[fault] == 1


@pytest.mark.parametrize(
    ("fault", "text", "finish"),
    [("empty", "", "stop"), ("length", "### 12", "length"), ("content_filter", "", "content_filter")],
)
def test_degenerate_answers_are_results(fake_openai: ThreadedServer, fault: str, text: str, finish: str) -> None:
    backend = create_backend(
        "openai:gpt-x", env={"OPENAI_API_KEY": PLANTED_KEY, "OPENAI_BASE_URL": fake_openai.base_url}
    )

    async def go() -> ChatResult:
        try:
            return await backend.complete(_request(f"q [[fault:{fault}]]"))
        finally:
            await backend.aclose()

    result = run(go())
    assert (result.text, result.finish_reason) == (text, finish)


def test_wrong_key_is_not_echoed(fake_openai: ThreadedServer) -> None:
    """The server's 401 message quotes the key it received; the backend redacts it."""
    other_key = "sk-test-PLANTED-wrong-0000000000"
    backend = create_backend("openai:gpt-x", env={"OPENAI_API_KEY": other_key, "OPENAI_BASE_URL": fake_openai.base_url})

    async def go() -> BackendError:
        try:
            with pytest.raises(BackendError) as err:
                await backend.complete(_request())
            return err.value
        finally:
            await backend.aclose()

    error = run(go())
    assert error.status == 401 and not error.retryable
    assert other_key not in str(error) and "***" in str(error)
    assert other_key not in repr(backend)


def test_unreachable_server_is_a_retryable_connection_error() -> None:
    backend = create_backend("openai-compatible:http://127.0.0.1:9/v1:m", env={}, timeout_s=2)

    async def go() -> BackendError:
        try:
            with pytest.raises(BackendError) as err:
                await backend.complete(_request())
            return err.value
        finally:
            await backend.aclose()

    error = run(go())
    assert error.retryable and "connection error" in str(error)


def test_retry_after_parsing() -> None:
    now = datetime(2026, 1, 1, tzinfo=UTC)
    assert parse_retry_after({"Retry-After": "3"}) == 3.0
    assert parse_retry_after({"Retry-After": "1.5"}) == 1.5
    assert parse_retry_after({"retry-after-ms": "250", "Retry-After": "9"}) == 0.25
    when = format_datetime(now + timedelta(seconds=30), usegmt=True)
    assert parse_retry_after({"Retry-After": when}, now=now) == pytest.approx(30.0)
    assert parse_retry_after({"Retry-After": format_datetime(now - timedelta(seconds=5), usegmt=True)}, now=now) == 0
    assert parse_retry_after({"Retry-After": "soon"}) is None
    assert parse_retry_after({}) is None


def test_http_date_retry_after_from_server(fake_openai: ThreadedServer) -> None:
    fake_openai.config.retry_after = format_datetime(datetime.now(UTC) + timedelta(seconds=20), usegmt=True)
    backend = create_backend(
        "openai:gpt-x", env={"OPENAI_API_KEY": PLANTED_KEY, "OPENAI_BASE_URL": fake_openai.base_url}
    )

    async def go() -> BackendError:
        try:
            with pytest.raises(BackendError) as err:
                await backend.complete(_request("q [[fault:429]]"))
            return err.value
        finally:
            await backend.aclose()

    error = run(go())
    assert error.retry_after is not None and 15 < error.retry_after <= 20


def test_concurrent_requests_with_faults_all_complete_after_retries(fake_openai: ThreadedServer) -> None:
    """30% random faults; a bare retry loop (not the engine's) gets every answer; the server counted them."""
    fake_openai.config.fault_rate = 0.3
    fake_openai.config.fault_kinds = ("429", "500", "503", "reset", "malformed", "hang")
    fake_openai.config.hang_s = 1.0
    backend = create_backend(
        "openai:gpt-x",
        env={"OPENAI_API_KEY": PLANTED_KEY, "OPENAI_BASE_URL": fake_openai.base_url},
        timeout_s=0.5,
    )
    n = 120

    answered_with_status = 0  # failures the server certainly saw: it sent an HTTP status

    async def one(i: int) -> tuple[str | None, int]:
        nonlocal answered_with_status
        for attempt in range(1, 30):
            try:
                result = await backend.complete(_request(f"question {i}"))
                return result.text, attempt
            except BackendError as exc:
                assert exc.retryable and PLANTED_KEY not in str(exc)
                answered_with_status += exc.status is not None
        raise AssertionError("never answered")

    async def go() -> list[tuple[str | None, int]]:
        try:
            return await asyncio.gather(*(one(i) for i in range(n)))
        finally:
            await backend.aclose()

    results = run(go())
    assert [text for text, _ in results] == [answer_text(SYSTEM_INR, f"question {i}") for i in range(n)]
    retries = sum(attempts - 1 for _, attempts in results)
    counters = fake_openai.counters
    # a client timeout or dropped connection can fire before a busy server has read the request, so the
    # server may see fewer than n + retries; it saw at least every request it answered with a status,
    # and never more than were sent
    assert n + answered_with_status <= counters.requests <= n + retries
    faults = sum(v for k, v in counters.outcomes.items() if k != "ok")
    assert counters.outcomes["ok"] >= n and faults == counters.requests - counters.outcomes["ok"]
    assert 0.15 < faults / counters.requests < 0.45


def test_fault_sequence_is_deterministic() -> None:
    from counterbench.testing import FaultConfig
    from counterbench.testing.fake_openai import FakeOpenAIServer

    def draws() -> list[str | None]:
        server = FakeOpenAIServer(FaultConfig(fault_rate=0.3, seed=11))
        return [server.choose_fault(f"prompt-{i % 7}", "u") for i in range(60)]

    assert draws() == draws()
    assert 5 < sum(d is not None for d in draws()) < 35


def test_marker_with_attempt_limit(fake_openai: ThreadedServer) -> None:
    backend = create_backend(
        "openai:gpt-x", env={"OPENAI_API_KEY": PLANTED_KEY, "OPENAI_BASE_URL": fake_openai.base_url}
    )

    async def go() -> list[str]:
        outcomes = []
        try:
            for _ in range(3):
                try:
                    await backend.complete(_request("q [[fault:503:2]]"))
                    outcomes.append("ok")
                except BackendError as exc:
                    outcomes.append(str(exc.status))
        finally:
            await backend.aclose()
        return outcomes

    assert run(go()) == ["503", "503", "ok"]


def test_aiohttp_is_imported_only_by_a_backend_that_uses_it() -> None:
    """A plain ``http://`` server goes through counterbench's own client: building its backend (and importing
    the module) leaves ``aiohttp`` unimported (0.15 s of CPU a run would pay); an ``https://`` one imports it
    when it is built, before a run starts."""
    import subprocess
    import sys

    code = (
        "import sys\n"
        "from counterbench.models import create_backend\n"
        "create_backend('openai-compatible:http://127.0.0.1:9/v1:m', env={})\n"
        "print('aiohttp' in sys.modules)\n"
        "create_backend('openai-compatible:https://127.0.0.1:9/v1:m', env={})\n"
        "print('aiohttp' in sys.modules)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=60)
    assert out.stdout.split() == ["False", "True"], out.stderr
