"""A REAL llama.cpp HTTP server (``llama-server``'s code, from the ``xllamacpp`` wheel) on 127.0.0.1.

One server per module, started with the embedded SmolLM2 GGUF through
:mod:`counterbench.testing.llamacpp_server`, which loads the model without llama.cpp's extra (AMX)
buffer types — without that the server segfaults on the first completion on this machine's CPU.
Prompts of two answer kinds (a salary in INR, a hike in %) are run free-text and structured.
"""

from __future__ import annotations

import json
import os
import re
import signal
import socket
import sqlite3
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pandas as pd
import pytest

from counterbench.models.probe import probe
from counterbench.testing.llamacpp_server import LlamaCppServer, server_available
from tests.models.test_llamacpp_server_lifetime import alive, wait_dead

_missing = server_available()
if _missing:
    pytest.skip(f"llama.cpp's server cannot start here: {_missing}", allow_module_level=True)

pytestmark = pytest.mark.slow

FORMATS = {"inr_annual": r"### (0|[1-9][0-9]{0,8}) INR", "percent": r"### (0|[1-9][0-9]{0,2}) %"}
PER_KIND = 2


@pytest.fixture(scope="module")
def server() -> Iterator[LlamaCppServer]:
    threads = str(os.cpu_count() or 2)
    with LlamaCppServer("--n_ctx", "4096", "--n_threads", threads) as srv:
        yield srv


@pytest.fixture(scope="module")
def prompts() -> pd.DataFrame:
    from counterbench.prompts import PromptFilters, build_prompts

    table = build_prompts("rupeebias", PromptFilters(preset="quick", language=["en"]))
    salary = table[table["use_case"] == "salary_estimation"].head(PER_KIND)
    hike = table[table["use_case"] == "salary_increment_estimation"].head(PER_KIND)
    return pd.concat([salary, hike], ignore_index=True)


def _run(model: str, prompts: pd.DataFrame, store: Path, **config: Any) -> tuple[Any, float]:
    from counterbench.models import GenerationConfig
    from counterbench.run import run_prompts

    started = time.perf_counter()
    summary = run_prompts(prompts, [model], store=store, config=GenerationConfig(**config), concurrency=2,
                          timeout=120, handle_signals=False)
    return summary, (time.perf_counter() - started) / len(prompts)


def _answers(store: Path) -> list[tuple[str, str, str]]:
    with sqlite3.connect(store) as conn:
        return conn.execute(
            "SELECT p.answer_type, r.response, r.status FROM responses r JOIN prompts p USING (prompt_id, prompt_hash)"
        ).fetchall()


def _in_format(rows: list[tuple[str, str, str]]) -> float:
    return sum(bool(re.fullmatch(FORMATS[kind], (text or "").strip())) for kind, text, _ in rows) / len(rows)


def test_free_text_and_structured_on_a_real_llamacpp_server(
    server: LlamaCppServer, prompts: pd.DataFrame, tmp_path: Path
) -> None:
    model = f"llamacpp:{server.base_url}:smollm"
    free, free_s = _run(model, prompts, tmp_path / "free.db", structured=False, max_tokens=32)
    assert free.totals["errors"] == 0 and free.totals["sent"] == len(prompts)
    structured, structured_s = _run(model, prompts, tmp_path / "structured.db", structured=True)
    assert structured.totals["errors"] == 0 and structured.totals["retries"] == 0 and not structured.notes
    rows = _answers(tmp_path / "structured.db")
    assert {kind for kind, _, _ in rows} == set(FORMATS) and len(rows) == len(prompts)
    for kind, text, status in rows:  # every structured answer is in the format, and parses
        assert re.fullmatch(FORMATS[kind], text), (kind, text)
        assert status == "ok", (kind, text)
    with sqlite3.connect(tmp_path / "structured.db") as conn:
        (blob,) = conn.execute("SELECT config FROM runs").fetchone()
    assert json.loads(blob)["structured_modes"] == {model: "grammar"}  # the store records the mode used
    figures = {"free_text_in_format": _in_format(_answers(tmp_path / "free.db")), "free_text_s_per_prompt": free_s,
               "structured_in_format": _in_format(rows), "structured_s_per_prompt": structured_s}
    print("llama.cpp server figures:", json.dumps(figures))


def test_json_object_mode_on_the_real_server(server: LlamaCppServer, prompts: pd.DataFrame, tmp_path: Path) -> None:
    model = f"llamacpp:{server.base_url}:smollm"
    one_each = prompts.groupby("answer_type").head(1)
    summary, _ = _run(model, one_each, tmp_path / "s.db", structured=True, structured_mode="json_object")
    assert summary.totals["errors"] == 0 and not summary.notes
    for kind, text, _ in _answers(tmp_path / "s.db"):  # unwrapped from {"answer": ...}
        assert re.fullmatch(FORMATS[kind], text), (kind, text)


def test_openai_compatible_json_schema_is_taken_by_llama_server(
    server: LlamaCppServer, prompts: pd.DataFrame, tmp_path: Path
) -> None:
    """``openai-compatible`` sends json_schema; llama.cpp's own server takes it (llama-cpp-python's refused it
    with a 500, and the run fell back to json_object: that path is tested on a fake server that refuses the
    same way, tests/models/test_structured.py), so every answer is constrained and no note is needed."""
    model = f"openai-compatible:{server.base_url}:smollm"
    summary, _ = _run(model, prompts, tmp_path / "s.db", structured=True)
    assert summary.totals["retries"] == 0 and summary.totals["errors"] == 0 and summary.totals["sent"] == len(prompts)
    assert not summary.notes
    rows = _answers(tmp_path / "s.db")
    assert _in_format(rows) == 1.0, rows  # every answer constrained (in free text: 2 of 6 usable)


def test_probe_reports_what_the_server_supports(server: LlamaCppServer) -> None:
    report = probe(f"openai-compatible:{server.base_url}:smollm", env={})
    assert report.server_models == ["smollm"]
    status = {m.mode: m.status for m in report.modes}
    # SmolLM's value may be wrong (``wrong``: in the format, not 200); the format is what the server honours
    assert {status["json_schema"], status["json_object"], status["grammar"]} <= {"works", "wrong"}, report.lines()
    assert status["regex"] in ("ignored", "works", "wrong")  # llama.cpp drops the vLLM field it does not know
    assert "cut" not in status.values()  # the budget fits the JSON answer
    assert {"json_schema", "grammar"} <= set(report.supported())


@pytest.mark.parametrize("mode", ["grammar", "json_object"])
def test_rationale_prompts_keep_their_rationale_under_the_constraint(server: LlamaCppServer, tmp_path: Path,
                                                                     mode: str) -> None:
    """The hiring study's rationale variants: the grammar / JSON schema allow a bounded rationale line before
    the final line, and the stored answer holds both (a JSON reply is turned back into that text)."""
    from counterbench.builtin.hiring.answers import parse_score, parse_verdict
    from counterbench.prompts import PromptFilters, build_prompts

    table = build_prompts("hiring", PromptFilters(use_case=["compare_rationale", "score_rationale"],
                                                  profile=["account_1"], question_variant=[1], axis=["all"]))
    table = table.groupby("use_case").head(1)
    summary, _ = _run(f"llamacpp:{server.base_url}:smollm", table, tmp_path / "r.db", structured=True,
                      structured_mode=mode, max_tokens=80)
    assert summary.totals["errors"] == 0 and not summary.notes
    with sqlite3.connect(tmp_path / "r.db") as conn:
        rows = conn.execute("SELECT prompt_id, response FROM responses").fetchall()
    assert len(rows) == 2
    for prompt_id, text in rows:
        compare = "compare_rationale" in prompt_id
        final = r"### (A|B|Tie)" if compare else r"### ([1-9][0-9]?|100)"
        assert re.fullmatch(r"[^#\n]{10,192}\n" + final, text), (mode, text)
        assert (parse_verdict(text) if compare else parse_score(text)).status == "ok"


def _listening(port: int) -> bool:
    """Whether a socket listens on ``port`` (the kernel's socket tables; a plain connect can be fooled, e.g. by
    a TCP self-connect when the port is in the ephemeral range)."""
    tables = [Path(f"/proc/net/{name}") for name in ("tcp", "tcp6")]
    if not any(t.is_file() for t in tables):
        try:
            socket.create_connection(("127.0.0.1", port), timeout=2).close()
        except OSError:
            return False
        return True
    for table in tables:
        for line in table.read_text().splitlines()[1:] if table.is_file() else []:
            fields = line.split()
            if int(fields[1].rsplit(":", 1)[1], 16) == port and fields[3] == "0A":  # 0A: LISTEN
                return True
    return False


def test_the_server_dies_with_the_process_that_started_it() -> None:
    """A test run killed before its teardown (SIGKILL: no fixture finalizer, no atexit) leaves no server."""
    script = ("import time\n"
              "from counterbench.testing.llamacpp_server import LlamaCppServer\n"
              "server = LlamaCppServer('--n_ctx', '256', '--n_threads', '1').start()\n"
              "print(server.proc.pid, server.port, server.log_path, flush=True)\n"
              "time.sleep(300)\n")
    parent = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, text=True)
    try:
        assert parent.stdout is not None
        pid, port, log = parent.stdout.readline().split()
        assert alive(int(pid))
    finally:
        parent.send_signal(signal.SIGKILL)
        parent.wait()
    try:
        assert wait_dead(int(pid)), "the llama.cpp server outlived the process that started it"
        deadline = time.monotonic() + 20  # the kernel closes a killed process's sockets as it tears it down
        while _listening(int(port)) and time.monotonic() < deadline:
            time.sleep(0.1)
        assert not _listening(int(port)), f"something still listens on the server's port {port}"
    finally:
        if alive(int(pid)):
            os.killpg(int(pid), signal.SIGKILL)
        Path(log).unlink(missing_ok=True)
