"""The engine's waits: a backend call within its deadline, and waits that the run's stop cuts short.

A run that is stopped (Ctrl-C, ``--max-cost``, a fatal backend) must not sit out a retry's backoff,
a cooldown or a rate-limit wait: :func:`unless_stopped` and :func:`sleep_unless_stopped` return at
once when the run's stop event is set. :func:`call_within` bounds one attempt by the time the
backend works on it, not by its time in the backend's queue.
"""

from __future__ import annotations

import asyncio
from collections.abc import Coroutine
from typing import Any

from counterbench.models.base import Backend, ChatRequest, ChatResult, on_queue_wait


async def call_within(backend: Backend, request: ChatRequest, timeout: float | None) -> ChatResult:
    """``backend.complete(request)`` within ``timeout`` seconds of work on it.

    Time the backend spends waiting for its turn (reported by
    :func:`~counterbench.models.base.waiting_turn`) does not count: the deadline is lifted for the
    wait and set again, ``timeout`` seconds ahead, when the backend starts on the request.
    """
    if timeout is None:
        return await backend.complete(request)
    loop = asyncio.get_running_loop()
    async with asyncio.timeout(timeout) as deadline:

        def on_wait(waiting: bool) -> None:
            deadline.reschedule(None if waiting else loop.time() + timeout)

        with on_queue_wait(on_wait):
            return await backend.complete(request)


async def unless_stopped(event: asyncio.Event | None, wait: Coroutine[Any, Any, None]) -> bool:
    """Await ``wait`` unless ``event`` (the run's stop) is set first; return True if it was (``wait`` is cancelled)."""
    if event is None:
        await wait
        return False
    if event.is_set():
        wait.close()
        return True
    task = asyncio.ensure_future(wait)
    stopper = asyncio.ensure_future(event.wait())
    try:
        await asyncio.wait((task, stopper), return_when=asyncio.FIRST_COMPLETED)
    finally:
        for pending in (task, stopper):
            if not pending.done():
                pending.cancel()
    if task.done() and not task.cancelled():
        task.result()
        return False
    return True


async def sleep_unless_stopped(event: asyncio.Event | None, delay: float) -> bool:
    """Sleep ``delay`` seconds; return True (at once) if ``event`` (the run's stop) is or gets set."""
    if event is None:
        await asyncio.sleep(delay)
        return False
    if event.is_set():
        return True
    try:
        await asyncio.wait_for(event.wait(), timeout=delay)
    except TimeoutError:
        return False
    return True
