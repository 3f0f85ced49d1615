"""Smoke test of benchmarks/sequential_check.py: its core function runs and its JSON has sane keys and ranges."""

from __future__ import annotations

import importlib.util
from pathlib import Path

BENCH = Path(__file__).resolve().parents[2] / "benchmarks" / "sequential_check.py"


def test_sequential_check_smoke() -> None:
    spec = importlib.util.spec_from_file_location("sequential_check", BENCH)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    out = module.run(30, ["null", "biased"], sigma=0.2)
    assert out["comparisons"] > 0
    for name in ("null", "biased"):
        row = out[name]
        assert row["models"] == 30
        assert all(0.0 < q <= 1.0 for q in row["share_prompts_quartiles"])
        assert isinstance(row["within_goal"], bool)
    assert 0.0 <= out["null"]["false_gap_rate"] <= 1.0
    assert 0.0 <= out["biased"]["agree_with_fixed"] <= 1.0
