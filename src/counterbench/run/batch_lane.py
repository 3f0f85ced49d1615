"""A ``--batch`` run's settings, each model's batch work, and its progress lines
(the engine is :mod:`counterbench.run.batch_engine`)."""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from counterbench.models.base import Backend
from counterbench.run.batch_jobs import BatchJobs, StoredJob
from counterbench.run.budget import Hold
from counterbench.run.plan import Group
from counterbench.run.progress import RunDisplay

if TYPE_CHECKING:
    from counterbench.models.batch_api import BatchAPI


@dataclass(frozen=True)
class BatchSettings:
    """``size``: requests per job at most (``None``: the provider's limit); ``poll_s``: the longest wait
    between two polls; ``first_poll_s``: the first wait."""

    size: int | None = None
    poll_s: float = 60.0
    first_poll_s: float = 1.0
    #: ``--endpoint-moved``: open jobs submitted to another base URL are polled at this one
    endpoint_moved: bool = False


def check_batch(options: Any, backends: list[Backend]) -> None:
    """With ``options.batch``: a :class:`~counterbench.errors.UserError` for a model whose family has no batch API."""
    if getattr(options, "batch", False):
        from counterbench.models.batch_families import batch_api_for

        for backend in backends:
            batch_api_for(backend)


@dataclass
class LaneBatch:
    """One lane's batch work: requests still to submit, jobs open at the provider, groups not stored yet."""

    api: BatchAPI
    jobs: BatchJobs
    #: first prompt id of a group -> the group, while it has no stored answer from this run
    planned: dict[str, Group]
    todo: list[tuple[Group, int]] = field(default_factory=list)
    open: list[StoredJob] = field(default_factory=list)
    holds: dict[str, Hold] = field(default_factory=dict)
    #: what earlier attempts of a request were billed (an empty reply asked again)
    paid: dict[str, float] = field(default_factory=dict)
    first_seen: tuple[float, int] | None = None
    last_line: float = 0.0
    #: open jobs left for a run with all their prompts; prompt ids with a stored response (read when needed)
    left_open: int = 0
    stored: set[str] | None = None


def show_progress(display: RunDisplay, model: str, state: LaneBatch) -> None:
    """One line per poll that found progress (at most every 10 s): requests processed at the provider, ETA."""
    total = sum(job.n_requests for job in state.open)
    processed = sum(min(job.processed, job.n_requests) for job in state.open)
    now = time.monotonic()
    if state.first_seen is None or processed < state.first_seen[1]:
        state.first_seen = (now, processed)
    if not state.open or (now - state.last_line < 10.0 and processed < total):
        return
    state.last_line = now
    since, before = state.first_seen
    rate = (processed - before) / (now - since) if now > since else 0.0
    eta = f", about {_duration((total - processed) / rate)} left" if rate > 0 and processed < total else ""
    display.message(f"{model}: {len(state.open)} batch job(s) at the provider, "
                    f"{processed:,}/{total:,} requests processed{eta}")


def _duration(seconds: float) -> str:
    if seconds < 90:
        return f"{seconds:.0f} s"
    if seconds < 5400:
        return f"{seconds / 60:.0f} min"
    return f"{seconds / 3600:.1f} h"
