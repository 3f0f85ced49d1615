"""The ``counterbench`` command line: thin wrappers over the Python API.

Each verb lives in :mod:`counterbench.commands` and registers itself on :data:`app`. A
:class:`~counterbench.errors.UserError` anywhere below becomes one line on stderr and exit code 2.
"""

from __future__ import annotations

import sys
from typing import Annotated

import typer

from counterbench.commands import register_all
from counterbench.errors import UserError

app = typer.Typer(
    name="counterbench",
    help="Audit LLMs for demographic bias with controlled counterfactual prompts.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    add_completion=False,
)
register_all(app)


def _version(value: bool) -> None:
    if value:
        from counterbench import __version__

        print(f"counterbench {__version__}")
        raise typer.Exit()


@app.callback()
def _options(
    version: Annotated[bool, typer.Option("--version", callback=_version, is_eager=True,
                                          help="Print the version and exit.")] = False,
) -> None:
    """Audit LLMs for demographic bias with controlled counterfactual prompts."""


def main() -> None:
    """Console-script entry point."""
    try:
        app()
    except UserError as err:
        print(f"counterbench: error: {err}", file=sys.stderr)
        sys.exit(2)


if __name__ == "__main__":
    main()
