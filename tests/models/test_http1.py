"""The minimal HTTP/1.1 client against scripted TCP servers on 127.0.0.1 (framing, reuse, failures)."""

from __future__ import annotations

import asyncio
import socket
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field

import pytest

from counterbench.models import http1
from counterbench.models.http1 import HTTP1Client, HTTPConnectionError, HTTPProtocolError

Reply = Callable[[asyncio.StreamWriter, "Seen"], Awaitable[None]]


@dataclass
class Seen:
    """What the scripted server received."""

    connections: int = 0
    requests: list[tuple[bytes, dict[str, str], bytes]] = field(default_factory=list)


async def _read_request(reader: asyncio.StreamReader) -> tuple[bytes, dict[str, str], bytes] | None:
    try:
        head = await reader.readuntil(b"\r\n\r\n")
    except (asyncio.IncompleteReadError, ConnectionError):
        return None
    lines = head.decode("latin-1").split("\r\n")
    headers = {k.strip().lower(): v.strip() for k, _, v in (line.partition(":") for line in lines[1:] if line)}
    body = await reader.readexactly(int(headers.get("content-length", "0")))
    return lines[0].encode(), headers, body


async def _serve(reply: Reply, go: Callable[[str, Seen], Awaitable[None]]) -> Seen:
    seen = Seen()

    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        seen.connections += 1
        try:
            while (request := await _read_request(reader)) is not None:
                seen.requests.append(request)
                await reply(writer, seen)
                if writer.is_closing():
                    return
        finally:
            writer.close()

    server = await asyncio.start_server(handle, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    try:
        await go(f"http://127.0.0.1:{port}/v1/chat/completions", seen)
    finally:
        server.close()
    return seen


def _ok(body: bytes = b'{"ok": true}', extra: bytes = b"") -> bytes:
    return b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n" + extra + (
        b"Content-Length: %d\r\n\r\n" % len(body)
    ) + body


def _client(url: str, timeout_s: float = 5.0) -> HTTP1Client:
    return HTTP1Client(url, {"Content-Type": "application/json", "Authorization": "Bearer sk-x"}, timeout_s=timeout_s)


def test_sends_a_well_formed_post_and_reuses_one_connection() -> None:
    async def reply(writer: asyncio.StreamWriter, seen: Seen) -> None:
        writer.write(_ok(b'{"n": %d}' % len(seen.requests)))

    async def go(url: str, seen: Seen) -> None:
        client = _client(url)
        bodies = [(await client.post(b'{"q": %d}' % i)).body for i in range(5)]
        assert bodies == [b'{"n": %d}' % (i + 1) for i in range(5)]
        client.close()

    seen = asyncio.run(_serve(reply, go))
    assert seen.connections == 1
    line, headers, body = seen.requests[0]
    assert line == b"POST /v1/chat/completions HTTP/1.1"
    assert headers["host"].startswith("127.0.0.1:") and headers["authorization"] == "Bearer sk-x"
    assert headers["content-length"] == str(len(body)) and body == b'{"q": 0}'


def test_reply_arriving_byte_by_byte_and_concurrent_requests_on_several_connections() -> None:
    async def reply(writer: asyncio.StreamWriter, seen: Seen) -> None:
        for byte in _ok(b'{"answer": "### 1 INR"}', b"Retry-After: 3\r\n"):
            writer.write(bytes([byte]))
            await writer.drain()

    async def go(url: str, seen: Seen) -> None:
        client = _client(url)
        replies = await asyncio.gather(*(client.post(b"{}") for _ in range(4)))
        assert {r.body for r in replies} == {b'{"answer": "### 1 INR"}'}
        assert replies[0].status == 200 and replies[0].headers["retry-after"] == "3"
        client.close()

    seen = asyncio.run(_serve(reply, go))
    assert seen.connections == 4 and len(seen.requests) == 4


def test_chunked_body_with_extensions_and_trailers() -> None:
    async def reply(writer: asyncio.StreamWriter, seen: Seen) -> None:
        writer.write(
            b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"
            b"5;ext=1\r\nhello\r\n1\r\n \r\n5\r\nworld\r\n0\r\nX-Trailer: t\r\n\r\n"
        )

    async def go(url: str, seen: Seen) -> None:
        client = _client(url)
        assert (await client.post(b"{}")).body == b"hello world"
        assert (await client.post(b"{}")).body == b"hello world"  # the connection stays usable
        client.close()

    assert asyncio.run(_serve(reply, go)).connections == 1


def test_body_until_close_http10_connection_close_and_informational_replies() -> None:
    scripts = [
        b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n\r\n{\"until\": \"close\"}",
        b"HTTP/1.0 200 OK\r\nContent-Length: 2\r\n\r\n{}",
        b"HTTP/1.1 200 OK\r\nConnection: close\r\nContent-Length: 2\r\n\r\n[]",
        b"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 503 Busy\r\nRetry-After: 1\r\nContent-Length: 0\r\n\r\n",
    ]

    async def reply(writer: asyncio.StreamWriter, seen: Seen) -> None:
        script = scripts[len(seen.requests) - 1]
        writer.write(script)
        if b"Content-Length" not in script or b"Connection: close" in script or b"HTTP/1.0" in script:
            writer.close()

    async def go(url: str, seen: Seen) -> None:
        client = _client(url)
        assert (await client.post(b"{}")).body == b'{"until": "close"}'
        assert (await client.post(b"{}")).body == b"{}"
        assert (await client.post(b"{}")).body == b"[]"
        last = await client.post(b"{}")
        assert (last.status, last.body, last.headers["retry-after"]) == (503, b"", "1")
        client.close()

    assert asyncio.run(_serve(reply, go)).connections == 4  # none of the first three could be reused


def test_connection_lost_mid_reply_is_an_error_and_never_sent_twice() -> None:
    async def reply(writer: asyncio.StreamWriter, seen: Seen) -> None:
        writer.write(b"HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\n{\"partial\"")
        await writer.drain()
        writer.close()

    async def go(url: str, seen: Seen) -> None:
        client = _client(url)
        with pytest.raises(HTTPConnectionError, match="closed the connection"):
            await client.post(b"{}")
        client.close()

    assert len(asyncio.run(_serve(reply, go)).requests) == 1


def test_not_http_is_a_protocol_error() -> None:
    async def reply(writer: asyncio.StreamWriter, seen: Seen) -> None:
        writer.write(b"SSH-2.0-OpenSSH_9.6\r\n\r\n")

    async def go(url: str, seen: Seen) -> None:
        client = _client(url)
        with pytest.raises(HTTPProtocolError, match=r"invalid HTTP reply"):
            await client.post(b"{}")
        client.close()

    asyncio.run(_serve(reply, go))


def test_timeout_discards_the_connection() -> None:
    async def reply(writer: asyncio.StreamWriter, seen: Seen) -> None:
        if len(seen.requests) > 1:
            writer.write(_ok())

    async def go(url: str, seen: Seen) -> None:
        client = _client(url, timeout_s=0.2)
        with pytest.raises(TimeoutError):
            await client.post(b"{}")
        client.timeout_s = 10.0  # the second request must not time out on a busy machine
        assert (await client.post(b"{}")).status == 200  # on a new connection: the late reply cannot mix in
        client.close()

    assert asyncio.run(_serve(reply, go)).connections == 2


def test_idle_connections_past_their_age_are_not_reused(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(http1, "MAX_IDLE_S", 0.5)

    async def reply(writer: asyncio.StreamWriter, seen: Seen) -> None:
        writer.write(_ok())

    async def go(url: str, seen: Seen) -> None:
        client = _client(url)
        await client.post(b"{}")
        await client.post(b"{}")  # straight away: reused
        await asyncio.sleep(0.8)
        await client.post(b"{}")  # idle too long: a new connection
        client.close()

    assert asyncio.run(_serve(reply, go)).connections == 2


def test_refused_connection() -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]

    async def go() -> None:
        client = _client(f"http://127.0.0.1:{port}/v1/chat/completions")
        with pytest.raises(HTTPConnectionError, match=f"cannot connect to 127.0.0.1:{port}"):
            await client.post(b"{}")

    asyncio.run(go())


def test_only_plain_http_urls() -> None:
    with pytest.raises(ValueError, match="http://"):
        HTTP1Client("https://api.openai.com/v1/chat/completions", {}, timeout_s=1)


def test_oversized_replies_are_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(http1, "MAX_BODY_BYTES", 1000)
    scripts = [
        b"HTTP/1.1 200 OK\r\nContent-Length: 5000\r\n\r\n",
        b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n" + b"400\r\n" + b"x" * 1024 + b"\r\n",
        b"HTTP/1.1 200 OK\r\n\r\n" + b"y" * 70_000,
    ]

    async def reply(writer: asyncio.StreamWriter, seen: Seen) -> None:
        writer.write(scripts[len(seen.requests) - 1])

    async def go(url: str, seen: Seen) -> None:
        client = _client(url)
        for _ in scripts:
            with pytest.raises(HTTPProtocolError, match=r"too large|larger than"):
                await client.post(b"{}")
        client.close()

    assert asyncio.run(_serve(reply, go)).connections == 3
