"""Expansion speed: a declarative study's prompt table of 2,000,000 prompts, its time and peak memory. Prints JSON.

The study is ``examples/rent_quote.yaml`` (5 identifiers on 2 axes, English and Hinglish, 2 question
variants) with ``--profiles`` generated profiles (default 50,000, with a number field and a
per-language field), expanded in both variants: 50,000 × 5 × 2 × 2 × 2 = 2,000,000 prompts.

* ``expand_s`` / ``expand_cpu_s``: wall and CPU time of ``study.expand(["standard", "fairness"])``
  (the column-wise expansion, :mod:`counterbench.studies.expansion`); goal ≤ 6 s.
* ``peak_rss_mb``: the process's peak resident memory (``resource.getrusage``) after expanding,
  interpreter, pandas and the study included; goal ≤ 1,500 MB.
* ``yaml_load_cpu_s``: CPU time to read the same study written as a YAML file with the strict reader
  (:func:`counterbench.yaml_files.load_strict`, libyaml's C parser); ``yaml_load_python_cpu_s`` the
  pure-Python strict loader on the same text, ``yaml_speedup`` their ratio; goal ≤ 6 s.
* ``prompts_cli_s`` / ``prompts_cli_cpu_s``: the whole command ``counterbench prompts FILE --variant
  standard --variant fairness`` on that YAML file in a fresh process (start-up, strict read, checks,
  expansion and the summary), wall and CPU time; goal ≤ 15 s of wall time on 2 idle cores.
* The baseline, in the same run: writing every prompt's ``user`` text one by one with the study's
  own ``render`` (one ``str`` per prompt, no table) over the first ``--baseline-rows`` prompts,
  scaled to the whole table; ``ratio`` = expansion time / baseline time. The baseline's texts are
  also compared with the table's: ``texts_match`` must be true.

Usage: ``python benchmarks/expansion_speed.py [--profiles 50000] [--baseline-rows 200000]``. The
load average is reported (the times are wall times on a shared machine; CPU times are steadier).
"""

from __future__ import annotations

import argparse
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import yaml
from bench_json import finish, load_average

from counterbench.studies.declarative import DeclarativeStudy, render
from counterbench.studies.definition import parse_study
from counterbench.yaml_files import StrictLoader, load_strict

ROOT = Path(__file__).resolve().parents[1]
CITIES = ("Pune", "Delhi", {"en": "Bengaluru", "hinglish": "Bangalore"}, "Chennai")


def study_data(profiles: int) -> dict[str, Any]:
    """The study file's content: ``examples/rent_quote.yaml`` with ``profiles`` generated profiles."""
    data: dict[str, Any] = yaml.safe_load((ROOT / "examples" / "rent_quote.yaml").read_text(encoding="utf-8"))
    use_case = data["use_cases"]["rent_quote"]
    use_case["template"] = {
        "en": "I own a {flat} of {area} sq ft in {city}.\n{identifier_phrase}.\n{question}",
        "hinglish": "Mera {city} mein ek {flat} hai, {area} sq ft.\n{identifier_phrase}.\n{question}",
    }
    use_case["profiles"] = [
        {"profile_id": f"P{i:06d}", "flat": f"{1 + i % 4}BHK flat", "city": CITIES[i % len(CITIES)],
         "area": 450 + i}  # distinct profiles (a duplicate is refused)
        for i in range(profiles)
    ]
    return data


def big_study(profiles: int) -> DeclarativeStudy:
    return DeclarativeStudy(parse_study(study_data(profiles), "benchmark"))


def yaml_load(profiles: int) -> dict[str, Any]:
    """CPU seconds to read the study as a YAML file: the strict reader as used (libyaml's C parser with the
    checks on the composed tree) against the pure-Python strict loader, on the same text."""
    data = study_data(profiles)
    text = yaml.safe_dump(data, allow_unicode=True, sort_keys=False)
    times: dict[str, float] = {}
    for name, load in (("yaml_load_cpu_s", lambda: load_strict(text, "study")),
                       ("yaml_load_python_cpu_s", lambda: load_strict(text, "study", loader_class=StrictLoader))):
        used = cpu()
        same = load() == data
        times[name] = round(cpu() - used, 2)
        if not same:
            raise SystemExit(f"{name}: the loaded study differs from the written one")
    return {"yaml_bytes": len(text.encode()), **times,
            "yaml_speedup": round(times["yaml_load_python_cpu_s"] / max(times["yaml_load_cpu_s"], 1e-9), 2)}


def prompts_command(profiles: int) -> dict[str, Any]:
    """Wall and CPU seconds of ``counterbench prompts FILE`` on the study written as a YAML file."""
    text = yaml.safe_dump(study_data(profiles), allow_unicode=True, sort_keys=False)
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "big_study.yaml"
        path.write_text(text, encoding="utf-8")
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        wall = time.perf_counter()
        done = subprocess.run([sys.executable, "-m", "counterbench.cli", "prompts", str(path), "--variant",
                               "standard", "--variant", "fairness"], capture_output=True, text=True, check=False)
        wall = time.perf_counter() - wall
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode != 0 or " prompts in " not in done.stdout:
        raise SystemExit(f"counterbench prompts failed: {done.stderr or done.stdout}")
    used = after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime
    return {"prompts_cli_s": round(wall, 2), "prompts_cli_cpu_s": round(used, 2), "prompts_cli_goal_s": 15}


def baseline_texts(study: DeclarativeStudy, variants: list[str], limit: int) -> list[str]:
    """The ``user`` texts of the first ``limit`` prompts, each rendered on its own, in table order."""
    d = study.definition
    out: list[str] = []
    for _variant in variants:
        for uc in d.use_cases.values():
            for lang in d.languages:
                for unit in study._units(lang):
                    for profile in uc.profiles:
                        design = {k: (v[lang] if isinstance(v, dict) else v) for k, v in profile.items()}
                        for question in uc.question_variants[lang]:
                            out.append(render(uc.templates[lang], {**design, **unit[2], "question": question}))
                            if len(out) >= limit:
                                return out
    return out


def cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--profiles", type=int, default=50_000)
    parser.add_argument("--baseline-rows", type=int, default=200_000)
    args = parser.parse_args()
    before = load_average()
    variants = ["standard", "fairness"]
    study = big_study(args.profiles)
    rss_before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    wall, used = time.perf_counter(), cpu()
    table = study.expand(variants)
    expand_s, expand_cpu_s = time.perf_counter() - wall, cpu() - used
    peak_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    rows = min(args.baseline_rows, len(table))
    wall, used = time.perf_counter(), cpu()
    texts = baseline_texts(study, variants, rows)
    base_s, base_cpu_s = time.perf_counter() - wall, cpu() - used
    texts_match = table["user"].iloc[:rows].tolist() == texts
    prompts, columns = len(table), len(table.columns)
    scale = len(table) / max(1, rows)
    del table
    loaded = yaml_load(args.profiles)
    command = prompts_command(args.profiles)
    result: dict[str, Any] = {
        "prompts": prompts, "columns": columns,
        "expand_s": round(expand_s, 2), "expand_cpu_s": round(expand_cpu_s, 2), "goal_s": 6,
        "peak_rss_mb": round(peak_mb), "rss_before_expand_mb": round(rss_before), "goal_mb": 1500,
        "baseline": f"render() per prompt, {rows:,} prompts scaled to {prompts:,}",
        "baseline_s": round(base_s * scale, 2), "baseline_cpu_s": round(base_cpu_s * scale, 2),
        "ratio": round(expand_s / max(1e-9, base_s * scale), 3),
        "cpu_ratio": round(expand_cpu_s / max(1e-9, base_cpu_s * scale), 3),
        "texts_match": texts_match,
        **loaded,
        **command,
        "load_average": [round(x, 2) for x in os.getloadavg()],
    }
    finish(result, before, goal="expansion <= 6 s and <= 1,500 MB peak, the YAML read <= 6 s of CPU, the whole "
           "'counterbench prompts FILE' <= 15 s", within_goal=(expand_s <= 6 and peak_mb <= 1500
                                                              and loaded["yaml_load_cpu_s"] <= 6
                                                              and command["prompts_cli_s"] <= 15))


if __name__ == "__main__":
    main()
