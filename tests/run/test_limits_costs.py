"""Retry backoff, token buckets, the price table and the key redactor."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

import pytest

from counterbench.errors import UserError
from counterbench.options import RetryPolicy
from counterbench.run.budget import Budget
from counterbench.run.costs import Price, load_price_table
from counterbench.run.limits import AdaptiveLimit, RateLimits, TokenBucket
from counterbench.run.redact import Redactor


def test_backoff_grows_with_jitter_and_honours_retry_after() -> None:
    policy = RetryPolicy(base_delay=1.0, max_delay=8.0)
    for attempt, ceiling in ((1, 1.0), (2, 2.0), (3, 4.0), (4, 8.0), (9, 8.0)):
        waits = [policy.delay(attempt) for _ in range(200)]
        assert min(waits) >= ceiling / 2 and max(waits) <= ceiling
        assert len(set(waits)) > 100  # jittered
    assert 20.0 <= policy.delay(1, retry_after=20.0) <= 21.0
    # the server's Retry-After as given, even when shorter than the backoff would be
    assert all(0.05 <= policy.delay(5, retry_after=0.05) <= 0.0525 for _ in range(50))
    assert policy.delay(1, retry_after=10_000.0) <= policy.max_retry_after * 1.05
    with pytest.raises(UserError):
        RetryPolicy(max_attempts=0)
    with pytest.raises(UserError):
        RetryPolicy(max_delay=float("nan"))


def test_adaptive_limit_shrinks_on_overload_and_grows_back() -> None:
    async def scenario() -> list[int]:
        limit = AdaptiveLimit(8, decrease=0.5, cut_interval=0.0)
        for _ in range(8):
            await limit.acquire()
        waiter = asyncio.ensure_future(limit.acquire())
        await asyncio.sleep(0)
        assert not waiter.done() and limit.in_flight == 8
        limit.on_overload()
        assert limit.limit == 4.0
        for _ in range(4):  # back to 4 in flight: the waiter still waits
            limit.release()
        await asyncio.sleep(0)
        assert not waiter.done()
        limit.release()  # 3 in flight < 4: the waiter goes
        await asyncio.sleep(0)
        assert waiter.done() and limit.in_flight == 4
        seen = [int(limit.limit)]
        for _ in range(40):
            limit.on_success()
        seen.append(int(limit.limit))
        limit.on_overload()
        limit.on_overload()
        seen.append(int(limit.limit))
        blocked = [asyncio.ensure_future(limit.acquire()) for _ in range(3)]
        await asyncio.sleep(0)
        limit.close()  # a stopping run lets every waiter go at once
        await asyncio.sleep(0)
        assert all(b.done() for b in blocked)
        return seen

    assert asyncio.run(scenario()) == [4, 8, 2]
    once = AdaptiveLimit(16)  # one burst of refusals counts once
    for _ in range(10):
        once.on_overload()
    assert once.limit == 12.0 and once.cuts == 1


def test_token_bucket_rate() -> None:
    async def take(n: int) -> float:
        bucket = TokenBucket(rate_per_s=20.0, capacity=5.0)
        started = time.monotonic()
        for _ in range(n):
            await bucket.acquire()
        return time.monotonic() - started

    assert asyncio.run(take(5)) < 0.05  # the burst
    assert 0.45 <= asyncio.run(take(15)) <= 1.0  # 10 more at 20/s


def test_rate_limit_validation() -> None:
    with pytest.raises(UserError, match="--rpm"):
        RateLimits(rpm=0)
    assert RateLimits().request_bucket() is None and RateLimits(tpm=600).token_bucket(10) is not None


def test_price_table_builtin_user_file_and_errors(tmp_path: Path) -> None:
    table = load_price_table()
    assert table.lookup("sim:biased") == Price(0.0, 0.0)
    assert table.lookup("openai:gpt-4o-mini") == Price(0.15, 0.60)
    assert table.lookup("openai:gpt-4o-2024-08-06") == Price(2.50, 10.00)
    assert table.lookup("someone:else") is None
    assert Price(1.0, 2.0).cost(1_000_000, 500_000) == pytest.approx(2.0)
    mine = tmp_path / "p.yaml"
    mine.write_text('prices:\n  "openai:gpt-4o-mini": {input: 9, output: 9}\n')
    assert load_price_table(mine).lookup("openai:gpt-4o-mini") == Price(9.0, 9.0)
    for bad in ("prices: [1, 2]", 'prices:\n  "x": {input: 1}', 'prices:\n  "x": {input: a, output: 1}', ": ["):
        mine.write_text(bad)
        with pytest.raises(UserError):
            load_price_table(mine)
    with pytest.raises(UserError, match="not found"):
        load_price_table(tmp_path / "missing.yaml")


def test_batch_prices_are_a_share_of_the_price_or_an_entry_s_own(tmp_path: Path) -> None:
    table = load_price_table()
    assert table.lookup("openai:gpt-4o-mini", batch=True) == Price(0.075, 0.30)
    assert table.lookup("anthropic:claude-haiku-4.5", batch=True) == Price(0.50, 2.50)
    assert table.lookup("sim:biased", batch=True) is None  # no batch share: no batch price
    mine = tmp_path / "p.yaml"
    mine.write_text('batch:\n  "openai:gpt-4o*": 0.25\n'
                    'prices:\n  "openai:gpt-4.1*": {input: 2, output: 8, batch_input: 1.5, batch_output: 3}\n')
    mine_table = load_price_table(mine)
    assert mine_table.lookup("openai:gpt-4.1-mini", batch=True) == Price(1.5, 3.0)  # its own, before any share
    assert mine_table.lookup("openai:gpt-4o-mini", batch=True) == Price(0.0375, 0.15)  # the file's share first
    assert mine_table.lookup("openai:gpt-5", batch=True) == Price(0.625, 5.0)  # the built-in share
    for bad in ('batch: 0.5', 'batch:\n  "x": 2', 'prices:\n  "x": {input: 1, output: 1, batch_input: 1}'):
        mine.write_text(bad)
        with pytest.raises(UserError):
            load_price_table(mine)


def test_redactor_hides_secret_looking_variables(tmp_path: Path) -> None:
    env_file = tmp_path / ".env"
    env_file.write_text("OTHER_TOKEN=tok-1234567890\n")
    redactor = Redactor.from_environment({"OPENAI_API_KEY": "sk-abcdefgh1234", "HOME": "/root/home"}, env_file)
    assert redactor.redact("key sk-abcdefgh1234 and tok-1234567890 in /root/home") == "key *** and *** in /root/home"
    assert redactor.redact(None) is None


def test_budget_holds_a_request_until_it_is_released_and_counts_unknown_bills_at_their_worst() -> None:
    budget = Budget(1.0)
    first, second = budget.hold(0.4), budget.hold(0.4)
    assert first is not None and second is not None and budget.reserved == pytest.approx(0.8)
    assert budget.hold(0.3) is None  # 0.8 reserved + 0.3 > 1.0
    budget.pay(0.25, first)  # first's attempt was billed and is asked again: it keeps its hold
    assert first.paid == 0.25 and not budget.fits(0.0) and budget.fits(-0.05)
    budget.release(second)
    assert budget.reserved == pytest.approx(0.4) and second.amount == 0.0
    budget.may_have_paid(first)  # a timeout: its bill is unknown, so its worst case counts
    assert budget.unsure == pytest.approx(0.4) and not budget.fits(0.0)
    assert Budget(None).hold(1e9) is not None and Budget(None).fits(1e9)
