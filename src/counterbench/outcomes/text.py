"""``text``: free text, scored by named text metrics. ``length`` (words) is built in; more metrics (e.g. a
readability grade) register in :data:`METRICS`. The stored value is the first metric; the analysis
recomputes every metric from the raw text, so a metric added later applies to old stores too."""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from typing import Any

import numpy as np
import pandas as pd

from counterbench.outcomes.base import Comparison, Constraint, OutcomeSpec
from counterbench.outcomes.common import DeclaredKind, Fail, refused
from counterbench.parse.result import ParsedAnswer

_WORD = re.compile(r"\w+", re.UNICODE)


def word_count(text: str) -> float:
    return float(len(_WORD.findall(text)))


def mean_grade_level(text: str) -> float:
    """Readability: the mean of Flesch–Kincaid grade, Gunning Fog and Coleman–Liau (textstat 0.7.8)."""
    from counterbench.outcomes.readability import mgl

    return mgl(text)


def _words(latent: float) -> str:
    return " ".join(["word"] * max(1, round(latent)))


def _prose_at_grade(latent: float) -> str:
    from counterbench.outcomes.readability import text_at_grade

    return text_at_grade(latent)


#: metric name -> function of the raw text
METRICS: dict[str, Callable[[str], float]] = {"length": word_count, "mgl": mean_grade_level}
#: metric name -> the simulated model's text for a latent value of that metric
SIMULATORS: dict[str, Callable[[float], str]] = {"length": _words, "mgl": _prose_at_grade}
#: metric name -> its unit in words (a gap of 12 words, of 1.5 grade levels)
METRIC_UNITS: dict[str, str] = {"length": "words", "mgl": "grade levels"}


class TextKind(DeclaredKind):
    #: whether the simulated model's latent value gets its multiplicative noise
    sim_noise = True

    def describe(self, spec: OutcomeSpec) -> str:
        return f"mean {metrics(spec)[0]}"

    def read(self, raw: Mapping[str, Any], fail: Fail) -> OutcomeSpec:
        names = raw.get("metrics", ["length"])
        if not isinstance(names, list) or not names:
            raise fail("metrics", "expected a list of metric names")
        for name in names:
            if str(name) not in METRICS:
                raise fail("metrics", f"unknown text metric '{name}' (known: {', '.join(METRICS)})")
        return OutcomeSpec("text", metrics=tuple(str(n) for n in names))

    def encode(self, spec: OutcomeSpec) -> str:
        return "text:" + ",".join(spec.metrics) if spec.metrics else "text"

    def decode(self, text: str) -> OutcomeSpec:
        names = tuple(text.split(":", 1)[1].split(",")) if ":" in text else ("length",)
        return OutcomeSpec("text", metrics=names)

    def instruction(self, spec: OutcomeSpec) -> str:
        return "Answer in plain prose."

    def constraint(self, spec: OutcomeSpec) -> Constraint | None:
        return None

    def parse(self, spec: OutcomeSpec, text: str | None, profile: str) -> ParsedAnswer:
        if text is None or not text.strip():
            return ParsedAnswer("unparseable", reason="empty")
        if refused(text) and word_count(text) < 40:
            return ParsedAnswer("refused", reason="refusal")
        name = metrics(spec)[0]
        value = METRICS[name](text)
        if value != value:  # NaN: the metric cannot score this text (e.g. over readability's size limit)
            return ParsedAnswer("unparseable", reason="not_scored")
        return ParsedAnswer("ok", value=value, unit=name, reason="free_text")

    def sim_default(self, spec: OutcomeSpec) -> float:
        """The simulated model's expected metric where its file gives none: a grade level or a word count."""
        return 11.0 if spec.metrics[:1] == ("mgl",) else 150.0

    def simulate(self, spec: OutcomeSpec, latent: float, u: float) -> str:
        """Text whose first metric is about ``latent`` (``length``: that many words; ``mgl``: prose at that grade)."""
        return SIMULATORS.get(metrics(spec)[0], _words)(latent)

    def measure(self, spec: OutcomeSpec, values: pd.DataFrame) -> np.ndarray:
        name = metrics(spec)[0]
        ok = (values["status"].astype(str).eq("ok").to_numpy() if "status" in values.columns
              else np.ones(len(values), dtype=bool))
        if "response" not in values.columns:  # stored values (the viewer): each is the first metric already
            return np.where(ok, values["value"].to_numpy(dtype=np.float64), np.nan)
        texts = values["response"]
        out = np.array([METRICS[name](t) if isinstance(t, str) else np.nan for t in texts], dtype=np.float64)
        return np.where(ok, out, np.nan)

    def comparison(self, spec: OutcomeSpec) -> Comparison:
        """A difference of the first metric's means, in the metric's unit."""
        name = metrics(spec)[0]
        unit = METRIC_UNITS.get(name, name)
        directions = ("longer", "shorter") if name == "length" else ("higher", "lower")
        return Comparison("difference", f" {unit}", unit,
                          "{model}'s answers for {comparison} are {size} {direction} than for {reference}",
                          directions, f" {unit}")


def metrics(spec: OutcomeSpec) -> tuple[str, ...]:
    return spec.metrics or ("length",)


KIND = TextKind("text", ("metrics",), "units of the metric", "a text answer")
