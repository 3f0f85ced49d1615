"""The study registry: studies found by name, or a study file given by path.

Studies are registered in one :class:`~counterbench.registry.Registry` whose entry-point group is
``counterbench.studies``. The built-in studies register themselves there through counterbench's own
entry points, exactly like a third-party package (as pytest finds its plugins); the core never names
them. An entry names a *factory*: a callable returning a :class:`~counterbench.studies.base.Study`,
or a path (``str``/``Path``) to a study YAML file. Code may also register a study directly
(:func:`register_study`). A path to a study ``.yaml`` file is loaded and checked strictly
(``docs/studies.md``). A study file whose top-level ``study:`` key names a registered study is handed
to that study's ``from_study_file(mapping, path)`` (a Python study declared from data files, such as
another country's inputs); a registered study without that method cannot be extended by a file.

Loading is lazy and cached per process.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any

from counterbench.errors import UserError
from counterbench.registry import Registry
from counterbench.studies.base import Study
from counterbench.studies.declarative import DeclarativeStudy
from counterbench.studies.definition import parse_study, read_study_mapping

ENTRY_POINT_GROUP = "counterbench.studies"
#: the entry-point group whose ``study`` entry names the study a verb uses when none is given
DEFAULT_GROUP = "counterbench.defaults"

STUDIES: Registry[Any] = Registry("study", ENTRY_POINT_GROUP, hint="`counterbench studies` lists them")
DEFAULTS: Registry[Any] = Registry("default", DEFAULT_GROUP)


@dataclass(frozen=True)
class StudyEntry:
    """A registered study: its name, where it comes from, and how to build it."""

    name: str
    source: str
    factory: Callable[[], Any]


def register_study(name: str, factory: Callable[[], Any] | Study | str | Path, *, replace: bool = False) -> None:
    """Register a study under ``name`` from code: a factory, a study object, or a study file's path."""
    STUDIES.register(name, factory, source="registered in code", replace=replace)
    _load_entry.cache_clear()
    from counterbench.models import sim_answers

    sim_answers.register(name, factory)  # a simulated model finds its simulated_answers by its name too


def registered_studies() -> dict[str, StudyEntry]:
    """Every study reachable by name, in registration order."""
    return {name: StudyEntry(name, entry.source, functools.partial(STUDIES.get, name))
            for name, entry in STUDIES.entries().items()}


def default_study() -> str:
    """The study a verb works on when none is named (declared by an installed package's entry point)."""
    if "study" not in DEFAULTS:
        raise UserError("no default study is installed: name a study or a study .yaml file")
    return str(DEFAULTS.get("study"))


def load_study(name_or_path: str | Path | Study | None) -> Study:
    """The study of that registered name, a study object as is, or a study file (``.yaml``/``.yml``);
    ``None`` is the default study."""
    if name_or_path is None:
        name_or_path = default_study()
    if not isinstance(name_or_path, str | Path):
        from counterbench.models import sim_answers

        sim_answers.offer(name_or_path)  # a simulated model answers its prompts as it says (by its name)
        return name_or_path
    text = str(name_or_path)
    if text in STUDIES:
        return _load_entry(text)
    if text.endswith((".yaml", ".yml")) or Path(text).is_file():
        return _load_path(Path(text))
    raise UserError(
        f"unknown study '{text}': use a registered study ({', '.join(STUDIES.names())}; `counterbench studies` "
        "lists them) or a path to a study .yaml file"
    )


def _load_path(path: Path) -> Study:
    return _load_file(str(path.resolve()), path.stat().st_mtime_ns if path.exists() else 0)


@lru_cache(maxsize=16)
def _load_entry(name: str) -> Study:
    source = STUDIES.entries()[name].source
    made = STUDIES.build(name, f"study {name} ({source}) could not be built")
    if isinstance(made, str | Path):
        return _load_path(Path(made))
    for attr in ("name", "expand", "slot_columns", "facets", "outcomes"):
        if not hasattr(made, attr):
            raise UserError(f"study {name} ({source}) is not a study: it lacks '{attr}' (see docs/extending.md)")
    study: Study = made
    return study


@lru_cache(maxsize=32)
def _load_file(path: str, _mtime: int) -> Study:
    p = Path(path)
    data = read_study_mapping(p)
    if "study" in data:
        return _extend_registered(data, p)
    return DeclarativeStudy(parse_study(data, source=p.name))


def _extend_registered(data: dict[str, Any], path: Path) -> Study:
    """A study file ``study: NAME`` + NAME's own keys, built by NAME's ``from_study_file``."""
    name = data.pop("study")
    if not isinstance(name, str) or name not in STUDIES:
        raise UserError(f"{path.name}: study: '{name}' is not a registered study ({', '.join(STUDIES.names())})")
    base = _load_entry(name)
    from counterbench.studies.hooks import hook

    extend = hook(base, "from_study_file")
    if not callable(extend):
        raise UserError(f"{path.name}: study {name} cannot be declared from a study file (it has no from_study_file)")
    made: Study = extend(data, path)
    from counterbench.models import sim_answers

    sim_answers.offer(made)
    return made
