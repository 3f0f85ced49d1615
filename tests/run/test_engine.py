"""The engine against the fake OpenAI server on 127.0.0.1 and the simulated model."""

from __future__ import annotations

import time
from pathlib import Path

import pandas as pd
import pytest

from counterbench.errors import UserError
from counterbench.models.base import GenerationConfig
from counterbench.options import RetryPolicy
from counterbench.run import run_prompts
from counterbench.run.results import load_results
from counterbench.run.store import open_store
from counterbench.run.summary import format_summary
from counterbench.testing.fake_openai import FakeOpenAIServer, FaultConfig, run_in_thread
from tests.run.conftest import FAST_RETRY, fake_model, make_prompts


def _responses(store: Path) -> pd.DataFrame:
    return load_results(store)


def test_run_stores_every_answer_parsed_and_resumes_without_resending(tmp_path: Path, fake_server) -> None:
    store = tmp_path / "s.db"
    prompts = make_prompts(40)
    model = fake_model(fake_server)
    summary = run_prompts(prompts, [model], store=store, concurrency=8, retry=FAST_RETRY)
    assert summary.status == "completed"
    assert summary.totals["done"] == 40 and summary.totals["sent"] == 40
    results = _responses(store)
    assert len(results) == 40 and results["prompt_id"].is_unique
    assert (results["status"] == "ok").all()
    assert results["value"].between(300_000, 3_000_000).all()
    assert set(results["cgpa"]) == {9.1, 7.2}  # design columns come back
    assert (results["attempts"] == 1).all() and (results["finish_reason"] == "stop").all()
    assert results["input_tokens"].notna().all() and results["latency_ms"].notna().all()
    sent_before = fake_server.counters.requests
    again = run_prompts(prompts, [model], store=store, concurrency=8, retry=FAST_RETRY)
    assert again.totals["sent"] == 0 and again.models[model]["already_done"] == 40
    assert fake_server.counters.requests == sent_before
    assert len(_responses(store)) == 40


def test_a_new_generation_config_is_a_new_set_of_answers(tmp_path: Path) -> None:
    store = tmp_path / "s.db"
    prompts = make_prompts(8)
    run_prompts(prompts, ["sim:fair"], store=store)
    run_prompts(prompts, ["sim:fair"], store=store, config=GenerationConfig(temperature=0.7))
    results = _responses(store)
    assert len(results) == 16
    assert sorted(results["temperature"].unique()) == [0.0, 0.7]
    assert results["simulated"].all()


def test_identical_requests_are_sent_once_unless_no_cache(tmp_path: Path, fake_server) -> None:
    store = tmp_path / "s.db"
    same = make_prompts(6, user="identical text")
    model = fake_model(fake_server)
    start = fake_server.counters.requests
    summary = run_prompts(same, [model], store=store, retry=FAST_RETRY)
    assert fake_server.counters.requests - start == 1
    assert summary.totals["cached"] == 5
    results = _responses(store)
    assert results["cached"].sum() == 5 and results["response"].nunique() == 1
    assert results.loc[results["cached"], "cost_usd"].fillna(0).eq(0).all()
    # a later run with a new prompt id but the same text is served from the store
    later = make_prompts(1, prefix="q", user="identical text")
    run_prompts(later, [model], store=store, retry=FAST_RETRY)
    assert fake_server.counters.requests - start == 1
    # --no-cache sends each one
    other = make_prompts(3, prefix="r", user="identical text")
    run_prompts(other, [model], store=tmp_path / "t.db", no_cache=True, retry=FAST_RETRY)
    assert fake_server.counters.requests - start == 4


def test_retry_errors_resends_only_failed_requests(tmp_path: Path, fake_server) -> None:
    store = tmp_path / "s.db"
    prompts = make_prompts(10)
    prompts.loc[[2, 7], "user"] += " [[fault:400:1]]"  # non-retryable on the first attempt only
    model = fake_model(fake_server)
    first = run_prompts(prompts, [model], store=store, retry=FAST_RETRY)
    assert first.totals["errors"] == 2
    results = _responses(store).set_index("prompt_id")
    assert list(results.index[results["status"] == "error"]) == ["p_00002", "p_00007"]
    assert results.loc["p_00002", "error"].startswith(model) and "HTTP 400" in results.loc["p_00002", "error"]
    start = fake_server.counters.requests
    plain = run_prompts(prompts, [model], store=store, retry=FAST_RETRY)  # errors are not re-sent by default
    assert plain.totals["sent"] == 0 and fake_server.counters.requests == start
    fixed = run_prompts(prompts, [model], store=store, retry_errors=True, retry=FAST_RETRY)
    assert fixed.totals["sent"] == 2 and fake_server.counters.requests - start == 2
    results = _responses(store).set_index("prompt_id")
    assert (results["status"] == "ok").all() and len(results) == 10
    assert results.loc["p_00002", "attempts"] == 2  # attempts add up across runs


def test_thirty_percent_faults_complete_fully_with_retries_counted(tmp_path: Path) -> None:
    config = FaultConfig(latency_ms=2, fault_rate=0.3, hang_s=1.0, retry_after="0.02", seed=7)
    with run_in_thread(FakeOpenAIServer(config)) as server:
        prompts = make_prompts(200)
        started = time.monotonic()
        summary = run_prompts(prompts, [fake_model(server)], store=tmp_path / "s.db", concurrency=16,
                              timeout=0.5, retry=RetryPolicy(max_attempts=12, base_delay=0.01, max_delay=0.1))
        elapsed = time.monotonic() - started
        received = server.counters.requests
    assert summary.status == "completed"
    results = _responses(tmp_path / "s.db")
    assert len(results) == 200 and (results["status"] == "ok").all(), results["status"].value_counts()
    assert summary.totals["retries"] > 30
    assert summary.totals["retries"] == int(results["attempts"].sum()) - 200
    # every retry reached the server (a few may die on a connection the server had just closed); on a
    # busy machine some answers come after the 0.5 s timeout, so the server may see more than the faults
    assert received >= 200 + summary.totals["retries"] - 5
    assert elapsed < 60


def test_retry_after_is_honoured_and_pauses_the_lane(tmp_path: Path) -> None:
    with run_in_thread(FakeOpenAIServer(FaultConfig(retry_after="0.4"))) as server:
        prompts = make_prompts(1, user="slow down [[fault:429:1]]")
        started = time.monotonic()
        run_prompts(prompts, [fake_model(server)], store=tmp_path / "s.db", retry=FAST_RETRY)
        elapsed = time.monotonic() - started
    row = _responses(tmp_path / "s.db").iloc[0]
    assert row["status"] == "ok" and row["attempts"] == 2
    assert elapsed >= 0.4


def test_finish_reasons_timeouts_and_empty_answers(tmp_path: Path, fake_server) -> None:
    prompts = make_prompts(6)
    prompts.loc[0, "user"] += " [[fault:length]]"
    prompts.loc[1, "user"] += " [[fault:content_filter]]"
    prompts.loc[2, "user"] += " [[fault:hang:1]]"
    prompts.loc[3, "user"] += " [[fault:empty:1]]"
    prompts.loc[4, "user"] += " [[fault:malformed:2]]"
    prompts.loc[5, "user"] += " [[fault:empty]]"
    summary = run_prompts(prompts, [fake_model(fake_server)], store=tmp_path / "s.db", timeout=0.3, retry=FAST_RETRY)
    rows = _responses(tmp_path / "s.db").set_index("prompt_id")
    assert rows.loc["p_00000", "finish_reason"] == "length"
    assert rows.loc["p_00000", "status"] == "truncated" and rows.loc["p_00000", "response"] == "### 12"
    assert pd.isna(rows.loc["p_00000", "value"])  # a cut answer never counts as 12
    assert rows.loc["p_00001", "finish_reason"] == "content_filter"
    assert rows.loc["p_00001", "status"] == "filtered"
    assert rows.loc["p_00002", "status"] == "ok" and rows.loc["p_00002", "attempts"] == 2  # timed out once
    assert rows.loc["p_00003", "status"] == "ok" and rows.loc["p_00003", "attempts"] == 2  # empty once
    assert rows.loc["p_00004", "status"] == "ok" and rows.loc["p_00004", "attempts"] == 3
    assert rows.loc["p_00005", "status"] == "empty" and rows.loc["p_00005", "attempts"] == FAST_RETRY.max_attempts
    assert summary.totals["unfinished"] == 3


class _CutShortServer(FakeOpenAIServer):
    """Cuts answers to prompts marked ``[[cut]]`` off (``finish_reason: length``) below 100 tokens."""

    def _answer(self, payload: dict[str, object], system: str, user: str, *, finish_reason: str,
                content: object = ...) -> object:
        if "[[cut]]" in user and int(payload.get("max_tokens") or 0) < 100:  # type: ignore[call-overload]
            return super()._answer(payload, system, user, finish_reason="length", content="### 12")
        return super()._answer(payload, system, user, finish_reason=finish_reason, content=content)


def test_retry_errors_resends_truncated_answers_with_a_larger_token_limit(tmp_path: Path) -> None:
    with run_in_thread(_CutShortServer(FaultConfig(latency_ms=1))) as server:
        _truncated_then_retried(tmp_path / "s.db", server)


def _truncated_then_retried(store: Path, fake_server: FakeOpenAIServer) -> None:
    from counterbench.analyses.health import parse_health
    from counterbench.analyses.prepare import prepare_results
    from counterbench.analyses.profiles import get_profile
    from counterbench.report.sections_consistency import unfinished_note

    prompts = make_prompts(8)
    prompts.loc[[1, 6], "user"] += " [[cut]]"  # cut off unless the limit is at least 100 tokens
    prompts.loc[3, "user"] += " [[fault:empty:8]]"  # blank on every attempt of the first run
    model = fake_model(fake_server)
    run_prompts(prompts, [model], store=store, retry=FAST_RETRY)
    first = _responses(store).set_index("prompt_id")
    assert first["status"].value_counts().to_dict() == {"ok": 5, "truncated": 2, "empty": 1}
    prepared = prepare_results(first.reset_index(), get_profile("default"))
    assert len(prepared.values) == 5  # truncated and empty answers never enter an analysis
    health = parse_health(prepared.responses)  # ... and parse health counts them, each by its status
    assert len(health) == 1
    row = health.iloc[0]
    assert (row["n"], row["n_ok"], row["n_truncated"], row["n_filtered"], row["n_empty"]) == (8, 5, 2, 0, 1)
    assert row["unfinished_share"] == pytest.approx(3 / 8)
    assert row["ok_share"] + row["refused_share"] + row["unparseable_share"] + row["unfinished_share"] == 1.0
    note = unfinished_note(health)
    assert note is not None and "2 cut off at the token limit (truncated), 1 empty" in note
    assert "--retry-errors" in note and "filtered" not in note
    start = fake_server.counters.requests
    plain = run_prompts(prompts, [model], store=store, retry=FAST_RETRY)
    assert plain.totals["sent"] == 0 and fake_server.counters.requests == start
    assert "--retry-errors" in format_summary(plain)
    with pytest.raises(UserError, match="above --max-tokens"):
        run_prompts(prompts, [model], store=store, retry_errors=True, retry_max_tokens=10)
    again = run_prompts(prompts, [model], store=store, retry=FAST_RETRY, retry_errors=True, retry_max_tokens=256)
    assert again.totals["sent"] == 3 and fake_server.counters.requests - start == 3
    sent = list(fake_server.counters.recent_bodies)[-3:]
    limits = sorted(body.get("max_tokens", body.get("max_completion_tokens")) for body in sent)
    assert limits == [64, 256, 256]  # the larger limit only for the truncated ones
    final = _responses(store)
    assert (final["status"] == "ok").all() and len(final) == 8


def test_max_cost_stops_before_overspending_and_resumes(tmp_path: Path, fake_server) -> None:
    prices = tmp_path / "prices.yaml"
    prices.write_text('prices:\n  "openai-compatible:*": {input: 1000, output: 1000}\n')
    prompts = make_prompts(30)
    model = fake_model(fake_server)
    summary = run_prompts(prompts, [model], store=tmp_path / "s.db", prices=prices, max_cost=0.5,
                          concurrency=4, retry=FAST_RETRY)
    assert summary.status == "max_cost"
    spent = summary.totals["cost_usd"]
    assert 0 < spent <= 0.5
    stored = _responses(tmp_path / "s.db")
    assert 0 < len(stored) < 30 and stored["cost_usd"].sum() == pytest.approx(spent)
    more = run_prompts(prompts, [model], store=tmp_path / "s.db", prices=prices, max_cost=100, retry=FAST_RETRY)
    assert more.status == "completed" and len(_responses(tmp_path / "s.db")) == 30


def test_max_cost_needs_a_price(tmp_path: Path, fake_server) -> None:
    with pytest.raises(UserError, match="needs a price"):
        run_prompts(make_prompts(2), [fake_model(fake_server)], store=tmp_path / "s.db", max_cost=1.0)
    assert not (tmp_path / "s.db").exists()


def test_rpm_limit_spaces_requests(tmp_path: Path, fake_server) -> None:
    started = time.monotonic()
    run_prompts(make_prompts(12), [fake_model(fake_server)], store=tmp_path / "s.db", rpm=300, concurrency=12)
    assert time.monotonic() - started >= 1.3  # 300/min = 5/s, a burst of one second: 5 at once, 7 more in 1.4 s


def test_unreachable_server_is_one_user_error_and_stores_no_errors(tmp_path: Path) -> None:
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    model = f"openai-compatible:http://127.0.0.1:{port}/v1:fake"
    with pytest.raises(UserError, match="could not use this model") as info:
        run_prompts(make_prompts(5), [model], store=tmp_path / "s.db",
                    retry=RetryPolicy(max_attempts=3, base_delay=0.01))
    assert "\n" not in str(info.value)
    assert list(tmp_path.iterdir()) == []  # a new store that got nothing is not left behind
    run_prompts(make_prompts(2), ["sim:fair"], store=tmp_path / "s.db")
    with pytest.raises(UserError, match="could not use this model"):
        run_prompts(make_prompts(5), [model], store=tmp_path / "s.db",
                    retry=RetryPolicy(max_attempts=3, base_delay=0.01))
    with open_store(tmp_path / "s.db") as store:  # an existing store keeps what it had, and the failed run
        assert store.query("SELECT count(*) FROM responses")[0][0] == 2
        assert store.query("SELECT status FROM runs ORDER BY run_id")[-1][0] == "failed"


def test_rejected_key_stops_the_run(tmp_path: Path) -> None:
    with (
        run_in_thread(FakeOpenAIServer(FaultConfig(api_key="right-key-123456"))) as server,
        pytest.raises(UserError, match="credentials"),
    ):
        run_prompts(make_prompts(5), [fake_model(server)], store=tmp_path / "s.db", retry=FAST_RETRY,
                    env={"OPENAI_COMPATIBLE_API_KEY": "wrong-key-abcdef"})


@pytest.mark.parametrize("bad", [{"concurrency": 0}, {"concurrency": -3}, {"timeout": 0}, {"max_cost": -1},
                                 {"rpm": 0}, {"tpm": -5}, {"parse_profile": "nope"}])
def test_bad_settings_are_user_errors(tmp_path: Path, bad: dict[str, object]) -> None:
    with pytest.raises(UserError):
        run_prompts(make_prompts(2), ["sim:fair"], store=tmp_path / "s.db", **bad)
    assert not (tmp_path / "s.db").exists()


def test_unknown_model_and_bad_tables(tmp_path: Path) -> None:
    with pytest.raises(UserError, match="unknown model"):
        run_prompts(make_prompts(2), ["gpt-4o"], store=tmp_path / "s.db")
    with pytest.raises(UserError, match="lacks column"):
        run_prompts(make_prompts(2).drop(columns=["user"]), ["sim:fair"], store=tmp_path / "s.db")
    dup = pd.concat([make_prompts(2), make_prompts(1)])
    with pytest.raises(UserError, match="repeats prompt_id"):
        run_prompts(dup, ["sim:fair"], store=tmp_path / "s.db")


def test_changed_prompt_text_under_the_same_id_is_refused(tmp_path: Path) -> None:
    run_prompts(make_prompts(3), ["sim:fair"], store=tmp_path / "s.db")
    changed = make_prompts(3, user="new wording {i}")
    with pytest.raises(UserError, match="text has changed"):
        run_prompts(changed, ["sim:fair"], store=tmp_path / "s.db")
    run_prompts(changed, ["sim:biased"], store=tmp_path / "s.db")  # another model may use the new text
    results = _responses(tmp_path / "s.db")
    assert len(results) == 6


def test_several_models_run_side_by_side(tmp_path: Path, fake_server) -> None:
    summary = run_prompts(make_prompts(12), ["sim:fair", "sim:biased", fake_model(fake_server)],
                          store=tmp_path / "s.db", concurrency=3, retry=FAST_RETRY)
    assert summary.totals["done"] == 36
    results = _responses(tmp_path / "s.db")
    assert results.groupby("model").size().to_dict() == {m: 12 for m in summary.models}
    assert not results.loc[results["model"].str.startswith("openai"), "simulated"].any()


def test_store_failure_mid_run_loses_nothing(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from counterbench.run.rescue import import_rescue_file
    from counterbench.run.store import Store

    original = Store.write_responses
    calls = {"n": 0}

    def flaky(self: Store, rows: list[tuple[object, ...]], prompts: list[tuple[object, ...]] = ()) -> None:  # type: ignore[assignment]
        calls["n"] += 1
        if calls["n"] > 2:
            raise UserError(f"cannot write store {self.path}: disk I/O error")
        original(self, rows, prompts)

    monkeypatch.setattr(Store, "write_responses", flaky)
    store = tmp_path / "s.db"
    sim = tmp_path / "slow.yaml"
    sim.write_text("extends: fair\nlatency_ms: 2\n")
    with pytest.raises(UserError, match="answers not in the store are in") as info:
        run_prompts(make_prompts(300), [f"sim:{sim}"], store=store, batch_rows=20, concurrency=4)
    monkeypatch.undo()
    rescue = next(tmp_path.glob("s.db.unsaved-*.jsonl"))
    assert str(rescue) in str(info.value)
    assert not list(tmp_path.glob("*.part"))
    stored = len(_responses(store))
    rescued = len(rescue.read_text().splitlines())
    assert 0 < stored <= 40 and rescued > 0
    assert f"the {rescued:,} answers not in the store" in str(info.value)
    import_rescue_file(rescue, store)
    assert len(_responses(store)) == stored + rescued
    summary = run_prompts(make_prompts(300), [f"sim:{sim}"], store=store)
    assert summary.totals["sent"] == 300 - stored - rescued
    assert len(_responses(store)) == 300


def test_engine_adds_its_own_timer_only_when_the_backend_does_not_enforce_the_timeout() -> None:
    from types import SimpleNamespace

    from counterbench.run.engine import _TIMEOUT_GRACE_S, Engine, EngineSettings

    def deadline(backend: object, run_timeout: float) -> float | None:
        engine = Engine([], config=GenerationConfig(), settings=EngineSettings(timeout_s=run_timeout),
                        writer=None, parser=None, redactor=None, display=None, run_id=0)  # type: ignore[arg-type]
        return engine._timeout_for(backend)  # type: ignore[arg-type]

    strict = SimpleNamespace(enforces_timeout=True, timeout_s=5.0)
    assert deadline(strict, 60.0) is None  # the HTTP client's own total timeout is the stricter one
    assert deadline(strict, 2.0) == 2.0 + _TIMEOUT_GRACE_S  # the run asked for less than the backend enforces
    assert deadline(SimpleNamespace(timeout_s=5.0), 60.0) == 60.0 + _TIMEOUT_GRACE_S  # e.g. the embedded model
    assert deadline(SimpleNamespace(enforces_timeout=True), 60.0) == 60.0 + _TIMEOUT_GRACE_S
