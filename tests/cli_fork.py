"""A warmed ``counterbench`` for :func:`tests.conftest.run_cli`: each command still runs in a process of its own.

A fresh interpreter spends 0.6–0.9 s of CPU importing pandas, pyarrow, scipy's special functions and
counterbench before the command's first line runs — some 100 times in the suite. So each test process
starts one *warm* process (``python -m tests.cli_fork``) that imports those modules and nothing more (no
function called, no cache filled), and for each command forks a child that does what ``python -m
counterbench.cli ARGS`` does from then on: the test's environment and working directory (the latter first
on ``sys.path``, as ``-m`` puts it), ``/dev/null`` as stdin, stdout and stderr to files, its own random
state, and :func:`counterbench.cli.entry` — the console script's path, exit handlers and exit status
included. What the warm process wrote to stderr while importing is put in front of every child's stderr,
so a warning printed at import still reaches a check of the command's output.

The test falls back to a fresh interpreter (:func:`tests.conftest.counterbench_command` does it) whenever
the warm process could differ from one: an environment other than the one the warm process started with (a
variable read at import, a plug-in on ``PYTHONPATH``), ``--ray`` and ``--workers`` (which start processes
of their own from ``sys.executable``), and whatever the warm process cannot do. Signals, ``kill -9`` and a
command's start-up time are tested on fresh interpreters (``subprocess.Popen``) and never come here.
"""

from __future__ import annotations

import json
import os
import random
import select
import signal
import subprocess
import sys
import tempfile
import threading
from pathlib import Path
from typing import IO, Any

#: what most commands import; the rest is imported by the child that needs it
WARM_MODULES = ("pandas", "pyarrow.parquet", "scipy.special", "counterbench.cli", "counterbench.prompts",
                "counterbench.run.runner", "counterbench.analyses.study", "counterbench.report.api")
#: environment variables that differ from test to test and that nothing reads at import
PER_TEST_VARIABLES = frozenset({"PYTEST_CURRENT_TEST"})
#: options whose commands start processes of their own from ``sys.executable``
FRESH_OPTIONS = ("--ray", "--workers")


def _same_environment(a: dict[str, str], b: dict[str, str]) -> bool:
    return ({k: v for k, v in a.items() if k not in PER_TEST_VARIABLES}
            == {k: v for k, v in b.items() if k not in PER_TEST_VARIABLES})


class WarmCli:
    """The test process's side: one warm process, started on first use, and one command at a time."""

    def __init__(self, repo: Path) -> None:
        self._repo = repo
        self._proc: subprocess.Popen[str] | None = None
        self._environment: dict[str, str] = {}
        self._import_stderr = ""
        self._broken = False

    def serves(self, env: dict[str, str]) -> bool:
        """Whether this warm process is running, in ``env`` (it started in it)."""
        return self._proc is not None and not self._broken and _same_environment(env, self._environment)

    def can_run(self, args: tuple[str, ...], env: dict[str, str]) -> bool:
        if self._broken or any(a == o or a.startswith(o + "=") for a in args for o in FRESH_OPTIONS):
            return False
        return self._proc is None or self.serves(env)

    def _start(self, env: dict[str, str]) -> subprocess.Popen[str]:
        if self._proc is None or self._proc.poll() is not None:
            self.close()
            self._environment = dict(env)
            self._proc = subprocess.Popen([sys.executable, "-m", "tests.cli_fork"], cwd=self._repo, env=env,
                                          stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, bufsize=1)
            ready = self._reply(self._proc, 120.0)
            self._import_stderr = str(ready["import_stderr"])
        return self._proc

    @staticmethod
    def _reply(proc: subprocess.Popen[str], timeout: float) -> dict[str, Any]:
        assert proc.stdout is not None
        readable, _, _ = select.select([proc.stdout], [], [], timeout)
        if not readable:
            raise TimeoutError
        line = proc.stdout.readline()
        if not line:
            raise EOFError("the warm counterbench process ended")
        reply: dict[str, Any] = json.loads(line)
        return reply

    def run(self, args: tuple[str, ...], cwd: Path, env: dict[str, str],
            timeout: float) -> subprocess.CompletedProcess[str] | None:
        """The command's result, or ``None`` when the warm process cannot run it (run it fresh then)."""
        command = [sys.executable, "-m", "counterbench.cli", *args]
        try:
            proc = self._start(env)
        except (OSError, TimeoutError, EOFError, ValueError):
            self._broken = True
            self.close()
            return None
        with tempfile.TemporaryDirectory(prefix="counterbench-cli-") as folder:
            out, err = Path(folder) / "stdout", Path(folder) / "stderr"
            assert proc.stdin is not None
            proc.stdin.write(json.dumps({"argv": list(args), "cwd": str(cwd), "env": env, "stdout": str(out),
                                         "stderr": str(err)}) + "\n")
            proc.stdin.flush()
            started = self._reply(proc, 60.0)
            try:
                done = self._reply(proc, timeout)
            except TimeoutError:
                os.kill(int(started["pid"]), signal.SIGKILL)
                self._reply(proc, 60.0)
                raise subprocess.TimeoutExpired(command, timeout) from None
            stdout = out.read_text() if out.exists() else ""  # universal newlines, as subprocess's text mode
            stderr = err.read_text() if err.exists() else ""
        return subprocess.CompletedProcess(command, int(done["code"]), stdout, self._import_stderr + stderr)

    def close(self) -> None:
        if self._proc is not None:
            if self._proc.stdin is not None:
                self._proc.stdin.close()
            try:
                self._proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self._proc.kill()
                self._proc.wait()
            if self._proc.stdout is not None:
                self._proc.stdout.close()
            self._proc = None


class WarmPool:
    """The warm processes of one test process: one per environment its helpers run commands in (the suite's
    own and, for ``tests/run``, the one without API keys), at most :data:`MAX_WARM`."""

    MAX_WARM = 2

    def __init__(self, repo: Path) -> None:
        self._repo = repo
        self._warm: list[WarmCli] = []
        self._lock = threading.Lock()

    def run(self, args: tuple[str, ...], cwd: Path, env: dict[str, str],
            timeout: float) -> subprocess.CompletedProcess[str] | None:
        """The command's result from a warm process, or ``None``: run it in a fresh interpreter."""
        if os.environ.get("COUNTERBENCH_TESTS_FRESH_CLI") == "1":
            return None
        with self._lock:
            warm = next((w for w in self._warm if w.serves(env)), None)
            if warm is None and len(self._warm) < self.MAX_WARM:
                warm = WarmCli(self._repo)
                self._warm.append(warm)
            if warm is None or not warm.can_run(args, env):
                return None
            return warm.run(args, cwd, env, timeout)

    def close(self) -> None:
        for warm in self._warm:
            warm.close()
        self._warm.clear()


def _child(request: dict[str, Any]) -> None:
    """In the forked child: become ``python -m counterbench.cli ARGS`` run from ``cwd`` (never returns)."""
    try:
        null = os.open(os.devnull, os.O_RDONLY)
        os.dup2(null, 0)
        for fd, path in ((1, request["stdout"]), (2, request["stderr"])):
            handle = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
            os.dup2(handle, fd)
            os.close(handle)
        os.close(null)
        os.chdir(request["cwd"])
        os.environ.clear()
        os.environ.update(request["env"])
        sys.path[0] = os.getcwd()
        random.seed()
        import counterbench.cli

        sys.argv = [counterbench.cli.__file__, *request["argv"]]
        counterbench.cli.entry()
    except BaseException:  # the child must never return into the warm process's loop
        import traceback

        traceback.print_exc()
    finally:
        os._exit(70)


def _serve(protocol_in: IO[str], protocol_out: IO[str]) -> None:
    while line := protocol_in.readline():
        request = json.loads(line)
        protocol_out.flush()
        pid = os.fork()
        if pid == 0:
            protocol_in.close()
            protocol_out.close()
            _child(request)
        protocol_out.write(json.dumps({"pid": pid}) + "\n")
        protocol_out.flush()
        _, status = os.waitpid(pid, 0)
        protocol_out.write(json.dumps({"code": os.waitstatus_to_exitcode(status)}) + "\n")
        protocol_out.flush()


def main() -> None:
    """The warm process: import, say so (with what importing printed), then fork one child per request."""
    protocol_in = os.fdopen(os.dup(0), "r")
    protocol_out = os.fdopen(os.dup(1), "w")
    with tempfile.TemporaryFile("w+") as captured:
        saved = os.dup(2)
        os.dup2(captured.fileno(), 2)
        try:
            import importlib

            for name in WARM_MODULES:
                importlib.import_module(name)
        finally:
            sys.stderr.flush()
            os.dup2(saved, 2)
            os.close(saved)
        captured.seek(0)
        import_stderr = captured.read()
    null = os.open(os.devnull, os.O_RDWR)
    for fd in (0, 1):  # the protocol has its own descriptors: a stray print cannot corrupt it
        os.dup2(null, fd)
    os.close(null)
    protocol_out.write(json.dumps({"import_stderr": import_stderr}) + "\n")
    protocol_out.flush()
    import gc

    gc.freeze()  # the imported modules' objects: a child's collections neither scan them nor copy their pages
    _serve(protocol_in, protocol_out)


if __name__ == "__main__":
    main()
