"""A minimal keep-alive HTTP/1.1 client for plain ``http://`` servers: the local-server hot path.

Against a server on the same small machine (vLLM, Ollama, llama.cpp server, the fake server of the
tests) the client's own CPU competes with the server's. ``aiohttp`` spends about 0.25-0.35 ms of
CPU per request on its general machinery (cookie jar, tracing, header multidicts, streams); this
client does the one thing the OpenAI protocol needs — ``POST`` a JSON body, read a JSON reply over
reused connections — in about a third of that (``benchmarks/run_throughput.py``). ``https://``
endpoints (hosted APIs) keep using ``aiohttp``.

What it handles: keep-alive reuse, ``Content-Length``, ``Transfer-Encoding: chunked`` and
read-until-close bodies, ``Connection: close``, HTTP/1.0 servers, informational 1xx responses,
idle connections the server may have dropped (not reused after :data:`MAX_IDLE_S`), and a total
timeout per request. A request is never sent twice: a connection lost mid-request is an error for
the engine to retry (and count), as with ``aiohttp``. What it does not: TLS, proxies,
redirects, compression (it never asks for them), cookies.

Errors: :class:`HTTPConnectionError` (connect failed, connection reset or closed mid-reply),
:class:`HTTPProtocolError` (a reply that is not HTTP/1.x), :class:`TimeoutError`. Messages never
contain request headers, so an API key cannot leak through them.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Mapping
from dataclasses import dataclass
from urllib.parse import urlsplit

_MAX_HEAD_BYTES = 64 * 1024
#: a reply body larger than this is refused (a chat completion is a few kilobytes)
MAX_BODY_BYTES = 32 * 1024 * 1024
#: an idle connection older than this is closed rather than reused: servers drop idle keep-alive
#: connections (uvicorn, under vLLM, after 5 s), and a POST that meets a closing connection cannot
#: safely be sent again (the server may have acted on it), so it would surface as an error
MAX_IDLE_S = 4.0
_NO_BODY_STATUSES = frozenset({204, 304})


class HTTPConnectionError(ConnectionError):
    """The connection failed or closed before the whole reply arrived."""


class HTTPProtocolError(ValueError):
    """The server's reply is not valid HTTP/1.x."""


@dataclass(frozen=True, slots=True)
class HTTPResponse:
    status: int
    #: header names lower-cased (the last value wins when a name repeats)
    headers: Mapping[str, str]
    body: bytes


class _Reply:
    """Incremental parser for one response on a connection."""

    __slots__ = ("body", "chunk_left", "headers", "keep_alive", "length", "mode", "status")

    def __init__(self) -> None:
        self.status = 0
        self.headers: dict[str, str] = {}
        self.mode = ""  # "length", "chunked", "close" or "none"
        self.length = 0
        self.body = bytearray()
        self.chunk_left = -1  # chunked: bytes left in the current chunk, -1 = expecting a size line
        self.keep_alive = True


class _Connection(asyncio.Protocol):
    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self.loop = loop
        self.transport: asyncio.Transport | None = None
        self.buffer = bytearray()
        self.reply: _Reply | None = None
        self.waiter: asyncio.Future[HTTPResponse] | None = None
        self.closed = False
        self.idle_since = 0.0

    # -- asyncio.Protocol ------------------------------------------------------------------------

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.Transport)
        self.transport = transport

    def connection_lost(self, exc: Exception | None) -> None:
        self.closed = True
        reply = self.reply
        if reply is not None and reply.mode == "close":  # the body is everything up to the close
            reply.body = self.buffer[:]
            self.buffer.clear()
            self._finish(reply)
            return
        self._fail(HTTPConnectionError("the server closed the connection before the reply was complete"))

    def data_received(self, data: bytes) -> None:
        if self.waiter is None:  # bytes nobody asked for: the connection cannot be trusted any more
            self.close()
            return
        self.buffer += data
        try:
            if len(self.buffer) > MAX_BODY_BYTES + _MAX_HEAD_BYTES:
                raise HTTPProtocolError(f"reply larger than {MAX_BODY_BYTES // (1024 * 1024)} MiB")
            self._parse()
        except HTTPProtocolError as exc:
            self._fail(exc)
            self.close()

    # -- requests --------------------------------------------------------------------------------

    def send(self, data: bytes) -> asyncio.Future[HTTPResponse]:
        assert self.transport is not None
        self.waiter = self.loop.create_future()
        self.reply = None
        self.buffer.clear()
        self.transport.write(data)
        return self.waiter

    def close(self) -> None:
        self.closed = True
        if self.transport is not None:
            self.transport.close()

    # -- parsing ---------------------------------------------------------------------------------

    def _parse(self) -> None:
        buffer = self.buffer
        while True:
            reply = self.reply
            if reply is None:
                end = buffer.find(b"\r\n\r\n")
                if end < 0:
                    if len(buffer) > _MAX_HEAD_BYTES:
                        raise HTTPProtocolError("response headers too long")
                    return
                reply = self._head(bytes(buffer[:end]))
                del buffer[: end + 4]
                if 100 <= reply.status < 200:  # informational: the real reply follows
                    continue
                self.reply = reply
            if reply.mode == "length":
                if len(buffer) < reply.length:
                    return
                reply.body = buffer[: reply.length]
                del buffer[: reply.length]
                self._finish(reply)
                return
            if reply.mode == "none":
                self._finish(reply)
                return
            if reply.mode == "close":
                return  # connection_lost completes it
            if not self._chunks(reply):
                return
            self._finish(reply)
            return

    def _head(self, head: bytes) -> _Reply:
        lines = head.decode("latin-1").split("\r\n")
        parts = lines[0].split(" ", 2)
        if len(parts) < 2 or not parts[0].startswith("HTTP/1.") or not parts[1].isdigit():
            raise HTTPProtocolError(f"not an HTTP/1.x status line: {lines[0][:60]!r}")
        reply = _Reply()
        reply.status = int(parts[1])
        headers = reply.headers
        for line in lines[1:]:
            name, sep, value = line.partition(":")
            if not sep:
                raise HTTPProtocolError(f"malformed header line: {line[:60]!r}")
            headers[name.strip().lower()] = value.strip()
        connection = headers.get("connection", "").lower()
        reply.keep_alive = "close" not in connection and (parts[0] != "HTTP/1.0" or "keep-alive" in connection)
        if reply.status in _NO_BODY_STATUSES or 100 <= reply.status < 200:
            reply.mode = "none"
        elif "chunked" in headers.get("transfer-encoding", "").lower():
            reply.mode = "chunked"
        elif "content-length" in headers:
            try:
                reply.length = int(headers["content-length"])
            except ValueError:
                raise HTTPProtocolError("bad Content-Length") from None
            if not 0 <= reply.length <= MAX_BODY_BYTES:
                raise HTTPProtocolError(f"bad or too large Content-Length {reply.length}")
            reply.mode = "length"
        else:
            reply.mode = "close"
            reply.keep_alive = False
        return reply

    def _chunks(self, reply: _Reply) -> bool:
        """Consume chunked body bytes from the buffer; True once the last chunk and trailers are in."""
        buffer = self.buffer
        while True:
            if reply.chunk_left > 0:
                if len(buffer) < reply.chunk_left + 2:
                    return False
                if buffer[reply.chunk_left : reply.chunk_left + 2] != b"\r\n":
                    raise HTTPProtocolError("chunk not followed by CRLF")
                reply.body += buffer[: reply.chunk_left]
                del buffer[: reply.chunk_left + 2]
                if len(reply.body) > MAX_BODY_BYTES:
                    raise HTTPProtocolError(f"reply larger than {MAX_BODY_BYTES // (1024 * 1024)} MiB")
                reply.chunk_left = -1
                continue
            if reply.chunk_left == 0:  # after the last chunk: optional trailers, then an empty line
                if buffer[:2] == b"\r\n":
                    del buffer[:2]
                    return True
                end = buffer.find(b"\r\n\r\n")
                if end < 0:
                    return False
                del buffer[: end + 4]
                return True
            end = buffer.find(b"\r\n")
            if end < 0:
                if len(buffer) > 1024:
                    raise HTTPProtocolError("chunk size line too long")
                return False
            size_text = bytes(buffer[:end]).split(b";", 1)[0].strip()
            try:
                reply.chunk_left = int(size_text, 16)
            except ValueError:
                raise HTTPProtocolError(f"bad chunk size {size_text[:20]!r}") from None
            del buffer[: end + 2]

    def _finish(self, reply: _Reply) -> None:
        self.reply = None
        waiter, self.waiter = self.waiter, None
        if not reply.keep_alive or self.buffer:
            self.close()
        if waiter is not None and not waiter.done():
            waiter.set_result(HTTPResponse(reply.status, reply.headers, bytes(reply.body)))

    def _fail(self, exc: Exception) -> None:
        self.reply = None
        waiter, self.waiter = self.waiter, None
        if waiter is not None and not waiter.done():
            waiter.set_exception(exc)


class HTTP1Client:
    """``POST`` bodies to one ``http://`` URL over a pool of keep-alive connections (one event loop)."""

    def __init__(self, url: str, headers: Mapping[str, str], *, timeout_s: float) -> None:
        parts = urlsplit(url)
        if parts.scheme != "http" or not parts.hostname:
            raise ValueError(f"HTTP1Client needs an http:// URL, got {url!r}")
        self.host = parts.hostname
        self.port = parts.port or 80
        self.timeout_s = timeout_s
        path = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
        host_header = parts.netloc.rpartition("@")[2]
        lines = [f"POST {path} HTTP/1.1", f"Host: {host_header}"]
        lines += [f"{k}: {v}" for k, v in headers.items() if k.lower() not in ("host", "content-length")]
        self._prefix = ("\r\n".join(lines) + "\r\nContent-Length: ").encode("latin-1")
        self._idle: list[_Connection] = []
        self._open: set[_Connection] = set()
        self.loop: asyncio.AbstractEventLoop | None = None

    async def post(self, body: bytes) -> HTTPResponse:
        loop = asyncio.get_running_loop()
        if self.loop is None:
            self.loop = loop
        elif self.loop is not loop:
            raise RuntimeError("HTTP1Client is bound to another event loop")
        data = b"".join((self._prefix, str(len(body)).encode(), b"\r\n\r\n", body))
        async with asyncio.timeout(self.timeout_s):
            conn = await self._connection(loop)
            try:
                response = await conn.send(data)
            except BaseException:  # lost, timed out, cancelled or unparseable: the connection is spent
                conn.close()
                self._open.discard(conn)
                raise
        if conn.closed:
            self._open.discard(conn)
        else:
            conn.idle_since = loop.time()
            self._idle.append(conn)
        return response

    async def _connection(self, loop: asyncio.AbstractEventLoop) -> _Connection:
        idle = self._idle
        oldest = loop.time() - MAX_IDLE_S
        while idle:
            conn = idle.pop()
            if not conn.closed and conn.idle_since > oldest:
                return conn
            conn.close()
            self._open.discard(conn)
        try:
            _, conn = await loop.create_connection(lambda: _Connection(loop), self.host, self.port)
        except OSError as exc:
            raise HTTPConnectionError(f"cannot connect to {self.host}:{self.port} ({exc.strerror or exc})") from None
        self._open.add(conn)
        return conn

    def close(self) -> None:
        """Close every connection (idle or not)."""
        for conn in list(self._open):
            with contextlib.suppress(Exception):
                conn.close()
        self._open.clear()
        self._idle.clear()
