"""Column-wise expansion of a declarative study: every column built as whole arrays, not row by row.

A declarative study's prompts, per variant × use case × language (a *block*), are every *unit* (an
identifier, or a combination of crossed levels) crossed with every *partial* (a profile and a question
variant), unit-major. So each column is a repeat (what the unit sets: axis, identifier, its design
values), a tile (what the partial sets: profile, question variant, profile fields) or a constant
(study, use case, language, variant, answer type, system prompt) — no Python object per row but the
two texts every row owns: its ``prompt_id`` and its ``user`` message, each made by one vectorised
string addition over the block's partials per unit. The result is the same table, value for value
and type for type, as rendering every prompt on its own (``render`` in
:mod:`counterbench.studies.declarative`).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd
from numpy.dtypes import StringDType

from counterbench.columns import BASE_COLUMNS
from counterbench.studies.spec import PLACEHOLDER

#: what a unit is: (axis, identifier, placeholder phrases, design values)
Unit = tuple[str, str, dict[str, str], dict[str, Any]]
#: a piece of text: one string for every partial, or one per partial
Text = str | np.ndarray


def fmt(value: Any) -> str:
    """A value as it is written into a prompt (a whole float of 1e15 or more without its ``.0``)."""
    if type(value) is str:
        return value
    if isinstance(value, float) and value.is_integer() and abs(value) >= 1e15:
        return str(int(value))
    return str(value)


def _objects(values: Sequence[Any]) -> np.ndarray:
    out = np.empty(len(values), dtype=object)
    out[:] = values
    return out


def _constant(size: int, value: Any, dtype: Any = object) -> np.ndarray:
    """``size`` times ``value`` — the same object each time (``np.full`` makes a new string per row)."""
    out = np.empty(size, dtype=dtype)
    out.fill(value)
    return out


@dataclass
class Partials:
    """One use case in one language: its profiles × question variants, and the template split around
    the names the units fill (``segments[i]`` comes before ``names[i]``; the last segment closes)."""

    designs: list[dict[str, Any]]
    questions: Sequence[str]
    segments: list[Text]
    names: list[str]
    size: int = field(init=False)
    _values: dict[tuple[str, Any], np.ndarray] = field(init=False, default_factory=dict, repr=False)

    def __post_init__(self) -> None:
        self.size = len(self.designs) * len(self.questions)

    @classmethod
    def build(cls, template: str, designs: list[dict[str, Any]], questions: Sequence[str]) -> Partials:
        n_questions = len(questions)
        filled = {name: np.repeat(_objects([fmt(d[name]) for d in designs]), n_questions) for name in designs[0]}
        filled["question"] = np.tile(_objects([fmt(q) for q in questions]), len(designs))
        segments: list[Text] = []
        names: list[str] = []
        segment: Text = ""
        for i, piece in enumerate(PLACEHOLDER.split(template)):
            if i % 2 == 0:
                segment = segment + piece if piece else segment
            elif piece in filled:
                segment = segment + filled[piece]
            else:
                segments.append(segment)
                names.append(piece)
                segment = ""
        segments.append(segment)
        return cls(designs, questions, segments, names)

    def texts(self, phrases: Mapping[str, str]) -> np.ndarray:
        """Every partial's ``user`` text for one unit's ``phrases``."""
        text: Text = self.segments[0]
        for name, segment in zip(self.names, self.segments[1:], strict=True):
            text = text + phrases[name]
            if not isinstance(segment, str) or segment:
                text = text + segment
        return text if isinstance(text, np.ndarray) else _constant(self.size, text)

    def profile_values(self, name: str, convert: Callable[[Any], Any], dtype: Any) -> np.ndarray:
        """A profile field, converted, for every partial (``None`` where the use case has no such field)."""
        key = (name, convert)
        if key not in self._values:
            values = [convert(d.get(name)) for d in self.designs]
            self._values[key] = np.repeat(np.array(values, dtype=dtype) if dtype is not object else _objects(values),
                                          len(self.questions))
        return self._values[key]

    def field_kind(self, name: str) -> tuple[bool, bool]:
        """Does any profile have a value for ``name``, and are all those values numbers?"""
        present = [v for v in (d.get(name) for d in self.designs) if v is not None]
        return bool(present), all(_is_number(v) for v in present)


@dataclass
class Block:
    """The prompts of one variant × use case × language."""

    prefix: str
    suffix: str
    constants: dict[str, str]
    units: list[Unit]
    partials: Partials

    @property
    def size(self) -> int:
        return len(self.units) * self.partials.size


def _numbers(count: int) -> np.ndarray:
    """``00001``, ``00002``, ... ``count`` as ``f"{n:05d}"`` writes them, as Python strings."""
    return np.strings.zfill(np.arange(1, count + 1).astype(StringDType()), 5).astype(object)


def _is_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _as_float(value: Any) -> float:
    return float("nan") if value is None else float(value)


def _as_text(value: Any) -> str | None:
    return None if value is None else fmt(value)


def assemble(blocks: list[Block], design_names: list[str]) -> pd.DataFrame:
    """The prompt table of ``blocks``: the base columns, then ``design_names``.

    The text columns are written straight into the table's one block of objects (no second copy of
    the table while it is built); the number columns are added to it after.
    """
    blocks = [b for b in blocks if b.size]
    total = sum(b.size for b in blocks)
    built = [(name, _base_column(blocks, name)) for name in BASE_COLUMNS]
    built += [(name, _design_column(blocks, name)) for name in design_names]
    names = [name for name, _ in built]
    texts = [(name, parts) for name, (parts, dtype) in built if dtype is object]
    objects = np.empty((len(texts), total), dtype=object)
    for row, (_, parts) in enumerate(texts):
        if parts:
            np.concatenate(parts, out=objects[row])
        parts.clear()  # each column's pieces go as soon as they are in the table
    frame = pd.DataFrame(objects.T, columns=[name for name, _ in texts], dtype=object, copy=False)
    for name, (parts, dtype) in built:
        if dtype is not object:
            frame.insert(names.index(name), name, _concatenate(parts, dtype))
    return frame


def _base_column(blocks: list[Block], name: str) -> tuple[list[np.ndarray], Any]:
    if name == "prompt_id":
        numbers = _numbers(max((b.size for b in blocks), default=0))
        parts = [b.prefix + numbers[: b.size] for b in blocks]
        return [p + b.suffix if b.suffix else p for p, b in zip(parts, blocks, strict=True)], object
    if name in ("axis", "identifier"):
        at = 0 if name == "axis" else 1
        return [np.repeat(_objects([u[at] for u in b.units]), b.partials.size) for b in blocks], object
    if name == "profile_id":
        return [np.tile(b.partials.profile_values("profile_id", str, object), len(b.units)) for b in blocks], object
    if name == "question_variant":
        return [np.tile(np.arange(1, len(b.partials.questions) + 1, dtype="int64"),
                        len(b.partials.designs) * len(b.units)) for b in blocks], "int64"
    if name == "user":
        return [b.partials.texts(u[2]) for b in blocks for u in b.units], object
    return [_constant(b.size, b.constants[name]) for b in blocks], object


def _concatenate(parts: list[np.ndarray], dtype: Any) -> np.ndarray:
    return np.concatenate(parts) if parts else np.empty(0, dtype=dtype)


def _design_column(blocks: list[Block], name: str) -> tuple[list[np.ndarray], Any]:
    """A design column: the unit's value where the unit sets it, else the profile's; numbers as float64
    when every value present is a number, else text (``None`` stays ``None``)."""
    present = [v for b in blocks for u in b.units if name in u[3] and (v := u[3][name]) is not None]
    kinds = [(bool(present), all(_is_number(v) for v in present))]
    partials = {id(b.partials): b.partials for b in blocks if any(name not in u[3] for u in b.units)}
    kinds += [p.field_kind(name) for p in partials.values()]
    numeric = any(has for has, _ in kinds) and all(numbers for has, numbers in kinds if has)
    convert: Callable[[Any], Any] = _as_float if numeric else _as_text
    dtype: Any = "float64" if numeric else object
    parts = []
    for b in blocks:
        size = b.partials.size
        if all(name not in u[3] for u in b.units):
            parts.append(np.tile(b.partials.profile_values(name, convert, dtype), len(b.units)))
            continue
        profile = None
        for u in b.units:
            if name in u[3]:
                parts.append(_constant(size, convert(u[3][name]), dtype))
            else:
                profile = b.partials.profile_values(name, convert, dtype) if profile is None else profile
                parts.append(profile)
    return parts, dtype
