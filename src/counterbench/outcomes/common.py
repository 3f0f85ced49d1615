"""Helpers the outcome kinds share: refusal detection, answer-line extraction, spec-key checks, the base classes."""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from counterbench.errors import UserError
from counterbench.outcomes.base import Constraint, OutcomeSpec, choices_constraint
from counterbench.parse.mentions import normalise, patterns
from counterbench.parse.result import ParsedAnswer

Fail = Callable[[str, str], UserError]
_MARKER = re.compile(r"^\s*#{1,6}\s*", re.MULTILINE)
_STRIP = " \t\r\n.!,;:\"'*`()[]"


def refused(text: str) -> bool:
    """True when ``text`` declines to answer (the parser's refusal phrase list)."""
    return bool(patterns().refusal.search(normalise(text)))


def answer_lines(text: str) -> list[str]:
    """Candidate answers: the ``### ...`` line first when there is one, then every non-empty line."""
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    marked = [_MARKER.sub("", line, count=1) for line in lines if line.lstrip().startswith("#")]
    return [*marked, *lines]


def clean(token: str) -> str:
    return token.strip(_STRIP).casefold()


def match_label(text: str | None, labels: Sequence[str]) -> ParsedAnswer:
    """``ok`` with value = index of the one label the answer gives; ``unparseable``/``refused`` otherwise.

    The answer line (after ``###``) must be one label, case-insensitively, ignoring surrounding
    punctuation; failing that, a first line that starts with a label (followed by punctuation or a
    space) and names no other label counts. Two different labels, or none, is ``unparseable``.
    """
    if text is None or not text.strip():
        return ParsedAnswer(status="unparseable", reason="empty")
    folded = [label.casefold() for label in labels]
    for line in answer_lines(text):
        token = clean(line)
        if token in folded:
            index = folded.index(token)
            return ParsedAnswer(status="ok", value=float(index), unit=labels[index])
    starts = set()
    for line in answer_lines(text)[:1] or [text]:
        low = clean(line)
        mentioned = {i for i, label in enumerate(folded)
                     if re.search(rf"(?<!\w){re.escape(label)}(?!\w)", low)}
        for i, label in enumerate(folded):
            if low.startswith(label) and (len(low) == len(label) or not low[len(label)].isalnum()):
                starts.add(i)
        starts |= mentioned if starts else set()
    if len(starts) == 1:
        index = starts.pop()
        return ParsedAnswer(status="ok", value=float(index), unit=labels[index], reason="leading_label")
    if refused(text):
        return ParsedAnswer(status="refused", reason="refusal")
    return ParsedAnswer(status="unparseable", reason="several_labels" if starts else "no_label")


def check_keys(raw: Mapping[str, Any], allowed: Sequence[str], fail: Fail) -> None:
    """Every key of an ``outcome`` mapping must be known (``kind`` plus ``allowed``)."""
    from counterbench.errors import nearest

    for key in raw:
        if key != "kind" and key not in allowed:
            raise fail(str(key), f"unknown key for this outcome kind{nearest(str(key), ['kind', *allowed])}")


def yaml_boolean(value: bool) -> str:
    """What to say of a label YAML read as a boolean (``yes``, ``no``, ``on``, ``off``, ``true`` unquoted)."""
    return (f"YAML reads an unquoted yes/no (or true/false, on/off) as {value}, not as a word: quote yes and no, "
            'e.g. labels: ["yes", "no"]')


def labels_of(raw: Any, key: str, fail: Fail, minimum: int = 2) -> tuple[str, ...]:
    if not isinstance(raw, list) or len(raw) < minimum:
        raise fail(key, f"expected a list of at least {minimum} labels")
    labels = []
    for item in raw:
        if isinstance(item, bool):
            raise fail(key, yaml_boolean(item))
        if not isinstance(item, str | int | float) or not str(item).strip():
            raise fail(key, f"labels must be non-empty words, got {item!r}")
        text = str(item).strip()
        if "|" in text or "\n" in text:
            raise fail(key, f"label {text!r} may not contain '|' or a line break")
        labels.append(text)
    if len({lbl.casefold() for lbl in labels}) != len(labels):
        raise fail(key, "labels must differ (case-insensitively)")
    return tuple(labels)


def number(raw: Any, key: str, fail: Fail) -> float:
    if isinstance(raw, bool) or not isinstance(raw, int | float) or not math.isfinite(float(raw)):
        raise fail(key, f"expected a number, got {raw!r}")
    return float(raw)


@dataclass(frozen=True)
class DeclaredKind:
    """What the built-in outcome kinds share (see :class:`counterbench.outcomes.base.OutcomeKind`): the four
    declarations, the check of a study file's keys before the kind reads its ``outcome`` mapping
    (:meth:`read`), and the stored value as the measure."""

    name: str
    keys: tuple[str, ...]
    difference_unit: str
    usable_answer: str

    def spec(self, raw: Mapping[str, Any], fail: Fail) -> OutcomeSpec:
        check_keys(raw, self.keys, fail)
        return self.read(raw, fail)

    def read(self, raw: Mapping[str, Any], fail: Fail) -> OutcomeSpec:
        """The spec from an ``outcome`` mapping whose keys are known."""
        raise NotImplementedError(f"outcome kind {self.name} reads no outcome mapping")

    def measure(self, spec: OutcomeSpec, values: pd.DataFrame) -> np.ndarray:
        """The stored value, a number (NaN where the row has none)."""
        return pd.to_numeric(values["value"], errors="coerce").to_numpy(dtype=np.float64)


class LabelledKind(DeclaredKind):
    """A kind whose answer is one of the spec's labels: ``### <label>``, read by :func:`match_label`."""

    #: its measure is 100 × "selected" (the positive label, the measured option): the impact-ratio table's
    #: selection rate is its share (kinds without it select above the median;
    #: :mod:`counterbench.analyses.impact_ratios`)
    selection = "share"
    #: the stored ``unit`` is the answer read (a label; the value is only its index): the report shows it
    unit_is_answer = True

    def constraint(self, spec: OutcomeSpec) -> Constraint:
        return choices_constraint(self.name, spec.labels)

    def parse(self, spec: OutcomeSpec, text: str | None, profile: str) -> ParsedAnswer:
        return match_label(text, spec.labels)

    def probability_labels(self, spec: OutcomeSpec) -> tuple[str, ...]:
        """Its labels: the run stores the log-probability of each (``counterbench.outcomes.logprobs``)."""
        return tuple(str(label) for label in spec.labels)


def required_labels(raw: Mapping[str, Any], key: str, needs: str, fail: Fail) -> tuple[str, ...]:
    """The labels under ``key``, which the outcome must give (``needs``: what to say when it does not)."""
    if key not in raw:
        raise fail(key, needs)
    return labels_of(raw[key], key, fail)
