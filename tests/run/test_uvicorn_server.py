"""The engine against uvicorn, the HTTP server under vLLM, on 127.0.0.1 (both of its HTTP parsers).

The fake OpenAI server of the other tests is built on aiohttp; this checks counterbench's lean
HTTP/1.1 client against a second, independent server stack: Content-Length and chunked replies,
keep-alive reuse, and idle connections the server closes between runs.
"""

from __future__ import annotations

import asyncio
import json
import socket
import threading
import time
from collections.abc import Awaitable, Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from counterbench.run import run_prompts
from counterbench.run.results import load_results
from tests.run.conftest import FAST_RETRY, make_prompts

uvicorn = pytest.importorskip("uvicorn", reason="uvicorn (a dev extra) is not installed")

Receive = Callable[[], Awaitable[dict[str, Any]]]
Send = Callable[[dict[str, Any]], Awaitable[None]]


class ChatApp:
    """A minimal ASGI chat-completions endpoint; ``chunked`` streams the body in two parts."""

    def __init__(self, *, chunked: bool) -> None:
        self.chunked = chunked
        self.requests = 0
        self.clients: set[tuple[str, int]] = set()

    async def __call__(self, scope: dict[str, Any], receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            return
        body = b""
        while True:
            message = await receive()
            body += message.get("body", b"")
            if not message.get("more_body"):
                break
        self.requests += 1
        self.clients.add(tuple(scope["client"]))
        user = json.loads(body)["messages"][-1]["content"]
        amount = 400_000 + 1_000 * (sum(user.encode()) % 400)
        reply = json.dumps({
            "id": "x", "object": "chat.completion", "model": "m",
            "choices": [{"index": 0, "message": {"role": "assistant", "content": f"### {amount} INR"},
                         "finish_reason": "stop"}],
            "usage": {"prompt_tokens": 30, "completion_tokens": 6},
        }).encode()
        headers = [(b"content-type", b"application/json")]
        if not self.chunked:
            headers.append((b"content-length", str(len(reply)).encode()))
        await send({"type": "http.response.start", "status": 200, "headers": headers})
        if self.chunked:  # no Content-Length and several body messages: uvicorn sends it chunked
            await send({"type": "http.response.body", "body": reply[:20], "more_body": True})
            await asyncio.sleep(0)
            await send({"type": "http.response.body", "body": reply[20:]})
        else:
            await send({"type": "http.response.body", "body": reply})


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@pytest.fixture(params=[("h11", False), ("h11", True), ("httptools", True)], ids=["h11", "h11-chunked",
                                                                                 "httptools-chunked"])
def server(request: pytest.FixtureRequest) -> Iterator[tuple[str, ChatApp]]:
    http, chunked = request.param
    pytest.importorskip(http)
    app = ChatApp(chunked=chunked)
    port = _free_port()
    config = uvicorn.Config(app, host="127.0.0.1", port=port, http=http, log_level="error", lifespan="off",
                            timeout_keep_alive=1)
    srv = uvicorn.Server(config)
    thread = threading.Thread(target=srv.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 10
    while not srv.started:
        assert time.monotonic() < deadline, "uvicorn did not start"
        time.sleep(0.02)
    try:
        yield f"vllm:http://127.0.0.1:{port}/v1:Qwen/Qwen2.5-0.5B-Instruct", app
    finally:
        srv.should_exit = True
        thread.join(timeout=10)


def test_engine_through_uvicorn_reuses_connections(server: tuple[str, ChatApp], tmp_path: Path) -> None:
    model, app = server
    store = tmp_path / "s.db"
    summary = run_prompts(make_prompts(60), [model], store=store, concurrency=4, retry=FAST_RETRY, env={})
    assert summary.totals["done"] == 60 and summary.totals["errors"] == 0 and summary.totals["retries"] == 0
    assert app.requests == 60 and len(app.clients) <= 4  # keep-alive: a handful of connections, reused
    results = load_results(store)
    assert len(results) == 60 and (results["status"] == "ok").all()
    assert results["value"].between(400_000, 800_000).all()


def test_connections_the_server_closed_while_idle_are_not_used(server: tuple[str, ChatApp]) -> None:
    """uvicorn (timeout_keep_alive=1 here, 5 s by default) drops idle connections; the next request opens one."""
    from counterbench.models import ChatRequest, GenerationConfig, create_backend

    model, app = server
    backend = create_backend(model, env={}, timeout_s=5)
    request = ChatRequest("p1", "Answer ### <NUMBER> INR", "Salary?", GenerationConfig(), "inr_annual")

    async def go() -> list[str | None]:
        try:
            texts = [(await backend.complete(request)).text for _ in range(3)]
            await asyncio.sleep(2.5)  # the server closes the idle connection after 1 s meanwhile
            texts += [(await backend.complete(request)).text for _ in range(3)]
            return texts
        finally:
            await backend.aclose()

    texts = asyncio.run(go())
    assert len(set(texts)) == 1 and texts[0] is not None and texts[0].startswith("### ")
    assert app.requests == 6 and len(app.clients) == 2  # one connection before the pause, one after
