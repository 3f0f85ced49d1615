"""A new user's first ten minutes, timed: the README's setup and main job in a fresh clone. Prints JSON.

Clones the repository (``git clone`` of its committed ``HEAD``) into a temporary directory, runs the
README's setup command there (the first line of its "Three commands" block, ``bash scripts/setup.sh``)
with no pip cache (``PIP_NO_CACHE_DIR=1``: every wheel is downloaded, nothing built earlier is reused),
then the README's main job (the second line: ``.venv/bin/counterbench audit rupeebias --model local
--preset quick``). For each: wall seconds, CPU seconds (user + system of every process it waited for:
on a shared machine the wall time waits for a core, the CPU time is what the step costs), the load
average before and after, the goal (setup 300 s, main job 600 s, on 2 idle cores) and ``within_goal``
(wall seconds within the goal).

Usage: ``python benchmarks/fresh_machine.py [--repo DIR] [--skip-main] [--keep]``.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from cli_startup import child_cpu

REPO = Path(__file__).resolve().parents[1]
GOALS_S = {"setup": 300.0, "main_job": 600.0}


def readme_commands(readme: Path) -> dict[str, str]:
    """The setup and main-job commands of the README's "Three commands" block (comments dropped)."""
    text = readme.read_text(encoding="utf-8")
    found = re.search(r"## Three commands\s+```bash\n(.*?)```", text, re.S)
    if found is None:
        raise SystemExit(f"{readme}: no 'Three commands' bash block")
    lines = [line.split("#", 1)[0].strip() for line in found.group(1).splitlines()]
    lines = [line for line in lines if line]
    if len(lines) < 2 or "setup" not in lines[0]:
        raise SystemExit(f"{readme}: the block's first two lines are not the setup and the main job: {lines}")
    return {"setup": lines[0], "main_job": lines[1]}


def timed(name: str, command: str, cwd: Path, env: dict[str, str], log: Path) -> dict[str, object]:
    """Run one shell command in ``cwd``; its wall and CPU seconds, load averages and exit code."""
    load_before = os.getloadavg()
    cpu, start = child_cpu(), time.perf_counter()
    with log.open("w") as out:
        code = subprocess.run(shlex.split(command), cwd=cwd, env=env, stdout=out, stderr=subprocess.STDOUT).returncode
    wall = time.perf_counter() - start
    tail = log.read_text(errors="replace").strip().splitlines()[-3:]
    return {"command": command, "exit_code": code, "wall_s": round(wall, 1), "cpu_s": round(child_cpu() - cpu, 1),
            "load_before": [round(x, 2) for x in load_before], "load_after": [round(x, 2) for x in os.getloadavg()],
            "goal_s": GOALS_S[name], "within_goal": code == 0 and wall <= GOALS_S[name], "output_tail": tail}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repo", type=Path, default=REPO, help="the repository to clone (its committed HEAD)")
    parser.add_argument("--skip-main", action="store_true", help="time the setup only")
    parser.add_argument("--keep", action="store_true", help="keep the clone (its path is printed)")
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="counterbench-fresh-"))
    clone = work / "counterbench"
    try:
        subprocess.run(["git", "clone", "--quiet", str(args.repo), str(clone)], check=True)
        commit = subprocess.run(["git", "-C", str(clone), "rev-parse", "--short", "HEAD"], check=True,
                                capture_output=True, text=True).stdout.strip()
        commands = readme_commands(clone / "README.md")
        env = {k: v for k, v in os.environ.items() if k not in ("VIRTUAL_ENV", "PYTHONPATH", "PIP_CACHE_DIR")}
        env["PIP_NO_CACHE_DIR"] = "1"
        result: dict[str, object] = {"commit": commit, "cpus": os.cpu_count(), "clone": str(clone)}
        result["setup"] = setup = timed("setup", commands["setup"], clone, env, work / "setup.log")
        if not args.skip_main and setup["exit_code"] == 0:
            result["main_job"] = timed("main_job", commands["main_job"], clone, env, work / "main_job.log")
        steps = [v for k, v in result.items() if k in GOALS_S]
        result["within_goal"] = all(isinstance(s, dict) and s["within_goal"] for s in steps)
        print(json.dumps(result, indent=2))
    finally:
        if not args.keep:
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
