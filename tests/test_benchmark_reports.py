"""Every benchmark prints the load it ran at and whether it met its goal (benchmarks/bench_json.py)."""

from __future__ import annotations

import importlib.util
import json
import re
from pathlib import Path

import pytest

from tests.conftest import REPO

BENCHMARKS = sorted(p for p in (REPO / "benchmarks").glob("*.py") if p.name != "bench_json.py")


def _bench_json():  # type: ignore[no-untyped-def]
    spec = importlib.util.spec_from_file_location("bench_json", REPO / "benchmarks" / "bench_json.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.parametrize("script", BENCHMARKS, ids=[p.stem for p in BENCHMARKS])
def test_each_benchmark_reports_its_load_and_goal(script: Path) -> None:
    text = script.read_text(encoding="utf-8")
    assert "within_goal" in text, f"{script.name} prints no within_goal"
    assert re.search(r"load_average|getloadavg", text), f"{script.name} prints no load average"


def test_finish_adds_the_load_the_goal_and_the_verdict(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    bench = _bench_json()
    before = bench.load_average()
    out = tmp_path / "r.json"
    bench.finish({"figure": 1.5}, before, goal="figure <= 2", within_goal=1.5 <= 2, out=out)
    printed = json.loads(capsys.readouterr().out)
    assert printed == json.loads(out.read_text(encoding="utf-8"))
    assert printed["figure"] == 1.5 and printed["goal"] == "figure <= 2" and printed["within_goal"] is True
    assert len(printed["load_average_before"]) == len(printed["load_average_after"]) == 3
