"""Counters of a run and how they are shown (a rich progress bar on a terminal, plain lines otherwise).

The engine only bumps plain integers in :class:`Counters` (no locks, no rendering on the hot
path); a display task samples them a few times a second.
"""

from __future__ import annotations

import math
import sys
import time
from collections import deque
from dataclasses import asdict, dataclass, field
from typing import IO, Any

from counterbench.options import PLAIN_EVERY_S


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
        return {**asdict(self), "cost_usd": round(self.cost_usd, 6)}


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


#: the widest model label in the terminal bar (longer ones are shortened in the middle)
LABEL_WIDTH = 24
#: rates are measured over this many recent seconds
RATE_WINDOW_S = 30.0


def _status_line(c: Counters) -> str:
    spent = f" · spent ${c.cost_usd:.4f}" if c.cost_usd > 0 else ""
    return (
        f"errors {c.errors} · refused {c.refused} · unparseable {c.unparseable} · unfinished {c.unfinished} · "
        f"retries {c.retries} · cached {c.cached}{spent}"
    )


def _compact_status(c: Counters) -> str:
    spent = f" ${c.cost_usd:.4f}" if c.cost_usd > 0 else ""
    return f"err {c.errors} ref {c.refused} unp {c.unparseable}{spent}"


def shorten(label: str, width: int = LABEL_WIDTH) -> str:
    """``label`` cut in the middle to ``width`` characters (its start and end are what tell models apart)."""
    if len(label) <= width:
        return label
    keep = width - 1
    head = (keep + 1) // 2
    return label[:head] + "…" + label[len(label) - (keep - head):]


def format_duration(seconds: float) -> str:
    if not math.isfinite(seconds) or seconds < 0:
        return "-:--:--"
    whole = round(seconds)
    return f"{whole // 3600}:{whole % 3600 // 60:02d}:{whole % 60:02d}"


class RateMeter:
    """Answers per second over the last :data:`RATE_WINDOW_S` seconds, and the time left at that rate."""

    def __init__(self) -> None:
        self._samples: deque[tuple[float, int]] = deque()

    def update(self, now: float, done: int) -> float:
        samples = self._samples
        samples.append((now, done))
        while len(samples) > 2 and now - samples[1][0] >= RATE_WINDOW_S:
            samples.popleft()
        t0, d0 = samples[0]
        return (done - d0) / (now - t0) if now > t0 and done > d0 else 0.0

    @staticmethod
    def eta(rate: float, left: int) -> float:
        if left <= 0:
            return 0.0
        return left / rate if rate > 0 else float("nan")


def progress_line(name: str, c: Counters, rate: float, note: str = "") -> str:
    """The plain progress line: count/total, %, rate, ETA, then what went wrong and what was spent."""
    pct = 100.0 * c.done / c.total if c.total else 100.0
    eta = format_duration(RateMeter.eta(rate, c.total - c.done))
    line = f"[{name}] {c.done:,}/{c.total:,} ({pct:.1f}%) · {rate:,.1f}/s · ETA {eta} · {_status_line(c)}"
    return line + (f" · {note}" if note else "")


def widgets_available() -> bool:
    """Whether ipywidgets can be imported (rich's live display in a notebook needs it)."""
    import importlib.util

    return importlib.util.find_spec("ipywidgets") is not None


def notebook_without_widgets() -> bool:
    """In a Jupyter kernel without ipywidgets, rich's live bar only warns ``install "ipywidgets"`` and shows
    an empty box: progress is then shown as text lines."""
    from counterbench.run.sync import in_notebook

    return in_notebook() and not widgets_available()


class RunDisplay:
    """Shows progress for a set of named counters; ``mode`` is ``rich``, ``plain`` or ``off``.

    ``rich`` (a terminal): one bar per model with the label shortened to :data:`LABEL_WIDTH`, then
    count/total, %, rate and ETA, which keep their width at 80 columns (the status text gives way
    first). ``plain``: one line per model every ``plain_every_s`` seconds (default :data:`PLAIN_EVERY_S`) with
    the same numbers.
    ``rich`` in a notebook without ipywidgets is ``plain``, with a closing line per model at the end.
    Spend is shown once a priced model has cost something.
    """

    def __init__(self, counters: dict[str, Counters], mode: str = "auto", stream: IO[str] | None = None,
                 plain_every_s: float = PLAIN_EVERY_S) -> None:
        self.counters = counters
        self.plain_every_s = plain_every_s
        self.stream = stream or sys.stderr
        if mode == "auto":
            mode = "rich" if self.stream.isatty() else "plain"
        #: in a notebook without ipywidgets, text lines (and a closing line) instead of rich's live bar
        self.notebook_text = mode == "rich" and notebook_without_widgets()
        self.mode = "plain" if self.notebook_text else mode
        self._progress: Any = None
        self._tasks: dict[str, Any] = {}
        self._meters = {name: RateMeter() for name in counters}
        self._rates: dict[str, float] = {}
        self._started = time.monotonic()
        self._last_plain = self._started

    def start(self) -> None:
        if self.mode != "rich":
            return
        from rich.console import Console
        from rich.progress import BarColumn, MofNCompleteColumn, Progress, TaskProgressColumn, TextColumn
        from rich.table import Column

        fixed = {"no_wrap": True, "overflow": "ignore"}
        self._progress = Progress(
            TextColumn("[bold]{task.description}", markup=True,
                       table_column=Column(no_wrap=True, max_width=LABEL_WIDTH, overflow="ellipsis")),
            BarColumn(bar_width=12),
            MofNCompleteColumn(table_column=Column(**fixed)),  # type: ignore[arg-type]
            TaskProgressColumn(table_column=Column(**fixed)),  # type: ignore[arg-type]
            TextColumn("{task.fields[rate]}", table_column=Column(**fixed)),  # type: ignore[arg-type]
            TextColumn("ETA {task.fields[eta]}", table_column=Column(**fixed)),  # type: ignore[arg-type]
            TextColumn("{task.fields[status]}", markup=False,
                       table_column=Column(no_wrap=True, overflow="ellipsis", ratio=1, min_width=0)),
            console=Console(file=self.stream),
            refresh_per_second=4,
            transient=False,
            expand=False,
        )
        from rich.markup import escape

        for name, c in self.counters.items():
            self._tasks[name] = self._progress.add_task(escape(shorten(name)), total=c.total, rate="", eta="-:--:--",
                                                        status="")
        self._progress.start()

    def _rate(self, name: str, c: Counters, now: float) -> float:
        if c.done >= c.total and name in self._rates:
            return self._rates[name]  # frozen once the model is done
        rate = self._meters[name].update(now, c.done)
        self._rates[name] = rate
        return rate

    def refresh(self, note: str = "") -> None:
        now = time.monotonic()
        if self.mode == "rich" and self._progress is not None:
            for name, c in self.counters.items():
                rate = self._rate(name, c, now)
                self._progress.update(
                    self._tasks[name], completed=c.done, rate=f"{rate:,.1f}/s",
                    eta=format_duration(RateMeter.eta(rate, c.total - c.done)),
                    status=(note or _compact_status(c)),
                )
        elif self.mode == "plain":
            for name, c in self.counters.items():
                self._rate(name, c, now)
            if now - self._last_plain >= self.plain_every_s or note:
                self._last_plain = now
                for name, c in self.counters.items():
                    print(progress_line(name, c, self._rates.get(name, 0.0), note), file=self.stream, flush=True)

    def message(self, text: str) -> None:
        if self.mode == "off":
            return
        if self._progress is not None:
            self._progress.console.print(text, markup=False, highlight=False)
        else:
            print(text, file=self.stream, flush=True)

    def stop(self) -> None:
        if self.notebook_text:
            now = time.monotonic()
            for name, c in self.counters.items():
                print(progress_line(name, c, self._rate(name, c, now)), file=self.stream, flush=True)
        if self._progress is not None:
            self.refresh()
            self._progress.stop()
            self._progress = None
