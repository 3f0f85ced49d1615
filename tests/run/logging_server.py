"""A fake OpenAI server that logs when each request arrived and when its reply was written.

The durability tests compare these times with the moment a client was killed: an answer whose
reply was written well before the kill must be in the store; only requests in flight at the kill
(and replies written in its last few milliseconds) may be sent again.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass

from aiohttp import web

from counterbench.testing.fake_openai import FakeOpenAIServer


@dataclass(frozen=True)
class Event:
    kind: str  # "recv" or "sent"
    user: str
    at: float  # time.time()


class LoggingServer(FakeOpenAIServer):
    """Every request: a ``recv`` event on arrival, a ``sent`` event once its reply is fully written."""

    def __init__(self, *args: object, **kwargs: object) -> None:
        super().__init__(*args, **kwargs)  # type: ignore[arg-type]
        self.events: list[Event] = []

    async def chat(self, request: web.Request) -> web.StreamResponse:
        arrived = time.time()
        raw = await request.read()  # cached: the parent handler reads the same bytes
        try:
            user = str(json.loads(raw)["messages"][-1]["content"])
        except (ValueError, KeyError, IndexError, TypeError):
            user = ""
        self.events.append(Event("recv", user, arrived))
        response = await super().chat(request)
        if response.status == 200:
            await response.prepare(request)
            await response.write_eof()
            self.events.append(Event("sent", user, time.time()))
        return response

    def snapshot(self) -> list[Event]:
        return list(self.events)


def requests_per_user(events: list[Event]) -> dict[str, int]:
    counts: dict[str, int] = {}
    for event in events:
        if event.kind == "recv":
            counts[event.user] = counts.get(event.user, 0) + 1
    return counts


def exposure_at(events: list[Event], kill_at: float, window_s: float) -> tuple[int, int]:
    """``(in flight at kill_at, replies written in the window_s before it)`` per the server's log.

    In flight: requests that arrived before the kill without a reply written before it, plus those
    that arrived after it — sent by the killed client, read by the server a moment later (``events``
    must end before the next client starts).
    """
    open_requests: dict[str, int] = {}
    recent = late = 0
    for event in events:
        if event.at > kill_at:
            late += event.kind == "recv"
            continue
        if event.kind == "recv":
            open_requests[event.user] = open_requests.get(event.user, 0) + 1
        else:
            open_requests[event.user] = open_requests.get(event.user, 0) - 1
            if event.at > kill_at - window_s:
                recent += 1
    return sum(max(0, n) for n in open_requests.values()) + late, recent
