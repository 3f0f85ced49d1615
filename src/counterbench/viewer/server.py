"""Running the viewer: open the catalog, bind 127.0.0.1, serve with uvicorn until interrupted."""

from __future__ import annotations

import signal
import socket
import sys
import threading
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from counterbench.errors import UserError
from counterbench.report.links import DEFAULT_HOST, DEFAULT_PORT

if TYPE_CHECKING:
    from counterbench.viewer.catalog import Catalog


def analysis_aliases(studies: Iterable[str]) -> dict[str, dict[str, str]]:
    """Names the analysis tables use for stored values (a use case stored under a name its study declares as
    an alias is analysed under the study's own), so report links match."""
    from counterbench.analyses.prepare import use_case_aliases

    use_cases = use_case_aliases(studies)
    return {"use_case": use_cases} if use_cases else {}


def open_catalog(store: str | Path) -> Catalog:
    """The viewer's catalog of ``store``, with the analysis names of the studies it holds."""
    from counterbench.viewer.catalog import Catalog

    catalog = Catalog(store)
    try:
        catalog.aliases = analysis_aliases(str(s) for (s,) in catalog.query("SELECT DISTINCT study FROM cat.items")
                                           if s)
    except BaseException:
        catalog.close()
        raise
    return catalog


def bind(port: int) -> socket.socket:
    """A listening socket on 127.0.0.1 (``port`` 0: any free port); a busy port is a user error."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((DEFAULT_HOST, port))
    except OSError as err:
        sock.close()
        raise UserError(f"cannot listen on {DEFAULT_HOST}:{port} ({err.strerror or err}); "
                        "choose another --port (0 picks a free one)") from None
    sock.listen(128)
    sock.set_inheritable(True)
    return sock


def _interrupt(signum: int, frame: Any) -> None:
    raise KeyboardInterrupt


def _stop_on_sigterm() -> Any:
    """Make SIGTERM a :class:`KeyboardInterrupt` (main thread only); the previous handler, or ``None``."""
    if threading.current_thread() is not threading.main_thread():
        return None
    return signal.signal(signal.SIGTERM, _interrupt)


def serve(store: str | Path, port: int = DEFAULT_PORT, *, announce: Callable[[str], None] | None = None) -> None:
    """Serve ``store`` read-only at ``http://127.0.0.1:PORT`` until Ctrl-C."""
    import uvicorn

    from counterbench.viewer.app import create_app

    sock = bind(port)  # a busy port is refused before the store is opened and indexed
    try:
        catalog = open_catalog(store)
    except BaseException:
        sock.close()
        raise
    url = f"http://{DEFAULT_HOST}:{sock.getsockname()[1]}/"
    say = announce or (lambda line: print(line, flush=True))
    say(f"{catalog.total():,} responses in {catalog.path} (indexed in {catalog.build_seconds:.1f} s), read-only")
    say(f"Open {url} in a browser; Ctrl-C stops the viewer.")
    config = uvicorn.Config(create_app(catalog), log_level="warning", access_log=False, lifespan="off",
                            server_header=False)
    server = uvicorn.Server(config)
    # uvicorn stops on SIGINT/SIGTERM and then raises the signal again under the handler it found: with
    # Python's default for SIGTERM the process would die there, before the store's -wal/-shm are tidied
    previous = _stop_on_sigterm()
    try:
        server.run(sockets=[sock])
    except KeyboardInterrupt:  # the re-raised Ctrl-C or SIGTERM: a normal stop
        pass
    finally:
        if previous is not None:
            signal.signal(signal.SIGTERM, previous)
        sock.close()
        catalog.close()
        print("viewer stopped", file=sys.stderr)
