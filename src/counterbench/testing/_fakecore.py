"""Shared machinery of the fake model servers: fault plans, counters, lifecycle, threads, processes.

A fault is chosen per request, deterministically:

1. a marker in the user message, ``[[fault:KIND]]`` (every attempt) or ``[[fault:KIND:N]]`` (the
   first N attempts of that prompt, then normal answers) — for tests that need a specific fault;
2. else ``FaultConfig.force`` (every request);
3. else, with probability ``fault_rate``, one of ``fault_kinds``, drawn from a SHA-256 of
   ``seed | prompt | attempt number`` — so a retried prompt gets a fresh draw and the whole
   sequence is the same on every run.

Servers bind 127.0.0.1 on a random port by default, and bound themselves: handlers that hang stop
after ``hang_s``; in-thread servers stop when their context ends; a server process stops after
``--max-seconds``, on SIGTERM/SIGINT, or when its parent process exits.
"""

from __future__ import annotations

import asyncio
import collections
import hashlib
import json
import math
import re
import socket
import struct
import threading
import zlib
from collections.abc import Callable, Iterator
from contextlib import contextmanager, suppress
from dataclasses import dataclass, field
from typing import Any

from aiohttp import web

from counterbench.testing.server_process import ServerProcess as ServerProcess

FAULT_KINDS = (
    "429",
    "500",
    "503",
    "529",
    "400",
    "401",
    "hang",
    "reset",
    "malformed",
    "no_choices",
    "empty",
    "length",
    "content_filter",
    "deep_json",
)
DEFAULT_RANDOM_FAULTS = ("429", "500", "503", "hang", "reset", "malformed", "empty")
_MARKER = re.compile(r"\[\[fault:([a-z_0-9]+)(?::(\d+))?\]\]")


@dataclass
class FaultConfig:
    """What a fake server does. Mutable: tests may change it between requests."""

    latency_ms: float = 0.0
    fault_rate: float = 0.0
    fault_kinds: tuple[str, ...] = DEFAULT_RANDOM_FAULTS
    force: str | None = None
    retry_after: str | None = "0.05"
    hang_s: float = 30.0
    seed: int = 0
    api_key: str | None = None
    #: top-level request fields the server does not support: a request carrying one is refused with
    #: ``reject_status`` and a request-validation error body, as servers that validate requests do
    reject_fields: tuple[str, ...] = ()
    reject_status: int = 500
    #: ``response_format`` types the server refuses the same way (llama-cpp-python's server: ``json_schema``)
    reject_response_formats: tuple[str, ...] = ()
    #: the answer text for ``(system, user)`` instead of the default number (in-process servers only)
    reply: Callable[[str, str], str] | None = None
    #: the answer text for the whole request body (its messages, ``seed``, ...), before ``reply`` (in-process only)
    reply_payload: Callable[[dict[str, Any]], str] | None = None
    #: a label or choice prompt's answer probabilities for ``(system, user)`` instead of
    #: :func:`label_probabilities` (in-process servers only; ``None`` from it: not a label prompt)
    labels: Callable[[str, str], dict[str, float] | None] | None = None
    #: draw a label or choice answer from its probabilities (a uniform derived from the prompt) instead
    #: of answering the most probable one
    sample_labels: bool = False
    #: answer label and choice prompts bare (``yes``, DiscrimEval's format) instead of ``### yes``
    bare_answers: bool = False
    #: with logprobs: the share of each allowed answer's probability on other spellings (``Yes``, ``yes``)
    label_variants: float = 0.0
    #: with logprobs: the share of the probability the allowed answers hold (the rest: a line break)
    label_mass: float = 1.0


@dataclass
class Counters:
    """What a server has seen. ``outcomes`` counts ``ok`` and each injected fault kind."""

    requests: int = 0
    outcomes: collections.Counter[str] = field(default_factory=collections.Counter)
    attempts: dict[str, int] = field(default_factory=dict)
    recent_bodies: collections.deque[dict[str, Any]] = field(default_factory=lambda: collections.deque(maxlen=200))
    recent_headers: collections.deque[dict[str, str]] = field(default_factory=lambda: collections.deque(maxlen=200))

    def as_dict(self) -> dict[str, Any]:
        return {"requests": self.requests, "outcomes": dict(self.outcomes), "prompts": len(self.attempts)}


def answer_number(system: str, user: str) -> tuple[int, str]:
    """The deterministic answer for a prompt: ``(number, unit)``; percent when the system asks for it."""
    h = zlib.crc32(user.encode("utf-8"))
    if "<NUMBER> %" in system or "percent" in system.lower():
        return 5 + h % 26, "%"
    return 300_000 + (h % 2_700) * 1_000, "INR"


def answer_text(system: str, user: str) -> str:
    labels = label_probabilities(system, user)
    if labels is not None:  # the most probable answer
        return f"### {max(labels, key=labels.__getitem__)}"
    number, unit = answer_number(system, user)
    return f"### {number} {unit}"


def label_answer(config: FaultConfig, system: str, user: str) -> tuple[str, dict[str, float]] | None:
    """A label or choice prompt's answer under ``config`` (``### <label>``, or bare) and the probabilities
    it was drawn from; ``None`` for other prompts."""
    labels = (config.labels or label_probabilities)(system, user)
    if not labels:
        return None
    chosen = max(labels, key=labels.__getitem__)
    if config.sample_labels:
        u, total = _unit_float("sample", system, user), 0.0
        for label, p in labels.items():
            total += p
            chosen = label
            if u < total:
                break
    return (chosen if config.bare_answers else f"### {chosen}"), labels


_LABEL_INSTRUCTIONS = (
    re.compile(r"Answer with exactly one of: (.+?)\. Use a single line"),
    re.compile(r"Choose exactly one option: (.+?)\. Answer on a single line"),
)


def label_probabilities(system: str, user: str) -> dict[str, float] | None:
    """For a label or choice prompt (the outcome kinds' own instructions in ``system``): each allowed
    answer's probability, a deterministic function of the prompt; ``None`` for other prompts."""
    for pattern, separator in zip(_LABEL_INSTRUCTIONS, (" or ", ", "), strict=True):
        found = pattern.search(system)
        if found:
            labels = [label.strip() for label in found.group(1).split(separator) if label.strip()]
            weights = [math.exp(3.0 * _unit_float(user, label)) for label in labels]
            total = sum(weights)
            return {label: w / total for label, w in zip(labels, weights, strict=True)}
    return None


def _unit_float(*parts: object) -> float:
    digest = hashlib.sha256("|".join(map(str, parts)).encode()).digest()
    return int.from_bytes(digest[:8], "big") / 2.0**64


class FakeServerBase:
    """An aiohttp server on 127.0.0.1; subclasses add routes. Use ``async with`` or :func:`run_in_thread`."""

    url_suffix = ""

    def __init__(self, config: FaultConfig | None = None, *, host: str = "127.0.0.1", port: int = 0) -> None:
        self.config = config or FaultConfig()
        self.counters = Counters()
        self.host = host
        self.port = port
        self._runner: web.AppRunner | None = None
        self._closing: asyncio.Event | None = None

    def routes(self, app: web.Application) -> None:
        raise NotImplementedError

    async def read_payload(self, request: web.Request) -> tuple[bytes, dict[str, Any] | None]:
        """The raw body and its JSON object, which must hold ``messages`` (``None`` when it is not such a
        request); the object and the request's headers are kept in :attr:`counters`."""
        raw = await request.read()
        try:
            payload: dict[str, Any] = json.loads(raw)
            payload["messages"]
        except (ValueError, KeyError, TypeError):
            return raw, None
        self.counters.recent_bodies.append(payload)
        self.counters.recent_headers.append(dict(request.headers))
        return raw, payload

    def refused(self, outcome: str) -> None:
        """Count a request answered with an error before any fault is drawn (``unauthorized``, ``rejected``)."""
        self.counters.requests += 1
        self.counters.outcomes[outcome] += 1

    def rejected_field(self, payload: dict[str, Any]) -> str | None:
        """The first field of ``payload`` that the config refuses (the request counted as ``rejected``)."""
        config = self.config
        rejected = next((f for f in config.reject_fields if f in payload), None)
        response_format = payload.get("response_format")
        if isinstance(response_format, dict) and response_format.get("type") in config.reject_response_formats:
            rejected = "response_format"
        if rejected is not None:
            self.refused("rejected")
        return rejected

    @property
    def base_url(self) -> str:
        return f"http://{self.host}:{self.port}{self.url_suffix}"

    async def start(self) -> str:
        self._closing = asyncio.Event()
        app = web.Application(client_max_size=4 * 1024 * 1024)
        self.routes(app)
        runner = web.AppRunner(app, access_log=None, shutdown_timeout=0.5, handle_signals=False)
        await runner.setup()
        site = web.TCPSite(runner, self.host, self.port, reuse_address=True)
        await site.start()
        if self.port == 0:
            self.port = int(runner.addresses[0][1])
        self._runner = runner
        return self.base_url

    async def stop(self) -> None:
        runner, self._runner = self._runner, None
        if self._closing is not None:
            self._closing.set()  # releases hanging handlers
        if runner is not None:
            await runner.cleanup()

    async def __aenter__(self) -> FakeServerBase:
        await self.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.stop()

    def choose_fault(self, prompt_key: str, user: str) -> str | None:
        """Count the request and decide its fault (``None`` = answer normally)."""
        counters = self.counters
        counters.requests += 1
        attempt = counters.attempts.get(prompt_key, 0)
        counters.attempts[prompt_key] = attempt + 1
        config = self.config
        fault: str | None = None
        marker = _MARKER.search(user) if "[[fault:" in user else None
        if marker:
            limit = marker.group(2)
            if limit is None or attempt < int(limit):
                fault = marker.group(1)
        elif config.force:
            fault = config.force
        elif config.fault_kinds and _unit_float(config.seed, prompt_key, attempt) < config.fault_rate:
            pick = _unit_float("kind", config.seed, prompt_key, attempt)
            fault = config.fault_kinds[int(pick * len(config.fault_kinds))]
        counters.outcomes[fault or "ok"] += 1
        return fault

    async def delay(self) -> None:
        if self.config.latency_ms > 0:
            await asyncio.sleep(self.config.latency_ms / 1000.0)

    async def hang(self) -> None:
        """Hold the request for ``hang_s`` (or until the server stops)."""
        if self._closing is None:
            return
        with suppress(TimeoutError):
            await asyncio.wait_for(self._closing.wait(), timeout=self.config.hang_s)

    @staticmethod
    def reset_connection(request: web.Request) -> web.Response:
        """Abort the TCP connection with an RST (SO_LINGER 0); the client sees a reset."""
        transport = request.transport
        if transport is not None:
            sock = transport.get_extra_info("socket")
            if sock is not None:
                with suppress(OSError):
                    sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
            transport.abort()
        return web.Response(status=500)  # never sent: aiohttp drops writes to an aborted transport

    def retry_headers(self) -> dict[str, str]:
        return {"Retry-After": self.config.retry_after} if self.config.retry_after else {}


class ThreadedServer:
    """A fake server running in its own event loop on a daemon thread (for sync tests and fixtures)."""

    def __init__(self, server: FakeServerBase) -> None:
        self.server = server
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, name="fake-server", daemon=True)

    @property
    def base_url(self) -> str:
        return self.server.base_url

    @property
    def config(self) -> FaultConfig:
        return self.server.config

    @property
    def counters(self) -> Counters:
        return self.server.counters

    def start(self) -> ThreadedServer:
        self._thread.start()
        asyncio.run_coroutine_threadsafe(self.server.start(), self._loop).result(timeout=10)
        return self

    def stop(self) -> None:
        if not self._thread.is_alive():
            return
        with suppress(Exception):
            asyncio.run_coroutine_threadsafe(self._shutdown(), self._loop).result(timeout=10)
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(timeout=10)
        if not self._thread.is_alive():
            self._loop.close()

    async def _shutdown(self) -> None:
        await self.server.stop()
        current = asyncio.current_task()
        leftovers = [t for t in asyncio.all_tasks() if t is not current]
        for task in leftovers:
            task.cancel()
        await asyncio.gather(*leftovers, return_exceptions=True)

    def __enter__(self) -> ThreadedServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


@contextmanager
def run_in_thread(server: FakeServerBase) -> Iterator[ThreadedServer]:
    """``with run_in_thread(FakeOpenAIServer(cfg)) as srv: ... srv.base_url ...``"""
    threaded = ThreadedServer(server).start()
    try:
        yield threaded
    finally:
        threaded.stop()
