"""Parse health (paper App. L) and stable seeding (DESIGN: never Python's hash())."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from statsmodels.stats.proportion import proportion_confint

from counterbench.stats import derive_rng, parse_health, seeding, stable_seed


def test_parse_health_hand_worked() -> None:
    # model a: 4 ok, 1 refused, 1 unparseable, 2 errors → 6 responses, 4 with a value (66.67 %),
    # 1 refused (16.67 %); errors only counted. model b: 2 ok → 100 %.
    frame = pd.DataFrame(
        {
            "model": ["a"] * 8 + ["b"] * 2,
            "status": ["ok"] * 4 + ["refused", "unparseable", "error", "error"] + ["ok", "ok"],
            "value": [1.0] * 4 + [np.nan] * 4 + [2.0, 3.0],
        }
    )
    out = parse_health(frame, ["model"]).set_index("model")
    a = out.loc["a"]
    assert (a["n_rows"], a["n_responses"], a["n_value"], a["n_refused"], a["n_unparseable"], a["n_error"]) == (
        8, 6, 4, 1, 1, 2,
    )  # fmt: skip
    assert a["pct_value"] == pytest.approx(400 / 6) and a["pct_refused"] == pytest.approx(100 / 6)
    low, high = proportion_confint(4, 6, method="wilson")
    assert (a["pct_value_low"], a["pct_value_high"]) == pytest.approx((low * 100, high * 100), abs=1e-9)
    assert out.loc["b", "pct_value"] == 100.0
    with_errors = parse_health(frame, ["model"], include_errors=True).set_index("model")
    assert with_errors.loc["a", "pct_value"] == pytest.approx(50.0)
    overall = parse_health(frame, [])
    assert overall.loc[0, "n_value"] == 6 and overall.loc[0, "n_responses"] == 8


def test_parse_health_counts_answers_that_did_not_finish() -> None:
    # 2 ok, 3 truncated, 1 filtered, 1 empty, 1 error: the unfinished ones are answers (denominator 7)
    frame = pd.DataFrame({
        "model": ["a"] * 8,
        "status": ["ok", "ok", "truncated", "truncated", "truncated", "filtered", "empty", "error"],
        "value": [1.0, 2.0] + [np.nan] * 6,
    })
    a = parse_health(frame, ["model"]).set_index("model").loc["a"]
    counts = ("n_rows", "n_responses", "n_value", "n_truncated", "n_filtered", "n_empty", "n_error")
    assert tuple(a[c] for c in counts) == (8, 7, 2, 3, 1, 1, 1)
    assert a["pct_value"] == pytest.approx(200 / 7)


def test_stable_seed_is_stable_and_distinguishes_names() -> None:
    seed = stable_seed("gpt-4o-mini", "en", "Caste", base_seed=7)
    assert 0 <= seed < 2**63
    assert seed == stable_seed("gpt-4o-mini", "en", "Caste", base_seed=7)
    assert seed != stable_seed("gpt-4o-mini", "en", "Caste", base_seed=8)
    assert stable_seed("a", "bc") != stable_seed("ab", "c")
    assert stable_seed(1) != stable_seed("1") != stable_seed(1.0)
    assert stable_seed(np.int64(3)) == stable_seed(3)
    # pinned value: changing the encoding would silently change every published CI
    assert stable_seed("rupeebias", "gpt-4o-mini", "en", "Caste", base_seed=0) == 5161835200057115744
    # another process with another hash salt derives the same seed (Python's hash() would not)
    path = Path(seeding.__file__)
    code = (
        f"import importlib.util as u; s = u.spec_from_file_location('seeding', {str(path)!r}); "
        "m = u.module_from_spec(s); s.loader.exec_module(m); "
        "print(m.stable_seed('gpt-4o-mini', 'en', 'Caste', base_seed=7))"
    )
    env = {**os.environ, "PYTHONHASHSEED": "12345"}
    other = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, check=True)
    assert int(other.stdout.strip()) == seed
    a, b = derive_rng("x", base_seed=1), derive_rng("x", base_seed=1)
    assert a.random() == b.random()
