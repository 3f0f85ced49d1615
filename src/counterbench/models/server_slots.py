"""How many requests a llama.cpp server runs at once: its ``/props`` ``total_slots``.

``llama-server`` works on ``total_slots`` requests at a time (``--parallel``, 1 unless set) and queues the
rest; a queued request's wait counts against the client's timeout, so a one-slot server sent 16 requests
at once times them out (measured: 122 retries and 2 failed prompts of 432, median stored latency 57 s
against 4.5 s). Before a run the engine asks a ``llamacpp:`` server for its slots and sends no more than
that, saying so in one line. A server that does not answer ``/props`` (llama-cpp-python's) is left alone.
"""

from __future__ import annotations

import asyncio
import json
import urllib.error
import urllib.request
from typing import Any
from urllib.parse import urlsplit, urlunsplit

__all__ = ["PROPS_TIMEOUT_S", "props_url", "read_total_slots", "slot_cap"]

PROPS_TIMEOUT_S = 5.0
#: the families whose servers publish ``/props`` (llama.cpp's ``llama-server``)
SLOT_FAMILIES = ("llamacpp",)


def props_url(base_url: str) -> str:
    """``http://host:8080/v1`` -> ``http://host:8080/props`` (the server's root, not the OpenAI prefix)."""
    parts = urlsplit(base_url.rstrip("/"))
    path = parts.path[: -len("/v1")] if parts.path.endswith("/v1") else parts.path
    return urlunsplit((parts.scheme, parts.netloc, path.rstrip("/") + "/props", "", ""))


def read_total_slots(base_url: str, headers: dict[str, str] | None = None,
                     timeout_s: float = PROPS_TIMEOUT_S) -> int | None:
    """The server's ``total_slots`` (an int ≥ 1), or ``None`` when it does not say (any error, any other answer)."""
    request = urllib.request.Request(props_url(base_url), headers={
        k: v for k, v in (headers or {}).items() if k.lower() in ("authorization", "accept")})
    try:
        with urllib.request.urlopen(request, timeout=timeout_s) as resp:
            data = json.loads(resp.read(1 << 20))
    except (OSError, ValueError, urllib.error.URLError):
        return None
    slots = data.get("total_slots") if isinstance(data, dict) else None
    return slots if isinstance(slots, int) and not isinstance(slots, bool) and slots >= 1 else None


async def slot_cap(backend: Any, concurrency: int) -> tuple[int | None, str]:
    """``(slots, line)`` for a ``llamacpp`` backend whose server has fewer slots than ``concurrency``; else
    ``(None, "")``. ``line`` says what the run does about it."""
    if getattr(backend, "family", None) not in SLOT_FAMILIES or not getattr(backend, "base_url", None):
        return None, ""
    slots = await asyncio.to_thread(read_total_slots, str(backend.base_url), getattr(backend, "_headers", None))
    if slots is None or slots >= concurrency:
        return None, ""
    return slots, (f"{backend.name}: the llama.cpp server runs {slots} request{'s' if slots != 1 else ''} at a "
                   f"time (/props total_slots), so {slots} {'are' if slots != 1 else 'is'} sent at once instead of "
                   f"--concurrency {concurrency} (start it with --parallel N for more)")
