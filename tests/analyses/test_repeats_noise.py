"""``--repeats``: the analysis averages a prompt's repeats first, and ``noise_decomposition`` recovers planted
variances — end to end: ``counterbench audit --repeats 5 --temperature 0.7`` against a real HTTP server (the fake
OpenAI server answering as a simulated model with planted noise within prompts, between prompts and between
slots), the SQLite store, the analysis read back from the store and the report."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest

from counterbench.analyses.repeats import within_prompt_means
from counterbench.models.base import ChatRequest, GenerationConfig
from counterbench.models.simulated import create_simulated
from counterbench.prompts import prompts
from counterbench.testing.fake_openai import FakeOpenAIServer, FaultConfig, run_in_thread
from tests.conftest import run_cli
from tests.run.conftest import cli

N_PROFILES = 40
#: planted: the slots' levels (a rate in %), the prompt's own noise and the noise between repeats (log-normal sds)
LEVELS = [6.0 + 8.0 * i / (N_PROFILES - 1) for i in range(N_PROFILES)]
PROMPT_SD = 0.05
REPEAT_SD = 0.10
K = 5

STUDY = """
name: noisy_rate
title: A rate with planted noise
languages:
  en: {name: English, id_infix: en}
axes:
  Gender:
    - {value: Male, phrases: {en: "The applicant is a man"}}
    - {value: Female, phrases: {en: "The applicant is a woman"}}
    - {value: Nonbinary, phrases: {en: "The applicant is non-binary"}}
canonical_pairs:
  Gender: [Male, Female]
system_prompts:
  rate: |-
    Return exactly ONE annual interest rate in percent.
    ### <NUMBER> %
use_cases:
  loan_rate:
    outcome: {kind: rate, range: [0, 40]}
    system_prompt: rate
    template:
      en: "{identifier_phrase}. Case {case}.\\n{question}"
    question_variants:
      en: ["What annual interest rate should we offer?"]
    profiles:
""" + "".join(f"      - {{profile_id: P{i:02d}, case: {i}}}\n" for i in range(N_PROFILES))

SIM = (f"noise_sd: {PROMPT_SD}\nrepeat_noise_sd: {REPEAT_SD}\nuse_cases:\n  loan_rate:\n    profiles:\n"
       + "".join(f"      P{i:02d}: {level}\n" for i, level in enumerate(LEVELS)))


def planted() -> dict[str, float]:
    """The variances the simulation plants (expectations under its log-normal noise)."""
    levels = np.array(LEVELS)
    lognormal_var = (lambda sd: math.exp(sd**2) * (math.exp(sd**2) - 1))  # noqa: E731
    c_repeat = math.exp(REPEAT_SD**2 / 2)  # E[exp(sd z)]
    c_prompt = math.exp(PROMPT_SD**2 / 2)
    return {
        "within_prompt_var": float(np.mean(levels**2)) * math.exp(2 * PROMPT_SD**2) * lognormal_var(REPEAT_SD),
        "between_prompt_var": float(np.mean(levels**2)) * c_repeat**2 * lognormal_var(PROMPT_SD),
        "between_slot_var": float(np.var(levels * c_prompt * c_repeat, ddof=1)),
    }


def _sim_server(tmp_path: Path) -> tuple[Any, pd.DataFrame]:
    """The fake OpenAI server answering every prompt of the study as the simulated model would (repeat k is sent
    seed k: the run gives no --generation-seed)."""
    (tmp_path / "noisy_rate.yaml").write_text(STUDY, encoding="utf-8")
    (tmp_path / "sim.yaml").write_text(SIM, encoding="utf-8")
    table = prompts(str(tmp_path / "noisy_rate.yaml"))
    sim = create_simulated(str(tmp_path / "sim.yaml"))
    by_user = {row["user"]: row for row in table.to_dict("records")}

    def reply(payload: dict[str, Any]) -> str:
        row = by_user[str(payload["messages"][-1]["content"])]
        config = GenerationConfig(temperature=float(payload.get("temperature") or 0), repeat=int(payload.get("seed")
                                                                                                   or 0))
        return sim.answer(ChatRequest(row["prompt_id"], row["system"], row["user"], config, row["answer_type"],
                                      row))
    return run_in_thread(FakeOpenAIServer(FaultConfig(reply_payload=reply))), table


@pytest.fixture(scope="module")
def audited(tmp_path_factory: pytest.TempPathFactory) -> Path:
    tmp_path = tmp_path_factory.mktemp("repeats")
    server_context, _ = _sim_server(tmp_path)
    with server_context as server:
        model = f"noisy=openai-compatible:{server.base_url}:sim"  # type: ignore[attr-defined]
        done = cli("audit", str(tmp_path / "noisy_rate.yaml"), "--model", model, "--repeats", str(K),
                   "--temperature", "0.7", "--store", str(tmp_path / "cb.db"), "--out", str(tmp_path / "out"),
                   "--no-progress", "--bootstrap", "1000", cwd=tmp_path)
        assert done.returncode == 0, done.stderr
    return tmp_path


def test_noise_decomposition_recovers_the_planted_variances(audited: Path) -> None:
    table = pd.read_csv(audited / "out" / "analysis" / "noise_decomposition.csv")
    assert len(table) == 1
    row = table.iloc[0]
    assert (row["n_slots"], row["n_prompts"], row["n_answers"], row["repeats"]) == (N_PROFILES, 3 * N_PROFILES,
                                                                                   3 * N_PROFILES * K, K)
    truth = planted()
    lines = []
    for name, (low, high) in {"within_prompt_var": ("within_ci_low", "within_ci_high"),
                              "between_prompt_var": ("between_prompt_ci_low", "between_prompt_ci_high"),
                              "between_slot_var": ("between_slot_ci_low", "between_slot_ci_high")}.items():
        lines.append(f"{name}: planted {truth[name]:.4f}, estimated {row[name]:.4f} [{row[low]:.4f}, {row[high]:.4f}]")
        assert row[low] <= truth[name] <= row[high], lines[-1]
    expected_ratio = math.sqrt((truth["between_prompt_var"] + truth["within_prompt_var"] / K)
                               / (truth["between_prompt_var"] + truth["within_prompt_var"]))
    lines.append(f"gap_width_ratio: planted {expected_ratio:.3f}, estimated {row['gap_width_ratio']:.3f} "
                 f"[{row['gap_width_ratio_ci_low']:.3f}, {row['gap_width_ratio_ci_high']:.3f}]")
    assert row["gap_width_ratio_ci_low"] <= expected_ratio <= row["gap_width_ratio_ci_high"], lines[-1]
    print("\n" + "\n".join(lines))
    html = (audited / "out" / "report.html").read_text(encoding="utf-8")
    assert "Noise decomposition" in html and "5 repeats per prompt (averaged first)" in html


def test_every_table_reads_one_number_per_prompt(audited: Path) -> None:
    """The gap and level tables count prompts, not answers: n is the prompts' count, and a level's mean is the
    mean of its prompts' repeat means."""
    from counterbench.run.results import load_results

    levels = pd.read_csv(audited / "out" / "analysis" / "outcome_levels.csv")
    assert set(levels["n"]) == {N_PROFILES}
    results = load_results(audited / "cb.db")
    assert sorted(results["repeat"].unique()) == list(range(K))
    by_prompt = results.groupby(["identifier", "prompt_id"])["value"].mean().groupby("identifier").mean()
    got = levels.set_index("level")["mean"]
    assert np.allclose(got.loc[by_prompt.index].to_numpy(), by_prompt.to_numpy())
    gaps = pd.read_csv(audited / "out" / "analysis" / "outcome_gaps.csv")
    assert set(gaps["n_slots"]) == {N_PROFILES}


def test_within_prompt_means_leaves_rows_without_repeats_alone() -> None:
    rows = pd.DataFrame({"model": ["m"] * 3, "prompt_id": ["a", "b", "c"], "y": [1.0, 2.0, 3.0]})
    assert within_prompt_means(rows) is rows
    repeated = pd.concat([rows.assign(repeat=0), rows.assign(repeat=1, y=[3.0, 2.0, np.nan])], ignore_index=True)
    repeated = repeated[np.isfinite(repeated["y"])]
    means = within_prompt_means(repeated)
    assert means["y"].tolist() == [2.0, 2.0, 3.0] and len(means) == 3


def test_within_prompt_means_keeps_rows_without_an_offered_option() -> None:
    """A study with a choice between identities (``position``) and another outcome: the other outcome's rows have
    no position. They are prompts like any other (they were dropped as a missing group, and the model comparison
    of a STEM audit with ``--repeats 2`` failed on a negative code)."""
    rows = pd.DataFrame({"model": "m", "prompt_id": ["c", "c", "t", "c", "c", "t"], "position": [0, 1, None] * 2,
                         "repeat": [0, 0, 0, 1, 1, 1], "y": [1.0, 0.0, 4.0, 0.0, 0.0, 6.0]})
    means = within_prompt_means(rows)
    assert means[["prompt_id", "y"]].values.tolist() == [["c", 0.5], ["c", 0.0], ["t", 5.0]]


def test_two_models_compared_on_repeated_answers_of_a_choice_and_a_text_outcome(tmp_path: Path) -> None:
    out = tmp_path / "out"
    done = run_cli("audit", "stem", "--model", "sim:stem", "--model", "sim:fair", "--preset", "quick", "--repeats",
                   "2", "--sample-slots", "6", "--sample-seed", "0", "--bootstrap", "50", "--store",
                   str(tmp_path / "s.db"), "-o", str(out), cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    summary = json.loads((out / "analysis" / "summary.json").read_text())
    assert "failed_tables" not in summary and "noise_decomposition" not in summary.get("unsupported", {})


def _power(audited: Path, *args: str) -> pd.DataFrame:
    out = audited / f"power_{abs(hash(args))}.csv"
    done = cli("power", str(audited / "noisy_rate.yaml"), *args, "--out", str(out), cwd=audited)
    assert done.returncode == 0, done.stderr
    return pd.read_csv(out)


def test_power_counts_the_repeats(audited: Path) -> None:
    """Measured from the store's 5 repeats: the noise of a prompt's mean, σ_p² + σ_w²/5; projected to 1 and to 20
    repeats with the within-prompt noise measured between them — close to the planted components'."""
    truth = planted()
    sigmas = {}
    for k in (None, 1, 20):
        frame = _power(audited, "--store", str(audited / "cb.db"), *(["--repeats", str(k)] if k else []))
        sigmas[k] = float(frame["noise_sd"].iloc[0])
    for k, measured in ((5, sigmas[None]), (1, sigmas[1]), (20, sigmas[20])):
        expected = math.sqrt(truth["between_prompt_var"] + truth["within_prompt_var"] / k)
        print(f"\npower noise at {k} repeats: measured {measured:.3f} pp, planted {expected:.3f} pp")
        assert measured == pytest.approx(expected, rel=0.15), (k, measured, expected)
    assert sigmas[1] > sigmas[None] > sigmas[20]
    once = _power(audited, "--noise-sd", "1")
    four = _power(audited, "--noise-sd", "1", "--repeats", "4", "--repeat-noise-sd", "1")
    assert float(four["noise_sd"].iloc[0]) == pytest.approx(0.5)  # all of it sampling noise: σ/√4
    assert np.allclose(four["se"], once["se"] / 2)
    same = _power(audited, "--noise-sd", "1", "--repeats", "4")  # no within-prompt noise given: nothing averaged
    assert np.allclose(same["se"], once["se"])
