"""How long does ``counterbench`` take to print its version and its help? Prints JSON.

Times ``python -m counterbench.cli --version``, ``--help``, ``audit --help`` and every other
verb's ``--help`` as a user runs them (a fresh interpreter each time): the median and the fastest
wall time of ``--repeat`` runs, the median CPU time (user + system) of the child, and the machine's
load average: on a busy machine the wall times wait for a core, and the CPU times are what the
command costs. Goal: ≤ 0.3 s wall each on 2 idle cores.

Usage: ``python benchmarks/cli_startup.py [--repeat 7] [--out FILE]``.
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
import time
from pathlib import Path

from bench_json import finish, load_average

REPO = Path(__file__).resolve().parents[1]


def child_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def wall_times(args: list[str], repeat: int) -> tuple[list[float], list[float]]:
    """Wall and CPU seconds of ``repeat`` runs of ``counterbench ARGS``."""
    env = {**os.environ, "PYTHONPATH": str(REPO / "src")}
    walls, cpus = [], []
    for _ in range(repeat):
        cpu, start = child_cpu(), time.perf_counter()
        subprocess.run([sys.executable, "-m", "counterbench.cli", *args], cwd=REPO, env=env,
                       capture_output=True, check=True)
        walls.append(time.perf_counter() - start)
        cpus.append(child_cpu() - cpu)
    return walls, cpus


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--repeat", type=int, default=7)
    parser.add_argument("--out", type=Path)
    options = parser.parse_args()
    before = load_average()
    sys.path.insert(0, str(REPO / "src"))
    import typer

    from counterbench.cli import app

    verbs = sorted(typer.main.get_command(app).commands)  # type: ignore[attr-defined]
    cases = [["--version"], ["--help"], ["audit", "--help"]] + [[v, "--help"] for v in verbs if v != "audit"]
    bare, _ = wall_times(["--version"], 1)  # warm the file cache
    results = {}
    for args in cases:
        walls, cpus = wall_times(args, options.repeat)
        results[" ".join(args)] = {"median_s": round(statistics.median(walls), 3), "min_s": round(min(walls), 3),
                                   "cpu_median_s": round(statistics.median(cpus), 3)}
    start = time.perf_counter()
    subprocess.run([sys.executable, "-c", "pass"], check=True)
    report = {
        "goal_s": 0.3,
        "python_alone_s": round(time.perf_counter() - start, 3),
        "load_average": [round(x, 2) for x in os.getloadavg()],
        "cpu_count": os.cpu_count(),
        "repeat": options.repeat,
        "warm_up_s": round(bare[0], 3),
        "commands": results,
        "all_within_goal": all(r["median_s"] <= 0.3 for r in results.values()),
    }
    finish(report, before, goal="every command's median start-up (to its answer) <= 0.3 s",
           within_goal=report["all_within_goal"], out=options.out)


if __name__ == "__main__":
    main()
