"""``--max-cost``: what a run has spent, may have spent and has reserved, and one request's claim on it.

Before a request is first sent, its worst case (estimated input tokens plus the whole ``max_tokens``,
at the model's price) is reserved as a :class:`Hold`; nothing is sent unless spent + possibly spent +
reserved + the new worst case fit in the budget. The hold stays with the request through every retry
and wait, and is released only when the request is stored or abandoned. A billed attempt that is
asked again is paid (:meth:`Budget.pay`) before the next one; an attempt whose bill is unknown (a
timeout, a dropped connection) counts at its worst case (:meth:`Budget.may_have_paid`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from counterbench.models.base import ChatResult

#: rounding slack when comparing sums of estimates with --max-cost (USD)
_SLACK = 1e-9


@dataclass(slots=True)
class Hold:
    """One request's claim on the budget from its first attempt until it is stored or abandoned."""

    #: the worst-case cost of its next attempt, counted in :attr:`Budget.reserved`
    amount: float
    #: what its earlier attempts were billed (an empty reply asked again): added to the stored row's cost
    paid: float = 0.0
    #: the last billed reply that was asked again, with its attempt count and start time: stored (with
    #: what was paid) if the request is abandoned before another answer comes
    last: tuple[ChatResult, int, float] | None = None


class Budget:
    """What is spent (known bills), unsure (unknown bills at their worst case) and reserved, in USD."""

    def __init__(self, max_cost: float | None) -> None:
        self.max_cost = max_cost
        self.spent = 0.0
        self.unsure = 0.0
        self.reserved = 0.0

    def fits(self, amount: float = 0.0) -> bool:
        """Whether ``amount`` more still fits next to what is spent, may be, and is reserved."""
        limit = self.max_cost
        return limit is None or self.spent + self.unsure + self.reserved + amount <= limit + _SLACK

    def hold(self, amount: float) -> Hold | None:
        """Reserve ``amount`` for a new request; ``None`` when it no longer fits (no limit: a free hold)."""
        if self.max_cost is None:
            return Hold(0.0)
        if not self.fits(amount):
            return None
        self.reserved += amount
        return Hold(amount)

    def release(self, hold: Hold) -> None:
        self.reserved -= hold.amount
        hold.amount = 0.0

    def pay(self, cost: float, hold: Hold | None = None) -> None:
        """A known bill; with ``hold``, one for an attempt of that request that is asked again."""
        self.spent += cost
        if hold is not None:
            hold.paid += cost

    def may_have_paid(self, hold: Hold) -> None:
        """An attempt of ``hold``'s request whose bill is unknown: count its worst case."""
        self.unsure += hold.amount
