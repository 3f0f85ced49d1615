"""The study registry: factories found by name, or a study file given by path.

Three sources, in this order (a later one never shadows an earlier name):

1. built-in studies (:data:`BUILTIN_STUDIES`) — data packages under :mod:`counterbench.studies` with a
   ``study.yaml`` (RupeeBias), or ``module:factory`` of a Python study (STEM, hiring);
2. third-party packages — entry points in the group ``counterbench.studies`` (as pytest finds its
   plugins). An entry point names a *factory*: a callable returning a
   :class:`~counterbench.studies.base.Study`, or a path (``str``/``Path``) to a study YAML file;
3. a path to a study ``.yaml`` file (checked strictly; see ``docs/studies.md``).

Loading is lazy and cached per process.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from dataclasses import dataclass
from functools import lru_cache
from importlib import metadata, resources
from pathlib import Path
from typing import Any

from counterbench.errors import UserError
from counterbench.studies.base import Study
from counterbench.studies.declarative import DeclarativeStudy
from counterbench.studies.definition import parse_study, read_study_mapping

ENTRY_POINT_GROUP = "counterbench.studies"
#: the study a verb or function works on when none is named (and whose results a frame without a
#: ``study`` column holds)
DEFAULT_STUDY = "rupeebias"
#: built-in study name -> package holding its ``study.yaml``, or ``module:factory`` of a Python study
BUILTIN_STUDIES: dict[str, str] = {
    "rupeebias": "counterbench.studies.rupeebias",
    "stem": "counterbench.studies.stem.study:create_study",
    "hiring": "counterbench.studies.hiring.study:build_study",
}


@dataclass(frozen=True)
class StudyEntry:
    """A registered study: its name, where it comes from, and how to build it."""

    name: str
    source: str
    factory: Callable[[], Any]


def _builtin_factory(name: str) -> Callable[[], Study]:
    return lambda: _load_builtin(name)


def _entry_points() -> list[metadata.EntryPoint]:
    return sorted(metadata.entry_points(group=ENTRY_POINT_GROUP), key=lambda ep: ep.name)


def registered_studies() -> dict[str, StudyEntry]:
    """Every study reachable by name: built-in first, then entry points."""
    out = {name: StudyEntry(name, "built-in", _builtin_factory(name)) for name in BUILTIN_STUDIES}
    for ep in _entry_points():
        if ep.name not in out:
            dist = getattr(ep, "dist", None)
            origin = f"entry point {ep.value}" + (f" ({dist.name})" if dist is not None else "")
            out[ep.name] = StudyEntry(ep.name, origin, ep.load)
    return out


def builtin_study_names() -> list[str]:
    return list(BUILTIN_STUDIES)


def load_study(name_or_path: str | Path | Study) -> Study:
    """The study of that registered name, a study object as is, or a study file (``.yaml``/``.yml``)."""
    if not isinstance(name_or_path, str | Path):
        return name_or_path
    text = str(name_or_path)
    if text in BUILTIN_STUDIES:
        return _load_builtin(text)
    if text.endswith((".yaml", ".yml")) or Path(text).is_file():
        path = Path(text)
        return _load_file(str(path.resolve()), path.stat().st_mtime_ns if path.exists() else 0)
    entries = registered_studies()
    if text in entries:
        return _load_entry(text)
    raise UserError(
        f"unknown study '{text}': use a registered study ({', '.join(entries)}; `counterbench studies` lists "
        "them) or a path to a study .yaml file"
    )


@lru_cache(maxsize=16)
def _load_entry(name: str) -> Study:
    entry = registered_studies()[name]
    try:
        factory = entry.factory()
        made = factory() if callable(factory) else factory
    except UserError:
        raise
    except Exception as err:  # a third-party factory failed: say which one
        raise UserError(f"study {name} ({entry.source}) could not be built: {type(err).__name__}: {err}") from None
    if isinstance(made, str | Path):
        path = Path(made)
        return _load_file(str(path.resolve()), path.stat().st_mtime_ns if path.exists() else 0)
    for attr in ("name", "expand", "slot_columns", "facets", "outcomes"):
        if not hasattr(made, attr):
            raise UserError(f"study {name} ({entry.source}) is not a study: it lacks '{attr}' (see docs/extending.md)")
    study: Study = made
    return study


@lru_cache(maxsize=8)
def _load_builtin(name: str) -> Study:
    if ":" in BUILTIN_STUDIES[name]:  # a built-in Python study
        module, factory = BUILTIN_STUDIES[name].split(":", 1)
        made: Study = getattr(importlib.import_module(module), factory)()
        return made
    root = resources.files(BUILTIN_STUDIES[name])
    with resources.as_file(root.joinpath("study.yaml")) as path:
        data = read_study_mapping(path)
    return DeclarativeStudy(parse_study(data, source=f"built-in study {name}"))


@lru_cache(maxsize=32)
def _load_file(path: str, _mtime: int) -> Study:
    p = Path(path)
    return DeclarativeStudy(parse_study(read_study_mapping(p), source=p.name))
