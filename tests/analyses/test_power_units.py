"""`power` answers in the outcome kind's unit: percentage points for a yes/no study (no "% less"), with the
answers a crossed design puts in one slot counted, and the amount study's figures as before."""

from __future__ import annotations

import math
from pathlib import Path

import pandas as pd
import pytest

from counterbench.analyses.power import design_power
from counterbench.outcomes.units import gap_unit
from counterbench.prompts import build_prompts
from counterbench.studies.registry import load_study
from tests.conftest import run_cli

APPROVAL = "examples/approval_crossed.yaml"


def test_a_label_design_in_percentage_points() -> None:
    study = load_study(APPROVAL)
    table = build_prompts(APPROVAL, {})
    table = table[table["variant"] == "standard"]
    out = design_power(table, study.canonical_pairs, 50.0, unit=gap_unit("label"))
    race = out[(out["axis"] == "race") & (out["use_case"] == "approval")].iloc[0]
    # 36 slots (12 profiles × 3 questions), each with 3 ages × 3 genders = 9 answers per race
    assert race["n_slots"] == 36 and race["unit"] == "percentage points" and math.isnan(race["mde_less"])
    assert race["se"] == pytest.approx(math.sqrt(2) * 50 / math.sqrt(36 * 9))
    assert 3 * race["se"] < race["mde"] < 6 * race["se"]


def test_power_command_speaks_the_kinds_unit(tmp_path: Path) -> None:
    done = run_cli("power", APPROVAL, "--out", str(tmp_path / "p.csv"))
    assert done.returncode == 0, done.stderr
    assert " pp" in done.stdout and "% less" not in done.stdout and "noise 50.0 pp" in done.stdout
    frame = pd.read_csv(tmp_path / "p.csv")
    assert set(frame["unit"]) == {"percentage points"} and frame["mde_less"].isna().all()
    amounts = run_cli("power", "rupeebias", "--preset", "quick")
    assert amounts.returncode == 0 and "% less" in amounts.stdout
