"""A prompt's own ``requested_max_tokens`` reaches the server; an explicit ``--max-tokens`` wins over it."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest

import counterbench
from counterbench.errors import UserError
from counterbench.models.base import GenerationConfig
from counterbench.run import run_prompts
from counterbench.run.results import load_results
from counterbench.table_files import write_table
from counterbench.testing.fake_anthropic import FakeAnthropicServer
from counterbench.testing.fake_openai import FakeOpenAIServer, FaultConfig, run_in_thread
from tests.run.conftest import FAST_RETRY, cli_here, fake_model, make_prompts, one_error_line

LIMITS = [512, 16, None, 200, None, 512]


def _table(limits: list[int | None] = LIMITS) -> pd.DataFrame:
    table = make_prompts(len(limits))
    table["requested_max_tokens"] = pd.array(limits, dtype="Int64")
    return table


def _received(server: FakeOpenAIServer | FakeAnthropicServer, field: str = "max_tokens") -> dict[str, int]:
    """The token limit the server received, per user message."""
    return {body["messages"][-1]["content"]: body[field] for body in server.counters.recent_bodies}


def _expected(table: pd.DataFrame, default: int) -> dict[str, int]:
    return {u: default if pd.isna(n) else int(n) for u, n in zip(table["user"], table["requested_max_tokens"],
                                                                 strict=True)}


def test_each_prompt_is_sent_with_its_own_limit_and_the_results_say_so(tmp_path: Path) -> None:
    table = _table()
    store = tmp_path / "s.db"
    with run_in_thread(FakeOpenAIServer(FaultConfig(latency_ms=1))) as server:
        summary = run_prompts(table, [fake_model(server)], store=store, retry=FAST_RETRY)
        assert _received(server) == _expected(table, 64)
        sent = server.counters.requests
        again = run_prompts(table, [fake_model(server)], store=store, retry=FAST_RETRY)  # resumes: nothing re-sent
        assert server.counters.requests == sent and again.totals["sent"] == 0
    assert summary.config_fp == again.config_fp != GenerationConfig().fingerprint()
    rows = load_results(store, include_prompt_text=True).set_index("user")
    assert {u: int(rows.loc[u, "max_tokens"]) for u in table["user"]} == _expected(table, 64)


def test_an_explicit_limit_wins_over_the_prompts_own(tmp_path: Path) -> None:
    table = _table()
    with run_in_thread(FakeOpenAIServer(FaultConfig(latency_ms=1))) as server:
        summary = counterbench.run_prompts(table, [fake_model(server)], store=tmp_path / "s.db", max_tokens=32,
                                           retry=FAST_RETRY)
        assert set(_received(server).values()) == {32}
        server.counters.recent_bodies.clear()
        run_prompts(table, [fake_model(server)], store=tmp_path / "t.db", config=GenerationConfig(max_tokens=24),
                    retry=FAST_RETRY)
        assert set(_received(server).values()) == {24}  # a config of one's own: its limit, unless prompt_max_tokens
    assert summary.config_fp == GenerationConfig(max_tokens=32).fingerprint()  # as before prompts had limits
    assert set(load_results(tmp_path / "s.db")["max_tokens"]) == {32}


def test_the_cli_sends_the_prompts_limits_unless_max_tokens_is_given(tmp_path: Path) -> None:
    table = _table()
    path = write_table(table, tmp_path / "p.parquet")
    with run_in_thread(FakeOpenAIServer(FaultConfig(latency_ms=1))) as server:
        model = fake_model(server)
        done = cli_here("run", "--prompts", str(path), "--model", model, "--store", "a.db", "--no-progress",
                        cwd=tmp_path)
        assert done.returncode == 0, done.stderr
        assert _received(server) == _expected(table, 64)
        server.counters.recent_bodies.clear()
        done = cli_here("run", "--prompts", str(path), "--model", model, "--store", "b.db", "--no-progress",
                        "--max-tokens", "40", cwd=tmp_path)
        assert done.returncode == 0, done.stderr
        assert set(_received(server).values()) == {40}


def test_same_text_with_different_limits_is_two_requests(tmp_path: Path) -> None:
    table = make_prompts(2, user="the same question")
    table["requested_max_tokens"] = [100, 300]
    with run_in_thread(FakeOpenAIServer(FaultConfig(latency_ms=1))) as server:
        run_prompts(table, [fake_model(server)], store=tmp_path / "s.db", retry=FAST_RETRY)
        limits = sorted(body["max_tokens"] for body in server.counters.recent_bodies)
    assert limits == [100, 300]
    assert not load_results(tmp_path / "s.db")["cached"].any()


def test_a_table_without_limits_keeps_the_plain_fingerprint(tmp_path: Path) -> None:
    summary = run_prompts(make_prompts(4), ["sim:fair"], store=tmp_path / "s.db")
    assert summary.config_fp == GenerationConfig().fingerprint()  # stores made before this feature resume


def test_the_anthropic_backend_receives_the_prompts_limit(tmp_path: Path) -> None:
    pytest.importorskip("anthropic", reason="the anthropic SDK (optional extra) is not installed")
    table = _table([300, None])
    key = "sk-test-limits-0000000000000000"
    with run_in_thread(FakeAnthropicServer(FaultConfig(api_key=key, latency_ms=1))) as server:
        run_prompts(table, ["anthropic:claude-haiku-4.5"], store=tmp_path / "s.db", retry=FAST_RETRY,
                    env={"ANTHROPIC_API_KEY": key, "ANTHROPIC_BASE_URL": server.base_url})
        assert _received(server) == _expected(table, 64)


@pytest.mark.parametrize("bad", [0, -5, 2.5, "many"])
def test_a_bad_requested_limit_is_a_user_error(tmp_path: Path, bad: object) -> None:
    table = make_prompts(2)
    table["requested_max_tokens"] = [64, bad]
    with pytest.raises(UserError, match="p_00001: requested_max_tokens must be a whole number"):
        run_prompts(table, ["sim:fair"], store=tmp_path / "s.db")


def test_the_cli_says_a_bad_limit_in_one_line(tmp_path: Path) -> None:
    table = make_prompts(2)
    table["requested_max_tokens"] = ["64", "lots"]
    path = write_table(table, tmp_path / "p.parquet")
    line = one_error_line(cli_here("run", "--prompts", str(path), "--model", "sim:fair", "--no-progress", cwd=tmp_path))
    assert "requested_max_tokens must be a whole number" in line
