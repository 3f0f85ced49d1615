"""A study's own options: ``counterbench audit STUDY --NAME VALUE``, the same names in a study file
(``study: NAME`` and ``NAME: VALUE`` keys) and as the study's Python keyword arguments.

A study that can be built several ways (over a team's own files, with another convention, another token
limit) declares its options as :class:`StudyOptions`, its ``study_options`` attribute: each option's
name, kind (a file, a file or folder, one of some choices, a whole number), default and help, and a
function that builds the study from the values given (an option left out keeps its default).
``audit``, ``prompts``, ``analyze`` and ``report`` hand the options they do not know themselves to
:func:`study_with_options`; ``counterbench studies`` lists every study's options. A study file
(``.yaml``) names its options itself.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from counterbench.errors import UserError

#: an option's kinds: an existing file, an existing file or folder, one of ``choices``, a whole number
KINDS = ("file", "path", "choice", "whole")


@dataclass(frozen=True)
class StudyOption:
    """One option: ``help`` (one line), ``kind`` (one of :data:`KINDS`), ``choices`` (a ``choice``'s values),
    ``default`` (shown in help; ``None``: the study's own input) and ``minimum`` (a ``whole`` number's)."""

    help: str
    kind: str = "file"
    choices: tuple[str, ...] = ()
    default: str | int | None = None
    minimum: int = 1

    def value(self, label: str, raw: Any, base: Path | None = None) -> Any:
        """``raw`` as this option's value; a bad value is a one-line :class:`UserError` that starts with
        ``label`` (``--name`` on the command line, ``name`` in Python, ``FILE: name`` in a study file) and
        names the valid values. Relative paths are taken from ``base``."""
        if self.kind == "choice":
            if raw not in self.choices:
                raise UserError(f"{label} must be one of {', '.join(self.choices)} ({self.help}), got {raw!r}")
            return str(raw)
        if self.kind == "whole":
            try:
                number = int(str(raw).strip().replace("_", "")) if not isinstance(raw, bool) else None
            except ValueError:
                number = None
            if number is None or number < self.minimum:
                raise UserError(f"{label} must be a whole number ≥ {self.minimum} ({self.help}), got {raw!r}")
            return number
        path = Path(str(raw)).expanduser()
        if base is not None and not path.is_absolute():
            path = base / path
        if not (path.is_file() or (self.kind == "path" and path.is_dir())):
            raise UserError(f"{label} {raw}: no such {'file or folder' if self.kind == 'path' else 'file'}")
        return path

    def metavar(self) -> str:
        if self.kind == "choice":
            return "{" + ",".join(self.choices) + "}"
        return {"file": "FILE", "path": "PATH", "whole": "N"}[self.kind]


@dataclass(frozen=True)
class StudyOptions:
    """The options a study takes: ``options`` (name without ``--`` -> :class:`StudyOption`), ``build``
    (the values given, by option name -> the study) and ``aliases`` (another name -> an option's name)."""

    options: Mapping[str, StudyOption]
    build: Callable[[dict[str, Any]], Any]
    aliases: Mapping[str, str] = field(default_factory=dict)

    def takes(self, name: str) -> bool:
        return self.aliases.get(name, name) in self.options

    def values(self, given: Mapping[str, Any], *, study: str, prefix: str = "--", base: Path | None = None,
               ) -> dict[str, Any]:
        """The options ``given`` (by name; ``_`` may stand for ``-``), checked and converted; an unknown name is
        a one-line :class:`UserError` listing the known ones."""
        out: dict[str, Any] = {}
        for name, raw in given.items():
            option = self.aliases.get(name, name).replace("_", "-")
            if option not in self.options:
                known = ", ".join(f"{prefix}{o}" for o in self.options)
                raise UserError(f"no such option: {prefix}{name} (study {study} takes {known})")
            out[option] = self.options[option].value(f"{prefix}{name}", raw, base)
        return out

    def in_study_file(self, data: Mapping[str, Any], *, study: str, path: Path) -> dict[str, Any]:
        """The options a study file at ``path`` gives as keys (``data``), checked and converted as :meth:`values`
        does, paths relative to the study file; a mistake is a :class:`UserError` naming the file."""
        try:
            return self.values(data, study=study, prefix="", base=path.parent)
        except UserError as err:
            raise UserError(f"{path.name}: {err}") from None

    def describe(self) -> list[str]:
        """One line per option, as ``counterbench studies`` prints it."""
        lines = []
        for name, option in self.options.items():
            default = "" if option.default is None else f" (default {option.default})"
            lines.append(f"--{name} {option.metavar()}: {option.help}{default}")
        return lines


def option_pairs(args: Sequence[str]) -> dict[str, str]:
    """``--name VALUE`` and ``--name=VALUE`` pairs -> ``{name: VALUE}``; anything else is a mistake."""
    given: dict[str, str] = {}
    rest = list(args)
    while rest:
        token = rest.pop(0)
        if not token.startswith("--") or token == "--":
            raise UserError(f"unexpected argument {token!r}; see --help")
        name, eq, value = token[2:].partition("=")
        if not eq:
            if not rest or rest[0].startswith("--"):
                raise UserError(f"--{name} needs a value; see --help")
            value = rest.pop(0)
        given[name] = value
    return given


def declared_options(study: Any) -> StudyOptions | None:
    """The options a study object declares (its ``study_options``), or ``None``."""
    from counterbench.studies.hooks import hook

    options = hook(study, "study_options")
    return options if isinstance(options, StudyOptions) else None


def study_with_options(study: str, args: Sequence[str]) -> Any:
    """``study`` itself when ``args`` is empty; else the study built with the options ``args`` give."""
    if not args:
        return study
    from counterbench.studies.registry import load_study, registered_studies

    given = option_pairs(args)
    first = next(iter(given))
    if study.endswith((".yaml", ".yml")):
        if any(_takes(name, first) for name in registered_studies()):
            raise UserError(f"--{first} cannot be combined with the study file {study}: a study file names its "
                            "own files and options")
        raise UserError(f"no such option: --{first}; see --help")
    options = declared_options(load_study(study))
    if options is None:
        takers = [name for name in registered_studies() if _takes(name, first)]
        if takers:
            raise UserError(f"--{first} is an option of the {takers[0]} study (`counterbench audit {takers[0]} "
                            f"--{first} ...`); study {study} takes no such option")
        raise UserError(f"no such option: --{first}; see --help")
    return options.build(options.values(given, study=study))


def _takes(study: str, option: str) -> bool:
    from counterbench.studies.registry import load_study

    try:
        options = declared_options(load_study(study))
    except UserError:
        return False
    return options is not None and options.takes(option)
