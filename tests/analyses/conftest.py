"""Fixtures for the analysis tests: hand-made results tables and a store filled by ``sim:`` models."""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest

from counterbench.prompts import prompts
from counterbench.run import run_prompts

ROW_DEFAULTS: dict[str, Any] = {
    "model": "m",
    "simulated": False,
    "use_case": "salary_estimation",
    "language": "en",
    "axis": "Religion",
    "question_variant": 1,
    "variant": "standard",
    "status": "ok",
    "out_of_range": False,
}


def results_frame(rows: Iterable[Mapping[str, Any]]) -> pd.DataFrame:
    """A results table from partial rows (defaults above; ``value`` NaN unless given)."""
    records = []
    for i, row in enumerate(rows):
        record = {**ROW_DEFAULTS, "prompt_id": f"p{i:05d}", "value": np.nan, **row}
        records.append(record)
    return pd.DataFrame.from_records(records)


def grid(values: Callable[..., float], **levels: Iterable[Any]) -> list[dict[str, Any]]:
    """Rows for every combination of ``levels`` (column -> values), ``value`` = values(**combination)."""
    names = list(levels)
    rows = []
    for combo in itertools.product(*(list(v) for v in levels.values())):
        row = dict(zip(names, combo, strict=True))
        row["value"] = values(**row)
        rows.append(row)
    return rows


@pytest.fixture(scope="session")
def sim_store(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """``sim:biased`` and ``sim:fair`` on salary estimation and customer-side pricing, both languages
    (every identifier, profile and question variant: 12,528 prompts per model), run by the engine."""
    table = prompts("rupeebias", use_case=["salary_estimation", "service_pricing_customer"])
    store = tmp_path_factory.mktemp("sim") / "sim.db"
    summary = run_prompts(table, ["sim:biased", "sim:fair"], store=store, handle_signals=False)
    assert summary.complete
    return store
