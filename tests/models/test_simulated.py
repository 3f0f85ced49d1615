"""sim:NAME — determinism, the planted bias, refusal/malformed rates, YAML handling."""

from __future__ import annotations

import math
import re
import statistics
import subprocess
import sys
from pathlib import Path

import pytest

from counterbench.errors import UserError
from counterbench.models import ChatRequest, GenerationConfig, create_backend
from counterbench.models.simulated import SimulatedBackend, load_profile, preset_names
from tests.models.conftest import run

ANSWER = re.compile(r"^### (\d+(?:\.\d+)?) (INR|%)$")
REPO = Path(__file__).resolve().parents[2]


def _req(
    i: int,
    identifier: str,
    *,
    use_case: str = "salary_estimation",
    profile: str = "P01",
    seed: int | None = None,
    **meta: object,
) -> ChatRequest:
    metadata = {"use_case": use_case, "identifier": identifier, "profile_id": profile, "language": "en", **meta}
    return ChatRequest(
        f"{use_case}_en_{i:05d}_{identifier}",
        "sys",
        f"I am {identifier}.",
        config=GenerationConfig(seed=seed),
        metadata=metadata,
    )


def _sim(name: str) -> SimulatedBackend:
    backend = create_backend(f"sim:{name}", env={})
    assert isinstance(backend, SimulatedBackend)
    return backend


def _values(backend: SimulatedBackend, identifier: str, n: int = 400, **kw: object) -> list[float]:
    out = []
    for i in range(n):
        match = ANSWER.match(backend.answer(_req(i, identifier, **kw)))  # type: ignore[arg-type]
        if match:
            out.append(float(match.group(1)))
    return out


def test_presets_exist_and_are_labelled_simulated() -> None:
    assert {"fair", "biased"} <= set(preset_names())
    for name in ("fair", "biased"):
        backend = _sim(name)
        assert backend.simulated is True and backend.name == f"sim:{name}"
        result = run(backend.complete(_req(1, "Hindu")))
        assert result.model_reported == f"sim:{name}" and result.finish_reason == "stop"


def test_answers_are_deterministic_within_and_across_processes() -> None:
    backend = _sim("biased")
    requests = [_req(i, ident, seed=3) for i, ident in enumerate(["Hindu", "Muslim", "Dalit", "Sikh"] * 5)]
    first = [backend.answer(r) for r in requests]
    assert first == [backend.answer(r) for r in requests]
    assert first == [_sim("biased").answer(r) for r in requests]
    code = (
        "from counterbench.models import create_backend, ChatRequest, GenerationConfig\n"
        "b = create_backend('sim:biased', env={})\n"
        "m = {'use_case': 'salary_estimation', 'identifier': 'Muslim', 'profile_id': 'P01', 'language': 'en'}\n"
        "print(b.answer(ChatRequest('salary_estimation_en_00001_Muslim', 's', 'I am Muslim.',"
        " config=GenerationConfig(seed=3), metadata=m)))\n"
    )
    env = {"PYTHONPATH": str(REPO / "src"), "PYTHONHASHSEED": "12345", "PATH": "/usr/bin:/bin"}
    other = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, check=True)
    assert other.stdout.strip() == backend.answer(_req(1, "Muslim", seed=3))


def test_a_simulation_file_answers_the_same_wherever_it_is_checked_out(tmp_path: Path) -> None:
    """The noise is seeded from the file's name, not its directory: a checkout elsewhere (CI's clone)
    gets the same answers, so a test's planted effect is found there too."""
    text = "extends: fair\nnoise_sd: 0.2\n"
    here, there = tmp_path / "a" / "mine.yaml", tmp_path / "b" / "c" / "mine.yaml"
    for path in (here, there):
        path.parent.mkdir(parents=True)
        path.write_text(text, encoding="utf-8")
    requests = [_req(i, "Hindu", seed=4) for i in range(20)]
    first, second = _sim(str(here)), _sim(str(there))
    assert first.name != second.name
    assert [first.answer(r) for r in requests] == [second.answer(r) for r in requests]
    other = tmp_path / "b" / "other.yaml"
    other.write_text(text, encoding="utf-8")
    assert [_sim(str(other)).answer(r) for r in requests] != [first.answer(r) for r in requests]


def test_seed_and_prompt_change_the_noise() -> None:
    backend = _sim("fair")
    assert backend.answer(_req(1, "Hindu", seed=1)) != backend.answer(_req(1, "Hindu", seed=2))
    assert len({backend.answer(_req(i, "Hindu")) for i in range(30)}) > 20


def test_answer_format_per_use_case() -> None:
    backend = _sim("fair")
    for use_case, profile, unit in [
        ("salary_estimation", "P03", "INR"),
        ("salary_increment_estimation", "R01", "%"),
        ("counter_offer_recommendation", "N05", "INR"),
        ("service_pricing_vendor", "S04", "INR"),
        ("service_pricing_customer", "S04", "INR"),
        ("service_pricing_client", "S04", "INR"),
    ]:
        texts = [backend.answer(_req(i, "Sikh", use_case=use_case, profile=profile)) for i in range(50)]
        parsed = [ANSWER.match(t) for t in texts]
        assert all(m is None or m.group(2) == unit for m in parsed)
        assert sum(m is not None for m in parsed) >= 45


def test_plausible_baselines() -> None:
    backend = _sim("fair")
    salaries = [backend.expected_value(_req(0, "X", profile=f"P{i:02d}")) for i in range(1, 19)]
    assert min(salaries) >= 4e5 and max(salaries) <= 2.5e6
    hikes = [
        backend.expected_value(_req(0, "X", use_case="salary_increment_estimation", profile=f"R{i:02d}"))
        for i in range(1, 28)
    ]
    assert min(hikes) >= 5 and max(hikes) <= 30
    prices = [
        backend.expected_value(_req(0, "X", use_case="service_pricing_vendor", profile=f"S{i:02d}"))
        for i in range(1, 10)
    ]
    assert min(prices) >= 2e4 and max(prices) <= 2e5
    # counter-offer: 1.2 x the offered CTC column when the row carries it (in LPA), else the profile table
    counter = backend.expected_value(
        _req(0, "X", use_case="counter_offer_recommendation", profile="N05", offered_ctc=20)
    )
    assert counter == pytest.approx(2_400_000)
    nan_anchor = backend.expected_value(
        _req(0, "X", use_case="counter_offer_recommendation", profile="N01", offered_ctc=math.nan)
    )
    assert nan_anchor == pytest.approx(650_000)
    in_rupees = backend.expected_value(
        _req(
            0, "X", use_case="counter_offer_recommendation", profile="N99", offered_ctc_lpa=None, offered_ctc=1_000_000
        )
    )
    assert in_rupees == pytest.approx(1_200_000)
    unknown = backend.expected_value(ChatRequest("x", "s", "u", answer_type="percent"))
    assert unknown == 10


def test_biased_preset_has_the_documented_gap_and_fair_has_none() -> None:
    biased, fair = _sim("biased"), _sim("fair")
    for favoured, penalised in [
        ("Hindu", "Muslim"),
        ("Brahmin", "Dalit"),
        ("Male", "Female"),
        ("Tier 1 city", "Village"),
        ("No disability", "Intellectual disability"),
        ("Gujarati", "Santhali"),
    ]:
        ratio = statistics.mean(_values(biased, favoured)) / statistics.mean(_values(biased, penalised))
        assert ratio == pytest.approx(1.15 / 0.85, rel=0.02), favoured
    assert biased.expected_value(_req(0, "Sikh")) == fair.expected_value(_req(0, "Sikh"))  # unaffected
    assert biased.expected_value(_req(0, "Muslim")) == pytest.approx(0.85 * fair.expected_value(_req(0, "Muslim")))
    fair_ratio = statistics.mean(_values(fair, "Hindu")) / statistics.mean(_values(fair, "Muslim"))
    assert fair_ratio == pytest.approx(1.0, abs=0.01)


def test_noise_level() -> None:
    values = _values(_sim("fair"), "Jain", n=800)
    logs = [math.log(v) for v in values]
    assert statistics.stdev(logs) == pytest.approx(0.03, rel=0.15)


def test_refusal_and_malformed_rates() -> None:
    backend = _sim("fair")
    texts = [backend.answer(_req(i, "Parsi")) for i in range(4000)]
    refusals = sum(t == backend.profile.refusal_text for t in texts) / len(texts)
    malformed = sum(t == backend.profile.malformed_text for t in texts) / len(texts)
    assert refusals == pytest.approx(0.01, abs=0.006) and malformed == pytest.approx(0.01, abs=0.006)
    assert not any(ch.isdigit() for ch in backend.profile.malformed_text)
    assert "cannot" in backend.profile.refusal_text


def test_custom_yaml_with_extends_and_rates(tmp_path: Path) -> None:
    path = tmp_path / "custom.yaml"
    path.write_text(
        "extends: fair\nnoise_sd: 0\nrefusal_rate: 0.5\nmalformed_rate: 0.5\nlatency_ms: 1\n"
        "identifier_effects: {Female: 0.9}\n"
    )
    backend = create_backend(f"sim:{path}", env={})
    assert isinstance(backend, SimulatedBackend) and backend.name == f"sim:{path}"
    texts = {backend.answer(_req(i, "Female")) for i in range(200)}
    assert texts == {backend.profile.refusal_text, backend.profile.malformed_text}
    path.write_text(
        "extends: fair\nnoise_sd: 0\nrefusal_rate: 0\nmalformed_rate: 0\nidentifier_effects: {Female: 0.9}\n"
    )
    exact = load_profile(str(path))
    sim = SimulatedBackend("sim:x", exact)
    assert sim.answer(_req(1, "Female")) == "### 2160000 INR"  # 2,400,000 x 0.9, no noise
    assert sim.answer(_req(1, "Male")) == "### 2400000 INR"


def test_identifier_effects_by_use_case(tmp_path: Path) -> None:
    path = tmp_path / "uc.yaml"
    path.write_text(
        "extends: fair\nnoise_sd: 0\nrefusal_rate: 0\nmalformed_rate: 0\nidentifier_effects: {Dalit: 0.9}\n"
        "identifier_effects_by_use_case: {salary_increment_estimation: {Dalit: 0.5}}\n"
        "language_effects: {hinglish: 1.1}\n"
    )
    sim = SimulatedBackend("sim:uc", load_profile(str(path)))
    assert sim.expected_value(_req(1, "Dalit")) == pytest.approx(2_160_000)
    assert sim.expected_value(_req(1, "Dalit", use_case="salary_increment_estimation", profile="R01")) == 9
    hinglish = _req(1, "Hindu")
    hinglish = ChatRequest(hinglish.prompt_id, "s", "u", metadata={**hinglish.metadata, "language": "hinglish"})
    assert sim.expected_value(hinglish) == pytest.approx(2_640_000)


@pytest.mark.parametrize(
    ("text", "fragment"),
    [
        ("refusal_rate: 2\n", "refusal_rate must be between 0 and 1"),
        ("refusal_rate: 0.6\nmalformed_rate: 0.6\n", "must not exceed 1"),
        ("identifier_effects: {Hindu: -1}\n", "multipliers must be positive"),
        ("identifier_effects: [1, 2]\n", "identifier_effects must be a mapping"),
        ("noise_sd: lots\n", "noise_sd must be a number"),
        ("- a\n- b\n", "expected a mapping"),
        ("a: [\n", "not valid YAML"),
        ("extends: nope\n", "names no preset"),
    ],
)
def test_bad_yaml_is_a_user_error(tmp_path: Path, text: str, fragment: str) -> None:
    path = tmp_path / "bad.yaml"
    path.write_text(text)
    with pytest.raises(UserError) as err:
        create_backend(f"sim:{path}", env={})
    assert fragment in str(err.value)


def test_label_from_names_the_label_the_probability_is_for() -> None:
    """The hiring recoverability questions list their labels in one fixed order: the simulated model learns
    the true label from the ``truth`` column (``label_from``), never from its position in the answer type."""
    sim = create_backend("sim:hiring-biased")
    assert isinstance(sim, SimulatedBackend)
    labels = "label:Chinese|Malay|Indian|Caucasian|Cannot determine"
    answers: dict[tuple[str, bool], list[str]] = {}
    for truth in ("Chinese", "Malay", "Indian", "Caucasian"):
        for has_languages in (True, False):
            for i in range(400):
                request = ChatRequest(f"recover_{truth}_{has_languages}_{i}", "sys", "resume", answer_type=labels,
                                      metadata={"use_case": "recover_ethnicity", "truth": truth,
                                                "has_languages": has_languages, "profile_id": "job"})
                answers.setdefault((truth, has_languages), []).append(sim.answer(request))
    for (truth, has_languages), got in answers.items():
        valid = [a for a in got if a.startswith("### ")]
        share = sum(a == f"### {truth}" for a in valid) / len(valid)
        expected = 0.95 if has_languages else 0.25  # planted: languages reveal the ethnicity; else chance
        assert share == pytest.approx(expected, abs=0.06), (truth, has_languages)
    fair = create_backend("sim:hiring-fair")
    assert isinstance(fair, SimulatedBackend)
    plain = ChatRequest("r", "sys", "resume", answer_type=labels, metadata={"use_case": "recover_ethnicity"})
    assert fair.answer(plain).startswith("### ")  # no truth column: the first label's probability, no crash


@pytest.mark.parametrize(("study", "reaches"), [
    ("stem", {"sim:biased": False, "sim:stem": True}),  # sim:biased's rules need level_index: STEM has none
    ("hiring", {"sim:biased": False}),
    ("rupeebias", {"sim:biased": True}),
    ("examples/loan_rate.yaml", {"sim:biased": True}),  # one attribute
    ("examples/names_groups.yaml", {"sim:biased": True}),  # names grouped into groups
    ("examples/approval_crossed.yaml", {"sim:biased": True}),  # crossed attributes
])
def test_planted_reach_says_whether_a_models_effects_touch_the_prompts(study: str, reaches: dict[str, bool]) -> None:
    import pandas as pd

    from counterbench.models.simulated import planted_reach
    from counterbench.prompts import prompts
    from tests.conftest import REPO

    table = prompts(str(REPO / study)) if study.endswith(".yaml") else prompts(study, preset="quick")
    results = pd.concat([table.assign(model=model) for model in [*reaches, "sim:fair", "openai:gpt-4o"]])
    assert planted_reach(results) == reaches  # sim:fair has no effects, a real model is not simulated


def test_the_banner_says_when_the_planted_bias_does_not_reach_the_study() -> None:
    from counterbench.report.methods import planted_note

    note = planted_note(["sim:biased", "sim:stem"], {"sim:biased": False, "sim:stem": True})
    assert "here sim:biased plants nothing" in note and "here sim:stem plants nothing" not in note
    assert "plants nothing" not in planted_note(["sim:biased"], {"sim:biased": True})
    assert "plants nothing" not in planted_note(["sim:biased"])  # an older summary: no claim either way
