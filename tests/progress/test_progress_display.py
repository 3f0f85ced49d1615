"""Progress that informs: without a terminal, a line every few seconds with count, %, rate and ETA;
in an 80-column terminal (a real pty), the bar keeps count, % and ETA even for a model given as a URL."""

from __future__ import annotations

import fcntl
import io
import os
import pty
import re
import select
import struct
import subprocess
import sys
import termios
import time
from pathlib import Path

import pytest

from counterbench.errors import UserError
from counterbench.options import RunOptions
from counterbench.run.progress import Counters, RateMeter, RunDisplay, format_duration, progress_line, shorten
from counterbench.testing.fake_openai import ServerProcess
from tests.conftest import REPO, run_cli_here

ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]|\x1b\][^\x07]*\x07")
PLAIN = re.compile(r"^\[(?P<name>[^\]]+)\] (?P<done>[\d,]+)/(?P<total>[\d,]+) \((?P<pct>[\d.]+)%\) · "
                   r"(?P<rate>[\d,.]+)/s · ETA (?P<eta>\d+:\d\d:\d\d|-:--:--) · errors \d+")


def env() -> dict[str, str]:
    out = {k: v for k, v in os.environ.items() if not k.endswith("_API_KEY")}
    out["PYTHONPATH"] = str(REPO / "src") + os.pathsep + out.get("PYTHONPATH", "")
    return out


def run_args(model: str, store: Path, concurrency: int = 2) -> list[str]:
    """216 prompts (the quick preset's salary and increment questions)."""
    return [sys.executable, "-m", "counterbench.cli", "run", "rupeebias", "--model", model, "--use-case",
            "salary_estimation", "--use-case", "salary_increment_estimation", "--preset", "quick", "--store",
            str(store), "--concurrency", str(concurrency)]


def test_plain_lines_carry_percent_rate_and_eta(tmp_path: Path) -> None:
    with ServerProcess("fake_openai", "--latency-ms", "15") as server:  # 216 answers one at a time: ≥ 3.2 s
        model = f"openai-compatible:{server.base_url}:fake-model"
        done = subprocess.run([*run_args(model, tmp_path / "p.db", concurrency=1), "--progress-every", "1"],
                              capture_output=True, text=True, env=env(), timeout=300)
    assert done.returncode == 0, done.stderr
    lines = [m for line in done.stderr.splitlines() if (m := PLAIN.match(line))]
    assert len(lines) >= 3, done.stderr  # 216 prompts at < 67/s: a line every second
    for m in lines:
        assert m["name"] == model
        done_n, total = int(m["done"].replace(",", "")), int(m["total"].replace(",", ""))
        assert total == 216 and float(m["pct"]) == pytest.approx(100 * done_n / total, abs=0.06)
    middle = [m for m in lines if 0 < int(m["done"].replace(",", "")) < 216]
    assert middle, "no line while the run was going"
    assert all(float(m["rate"].replace(",", "")) > 0 and m["eta"] != "-:--:--" for m in middle)


def test_eighty_column_terminal_keeps_the_numbers(tmp_path: Path) -> None:
    with ServerProcess("fake_openai", "--latency-ms", "40") as server:
        model = f"openai-compatible:{server.base_url}:a-rather-long-model-name-for-the-bar"
        master, slave = pty.openpty()
        fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 24, 80, 0, 0))
        proc = subprocess.Popen(run_args(model, tmp_path / "t.db"), stdin=slave, stdout=slave, stderr=slave,
                                env={**env(), "TERM": "xterm-256color", "COLUMNS": "80"}, close_fds=True)
        os.close(slave)
        chunks = []
        deadline = time.monotonic() + 300
        while time.monotonic() < deadline:
            ready, _, _ = select.select([master], [], [], 0.5)
            if ready:
                try:
                    data = os.read(master, 65536)
                except OSError:
                    break
                if not data:
                    break
                chunks.append(data)
            elif proc.poll() is not None:
                break
        proc.wait(timeout=30)
        os.close(master)
    assert proc.returncode == 0
    screen = ANSI.sub("", b"".join(chunks).decode("utf-8", "replace")).replace("\r", "\n")
    bars = [line for line in screen.splitlines() if re.search(r"\d+/216", line)]
    assert bars, screen[-2000:]
    assert all(len(line) <= 80 for line in bars), max(bars, key=len)
    running = [b for b in bars if not b.rstrip().endswith("216/216")]
    for line in bars:
        assert re.search(r"\d+/216 +\d+%", line) and re.search(r"ETA (\d+:\d\d:\d\d|-:--:--)", line), line
        assert "…" in line  # the URL label was shortened, not the numbers
    assert any(re.search(r"ETA 0:0\d:\d\d", b) for b in running + bars[-1:]), bars[-5:]


def test_plain_lines_come_as_often_as_asked() -> None:
    c = Counters(total=10, done=4)
    out = io.StringIO()
    display = RunDisplay({"m": c}, mode="plain", stream=out, plain_every_s=3600)
    display.refresh()
    assert out.getvalue() == ""  # not an hour yet
    display = RunDisplay({"m": c}, mode="plain", stream=out, plain_every_s=1e-9)
    display.refresh()
    assert out.getvalue().startswith("[m] 4/10 (40.0%)")


@pytest.mark.parametrize("every", ["0", "-1", "nan", "inf"])
def test_a_bad_progress_interval_is_one_line(every: str, tmp_path: Path) -> None:
    with pytest.raises(UserError, match=r"--progress-every must be a number of seconds greater than 0"):
        RunOptions(progress_every=float(every)).check()
    done = run_cli_here("run", "rupeebias", "--model", "sim:fair", "--preset", "quick", "--store",
                        str(tmp_path / "s.db"), "--progress-every", every, cwd=tmp_path)
    assert done.returncode == 2 and not (tmp_path / "s.db").exists(), done.stderr
    assert len(done.stderr.strip().splitlines()) == 1 and "--progress-every must be" in done.stderr, done.stderr


def test_shorten_keeps_both_ends() -> None:
    label = "openai-compatible:http://127.0.0.1:8000/v1:qwen2.5-7b"
    short = shorten(label, 24)
    assert len(short) == 24 and short.startswith("openai-compa") and short.endswith("qwen2.5-7b"[-11:])
    assert shorten("sim:fair") == "sim:fair"


def test_rate_and_eta_from_recent_answers() -> None:
    meter = RateMeter()
    assert meter.update(0.0, 0) == 0.0
    assert meter.update(10.0, 50) == pytest.approx(5.0)
    assert RateMeter.eta(5.0, 100) == pytest.approx(20.0)
    assert format_duration(3725) == "1:02:05" and format_duration(float("nan")) == "-:--:--"


def test_spend_shows_once_a_priced_model_costs_something() -> None:
    c = Counters(total=10, done=4)
    assert "spent" not in progress_line("m", c, 2.0)
    c.cost_usd = 0.0123
    line = progress_line("m", c, 2.0)
    assert "(40.0%)" in line and "ETA 0:00:03" in line and "spent $0.0123" in line
    out = io.StringIO()
    display = RunDisplay({"m": c}, mode="plain", stream=out)
    display.refresh(note="stopping")
    assert out.getvalue().startswith("[m] 4/10 (40.0%)") and "stopping" in out.getvalue()
