"""``counterbench view``: browse a store's answers in a local, read-only web viewer."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from counterbench.errors import UserError
from counterbench.report.links import DEFAULT_PORT


def view_command(
    store: Annotated[Path, typer.Option("--store", help="The SQLite store to browse (opened read-only).")] = Path(
        "counterbench.db"
    ),
    port: Annotated[int, typer.Option("--port", help="Port on 127.0.0.1 (0 picks a free one).")] = DEFAULT_PORT,
) -> None:
    """Browse the answers: filters, full-text search, and every identity's answer to one prompt side by side.

    Serves http://127.0.0.1:PORT (this machine only) until Ctrl-C. The report's tables link here.
    """
    if not 0 <= port <= 65535:
        raise UserError(f"--port must be between 0 and 65535, got {port}")
    try:
        import starlette  # noqa: F401
        import uvicorn  # noqa: F401
    except ImportError as err:
        raise UserError(f"the viewer needs starlette and uvicorn ({err.name} is missing): "
                        "pip install 'counterbench[view]'") from None
    from counterbench.viewer.server import serve

    serve(store, port)


def register(app: typer.Typer) -> None:
    app.command("view")(view_command)
