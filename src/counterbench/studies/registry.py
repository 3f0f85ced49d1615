"""Find a study by name (built-in) or by path (a user's YAML file).

Built-in studies are data packages under :mod:`counterbench.studies`; each has a ``study.yaml``.
Loading is lazy and cached per process.
"""

from __future__ import annotations

from functools import lru_cache
from importlib import resources
from pathlib import Path

from counterbench.errors import UserError
from counterbench.studies.base import Study
from counterbench.studies.declarative import DeclarativeStudy
from counterbench.studies.definition import parse_study, read_study_mapping

#: built-in study name -> package holding its ``study.yaml``
BUILTIN_STUDIES: dict[str, str] = {
    "rupeebias": "counterbench.studies.rupeebias",
}


def builtin_study_names() -> list[str]:
    return list(BUILTIN_STUDIES)


def load_study(name_or_path: str | Path) -> Study:
    """Return the built-in study of that name, or load a study file (``.yaml``/``.yml``)."""
    text = str(name_or_path)
    if text in BUILTIN_STUDIES:
        return _load_builtin(text)
    if text.endswith((".yaml", ".yml")) or Path(text).is_file():
        path = Path(text)
        return _load_file(str(path.resolve()), path.stat().st_mtime_ns if path.exists() else 0)
    raise UserError(
        f"unknown study '{text}': use a built-in study ({', '.join(BUILTIN_STUDIES)}) or a path to a study .yaml file"
    )


@lru_cache(maxsize=8)
def _load_builtin(name: str) -> Study:
    root = resources.files(BUILTIN_STUDIES[name])
    with resources.as_file(root.joinpath("study.yaml")) as path:
        data = read_study_mapping(path)
    return DeclarativeStudy(parse_study(data, source=f"built-in study {name}"))


@lru_cache(maxsize=32)
def _load_file(path: str, _mtime: int) -> Study:
    p = Path(path)
    return DeclarativeStudy(parse_study(read_study_mapping(p), source=p.name))
