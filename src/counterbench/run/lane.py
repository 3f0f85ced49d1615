"""One model's share of a run (:class:`Lane`), the engine's settings, and a lane's summary."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from counterbench.models.base import Backend
from counterbench.options import RetryPolicy
from counterbench.run.costs import Price
from counterbench.run.limits import AdaptiveLimit, TokenBucket
from counterbench.run.plan import Group, Work
from counterbench.run.progress import Counters


@dataclass
class Lane:
    """One model's share of the run."""

    model: str
    backend: Backend
    config_fp: str
    work: Work
    price: Price | None
    request_bucket: TokenBucket | None = None
    token_bucket: TokenBucket | None = None
    counters: Counters = field(default_factory=Counters)
    limit: AdaptiveLimit | None = None
    successes: int = 0
    fatal: str | None = None
    groups: Iterator[Group] = field(default_factory=lambda: iter(()))
    #: with ``--batch``: what the lane's summary adds (``batch``, ``batch_jobs_open``)
    batch: dict[str, Any] | None = None

    @property
    def simulated(self) -> int:
        return 1 if getattr(self.backend, "simulated", False) else 0


@dataclass
class EngineSettings:
    """How the engine runs: worker coroutines per lane, seconds per attempt, ``--max-cost``, retries, and
    whether Ctrl-C/SIGTERM stop the run (off where the caller handles signals itself)."""

    concurrency: int = 16
    timeout_s: float = 60.0
    max_cost: float | None = None
    retry: RetryPolicy = field(default_factory=RetryPolicy)
    handle_signals: bool = True


def lane_summary(lane: Lane) -> dict[str, Any]:
    out = lane.counters.as_dict()
    out["already_done"] = lane.work.already_done
    out["stored_errors"] = lane.work.stored_errors
    out["simulated"] = bool(lane.simulated)
    out.update(lane.batch or {})
    return out
