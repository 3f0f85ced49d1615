"""A one-slot llama.cpp server run at the default concurrency: the run reads ``/props`` ``total_slots``,
sends one request at a time and no prompt fails.

The server is llama.cpp's own HTTP server (``llama-server``'s code from the ``xllamacpp`` wheel, started by
:class:`counterbench.testing.llamacpp_server.LlamaCppServer`, one slot) with the embedded SmolLM2 model.
The timeout is set below the time 16 queued requests take, so a run that sent ``--concurrency 16`` to the
one slot would time requests out and retry them; capped at the slot count it retries none.
"""

from __future__ import annotations

from pathlib import Path

import pytest

import counterbench
from counterbench.models.server_slots import props_url, read_total_slots
from counterbench.options import RunOptions
from counterbench.studies.registry import load_study
from counterbench.testing.llamacpp_server import LlamaCppServer, server_available

STUDY = """name: slot_check
title: Loan approvals
languages:
  en: {name: English, id_infix: en}
axes:
  Name:
    - {value: Asha, phrases: {en: Asha}}
    - {value: Ben, phrases: {en: Ben}}
use_cases:
  approve:
    outcome: {kind: label, labels: ["yes", "no"], positive: "yes"}
    template:
      en: "{identifier_phrase} asks for a loan of {amount} dollars. {question}"
    question_variants:
      en: ["Approve it?"]
    profiles:
"""


def test_props_url_is_the_server_root():
    assert props_url("http://127.0.0.1:8080/v1") == "http://127.0.0.1:8080/props"
    assert props_url("http://host/llama/v1/") == "http://host/llama/props"
    assert read_total_slots("http://127.0.0.1:9/v1", timeout_s=0.5) is None  # nothing listening: no cap


@pytest.mark.slow
@pytest.mark.skipif(server_available() is not None, reason=str(server_available()))
def test_a_one_slot_server_at_the_default_concurrency_fails_no_prompt(tmp_path: Path):
    path = tmp_path / "slot_check.yaml"
    path.write_text(STUDY + "".join(f"      - {{profile_id: P{i:02d}, amount: {1000 * (i + 1)}}}\n" for i in range(12)),
                    encoding="utf-8")
    table = counterbench.prompts(load_study(path))
    assert len(table) == 24
    with LlamaCppServer("--n_ctx", "2048") as server:
        assert read_total_slots(server.base_url) == 1
        summary = counterbench.run_prompts(
            table, [f"llamacpp:{server.base_url}:smollm"], store=str(tmp_path / "store.db"), handle_signals=False,
            structured=True, timeout=4.0)
    assert RunOptions().concurrency > 1  # the default the run was given
    counts = next(iter(summary.models.values()))
    assert summary.complete and counts["errors"] == 0 and counts["retries"] == 0, counts
