"""``--sample-seed``'s help says what the draw of ``--sample-slots`` is made with (not "--seed", which is no
option of the prompt filters), and the draw is that: NumPy's default_rng(SEED) over the sorted slots."""

from __future__ import annotations

import numpy as np

import counterbench
from tests.conftest import REPO, run_cli

STUDY = str(REPO / "examples" / "loan_rate.yaml")


def test_the_help_names_the_generator_and_the_flag() -> None:
    done = run_cli("run", "--help", env={"COLUMNS": "400"})
    assert done.returncode == 0, done.stderr
    text = " ".join(done.stdout.split())
    assert "drawn with --seed" not in text
    assert "drawn at random with --sample-seed" in text
    assert "--sample-seed <int> Seed of --sample-slots' draw: N slots drawn without replacement by NumPy's " \
           "default_rng(SEED)" in text


def test_the_draw_is_the_one_the_help_describes() -> None:
    full = counterbench.prompts(STUDY)
    slots = ["use_case", "language", "axis", "profile_id", "question_variant"]
    keys = full[slots].drop_duplicates().sort_values(slots).reset_index(drop=True)
    chosen = keys.iloc[np.sort(np.random.default_rng(7).choice(len(keys), size=5, replace=False))]
    drawn = counterbench.prompts(STUDY, sample_slots=5, seed=7)
    got = drawn[slots].drop_duplicates().sort_values(slots).reset_index(drop=True)
    assert got.equals(chosen.reset_index(drop=True))
