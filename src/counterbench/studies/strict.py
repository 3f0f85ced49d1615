"""Strict reading of study files: safe YAML, and every key checked against where it may appear.

Decisions:

- A study file must be UTF-8; a duplicate key in one mapping is an error (YAML would silently keep the
  last one); anchors and aliases are allowed but expanding them may not build more than
  :data:`~counterbench.yaml_files.ALIAS_BUDGET` nodes (a "billion laughs" file is refused at once
  instead of eating memory); the reader is :mod:`counterbench.yaml_files`, shared by every file a user gives.
- Every key is checked against :data:`SCHEMA`: an unknown key names its path and the nearest valid key
  (``difflib``); a key that is valid elsewhere says where it belongs. Names chosen by the user (axes,
  use cases, languages, profile fields) are free; the kind-specific keys of ``outcome`` are checked by
  the outcome kind.
"""

from __future__ import annotations

import difflib
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import yaml

from counterbench.errors import UserError, nearest
from counterbench.yaml_files import load_strict, read_text_file

FREE = "*"  # any key (a user-chosen name); its value follows the nested schema

_IDENTIFIER = {"value": None, "phrases": None, "forms": None, "aliases": None, "group": None}
_LEVEL = {"value": None, "phrases": None}
SCHEMA: dict[str, Any] = {
    "name": None,
    "title": None,
    "description": None,
    "include": None,
    "languages": {FREE: {"name": None, "id_infix": None}},
    "axes": {FREE: {"groups": None, "identifiers": [_IDENTIFIER], "__list__": _IDENTIFIER}},
    "phrase_forms": {FREE: {FREE: [{"pattern": None, "replace": None}]}},
    "system_prompts": {FREE: None},
    "fairness_suffix": None,
    "use_cases": {FREE: {
        "answer_type": None, "outcome": None, "system_prompt": None, "template": None,
        "question_variants": None, "profiles": None, "aliases": None, "label": None,
        "favourable": None,
    }},
    "presets": {FREE: {"description": None, "filters": {
        "use_case": None, "language": None, "axis": None, "identifier": None, "profile": None,
        "question_variant": None, "variant": None,
    }}},
    "canonical_pairs": {FREE: None},
    "design": {"crossed": {"attributes": {FREE: [_LEVEL]}, "sample": None, "seed": None}},
}


def _all_keys(schema: Any, path: str, out: dict[str, list[str]]) -> None:
    if isinstance(schema, list):
        _all_keys(schema[0], path + "[]", out)
        return
    if not isinstance(schema, dict):
        return
    for key, sub in schema.items():
        if key == "__list__":
            _all_keys(sub, path + "[]", out)
            continue
        if key != FREE:
            out.setdefault(key, []).append(f"{path}.{key}" if path else key)
        _all_keys(sub, f"{path}.<name>" if key == FREE else (f"{path}.{key}" if path else key), out)


_WHERE: dict[str, list[str]] = {}
_all_keys(SCHEMA, "", _WHERE)


def check_keys(data: Mapping[str, Any], source: str) -> None:
    """Raise :class:`UserError` for the first unknown or misplaced key in ``data``."""
    _check(data, SCHEMA, "", source)


def _check(value: Any, schema: Any, path: str, source: str) -> None:
    if schema is None:
        return
    if isinstance(schema, list):
        if isinstance(value, list):
            for i, item in enumerate(value):
                _check(item, schema[0], f"{path}[{i}]", source)
        return
    if isinstance(value, list) and "__list__" in schema:
        for i, item in enumerate(value):
            _check(item, schema["__list__"], f"{path}[{i}]", source)
        return
    if not isinstance(value, Mapping):
        return
    valid = [k for k in schema if k not in (FREE, "__list__")]
    for key, sub in value.items():
        where = f"{path}.{key}" if path else str(key)
        if key in schema:
            _check(sub, schema[key], where, source)
        elif FREE in schema:
            _check(sub, schema[FREE], where, source)
        else:
            raise UserError(f"{source}: {where}: unknown key '{key}'{_hint(str(key), valid)}")


def _hint(key: str, valid: list[str]) -> str:
    close = nearest(key, valid)
    if close:
        return close
    elsewhere = _WHERE.get(key)
    if elsewhere:
        return f"; '{key}' belongs under {_parent(elsewhere[0])}"
    fuzzy = difflib.get_close_matches(key, list(_WHERE), n=1, cutoff=0.7)
    if fuzzy:
        return f"; did you mean '{fuzzy[0]}' (under {_parent(_WHERE[fuzzy[0]][0])})?"
    return f" (valid here: {', '.join(valid)})" if valid else ""


def _parent(path: str) -> str:
    return path.rsplit(".", 1)[0] if "." in path else "the top level"


def load_yaml(path: Path) -> Any:
    """Read a YAML study file strictly (UTF-8, no duplicate keys, bounded aliases)."""
    if not path.exists():
        raise UserError(f"study file not found: {path}")
    text = read_text_file(path, path.name, "save the study file as UTF-8")
    try:
        return load_strict(text, path.name)
    except yaml.YAMLError as err:
        mark = getattr(err, "problem_mark", None)
        line = f" line {mark.line + 1}" if mark is not None else ""
        problem = getattr(err, "problem", None) or "invalid YAML"
        raise UserError(f"{path.name}:{line}: {problem}") from None
