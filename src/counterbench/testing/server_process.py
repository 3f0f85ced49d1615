"""A fake server in its own process, for benchmarks: it prints ``READY URL`` and stops on SIGTERM."""

from __future__ import annotations

import signal
import subprocess
import sys
import time


class ServerProcess:
    """A fake server in its own process (for benchmarks): ``with ServerProcess("fake_openai", ...)``."""

    def __init__(self, module: str, *args: str, startup_timeout_s: float = 20.0) -> None:
        self.module = f"counterbench.testing.{module}"
        self.args = list(args)
        self.startup_timeout_s = startup_timeout_s
        self.proc: subprocess.Popen[str] | None = None
        self.base_url = ""

    def start(self) -> ServerProcess:
        self.proc = subprocess.Popen(
            [sys.executable, "-m", self.module, *self.args], stdout=subprocess.PIPE, text=True, bufsize=1
        )
        if self.proc.stdout is None:
            raise RuntimeError("no stdout pipe")
        deadline = time.monotonic() + self.startup_timeout_s
        while time.monotonic() < deadline:
            line = self.proc.stdout.readline()
            if line.startswith("READY "):
                self.base_url = line.split(None, 1)[1].strip()
                return self
            if not line and self.proc.poll() is not None:
                break
        self.stop()
        raise RuntimeError(f"{self.module} did not start")

    def stop(self) -> str:
        """Terminate the server; returns what it printed on the way out (its counters)."""
        proc, self.proc = self.proc, None
        if proc is None:
            return ""
        if proc.poll() is None:
            proc.send_signal(signal.SIGTERM)
        try:
            out, _ = proc.communicate(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            out, _ = proc.communicate()
        return out or ""

    def __enter__(self) -> ServerProcess:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
