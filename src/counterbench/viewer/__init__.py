"""``counterbench view``: a local, read-only web viewer of a store's answers (Starlette + uvicorn).

::

    from counterbench.viewer import serve
    serve("counterbench.db")            # http://127.0.0.1:8765, Ctrl-C to stop

:mod:`~counterbench.report.links` (no web dependencies) builds the URLs the report links to.
"""

from __future__ import annotations

from counterbench.report.links import DEFAULT_BASE, DEFAULT_HOST, DEFAULT_PORT, slots_url

__all__ = ["DEFAULT_BASE", "DEFAULT_HOST", "DEFAULT_PORT", "serve", "slots_url"]


def serve(store: str, port: int = DEFAULT_PORT, **options: object) -> None:
    """Serve ``store`` read-only on 127.0.0.1:``port`` until interrupted (see :func:`.server.serve`)."""
    from counterbench.viewer.server import serve as _serve

    _serve(store, port, **options)  # type: ignore[arg-type]
