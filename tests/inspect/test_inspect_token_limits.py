"""The Inspect task path sends each prompt's own token limit, as counterbench's backends do.

Real Inspect evals (in this process, through Inspect's ``openai-api`` provider) against the fake
OpenAI-protocol server: the STEM study's ranking prompts request 16 tokens and its generation
prompts 512, RupeeBias prompts request none (64); ``-T max_tokens=N`` and ``inspect eval
--max-tokens N`` send N to every prompt instead. The imported log says which limit each answer got.
"""

from __future__ import annotations

import importlib.util
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pandas as pd
import pytest

from counterbench.prompts import PromptFilters, build_prompts
from counterbench.testing.fake_openai import FakeOpenAIServer, FaultConfig, run_in_thread
from tests.conftest import run_cli

if importlib.util.find_spec("inspect_ai") is None:  # found, not imported: collection stays light
    pytest.skip("needs inspect-ai: pip install 'counterbench[inspect]'", allow_module_level=True)

MODEL = "openai-api/fake/fake-model"
#: the ``-T`` options of three small tasks: 3 STEM generation prompts (512 tokens each), 3 STEM ranking
#: prompts (16) and 12 RupeeBias prompts (no limit of their own: 64)
GENERATION = {"study": "stem", "use_case": "generation", "identifier": "US-1-baseline,US-1-race-White,US-1-race-Asian",
              "sample_slots": 1}
RANKING = {"study": "stem", "use_case": "ranking", "identifier": "US-S001,US-S002,US-S003", "sample_slots": 1}
RUPEEBIAS = {"use_case": "salary_estimation", "language": "en", "axis": "Religion", "sample_slots": 1}


@pytest.fixture(scope="module")
def fake_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    """One server for the module: Inspect keeps the model (and its base URL) of a name for the process."""
    with run_in_thread(FakeOpenAIServer(FaultConfig(latency_ms=1))) as srv, pytest.MonkeyPatch.context() as patch:
        patch.setenv("FAKE_API_KEY", "not-a-key")
        patch.setenv("FAKE_BASE_URL", srv.base_url)
        patch.chdir(tmp_path_factory.mktemp("inspect-cwd"))
        yield srv


@pytest.fixture()
def server(fake_server: Any) -> Any:
    fake_server.counters.recent_bodies.clear()
    return fake_server


def _eval(tasks: list[Any], log_dir: Path, **options: Any) -> None:
    from inspect_ai import eval as inspect_eval

    # a failing request fails the eval at once (no minutes of retries)
    logs = inspect_eval(tasks, model=MODEL, log_dir=str(log_dir), display="none", max_connections=8, max_retries=0,
                        timeout=30, **options)
    assert [log.status for log in logs] == ["success"] * len(tasks)


def _received(server: Any) -> dict[str, int]:
    """The token limit the server received, per user message."""
    return {body["messages"][-1]["content"]: body["max_tokens"] for body in server.counters.recent_bodies}


def _requested(options: dict[str, Any]) -> dict[str, int]:
    """Each prompt's own limit (64 where it requests none), per user message, from the prompt table."""
    filters = {k: v.split(",") if isinstance(v, str) else v for k, v in options.items() if k != "study"}
    table = build_prompts(options.get("study", "rupeebias"), PromptFilters(**filters))
    limits = table["requested_max_tokens"] if "requested_max_tokens" in table else pd.Series([None] * len(table))
    return {str(u): 64 if pd.isna(n) else int(n) for u, n in zip(table["user"], limits, strict=True)}


def test_each_sample_is_sent_with_its_prompts_own_limit_and_the_import_says_so(server: Any, tmp_path: Path) -> None:
    from counterbench.inspect_ext._registry import STUDY_TASKS
    from counterbench.inspect_ext.tasks import study

    _eval([study(**GENERATION), study(**RANKING), STUDY_TASKS["rupeebias"](**RUPEEBIAS)], tmp_path / "logs")
    expected = {**_requested(GENERATION), **_requested(RANKING), **_requested(RUPEEBIAS)}
    assert len(expected) == 3 + 3 + 12
    assert _received(server) == expected
    assert sorted(set(expected.values())) == [16, 64, 512]

    done = run_cli("import", "--inspect-log", str(tmp_path / "logs"), "--store", str(tmp_path / "s.db"))
    assert done.returncode == 0, done.stderr
    from counterbench.run.results import load_results

    results = load_results(tmp_path / "s.db")
    limits = results.groupby("use_case")["max_tokens"].agg(lambda s: sorted(set(s)))
    assert limits.to_dict() == {"generation": [512], "ranking": [16], "salary_estimation": [64]}


def test_a_task_limit_or_an_eval_limit_goes_to_every_sample(server: Any, tmp_path: Path) -> None:
    from counterbench.inspect_ext.tasks import study

    _eval([study(**RANKING, max_tokens=40), study(**GENERATION, max_tokens=40)], tmp_path / "task")  # -T max_tokens
    assert set(_received(server).values()) == {40} and len(_received(server)) == 6
    server.counters.recent_bodies.clear()
    _eval([study(**RANKING), study(**GENERATION)], tmp_path / "eval", max_tokens=24)  # inspect eval --max-tokens 24
    assert set(_received(server).values()) == {24} and len(_received(server)) == 6

    done = run_cli("import", "--inspect-log", str(tmp_path / "eval"), "--store", str(tmp_path / "s.db"))
    assert done.returncode == 0, done.stderr
    from counterbench.run.results import load_results

    assert set(load_results(tmp_path / "s.db")["max_tokens"]) == {24}
