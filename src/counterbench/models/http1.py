"""A minimal keep-alive HTTP/1.1 client for plain ``http://`` servers: the local-server hot path.

Against a server on the same small machine (vLLM, Ollama, llama.cpp server, the fake server of the
tests) the client's own CPU competes with the server's. ``aiohttp`` spends about 0.25-0.35 ms of
CPU per request on its general machinery (cookie jar, tracing, header multidicts, streams); this
client does the one thing the OpenAI protocol needs — ``POST`` a JSON body, read a JSON reply over
reused connections — in about a third of that (``benchmarks/run_throughput.py``). ``https://``
endpoints (hosted APIs) keep using ``aiohttp``.

Replies are parsed by ``httptools`` (llhttp, Node.js's HTTP parser); this module only pools
connections and turns parser events into one :class:`HTTPResponse`. It handles keep-alive reuse,
``Content-Length``, ``Transfer-Encoding: chunked`` and read-until-close bodies, ``Connection:
close``, HTTP/1.0 servers, informational 1xx responses, idle connections the server may have
dropped (not reused after :data:`MAX_IDLE_S`), oversized replies (refused past
:data:`MAX_BODY_BYTES`) and a total timeout per request. A request is never sent twice: a
connection lost mid-request is an error for the engine to retry (and count), as with ``aiohttp``.
It does not do TLS, proxies, redirects, compression (it never asks for it) or cookies.

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

import httptools
from httptools import HttpParserError, HttpParserUpgrade

_MAX_HEAD_BYTES = 64 * 1024
#: a reply body larger than this is refused (a chat completion is a few kilobytes)
MAX_BODY_BYTES = 32 * 1024 * 1024
#: an idle connection older than this is closed rather than reused: servers drop idle keep-alive
#: connections (uvicorn, under vLLM, after 5 s), and a POST that meets a closing connection cannot
#: safely be sent again (the server may have acted on it), so it would surface as an error
MAX_IDLE_S = 4.0


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


class _Connection(asyncio.Protocol):
    """One keep-alive connection; replies are parsed by ``httptools`` (llhttp, the parser of Node.js)."""

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self.loop = loop
        self.transport: asyncio.Transport | None = None
        self.parser = httptools.HttpResponseParser(self)
        self.waiter: asyncio.Future[HTTPResponse] | None = None
        self.closed = False
        self.idle_since = 0.0
        self._headers: dict[str, str] = {}
        self._body: list[bytes] = []
        self._body_size = 0
        self._received = 0
        self._headers_done = False
        self._framed = False  # the reply has Content-Length or chunked framing (else: body until close)

    # -- asyncio.Protocol ------------------------------------------------------------------------

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.Transport)
        self.transport = transport

    def connection_lost(self, exc: Exception | None) -> None:
        self.closed = True
        if self.waiter is not None and self._headers_done and not self._framed:
            self._complete(keep_alive=False)  # the body was everything up to the close
            return
        self._fail(HTTPConnectionError("the server closed the connection before the reply was complete"))

    def data_received(self, data: bytes) -> None:
        if self.waiter is None:  # bytes nobody asked for: the connection cannot be trusted any more
            self.close()
            return
        self._received += len(data)
        try:
            if self._received > MAX_BODY_BYTES + _MAX_HEAD_BYTES:
                raise HTTPProtocolError(f"reply larger than {MAX_BODY_BYTES // (1024 * 1024)} MiB")
            self.parser.feed_data(data)
        except (HttpParserError, HttpParserUpgrade) as exc:
            cause = exc.__context__
            detail = cause if isinstance(cause, HTTPProtocolError) else HTTPProtocolError(f"invalid HTTP reply ({exc})")
            self._fail(detail)
            self.close()
        except HTTPProtocolError as exc:
            self._fail(exc)
            self.close()

    # -- httptools callbacks ---------------------------------------------------------------------

    def on_message_begin(self) -> None:
        self._headers = {}
        self._body = []
        self._body_size = 0
        self._headers_done = False
        self._framed = False

    def on_header(self, name: bytes, value: bytes) -> None:
        self._headers[name.decode("latin-1").lower()] = value.decode("latin-1").strip()

    def on_headers_complete(self) -> None:
        self._headers_done = True
        headers = self._headers
        self._framed = "content-length" in headers or "chunked" in headers.get("transfer-encoding", "").lower()
        length = headers.get("content-length", "0")
        if not length.isdigit() or int(length) > MAX_BODY_BYTES:
            raise HTTPProtocolError(f"bad or too large Content-Length {length[:20]!r}")

    def on_body(self, body: bytes) -> None:
        self._body.append(body)
        self._body_size += len(body)
        if self._body_size > MAX_BODY_BYTES:
            raise HTTPProtocolError(f"reply larger than {MAX_BODY_BYTES // (1024 * 1024)} MiB")

    def on_message_complete(self) -> None:
        if self.parser.get_status_code() < 200:  # informational (100 Continue): the real reply follows
            return
        self._complete(keep_alive=self.parser.should_keep_alive())

    # -- requests --------------------------------------------------------------------------------

    def send(self, data: bytes) -> asyncio.Future[HTTPResponse]:
        assert self.transport is not None
        self.waiter = self.loop.create_future()
        self._received = 0
        self._headers_done = False
        self.transport.write(data)
        return self.waiter

    def close(self) -> None:
        self.closed = True
        if self.transport is not None:
            self.transport.close()

    def _complete(self, *, keep_alive: bool) -> None:
        waiter, self.waiter = self.waiter, None
        if not keep_alive or waiter is None:  # a reply nobody asked for also ends the connection
            self.close()
        if waiter is not None and not waiter.done():
            status = self.parser.get_status_code()
            waiter.set_result(HTTPResponse(status, self._headers, b"".join(self._body)))

    def _fail(self, exc: Exception) -> None:
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
