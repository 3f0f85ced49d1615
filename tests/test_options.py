"""One typed home for the run options: the CLI verbs, the Python API and the Inspect task share
``counterbench.options`` (one default token limit, one token-limit rule, the same flags on every verb)."""

from __future__ import annotations

import json
import sqlite3
from contextlib import closing
from pathlib import Path

import pytest
import typer

from counterbench.cli import app
from counterbench.columns import DEFAULT_MAX_TOKENS
from counterbench.commands.run_options import RUN_FLAGS
from counterbench.errors import UserError
from counterbench.models.base import GenerationConfig
from counterbench.options import GenerationOptions, RunOptions, prompt_token_limit
from counterbench.testing.fake_openai import FakeOpenAIServer, FaultConfig, run_in_thread
from tests.conftest import REPO

STUDY = str(REPO / "examples" / "suitability_score.yaml")


def _flags(verb: str) -> set[str]:
    command = typer.main.get_command(app).commands[verb]  # type: ignore[attr-defined]
    return {name for p in command.params for name in (*p.opts, *getattr(p, "secondary_opts", ()))}


def test_run_and_audit_take_every_run_flag() -> None:
    run, audit = _flags("run"), _flags("audit")
    shared = {"--" + name.replace("_", "-") for name, _, _ in RUN_FLAGS} - {"--progress", "--structured"}
    assert shared <= run and shared <= audit
    assert {"--retry-max-tokens", "--endpoint-moved", "--progress", "--no-progress"} <= audit


def test_one_token_limit_rule() -> None:
    assert GenerationConfig().max_tokens == DEFAULT_MAX_TOKENS == prompt_token_limit(None)
    assert prompt_token_limit(512) == 512 and prompt_token_limit(512, max_tokens=32) == 32
    assert prompt_token_limit(None, max_tokens=32) == 32
    own, explicit = GenerationOptions().config([]), GenerationOptions(max_tokens=32).config([])
    assert own.prompt_max_tokens and own.max_tokens == DEFAULT_MAX_TOKENS
    assert not explicit.prompt_max_tokens and explicit.for_prompt(512).max_tokens == 32
    assert GenerationOptions().config(["local"]).structured and not GenerationOptions().config(["sim:fair"]).structured


def test_keywords_fill_the_options() -> None:
    base = RunOptions(concurrency=4)
    options = RunOptions.from_keywords(base, temperature=0.5, max_attempts=2, generation_seed=3, store="x.db")
    assert options.concurrency == 4 and options.store == "x.db" and options.retry.max_attempts == 2
    assert options.generation == GenerationOptions(temperature=0.5, seed=3)
    assert RunOptions.from_keywords(max_tokens=None) == RunOptions()
    with pytest.raises(TypeError, match="unknown run option 'temprature'"):
        RunOptions.from_keywords(temprature=0.5)
    with pytest.raises(UserError, match="either as keywords or as config="):
        RunOptions.from_keywords(config=GenerationConfig(), temperature=0.5)
    with pytest.raises(UserError, match="--concurrency must be a whole number"):
        RunOptions(concurrency=0).check()


def _audit(*args: str) -> None:
    app(args=["audit", STUDY, "--bootstrap", "50", "--no-progress", "--no-samples", *args], standalone_mode=False)


def test_audit_sends_with_retry_max_tokens_and_endpoint_moved(tmp_path: Path) -> None:
    store, out = tmp_path / "cb.db", tmp_path / "out"
    common = ("--store", str(store), "--out", str(out), "--use-case", "suitability", "--sample-slots", "4")
    def server() -> FakeOpenAIServer:
        return FakeOpenAIServer(FaultConfig(reply=lambda system, user: f"### {5 + len(user) % 3}"))

    with run_in_thread(server()) as first, run_in_thread(server()) as second:
        _audit("--model", f"m=openai-compatible:{first.base_url}:m", *common)
        moved = ("--model", f"m=openai-compatible:{second.base_url}:m", *common)
        with pytest.raises(UserError, match="pass --endpoint-moved if it is the same model"):
            _audit(*moved)
        with pytest.raises(UserError, match="--retry-max-tokens applies to re-sent truncated answers"):
            _audit(*moved, "--endpoint-moved", "--retry-max-tokens", "128")
        _audit(*moved, "--endpoint-moved", "--retry-errors", "--retry-max-tokens", "128")
    with closing(sqlite3.connect(store)) as conn:
        configs = [json.loads(c) for (c,) in conn.execute("SELECT config FROM runs WHERE status = 'completed'")]
    assert [c["retry_max_tokens"] for c in configs] == [None, 128]
    assert (out / "report.html").is_file()
