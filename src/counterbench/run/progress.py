"""Counters of a run and how they are shown (a rich progress bar on a terminal, plain lines otherwise).

The engine only bumps plain integers in :class:`Counters` (no locks, no rendering on the hot
path); a display task samples them a few times a second.
"""

from __future__ import annotations

import sys
import time
from dataclasses import dataclass, field
from typing import IO, Any


@dataclass
class Counters:
    """Totals for one model (and, summed, for the run)."""

    total: int = 0
    done: int = 0
    skipped: int = 0
    sent: int = 0
    cached: int = 0
    ok: int = 0
    refused: int = 0
    unparseable: int = 0
    #: answers that did not finish: ``truncated``, ``filtered`` or ``empty`` (re-sent by --retry-errors)
    unfinished: int = 0
    errors: int = 0
    retries: int = 0
    cost_usd: float = 0.0
    finish_reasons: dict[str, int] = field(default_factory=dict)

    def count_status(self, status: str) -> None:
        if status == "ok":
            self.ok += 1
        elif status == "refused":
            self.refused += 1
        elif status == "unparseable":
            self.unparseable += 1
        elif status in ("truncated", "filtered", "empty"):
            self.unfinished += 1
        else:
            self.errors += 1

    def as_dict(self) -> dict[str, Any]:
        return {
            "total": self.total,
            "done": self.done,
            "skipped": self.skipped,
            "sent": self.sent,
            "cached": self.cached,
            "ok": self.ok,
            "refused": self.refused,
            "unparseable": self.unparseable,
            "unfinished": self.unfinished,
            "errors": self.errors,
            "retries": self.retries,
            "cost_usd": round(self.cost_usd, 6),
            "finish_reasons": dict(self.finish_reasons),
        }


def sum_counters(parts: list[Counters]) -> Counters:
    out = Counters()
    for c in parts:
        for name in ("total", "done", "skipped", "sent", "cached", "ok", "refused", "unparseable", "unfinished",
                     "errors", "retries"):
            setattr(out, name, getattr(out, name) + getattr(c, name))
        out.cost_usd += c.cost_usd
        for reason, n in c.finish_reasons.items():
            out.finish_reasons[reason] = out.finish_reasons.get(reason, 0) + n
    return out


def _status_line(c: Counters) -> str:
    return (
        f"errors {c.errors} · refused {c.refused} · unparseable {c.unparseable} · unfinished {c.unfinished} · "
        f"retries {c.retries} · cached {c.cached} · ${c.cost_usd:.4f}"
    )


class RunDisplay:
    """Shows progress for a set of named counters; ``mode`` is ``rich``, ``plain`` or ``off``."""

    def __init__(self, counters: dict[str, Counters], mode: str = "auto", stream: IO[str] | None = None) -> None:
        self.counters = counters
        self.stream = stream or sys.stderr
        if mode == "auto":
            mode = "rich" if self.stream.isatty() else "plain"
        self.mode = mode
        self._progress: Any = None
        self._tasks: dict[str, Any] = {}
        self._rates: dict[str, str] = {}
        self._started = time.monotonic()
        self._last_plain = self._started

    def start(self) -> None:
        if self.mode != "rich":
            return
        from rich.console import Console
        from rich.progress import (
            BarColumn,
            MofNCompleteColumn,
            Progress,
            TaskProgressColumn,
            TextColumn,
            TimeElapsedColumn,
            TimeRemainingColumn,
        )

        self._progress = Progress(
            TextColumn("[bold]{task.description}"),
            BarColumn(),
            MofNCompleteColumn(),
            TaskProgressColumn(),
            TextColumn("{task.fields[rate]}"),
            TimeElapsedColumn(),
            TextColumn("ETA"),
            TimeRemainingColumn(),
            TextColumn("{task.fields[status]}"),
            console=Console(file=self.stream),
            refresh_per_second=4,
            transient=False,
        )
        for name, c in self.counters.items():
            self._tasks[name] = self._progress.add_task(name, total=c.total, rate="", status="")
        self._progress.start()

    def refresh(self, note: str = "") -> None:
        if self.mode == "rich" and self._progress is not None:
            elapsed = max(1e-6, time.monotonic() - self._started)
            for name, c in self.counters.items():
                rate = self._rates.get(name) or f"{c.done / elapsed:,.1f}/s"
                if c.done >= c.total:
                    self._rates[name] = rate  # frozen once the model is done
                self._progress.update(
                    self._tasks[name], completed=c.done, rate=rate, status=(note or _status_line(c))
                )
        elif self.mode == "plain":
            now = time.monotonic()
            if now - self._last_plain >= 10.0 or note:
                self._last_plain = now
                for name, c in self.counters.items():
                    print(f"[{name}] {c.done}/{c.total} · {_status_line(c)}{' · ' + note if note else ''}",
                          file=self.stream, flush=True)

    def message(self, text: str) -> None:
        if self.mode == "off":
            return
        if self._progress is not None:
            self._progress.console.print(text)
        else:
            print(text, file=self.stream, flush=True)

    def stop(self) -> None:
        if self._progress is not None:
            self.refresh()
            self._progress.stop()
            self._progress = None
