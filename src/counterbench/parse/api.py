"""Public entry points: :func:`parse_answer` for one response, :func:`parse_series` for many.

Decisions:

- Profiles: ``default`` (the correct rules, :mod:`counterbench.parse.default`) and any a study
  brings to reproduce its published numbers (:mod:`counterbench.parse.profiles`, found by name).
  An unknown profile, use case or answer type raises :class:`~counterbench.errors.UserError`
  with a one-line message listing the valid names.
- Parsing is a pure function of (text, answer type, profile), so results are cached: a bounded
  LRU cache for :func:`parse_answer`, and :func:`parse_series` parses each distinct
  (text, answer type) pair of its input once and broadcasts the result (stored runs repeat the
  same short answers many times). Results are immutable, so sharing them is safe.
- :func:`parse_series` keeps the input's index; missing texts (``None``/``NaN``) parse as
  ``unparseable``/``empty``. Text columns have ``object`` dtype with ``None`` for missing (the same
  under pandas 2 and 3); ``value``/``release_value`` are float64 with NaN; flags are bool.
"""

from __future__ import annotations

import functools
from collections.abc import Callable

import numpy as np
import pandas as pd

from counterbench.errors import UserError
from counterbench.parse.default import parse_default
from counterbench.parse.result import ParsedAnswer
from counterbench.parse.rules import AnswerType, resolve_answer_type

DEFAULT_PROFILE = "default"
SERIES_COLUMNS = ("status", "value", "unit", "is_range", "out_of_range", "reason", "release_value", "release_unit")
CACHE_SIZE = 1 << 16


def parse_profiles() -> list[str]:
    """The names ``--parse-profile`` accepts: ``default`` and every study's own profile."""
    from counterbench.parse.profiles import profile_names

    return profile_names()


def _parser(profile: str) -> Callable[[str | None, AnswerType], ParsedAnswer]:
    if profile == DEFAULT_PROFILE:
        return parse_default
    if not isinstance(profile, str):
        raise UserError(f"unknown parse profile {profile!r}; valid profiles: {', '.join(parse_profiles())}")
    from counterbench.parse.profiles import study_profile

    return study_profile(profile).parser


@functools.lru_cache(maxsize=CACHE_SIZE)
def _parse_cached(text: str | None, answer_type_name: str, profile: str) -> ParsedAnswer:
    return _parser(profile)(text, resolve_answer_type(answer_type_name))


def parse_answer(text: str | None, answer_type_name: str, profile: str = DEFAULT_PROFILE) -> ParsedAnswer:
    """Parse one model response.

    ``answer_type_name`` is an answer type of ``rules.yaml`` (``inr_annual``, ``percent``, ``inr``,
    ``number``; a study's use case declares its own). ``profile`` is one of :func:`parse_profiles`.
    """
    answer_type = resolve_answer_type(answer_type_name)
    _parser(profile)
    if text is not None and not isinstance(text, str):
        text = None
    return _parse_cached(text, answer_type.name, profile)


def _answer_type_codes(answer_types: pd.Series | str, index: pd.Index) -> tuple[np.ndarray, list[str]]:
    """Per-row answer type codes (into the returned name list)."""
    if isinstance(answer_types, str):
        return np.zeros(len(index), dtype=np.int64), [resolve_answer_type(answer_types).name]
    if len(answer_types) != len(index):
        raise UserError(f"parse_series: {len(index)} texts but {len(answer_types)} answer types; give one per text")
    codes, uniques = pd.factorize(pd.Series(answer_types).astype(object), use_na_sentinel=False)
    names = [resolve_answer_type(str(u)).name for u in uniques]
    type_names = sorted(set(names))
    remap = np.array([type_names.index(n) for n in names], dtype=np.int64)
    return remap[codes], type_names


def parse_series(texts: pd.Series, answer_types: pd.Series | str, profile: str = DEFAULT_PROFILE) -> pd.DataFrame:
    """Parse many responses at once; one output row per input row, same index.

    ``answer_types`` is one answer type name for all rows or a Series aligned by position with ``texts``.
    Columns: ``status``, ``value``, ``unit``, ``is_range``, ``out_of_range``, ``reason``,
    ``release_value``, ``release_unit``. Each distinct (text, answer type) pair is parsed once.
    """
    _parser(profile)
    texts = pd.Series(texts)
    type_codes, type_names = _answer_type_codes(answer_types, texts.index)
    text_codes, text_uniques = pd.factorize(texts.astype(object), use_na_sentinel=True)
    # NaN/None -> code len(text_uniques), parsed as None
    text_codes = np.where(text_codes < 0, len(text_uniques), text_codes).astype(np.int64)
    pair_codes = text_codes * len(type_names) + type_codes
    unique_pairs, inverse = np.unique(pair_codes, return_inverse=True)
    results: list[ParsedAnswer] = []
    for pair in unique_pairs.tolist():
        text_code, type_code = divmod(pair, len(type_names))
        raw = text_uniques[text_code] if text_code < len(text_uniques) else None
        text = raw if isinstance(raw, str) else None
        results.append(_parse_cached(text, type_names[type_code], profile))
    columns = {
        "status": np.array([r.status for r in results], dtype=object),
        "value": np.array([np.nan if r.value is None else r.value for r in results], dtype=np.float64),
        "unit": np.array([r.unit for r in results], dtype=object),
        "is_range": np.array([r.is_range for r in results], dtype=bool),
        "out_of_range": np.array([r.out_of_range for r in results], dtype=bool),
        "reason": np.array([r.reason for r in results], dtype=object),
        "release_value": np.array(
            [np.nan if r.release_value is None else r.release_value for r in results], dtype=np.float64
        ),
        "release_unit": np.array([r.release_unit for r in results], dtype=object),
    }
    inverse = np.asarray(inverse).reshape(-1)
    # object columns are kept as object (None for missing) under pandas 2 and 3 alike
    return pd.DataFrame(
        {name: pd.Series(col[inverse], index=texts.index, dtype=col.dtype) for name, col in columns.items()},
        index=texts.index,
    )
