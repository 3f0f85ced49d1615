"""An answer received is an answer kept: kill -9, two runs at once, a deleted store, a full disk.

Every test runs the real CLI in a subprocess against a real HTTP server on 127.0.0.1 that logs when
each request arrived and when its reply was written (:mod:`tests.run.logging_server`).
"""

from __future__ import annotations

import json
import multiprocessing
import os
import random
import resource
import signal
import sqlite3
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pandas as pd
import pytest

from counterbench.errors import UserError
from counterbench.run.store import open_store
from counterbench.table_files import write_table
from counterbench.testing.fake_openai import FaultConfig, run_in_thread
from tests.run.conftest import answers_without_prompt, make_prompts, one_error_line, subprocess_env
from tests.run.logging_server import LoggingServer, exposure_at, requests_per_user

KILLS = 20
#: an answer the client has had this long to handle must be in the store at a kill
DURABLE_WITHIN_S = 0.010
#: the client's run-queue wait is sampled every SAMPLE_S over the LOOKBACK_S before each kill
LOOKBACK_S = 0.200
SAMPLE_S = 0.010


def _runqueue_wait_s(pid: int) -> float | None:
    """Seconds the process's main thread (the event loop) has spent runnable but waiting for a CPU.

    The kernel's ``/proc/PID/schedstat`` (run time, run-queue wait, time slices, in ns); ``None`` where
    the kernel does not keep it.
    """
    try:
        with open(f"/proc/{pid}/schedstat", encoding="ascii") as f:
            return int(f.read().split()[1]) / 1e9
    except (OSError, ValueError, IndexError):
        return None


def _steal_s() -> float:
    """Seconds the hypervisor has kept this machine's busiest-stolen CPU from running anything (``steal``
    in ``/proc/stat``, per CPU; 0 on bare metal or where the kernel does not count it).

    On a virtual machine the host may pause a virtual CPU — or all of them at once — for tens of
    milliseconds: no process inside, the client included, runs then, and ``schedstat`` counts that
    time as neither running nor waiting."""
    try:
        with open("/proc/stat", encoding="ascii") as f:
            rows = [line.split() for line in f if line.startswith("cpu") and not line.startswith("cpu ")]
        return max(int(row[8]) for row in rows) / os.sysconf("SC_CLK_TCK")
    except (OSError, ValueError, IndexError):
        return 0.0


def _unavailable_s(pid: int) -> float | None:
    """The client's time without a CPU so far: its run-queue wait plus the machine's stolen time."""
    wait = _runqueue_wait_s(pid)
    return None if wait is None else wait + _steal_s()


def _waits_until_kill(pid: int, started: object, delay: float) -> list[tuple[float, float]]:
    """``(time, run-queue wait so far)`` of ``pid`` every SAMPLE_S from now until ``delay`` seconds after
    ``started()`` first turns true (the run's first request reached the server); empty without schedstat."""
    samples: list[tuple[float, float]] = []
    end: float | None = None
    while True:
        wait = _unavailable_s(pid)
        now = time.time()
        if wait is not None:
            samples.append((now, wait))
        if end is None and started():  # type: ignore[operator]
            end = now + delay
        if end is not None and now >= end:
            return samples
        time.sleep(min(SAMPLE_S, max(0.0, end - now)) if end is not None else 0.002)


def _allowed(written_at: float, samples: list[tuple[float, float]], at_kill: float) -> float:
    """How old a reply written at ``written_at`` may be at the kill and still be lost: 10 ms, plus the time the
    client had no CPU (run-queue wait and stolen time) since the last sample before the reply was written."""
    earlier = [wait for at, wait in samples if at <= written_at]
    return DURABLE_WITHIN_S + (at_kill - earlier[-1] if earlier else 0.0)


def _run_args(tmp_path: Path, server: object, table: pd.DataFrame, store: Path, concurrency: int) -> list[str]:
    prompts = write_table(table, tmp_path / "prompts.parquet")
    model = f"openai-compatible:{server.base_url}:fake-model"  # type: ignore[attr-defined]
    return ["run", "--prompts", str(prompts), "--model", model, "--store", str(store),
            "--concurrency", str(concurrency), "--no-progress"]


def _popen(args: list[str], cwd: Path, **kwargs: object) -> subprocess.Popen[str]:
    return subprocess.Popen([sys.executable, "-m", "counterbench.cli", *args], cwd=cwd, env=subprocess_env(),
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, **kwargs)  # type: ignore[call-overload]


def _stored(store: Path) -> dict[str, tuple[object, ...]]:
    if not store.exists():
        return {}
    with sqlite3.connect(store) as conn:
        rows = conn.execute("SELECT prompt_id, response, status, finished_at FROM responses").fetchall()
    assert len(rows) == len({r[0] for r in rows}), "duplicate rows"
    return {r[0]: tuple(r[1:]) for r in rows}


def _count(store: Path) -> int:
    try:
        with sqlite3.connect(f"file:{store}?mode=ro", uri=True) as conn:
            return int(conn.execute("SELECT count(*) FROM responses").fetchone()[0])
    except sqlite3.Error:
        return 0


def _wait_for(condition: object, timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while not condition():  # type: ignore[operator]
        assert time.monotonic() < deadline, "timed out waiting"
        time.sleep(0.01)


@pytest.mark.slow
@pytest.mark.alone  # its bound is 10 ms of client time: another test beside it adds run-queue waits
@pytest.mark.parametrize(("n", "kills", "concurrency", "latency_ms", "early_only"), [
    pytest.param(5000, KILLS, 8, 15, False, id="5000-prompts"),
    # a large table at the start of a run: 20,000 prompt rows wait for the store while the first replies
    # arrive (the prompt rows must not hold the answers' commits back); every kill in the first 100 ms
    pytest.param(20_000, 12, 32, 30, True, id="20000-prompts-first-100ms"),
])
def test_kill_minus_nine_repeatedly_loses_nothing_and_resends_only_what_was_in_flight(
        tmp_path: Path, n: int, kills: int, concurrency: int, latency_ms: int, early_only: bool,
        share_the_machine: Callable[[], None]) -> None:
    """After each kill, the server's log decides: every reply it wrote more than 10 ms of the client's time
    before the kill is in the store. The client's time is wall time minus the time it had no CPU since the
    reply was written: its run-queue wait (``/proc/PID/schedstat``) and, on a virtual machine, the time the
    hypervisor stole from the CPUs (``/proc/stat``), sampled every 10 ms over the 200 ms before the kill.
    On a loaded machine an answer may sit unread in a socket because the client is not running at all,
    and a virtual machine's host may pause every CPU for tens of milliseconds; no commit policy can help
    either. The figures are printed. Two sizes: 5,000 prompts with every other kill in the run's first
    100 ms, and 20,000 prompts (``-c 32``, a 30-ms server) with every kill in the first 100 ms."""
    table = make_prompts(n)
    by_user = dict(zip(table["user"], table["prompt_id"], strict=True))
    store = tmp_path / "cb.db"
    rng = random.Random(20261201)
    stolen_before = _steal_s()
    starved: list[float] = []  # per kill: the client's time without a CPU in the last LOOKBACK_S
    lost_ages: list[float] = []  # age at the kill of every reply written but not stored
    excess: list[tuple[float, float, str]] = []  # (age, allowed, kind of kill) of lost replies older than allowed
    with run_in_thread(LoggingServer(FaultConfig(latency_ms=latency_ms))) as server:
        log = server.server  # type: ignore[attr-defined]
        args = _run_args(tmp_path, server, table, store, concurrency=concurrency)
        seen: dict[str, tuple[object, ...]] = {}
        allowance = 0
        for kill in range(kills):
            before = len(log.snapshot())
            proc = _popen(args, tmp_path)
            # every other kill within the run's first 100 ms (its first replies), the others later
            delay = rng.uniform(0.0, 0.1) if early_only or kill % 2 else rng.uniform(0.1, 0.4)
            samples = _waits_until_kill(proc.pid, lambda: len(log.snapshot()) > before or proc.poll() is not None,  # noqa: B023
                                        delay)
            killed_at = time.time()
            proc.send_signal(signal.SIGKILL)
            proc.wait(timeout=30)
            assert proc.returncode == -signal.SIGKILL, "the run finished before the kill: use more prompts"
            at_kill = samples[-1][1] if samples else 0.0
            recent = [wait for at, wait in samples if at >= killed_at - LOOKBACK_S]
            starved.append(at_kill - recent[0] if recent else 0.0)
            time.sleep(0.1)  # requests the killed client sent just before the kill reach the server
            events = log.snapshot()[before:]
            in_flight, _ = exposure_at(events, killed_at, 0.0)
            replies = [e for e in events if e.kind == "sent" and e.at <= killed_at]
            allowance += in_flight + sum(killed_at - e.at <= _allowed(e.at, samples, at_kill) for e in replies)
            now = _stored(store)
            assert not answers_without_prompt(store), "a stored answer has no stored prompt"
            changed = [pid for pid, row in seen.items() if now.get(pid) != row]
            assert not changed, f"answers lost or changed by a kill: {changed[:5]}"
            for event in replies:
                if by_user[event.user] not in now:
                    lost_ages.append(killed_at - event.at)
                    allowed = _allowed(event.at, samples, at_kill)
                    if killed_at - event.at > allowed:
                        when = "early" if early_only or kill % 2 else "late"
                        excess.append((round(killed_at - event.at, 4), round(allowed, 4), when))
            seen = now
        assert 0 < len(seen) < n
        share_the_machine()  # the kills are over: finishing the run is not timing-sensitive
        log.config.latency_ms = 0  # nor is the server's latency: 20,000 answers in ~3 s, not ~12 s
        done = subprocess.run([sys.executable, "-m", "counterbench.cli", *args[:-3], "--concurrency", "64",
                               "--no-progress"], cwd=tmp_path, env=subprocess_env(), capture_output=True, text=True,
                              timeout=600)
        assert done.returncode == 0, done.stderr
        per_user = requests_per_user(log.snapshot())
    final = _stored(store)
    assert len(final) == n and all(final[pid] == row for pid, row in seen.items())
    assert set(per_user) == set(table["user"])
    resent = sum(per_user.values()) - n
    ms = sorted(1000 * w for w in starved)
    print(f"\n{n:,} prompts, {kills} kills (load {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs): "
          f"{resent} answers sent again; "
          f"in flight at the kills or written in their last {DURABLE_WITHIN_S * 1000:.0f} ms of client time: "
          f"{allowance}. Replies written but not stored: {len(lost_ages)}, at most "
          f"{1000 * max(lost_ages, default=0.0):.1f} ms old ({sum(a > DURABLE_WITHIN_S for a in lost_ages)} older "
          f"than {DURABLE_WITHIN_S * 1000:.0f} ms). The client's time without a CPU (run-queue wait and stolen "
          f"time) in the {LOOKBACK_S * 1000:.0f} ms before a kill: median {ms[len(ms) // 2]:.1f} ms, "
          f"max {ms[-1]:.1f} ms; stolen by the hypervisor during the test: {1000 * (_steal_s() - stolen_before):.0f} ms"
          + ("" if _runqueue_wait_s(os.getpid()) is not None else " (no /proc/PID/schedstat: counted as 0)"))
    assert not excess, f"replies lost although written long before the kill (age, allowed) in s: {excess[:5]}"
    assert resent <= allowance, f"{resent} answers sent twice; in flight or just received at the kills: {allowance}"
    with sqlite3.connect(store) as conn:
        assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
        statuses = dict(conn.execute("SELECT status, count(*) FROM runs GROUP BY status").fetchall())
    assert statuses == {"killed": kills, "completed": 1}


def _start_run_at_the_same_instant(store: str, barrier: multiprocessing.synchronize.Barrier,
                                   results: multiprocessing.queues.Queue[str]) -> None:
    with open_store(store) as opened:
        barrier.wait()
        try:
            opened.start_run("run", "test", {}, "0")
        except UserError as err:
            results.put(f"refused: {err}")
        else:
            results.put("started")
            time.sleep(0.3)  # stay alive while the other one checks


def test_two_runs_started_at_the_same_instant_one_gets_the_store(tmp_path: Path) -> None:
    ctx = multiprocessing.get_context("fork")
    for trial in range(12):
        store = str(tmp_path / f"s{trial}.db")
        open_store(store).close()
        barrier, results = ctx.Barrier(2), ctx.Queue()
        procs = [ctx.Process(target=_start_run_at_the_same_instant, args=(store, barrier, results))
                 for _ in range(2)]
        for proc in procs:
            proc.start()
        for proc in procs:
            proc.join(timeout=60)
        outcomes = sorted(results.get(timeout=5) for _ in procs)
        assert outcomes[1] == "started", outcomes
        assert outcomes[0].startswith("refused: ") and "is in use by another counterbench process" in outcomes[0]


@pytest.mark.slow
def test_two_cli_runs_at_once_send_every_prompt_once(tmp_path: Path) -> None:
    table = make_prompts(300)
    store = tmp_path / "cb.db"  # does not exist yet: both processes create it
    with run_in_thread(LoggingServer(FaultConfig(latency_ms=20))) as server:
        args = _run_args(tmp_path, server, table, store, concurrency=4)
        procs = [_popen(args, tmp_path), _popen(args, tmp_path)]
        outs = [(*p.communicate(timeout=120), p.returncode) for p in procs]
        per_user = requests_per_user(server.server.snapshot())  # type: ignore[attr-defined]
    codes = sorted(rc for _, _, rc in outs)
    assert codes == [0, 2], outs
    loser = next(o for o in outs if o[2] == 2)
    assert "in use by another counterbench process" in loser[1] and len(loser[1].strip().splitlines()) == 1
    assert len(_stored(store)) == 300
    assert sorted(per_user.values()) == [1] * 300  # never a double send


def _recovered_ids(path: Path) -> list[str]:
    assert path.exists() and path.stat().st_size > 0
    return [json.loads(line)["prompt_id"] for line in path.read_text(encoding="utf-8").splitlines()]


def _recovery_file(line: str) -> Path:
    marker = " are in "
    assert marker in line, line
    return Path(line.split(marker, 1)[1].split(" (", 1)[0])


def test_store_deleted_mid_run_stops_with_a_named_recovery_file(tmp_path: Path) -> None:
    n = 2000
    table = make_prompts(n)
    store = tmp_path / "cb.db"
    with run_in_thread(LoggingServer(FaultConfig(latency_ms=10))) as server:
        proc = _popen(_run_args(tmp_path, server, table, store, concurrency=8), tmp_path)
        _wait_for(lambda: _count(store) >= 50)
        for suffix in ("", "-wal", "-shm"):
            Path(f"{store}{suffix}").unlink(missing_ok=True)
        out, err = proc.communicate(timeout=60)
        answered = {e.user for e in server.server.snapshot() if e.kind == "sent"}  # type: ignore[attr-defined]
    assert proc.returncode == 2, (out, err)
    line = one_error_line(subprocess.CompletedProcess([], 2, out, err))
    assert "was deleted or replaced" in line
    recovered = _recovered_ids(_recovery_file(line))
    first = json.loads(_recovery_file(line).read_text(encoding="utf-8").splitlines()[0])
    assert first["model_spec"] == first["model"]  # the model string behind the label, checked at its import
    assert len(recovered) == len(set(recovered))
    by_user = dict(zip(table["user"], table["prompt_id"], strict=True))
    assert set(recovered) == {by_user[u] for u in answered}  # every answer received, nothing else
    assert 50 <= len(recovered) < n
    assert not list(tmp_path.glob("*.part"))


def _limit_file_size(limit: int) -> None:
    resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))


@pytest.mark.slow
def test_disk_full_mid_run_keeps_every_answer_in_the_store_or_the_recovery_file(tmp_path: Path) -> None:
    n = 1500
    table = make_prompts(n)
    store = tmp_path / "cb.db"
    with run_in_thread(LoggingServer(FaultConfig(latency_ms=10))) as server:
        args = _run_args(tmp_path, server, table, store, concurrency=8)
        limit = 1_500_000  # bytes per file: the prompts fit, the answers soon do not
        proc = _popen(args, tmp_path, preexec_fn=lambda: _limit_file_size(limit))
        out, err = proc.communicate(timeout=120)
        answered = {e.user for e in server.server.snapshot() if e.kind == "sent"}  # type: ignore[attr-defined]
        assert proc.returncode == 2, (out, err)
        line = one_error_line(subprocess.CompletedProcess([], 2, out, err))
        assert line.startswith("counterbench: error: cannot write store"), line
        rescue = _recovery_file(line)
        recovered = _recovered_ids(rescue)
        stored = _stored(store)
        by_user = dict(zip(table["user"], table["prompt_id"], strict=True))
        assert not set(recovered) & set(stored)
        assert set(recovered) | set(stored) == {by_user[u] for u in answered}
        assert 0 < len(stored) < n
        # the recovery file loads back, and a rerun sends only what was never answered
        imported = subprocess.run([sys.executable, "-m", "counterbench.cli", "import", str(rescue), "--store",
                                   str(store)], cwd=tmp_path, env=subprocess_env(), capture_output=True, text=True,
                                  timeout=120)
        assert imported.returncode == 0, imported.stderr
        before = len(server.server.snapshot())  # type: ignore[attr-defined]
        done = subprocess.run([sys.executable, "-m", "counterbench.cli", *args], cwd=tmp_path, env=subprocess_env(),
                              capture_output=True, text=True, timeout=300)
        assert done.returncode == 0, done.stderr
        resent = [e for e in server.server.snapshot()[before:] if e.kind == "recv"]  # type: ignore[attr-defined]
    assert len(resent) == n - len(answered)
    assert len(_stored(store)) == n
    assert os.path.getsize(rescue) > 0
