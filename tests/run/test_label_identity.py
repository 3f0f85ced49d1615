"""A label names one model: the same label with another model string is refused, in either order."""

from __future__ import annotations

from pathlib import Path

import pytest

from counterbench.errors import UserError
from counterbench.run import run_prompts
from counterbench.run.store import open_store
from counterbench.testing.fake_openai import FakeOpenAIServer, FaultConfig, run_in_thread
from tests.run.conftest import FAST_RETRY, cli_here, make_prompts, one_error_line

KEY = "sk-label-test-1234567890"


@pytest.mark.parametrize(("first", "second"), [("sim:fair", "sim:biased"), ("sim:biased", "sim:fair")])
def test_a_label_reused_for_another_model_string_is_refused_in_both_orders(
        tmp_path: Path, first: str, second: str) -> None:
    store = tmp_path / "s.db"
    prompts = make_prompts(8)
    run_prompts(prompts, [f"a={first}"], store=store)
    with pytest.raises(UserError, match="--same-model") as info:
        run_prompts(prompts, [f"a={second}"], store=store)
    assert first in str(info.value) and second in str(info.value) and "\n" not in str(info.value)
    with open_store(store) as opened:
        assert opened.recorded_for("a", "model_specs") == {first}
        assert opened.query("SELECT COUNT(*) FROM responses")[0][0] == 8  # nothing added by the refused run
    # the user says it is the same model: the stored answers are kept and the run resumes
    same = run_prompts(prompts, [f"a={second}"], store=store, same_model=True)
    assert same.totals["sent"] == 0 and same.models["a"]["already_done"] == 8


def test_an_openai_label_moved_to_another_model_is_refused_before_any_request(tmp_path: Path) -> None:
    store = tmp_path / "s.db"
    prompts = make_prompts(4)
    with run_in_thread(FakeOpenAIServer(FaultConfig(latency_ms=1))) as server:
        env = {"OPENAI_API_KEY": KEY, "OPENAI_BASE_URL": server.base_url}
        run_prompts(prompts, ["g=openai:gpt-a"], store=store, env=env, retry=FAST_RETRY)
        sent = server.counters.requests
        with pytest.raises(UserError, match="openai:gpt-a"):
            run_prompts(prompts.head(2).assign(prompt_id=["n1", "n2"]), ["g=openai:gpt-b"], store=store,
                        env=env, retry=FAST_RETRY)
        assert server.counters.requests == sent


def test_the_cli_refuses_a_reused_label_with_one_line(tmp_path: Path) -> None:
    table = tmp_path / "p.csv"
    make_prompts(4).to_csv(table, index=False)
    ok = cli_here("run", "--prompts", str(table), "-m", "a=sim:fair", "--store", "s.db", cwd=tmp_path)
    assert ok.returncode == 0, ok.stderr
    line = one_error_line(cli_here("run", "--prompts", str(table), "-m", "a=sim:biased", "--store", "s.db",
                                   cwd=tmp_path))
    assert "sim:fair" in line and "sim:biased" in line and "--same-model" in line
    again = cli_here("run", "--prompts", str(table), "-m", "a=sim:biased", "--store", "s.db", "--same-model",
                     cwd=tmp_path)
    assert again.returncode == 0, again.stderr
