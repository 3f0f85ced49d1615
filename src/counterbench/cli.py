"""The ``counterbench`` command line: thin wrappers over the Python API.

Each verb lives in :mod:`counterbench.commands` and registers itself on :data:`app`. A
:class:`~counterbench.errors.UserError` anywhere below becomes one line on stderr and exit code 2.
"""

from __future__ import annotations

import sys

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


def main() -> None:
    """Console-script entry point."""
    from counterbench.commands.run_options import optional_ray_address

    try:
        app(args=optional_ray_address(sys.argv[1:]))
    except UserError as err:
        print(f"counterbench: error: {err}", file=sys.stderr)
        sys.exit(2)


if __name__ == "__main__":
    main()
