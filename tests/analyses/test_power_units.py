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
    assert amounts.returncode == 0 and "% of the pair's mean" in amounts.stdout and "% less" not in amounts.stdout


def test_power_corrects_over_the_family_the_marks_are_made_in(tmp_path: Path) -> None:
    """One model's family holds every level-vs-reference row of the gap table (7 in approval_crossed: 2 ages +
    2 genders + 3 races; one language, no amount tables), so power's level is α/7, not α/3 over the canonical
    pairs."""
    from counterbench.analyses.family_size import design_family_size

    study = load_study(APPROVAL)
    table = build_prompts(APPROVAL, {})
    assert design_family_size(table, study) == 7
    done = run_cli("power", APPROVAL, "--out", str(tmp_path / "p.csv"))
    assert done.returncode == 0, done.stderr
    frame = pd.read_csv(tmp_path / "p.csv")
    assert set(frame["family_size"]) == {7} and (frame["alpha"] <= 0.05 / 7 + 1e-12).all()


def test_power_from_a_store_measures_a_yes_no_studys_noise_in_percentage_points(tmp_path: Path) -> None:
    from tests.conftest import run_cli_here

    store = tmp_path / "s.db"
    audit = run_cli_here("audit", APPROVAL, "--model", "sim:examples/sim/approval_crossed.yaml", "--store",
                         str(store), "-o", str(tmp_path / "out"), "--bootstrap", "100")
    assert audit.returncode == 0, audit.stderr
    done = run_cli_here("power", APPROVAL, "--store", str(store), "--out", str(tmp_path / "p.csv"))
    assert done.returncode == 0, done.stderr
    frame = pd.read_csv(tmp_path / "p.csv")
    sigma = float(frame["noise_sd"].iloc[0])
    assert 45 < sigma < 52, sigma  # yes with probability 0.4-0.6: σ ≈ 49 pp, not 0.0
    assert (frame["mde"] > 8).all()  # the report's intervals are ±15-20 pp: no 0.2 pp gap is detectable
