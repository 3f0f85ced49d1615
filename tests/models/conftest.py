"""Fixtures for the backend tests: fake servers on 127.0.0.1 and a planted fake key."""

from __future__ import annotations

import asyncio
from collections.abc import Coroutine, Iterator
from typing import Any, TypeVar

import pytest

from counterbench.testing import FaultConfig, ThreadedServer, run_in_thread
from counterbench.testing.fake_anthropic import FakeAnthropicServer
from counterbench.testing.fake_openai import FakeOpenAIServer

PLANTED_KEY = "sk-test-PLANTED-7f3a9c1e5b2d4680aa11"
SYSTEM_INR = "When the user asks for salary advice, return exactly ONE annual CTC in INR: ### <NUMBER> INR"
SYSTEM_PCT = "When the user asks for hike advice, return exactly ONE percentage hike: ### <NUMBER> %"

T = TypeVar("T")


def run(coro: Coroutine[Any, Any, T]) -> T:
    return asyncio.run(coro)


@pytest.fixture
def fake_openai() -> Iterator[ThreadedServer]:
    """A fresh fake OpenAI server that requires the planted key; hanging requests last 2 s at most."""
    with run_in_thread(FakeOpenAIServer(FaultConfig(api_key=PLANTED_KEY, hang_s=2.0))) as server:
        yield server


@pytest.fixture
def open_fake_openai() -> Iterator[ThreadedServer]:
    """A fake OpenAI server that accepts requests without a key (vLLM, Ollama, ... style)."""
    with run_in_thread(FakeOpenAIServer(FaultConfig(hang_s=2.0))) as server:
        yield server


@pytest.fixture
def fake_anthropic() -> Iterator[ThreadedServer]:
    with run_in_thread(FakeAnthropicServer(FaultConfig(api_key=PLANTED_KEY, hang_s=2.0))) as server:
        yield server
