"""Free text vs structured output on a real llama.cpp server. Prints JSON.

Starts llama.cpp's own HTTP server (from the ``xllamacpp`` wheel) with the embedded SmolLM2-135M GGUF
on 127.0.0.1 (through :mod:`counterbench.testing.llamacpp_server`, which loads it without llama.cpp's
extra buffer types),
then runs the same RupeeBias prompts — ``--per-kind`` salary prompts (``### <NUMBER> INR``) and as
many hike prompts (``### <NUMBER> %``) from the ``quick`` preset — through ``counterbench``'s engine
as ``llamacpp:URL:smollm`` in every mode: free text, ``grammar`` and ``json_object``; and as
``openai-compatible`` (``json_schema``, which llama.cpp's server takes; llama-cpp-python's refused it).

For each: the share of answers in the format, the share the parser accepted (status ``ok``), HTTP
requests sent, retries, warnings, and seconds per prompt (wall time / prompts, concurrency 2; the
server answers one request at a time). The machine's load average is reported: these are wall times
on a shared machine.

``within_goal``: in every structured mode (``grammar``, ``json_object``, ``json_schema``) every answer is
in the format and no request failed — the server honours each mode (docs/models.md; the tests in
``tests/models/test_llamacpp_server.py`` check the same on a few prompts). Free text has no target.

Usage: ``python benchmarks/llamacpp_server_structured.py [--per-kind 10] [--out FILE]``.
"""

from __future__ import annotations

import argparse
import os
import re
import sqlite3
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from bench_json import finish, load_average

FORMATS = {"inr_annual": r"### (0|[1-9][0-9]{0,8}) INR", "percent": r"### (0|[1-9][0-9]{0,2}) %"}
CASES = (
    ("free_text", "llamacpp", {"structured": False}),
    ("grammar", "llamacpp", {"structured": True}),
    ("json_object", "llamacpp", {"structured": True, "structured_mode": "json_object"}),
    ("json_schema", "openai-compatible", {"structured": True}),
)


STRUCTURED = ("grammar", "json_object", "json_schema")
GOAL = ("the llama.cpp server honours every structured mode (grammar, json_object, json_schema): every answer in "
        "the format (in_format_share 1.0) and no errors in each (docs/models.md); free text has no target")


def main(argv: list[str] | None = None) -> dict[str, Any]:
    before = load_average()
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--per-kind", type=int, default=10, help="prompts per answer kind")
    parser.add_argument("--out", type=Path, default=None)
    args = parser.parse_args(argv)

    from counterbench.models import GenerationConfig
    from counterbench.prompts import PromptFilters, build_prompts
    from counterbench.run import run_prompts
    from counterbench.testing.llamacpp_server import LlamaCppServer, server_available

    missing = server_available()
    if missing:
        raise SystemExit(f"cannot start the llama.cpp server: {missing}")
    table = build_prompts("rupeebias", PromptFilters(preset="quick", language=["en"]))
    prompts = table[table["use_case"].isin(["salary_estimation", "salary_increment_estimation"])]
    prompts = prompts.groupby("use_case", group_keys=False).head(args.per_kind).reset_index(drop=True)
    threads = str(os.cpu_count() or 2)
    out: dict[str, Any] = {"prompts": len(prompts), "load_avg_before": os.getloadavg()[0], "cases": {}}
    started = time.perf_counter()
    with LlamaCppServer("--n_ctx", "1024", "--n_threads", threads) as server, \
            tempfile.TemporaryDirectory() as tmp:
        out["server_start_s"] = round(time.perf_counter() - started, 2)
        for name, kind, config in CASES:
            store = Path(tmp) / f"{name}.db"
            t0 = time.perf_counter()
            summary = run_prompts(prompts, [f"{kind}:{server.base_url}:smollm"], store=store,
                                  config=GenerationConfig(**config), concurrency=2, timeout=120, handle_signals=False)
            seconds = time.perf_counter() - t0
            with sqlite3.connect(store) as conn:
                rows = conn.execute(
                    "SELECT p.answer_type, r.response, r.status FROM responses r "
                    "JOIN prompts p USING (prompt_id, prompt_hash)"
                ).fetchall()
            in_format = sum(bool(re.fullmatch(FORMATS[k], (t or "").strip())) for k, t, _ in rows)
            out["cases"][name] = {
                "in_format_share": round(in_format / len(rows), 3),
                "parsed_ok_share": round(sum(s == "ok" for _, _, s in rows) / len(rows), 3),
                "requests": summary.totals["sent"],
                "retries": summary.totals["retries"],
                "errors": summary.totals["errors"],
                "warnings": summary.notes,
                "s_per_prompt": round(seconds / len(rows), 2),
            }
    out["load_avg_after"] = os.getloadavg()[0]
    cases = out["cases"]
    met = all(cases[name]["in_format_share"] == 1.0 and cases[name]["errors"] == 0 for name in STRUCTURED)
    return finish(out, before, goal=GOAL, within_goal=met, out=args.out)


if __name__ == "__main__":
    sys.exit(0 if main() else 1)
