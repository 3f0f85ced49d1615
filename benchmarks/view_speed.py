"""How fast the answer viewer answers on a full-size store; prints JSON.

Builds a store of ``--models`` simulated models × the whole RupeeBias prompt table (9 × 39,150 =
352,350 responses by default) by direct inserts (no model is called: values are drawn at random,
answers are ``### N INR``), starts ``counterbench view`` on it as a user would (a subprocess on
127.0.0.1), and times HTTP requests over one keep-alive connection: slot views of random slots (the
target is ≤ 200 ms), the slot list for a canonical pair, a filtered response page, a full-text
search, and the cross-model matrix of one use case (model × identifier, sorted by a model; its CSV; rows by
the design column the store's prompts carry first).
Run: ``python benchmarks/view_speed.py [--models 9] [--requests 60]``.
"""

from __future__ import annotations

import argparse
import contextlib
import http.client
import os
import random
import re
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from urllib.parse import urlencode, urlsplit

from bench_json import finish, load_average

from counterbench.prompts import build_prompts
from counterbench.run.plan import prompt_items
from counterbench.run.store import RESPONSE_COLUMNS, open_store, request_fingerprint


def build_store(path: Path, n_models: int, seed: int) -> tuple[int, float]:
    started = time.perf_counter()
    table = build_prompts("rupeebias")
    items, records = prompt_items(table)
    rng = random.Random(seed)
    with open_store(path) as store:
        store.save_prompts(records)
        store.save_config("cfg0", {"temperature": 0.0, "max_tokens": 64})
        for m in range(n_models):
            model = f"sim:bench-{m}"
            rows = []
            for item in items:
                value = round(rng.lognormvariate(11, 1.0))
                rec = {
                    "prompt_id": item.prompt_id, "prompt_hash": item.prompt_hash, "model": model, "config_fp": "cfg0",
                    "request_fp": request_fingerprint(model, item.system, item.user, "cfg0"), "simulated": 1,
                    "status": "ok", "response": f"### {value} INR", "finish_reason": "stop", "value": float(value),
                    "unit": "INR", "parse_profile": "default", "attempts": 1, "cached": 0, "source": "benchmark",
                }
                rows.append(tuple(rec.get(c) for c in RESPONSE_COLUMNS))
            store.write_responses(rows)
    return len(items) * n_models, time.perf_counter() - started


def timed(conn: http.client.HTTPConnection, path: str) -> tuple[float, int, str]:
    started = time.perf_counter()
    conn.request("GET", path)
    reply = conn.getresponse()
    body = reply.read().decode()
    return (time.perf_counter() - started) * 1000, reply.status, body


def summary(samples: list[float]) -> dict[str, float]:
    ordered = sorted(samples)
    return {"median_ms": round(statistics.median(ordered), 1),
            "p95_ms": round(ordered[min(len(ordered) - 1, int(0.95 * len(ordered)))], 1),
            "max_ms": round(ordered[-1], 1), "n": len(ordered)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", type=int, default=9)
    parser.add_argument("--requests", type=int, default=60)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--store", type=Path, default=None, help="reuse (or keep) the store at this path")
    args = parser.parse_args()
    if args.models < 1 or args.requests < 1:
        parser.error("--models and --requests must be at least 1")
    before = load_average()
    folder = Path(tempfile.mkdtemp(prefix="cb-view-bench-"))
    store = args.store or folder / "big.db"
    built_s = 0.0
    if not store.exists():
        _, built_s = build_store(store, args.models, args.seed)
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[1] / "src")}
    started = time.perf_counter()
    proc = subprocess.Popen([sys.executable, "-m", "counterbench.cli", "view", "--store", str(store), "--port", "0"],
                            stdout=subprocess.PIPE, text=True, env=env)
    try:
        assert proc.stdout is not None
        url = None
        indexed = None
        for line in proc.stdout:
            found = re.search(r"indexed in ([\d.]+) s", line)
            indexed = float(found.group(1)) if found else indexed
            found = re.search(r"Open (http://127\.0\.0\.1:\d+)/", line)
            if found:
                url = found.group(1)
                break
        if url is None:
            raise SystemExit("the viewer did not start")
        ready_s = time.perf_counter() - started
        conn = http.client.HTTPConnection("127.0.0.1", urlsplit(url).port, timeout=60)
        rng = random.Random(args.seed)
        _, _, page = timed(conn, "/slots?" + urlencode({"model": "sim:bench-0"}))
        total = int(re.search(r'id="count">([\d,]+)<', page).group(1).replace(",", ""))  # type: ignore[union-attr]
        slot_ms: list[float] = []
        sizes: list[int] = []
        with contextlib.closing(sqlite3.connect(f"{store.resolve().as_uri()}?mode=ro", uri=True)) as db:
            keys = db.execute("SELECT DISTINCT use_case, language, axis, profile_id, question_variant, variant "
                              "FROM prompts").fetchall()
        timed(conn, "/slot?warm-up")
        for _ in range(args.requests):
            uc, lang, axis, profile, qv, variant = rng.choice(keys)
            params = {"model": f"sim:bench-{rng.randrange(args.models)}", "config_fp": "cfg0", "study": "rupeebias",
                      "use_case": uc, "language": lang, "axis": axis, "profile_id": profile,
                      "question_variant": str(qv), "variant": variant}
            ms, status, body = timed(conn, "/slot?" + urlencode(params))
            if status != 200:
                raise SystemExit(f"slot view failed ({status}) for {params}")
            slot_ms.append(ms)
            sizes.append(body.count("data-identifier="))
        pair_ms = [timed(conn, "/slots?" + urlencode([("model", "sim:bench-3"), ("axis", "Caste"),
                                                      ("identifier", "Brahmin"), ("identifier", "Dalit")]))[0]
                   for _ in range(5)]
        filter_ms = [timed(conn, "/?" + urlencode({"model": "sim:bench-5", "axis": "Religion", "language": "en"}))[0]
                     for _ in range(5)]
        search_ms = [timed(conn, "/?" + urlencode({"q": "### 12345 INR"}))[0] for _ in range(3)]
        matrix: dict[str, list[float]] = {"model": [], "csv": [], "design": []}
        for _ in range(3):
            matrix["model"].append(timed(conn, "/matrix?" + urlencode({"sort": "sim:bench-1", "order": "desc"}))[0])
            matrix["csv"].append(timed(conn, "/matrix.csv")[0])
            _, _, page = timed(conn, "/matrix")
            design = re.findall(r'<option value="([^"]+)"', page.split('name="by"', 1)[1].split("</select>", 1)[0])[6:]
            if design:
                matrix["design"].append(timed(conn, "/matrix?" + urlencode({"by": design[0]}))[0])
        conn.close()
    finally:
        proc.terminate()
        proc.wait(timeout=30)
    result = {
        "responses": args.models * 39_150, "models": args.models, "slots_of_one_model": total,
        "store_build_s": round(built_s, 1), "store_mb": round(store.stat().st_size / 1e6, 1),
        "viewer_ready_s": round(ready_s, 2), "catalog_index_s": indexed,
        "slot_view": {**summary(slot_ms), "identities_per_slot": round(statistics.mean(sizes), 1) if sizes else 0},
        "pair_slot_list": summary(pair_ms), "filtered_responses_page": summary(filter_ms),
        "full_text_search": summary(search_ms),
        **{f"matrix_{k}": summary(v) for k, v in matrix.items() if v}, "target_slot_view_ms": 200,
        "meets_target": bool(slot_ms) and summary(slot_ms)["p95_ms"] <= 200,
    }
    finish(result, before, goal="slot views of random slots answer within 200 ms at the 95th percentile "
                                "(slot_view p95_ms <= target_slot_view_ms; the docstring's target, meets_target)",
           within_goal=result["meets_target"])
    if args.store is None:
        for f in folder.iterdir():
            f.unlink()
        folder.rmdir()


if __name__ == "__main__":
    main()
