"""Answers, failures and stored copies turned into store rows (the run's only way into the store).

A request group is answered once: its first prompt's row carries the call (cost, attempts), the
others are copies (``cached``). A response's text and the model name it reports are redacted
before they are parsed or stored; a reply's cost is paid into the run's ``--max-cost`` budget
(:class:`~counterbench.run.budget.Budget`), and a row also carries what its earlier attempts were
billed (an empty reply asked again, :attr:`~counterbench.run.budget.Hold.paid`).
"""

from __future__ import annotations

import time

from counterbench.models.base import ChatResult
from counterbench.outcomes.logprobs import NO_READING, AnswerColumns, answer_columns
from counterbench.run.budget import Budget, Hold
from counterbench.run.lane import Lane
from counterbench.run.parsing import Parsed, ResponseParser
from counterbench.run.plan import Group, PromptItem
from counterbench.run.redact import Redactor
from counterbench.run.writer import BatchWriter, Row


def cost_of(lane: Lane, result: ChatResult) -> float | None:
    """What the provider bills for ``result``: its own figure, else tokens × price; None when unknown."""
    reported = getattr(result, "cost_usd", None)
    if reported is not None:
        return float(reported)
    if lane.price is not None and (result.input_tokens is not None or result.output_tokens is not None):
        return lane.price.cost(result.input_tokens, result.output_tokens)
    return None


class Recorder:
    """Writes a run's rows through its writer, counting them in each lane's counters."""

    def __init__(self, writer: BatchWriter, parser: ResponseParser, redactor: Redactor, budget: Budget,
                 run_id: int) -> None:
        self.writer = writer
        self.parser = parser
        self.redactor = redactor
        self.budget = budget
        self.run_id = run_id

    def record_result(
        self, lane: Lane, group: Group, result: ChatResult, attempts: int, started: float, hold: Hold | None = None,
    ) -> None:
        """Store the answer ``result`` for every prompt of ``group`` and pay its cost."""
        lane.successes += 1
        counters = lane.counters
        counters.sent += 1
        text = self.redactor.redact(result.text)
        cost = cost_of(lane, result)
        if cost:
            self.budget.pay(cost)
            counters.cost_usd += cost
        if hold is not None:
            hold.last = None
            if hold.paid:
                cost = (cost or 0.0) + hold.paid  # the row carries what every attempt of it was billed
        reason = result.finish_reason
        if reason is not None:
            counters.finish_reasons[reason] = counters.finish_reasons.get(reason, 0) + 1
        finished = time.time()
        model_reported = self.redactor.redact(result.model_reported)
        parse_key = self.parser.key_for
        tokens = getattr(result, "token_logprobs", None)
        for index, (item, fp) in enumerate(group):
            parsed = self.parser.parse(text, reason, parse_key(item.use_case, item.answer_type))
            first = index == 0
            self.writer.add(
                self.row(
                    lane, item, fp, parsed, text, reason, result.input_tokens, result.output_tokens,
                    cost if first else 0.0, result.latency_ms, attempts if first else 0, None,
                    0 if first else 1, model_reported, started, finished,
                    answer_columns(item.answer_type, tokens) if tokens else NO_READING,
                )
            )
            counters.done += 1
            counters.count_status(parsed.status)
        counters.cached += len(group) - 1

    def record_failure(
        self, lane: Lane, group: Group, message: str, attempts: int, started: float, hold: Hold | None = None,
    ) -> None:
        """Store an ``error`` row (with the redacted ``message``) for every prompt of ``group``."""
        finished = time.time()
        failed = Parsed("error")
        paid = None
        if hold is not None:
            hold.last = None
            paid = hold.paid or None  # earlier attempts that were billed
        for index, (item, fp) in enumerate(group):
            self.writer.add(
                self.row(lane, item, fp, failed, None, None, None, None, paid if index == 0 else None, None,
                         attempts, message, 0, None, started, finished)
            )
            lane.counters.done += 1
            lane.counters.errors += 1
        lane.counters.sent += 1

    def serve_from_cache(self, lane: Lane) -> None:
        """Store copies of identical requests answered before (no call, no cost)."""
        now = time.time()
        for item, fp, stored in lane.work.from_cache:
            text, reason, n_in, n_out, latency, reported, _simulated, *reading = stored
            parsed = self.parser.parse(text, reason, self.parser.key_for(item.use_case, item.answer_type))
            self.writer.add(
                self.row(lane, item, fp, parsed, text, reason, n_in, n_out, 0.0, latency, 0, None, 1, reported,
                         now, now, (reading[0], reading[1], reading[2], reading[3]))
            )
            lane.counters.done += 1
            lane.counters.cached += 1
            lane.counters.count_status(parsed.status)

    def row(
        self, lane: Lane, item: PromptItem, fp: str, parsed: Parsed, text: str | None, reason: str | None,
        n_in: int | None, n_out: int | None, cost: float | None, latency: float | None, attempts: int,
        error: str | None, cached: int, reported: str | None, started: float, finished: float,
        reading: AnswerColumns = NO_READING,
    ) -> Row:
        """One ``responses`` row, in the writer's column order."""
        return (
            item.prompt_id, item.prompt_hash, lane.model, item.config_fp or lane.config_fp, fp, lane.simulated,
            parsed.status,
            text, reason, parsed.value, parsed.unit, parsed.release_value, parsed.release_unit,
            parsed.is_range, parsed.out_of_range, parsed.reason, self.parser.profile, n_in, n_out, cost,
            latency, attempts, error, cached, reported, "run", started, finished, self.run_id, *reading,
        )
