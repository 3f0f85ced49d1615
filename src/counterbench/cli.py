"""The ``counterbench`` command line: thin wrappers over the Python API.

Each verb lives in :mod:`counterbench.commands` and registers itself on :data:`app`. A
:class:`~counterbench.errors.UserError` anywhere below — and a malformed command line (an unknown
option, ``--question-variant abc``, ``--sample-slots 0``) — becomes one line on stderr and exit code 2.
"""

from __future__ import annotations

import atexit
import os
import sys
from typing import Annotated, Any

import typer

try:  # typer >= 0.20 ships its own copy of click
    from typer._click import exceptions as cli_errors
except ImportError:  # pragma: no cover - older typer uses click itself
    from click import exceptions as cli_errors  # type: ignore[no-redef]

from counterbench.commands import register_all
from counterbench.errors import UserError

app = typer.Typer(
    name="counterbench",
    help="Audit LLMs for demographic bias with controlled counterfactual prompts.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    add_completion=False,
    rich_markup_mode=None,  # plain help: rich's help panels cost a quarter of a second of imports
)
register_all(app)


def _version(value: bool) -> None:
    if value:
        from counterbench.version import __version__

        print(f"counterbench {__version__}")
        raise typer.Exit()


@app.callback()
def _options(
    version: Annotated[bool, typer.Option("--version", callback=_version, is_eager=True,
                                          help="Print the version and exit.")] = False,
) -> None:
    """Audit LLMs for demographic bias with controlled counterfactual prompts."""


def _verb_command(verb: str) -> Any | None:
    """The click command of ``verb`` alone (a verb or a group of verbs registered on :data:`app`), built on
    first use and kept; None for anything else (``--help``, ``--version``, an unknown verb: the whole group
    answers those). Building every verb's command reads every verb's signature: about 45 ms a call, in a
    process that runs one verb."""
    if verb in _VERB_COMMANDS:
        return _VERB_COMMANDS[verb]
    built: Any = None
    short, markup = app.pretty_exceptions_short, app.rich_markup_mode
    for info in app.registered_commands:
        if info.callback is not None and (info.name or typer.main.get_command_name(info.callback.__name__)) == verb:
            built = typer.main.get_command_from_info(info, pretty_exceptions_short=short, rich_markup_mode=markup)
    for group in app.registered_groups:
        if group.name == verb or (group.typer_instance is not None and group.typer_instance.info.name == verb):
            built = typer.main.get_group_from_info(group, pretty_exceptions_short=short, rich_markup_mode=markup,
                                                  suggest_commands=app.suggest_commands)
            if built.name != verb:  # a group named by its Typer instance only: let the whole group decide
                built = None
    _VERB_COMMANDS[verb] = built
    return built


_VERB_COMMANDS: dict[str, Any] = {}


def _command_for(args: list[str]) -> tuple[Any, list[str], str]:
    """The click command to run for ``args``, the arguments it gets, and its name in messages.

    ``counterbench VERB ...`` goes straight to the verb's command, built alone (:func:`_verb_command`):
    through the group, typer would convert the group's unused ``--help`` flag with pydantic (a tenth of a
    second of imports before ``counterbench audit --help`` can print) and read every verb's signature.
    The groups have no options of their own to lose.
    """
    verb = _verb_command(args[0]) if args and not args[0].startswith("-") else None
    if verb is not None:
        command, name, args = verb, f"counterbench {args[0]}", args[1:]
    else:
        command, name = typer.main.get_command(app), "counterbench"
    while args and args[0] in getattr(command, "commands", {}):  # also a group's verbs: `GROUP VERB`
        command, name, args = command.commands[args[0]], f"{name} {args[0]}", args[1:]
    return command, args, name


def main() -> None:
    """Console-script entry point."""
    from counterbench.commands.run_options import optional_ray_address

    try:
        command, args, name = _command_for(optional_ray_address(sys.argv[1:]))
        code = command.main(args=args, prog_name=name, standalone_mode=False)
    except UserError as err:
        print(f"counterbench: error: {err}", file=sys.stderr)
        sys.exit(2)
    except cli_errors.NoArgsIsHelpError as err:
        print(err.format_message().rstrip())
        sys.exit(2)
    except cli_errors.UsageError as err:
        where = f" (see `{err.ctx.command_path} --help`)" if err.ctx is not None else ""
        message = " ".join(err.format_message().split())
        print(f"counterbench: error: {message}{where}", file=sys.stderr)
        sys.exit(2)
    except cli_errors.ClickException as err:
        err.show()
        sys.exit(err.exit_code)
    except typer.Abort:
        print("Aborted.", file=sys.stderr)
        sys.exit(1)
    sys.exit(code if isinstance(code, int) else 0)


def entry() -> None:
    """Console-script entry point: :func:`main`, then a quick exit.

    The interpreter's own teardown (freeing some 1,500 modules: pandas, scipy, pyarrow, ...) costs
    about 0.35 s of CPU — seconds on a loaded machine — after a stopped run has already saved
    everything. So once :func:`main` is done, the exit handlers run and the streams are flushed as in
    a normal exit, and the process leaves without that teardown.
    """
    try:
        main()
        code: int = 0
    except SystemExit as done:
        if done.code is None or isinstance(done.code, int):
            code = done.code or 0
        else:  # sys.exit("message"): printed to stderr, status 1
            print(done.code, file=sys.stderr)
            code = 1
    atexit._run_exitfuncs()
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):  # a closed pipe: nothing more to say
            code = code or 1
    os._exit(code)


if __name__ == "__main__":
    entry()
