"""Parsing replica lists and the replica backend's balancing, taking out and bringing back."""

from __future__ import annotations

import asyncio

import pytest

from counterbench.errors import UserError
from counterbench.models.base import BackendError, ChatRequest
from counterbench.models.openai_compat import OpenAICompatBackend
from counterbench.models.registry import create_backend, parse_model_string
from counterbench.models.replicas import ReplicaBackend, split_replica_urls
from counterbench.testing import FaultConfig, run_in_thread
from counterbench.testing.fake_openai import FakeOpenAIServer
from tests.models.conftest import SYSTEM_INR


def test_a_model_string_may_name_several_base_urls() -> None:
    spec = parse_model_string("vllm:http://gpu1:8000/v1,http://gpu2:8000/v1:Qwen/Qwen2.5-7B:q4")
    assert spec.replicas == ("http://gpu1:8000/v1", "http://gpu2:8000/v1")
    assert spec.model == "Qwen/Qwen2.5-7B:q4" and spec.url == "http://gpu1:8000/v1"
    assert parse_model_string("vllm:http://gpu1:8000/v1:m").replicas == ()
    assert split_replica_urls("http://a/v1, https://b/v1:m") == (["http://a/v1"], "https://b/v1:m")
    backend = create_backend("openai-compatible:http://127.0.0.1:1/v1,http://127.0.0.1:2/v1:m")
    assert isinstance(backend, ReplicaBackend)
    assert [s["url"] for s in backend.stats()] == ["http://127.0.0.1:1/v1", "http://127.0.0.1:2/v1"]
    assert backend.name == "openai-compatible:http://127.0.0.1:1/v1,http://127.0.0.1:2/v1:m"


@pytest.mark.parametrize("bad", ["vllm:http://a/v1,ftp://b/v1:m", "vllm:http://a/v1,http://u:p@b/v1:m",
                                 "vllm:http://a/v1,http://:m"])
def test_a_bad_replica_url_is_a_user_error(bad: str) -> None:
    with pytest.raises(UserError):
        create_backend(bad)


def _request(i: int) -> ChatRequest:
    return ChatRequest(f"p{i}", SYSTEM_INR, f"Salary? #{i}")


async def _send(backend: ReplicaBackend, n: int, start: int = 0) -> None:
    await asyncio.gather(*(backend.complete(_request(i)) for i in range(start, start + n)))


def test_equal_shares_then_a_dead_replica_is_out_then_back() -> None:
    with run_in_thread(FakeOpenAIServer(FaultConfig(latency_ms=2))) as a, \
            run_in_thread(FakeOpenAIServer(FaultConfig(latency_ms=2))) as b:
        port = b.server.port
        backend = ReplicaBackend([OpenAICompatBackend(name="m", model="fake-model", base_url=s.base_url, timeout_s=5)
                                  for s in (a, b)], cooldown_s=0.2, max_cooldown_s=0.4)

        async def scenario() -> None:
            await _send(backend, 100)
            assert a.counters.requests == b.counters.requests == 50
            b.stop()
            before = a.counters.requests
            await _send(backend, 60, 100)  # every request answered, by a
            assert a.counters.requests - before == 60
            assert backend.stats()[1]["failures"] >= 1 and not backend.stats()[1]["in_service"]
            with run_in_thread(FakeOpenAIServer(FaultConfig(latency_ms=2), port=port)) as revived:
                await asyncio.sleep(0.5)  # past the cooldown: the next request tests it
                for i in range(40):
                    await backend.complete(_request(200 + i))
                assert revived.counters.requests >= 15
                assert backend.stats()[1]["in_service"]
            await backend.aclose()

        asyncio.run(scenario())


def test_when_every_replica_is_down_the_error_is_retryable_and_says_so() -> None:
    backend = ReplicaBackend([OpenAICompatBackend(name="m", model="x", base_url=f"http://127.0.0.1:{p}/v1",
                                                  timeout_s=2) for p in (9, 11)])
    with pytest.raises(BackendError) as err:
        asyncio.run(backend.complete(_request(0)))
    assert err.value.retryable and err.value.status is None
    assert "every replica failed" in str(err.value)
    assert [s["requests"] for s in backend.stats()] == [1, 1]


def test_a_4xx_is_not_held_against_the_replica() -> None:
    with run_in_thread(FakeOpenAIServer(FaultConfig(force="400"))) as a:
        backend = ReplicaBackend([OpenAICompatBackend(name="m", model="x", base_url=a.base_url, timeout_s=2)])
        with pytest.raises(BackendError) as err:
            asyncio.run(backend.complete(_request(0)))
        assert err.value.status == 400
        assert backend.stats()[0]["failures"] == 0 and backend.stats()[0]["in_service"]
