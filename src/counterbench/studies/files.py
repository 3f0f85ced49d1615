"""A study's own input files on the command line: ``counterbench audit STUDY --NAME FILE``.

A study that can be built over a team's own files (another country's materials, say) declares them
as :class:`StudyFiles` in the entry-point group ``counterbench.study_files``, under the study's name:
each option's name and help, and a function that builds the study from the files given (a file left
out is the study's own). ``audit`` and ``prompts`` hand the options they do not know themselves to
:func:`study_with_files`; a study file (``.yaml``) names its files itself.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from counterbench.errors import UserError
from counterbench.registry import Registry


@dataclass(frozen=True)
class StudyFiles:
    """The files a study takes as options: ``options`` (name without ``--`` -> help), ``aliases``
    (another name -> an option's name) and ``build`` (the files given, by option name -> the study)."""

    options: Mapping[str, str]
    build: Callable[[dict[str, Path]], Any]
    aliases: Mapping[str, str] = field(default_factory=dict)


#: a study's file options, by study name (entry-point group ``counterbench.study_files``)
STUDY_FILES: Registry[StudyFiles] = Registry(
    "study's file options", "counterbench.study_files",
    hint="a study declares its file options through the entry-point group counterbench.study_files")


def file_options(args: list[str]) -> dict[str, Path]:
    """``--name FILE`` and ``--name=FILE`` pairs -> ``{name: FILE}``; anything else is a mistake."""
    given: dict[str, Path] = {}
    rest = list(args)
    while rest:
        token = rest.pop(0)
        if not token.startswith("--") or token == "--":
            raise UserError(f"unexpected argument {token!r}; see --help")
        name, eq, value = token[2:].partition("=")
        if not eq:
            if not rest or rest[0].startswith("-"):
                raise UserError(f"--{name} needs a value (a file); see --help")
            value = rest.pop(0)
        given[name] = Path(value)
    return given


def study_with_files(study: str, args: list[str]) -> Any:
    """``study`` itself when ``args`` is empty; else the study built over the files its options name."""
    if not args:
        return study
    given = file_options(args)
    first = next(iter(given))
    if study.endswith((".yaml", ".yml")):
        if _any_takes(first):
            raise UserError(f"--{first} cannot be combined with the study file {study}: a study file names its "
                            "own files")
        raise UserError(f"no such option: --{first}; see --help")
    if study not in STUDY_FILES:
        takers = [name for name in STUDY_FILES.names() if _takes(name, first)]
        if takers:
            raise UserError(f"--{first} is an option of the {takers[0]} study (`counterbench audit {takers[0]} "
                            f"--{first} FILE`); study {study} takes no such file")
        raise UserError(f"no such option: --{first}; see --help")
    files = STUDY_FILES.get(study)
    paths: dict[str, Path] = {}
    for name, path in given.items():
        option = files.aliases.get(name, name)
        if option not in files.options:
            known = ", ".join(f"--{o}" for o in files.options)
            raise UserError(f"no such option: --{name} (study {study} takes {known})")
        if not path.is_file():
            raise UserError(f"--{name} {path}: no such file")
        paths[option] = path
    return files.build(paths)


def _takes(study: str, option: str) -> bool:
    try:
        files = STUDY_FILES.get(study)
    except UserError:
        return False
    return files.aliases.get(option, option) in files.options


def _any_takes(option: str) -> bool:
    return any(_takes(name, option) for name in STUDY_FILES.names())
