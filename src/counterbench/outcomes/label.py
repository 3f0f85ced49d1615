"""``label``: one of a declared set of words (``yes`` / ``no`` / ``cannot decide``). The analysis compares
the share of answers giving the *positive* label (the first label unless ``positive`` names another):
a rate per group, the difference in rates (percentage points) with a slot-cluster bootstrap CI, and
Fisher's exact test on the pooled counts."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
import pandas as pd

from counterbench.outcomes.base import SEPARATOR, Comparison, OutcomeSpec, sentence_text
from counterbench.outcomes.common import Fail, LabelledKind, required_labels, yaml_boolean


class LabelKind(LabelledKind):
    #: whether the simulated model's latent value gets its multiplicative noise
    sim_noise = False
    #: the simulated model's latent value is a probability: a simulation file's default must be in [0, 1]
    sim_probability = True
    #: the simulated model's probability is of the label named by the use case's ``label_from`` column
    sim_target_first = True

    def describe(self, spec: OutcomeSpec) -> str:
        return f"share answering {positive(spec)} (%)"

    def read(self, raw: Mapping[str, Any], fail: Fail) -> OutcomeSpec:
        labels = required_labels(raw, "labels", 'a label outcome needs its labels, e.g. labels: ["yes", "no"]', fail)
        pos = raw.get("positive", labels[0])
        if isinstance(pos, bool):
            raise fail("positive", yaml_boolean(pos))
        if str(pos) not in labels:
            raise fail("positive", f"'{pos}' is not one of the labels ({', '.join(labels)})")
        # the positive label goes first, so the encoded answer type carries it
        ordered = (str(pos), *(lbl for lbl in labels if lbl != str(pos)))
        return OutcomeSpec("label", labels=ordered, positive=str(pos))

    def encode(self, spec: OutcomeSpec) -> str:
        return "label:" + SEPARATOR.join(spec.labels)

    def decode(self, text: str) -> OutcomeSpec:
        labels = tuple(text.split(":", 1)[1].split("|"))
        return OutcomeSpec("label", labels=labels, positive=labels[0])

    def instruction(self, spec: OutcomeSpec) -> str:
        options = " or ".join(spec.labels)
        return (f"Answer with exactly one of: {options}. Use a single line in this format:\n### <ANSWER>\n"
                "No explanation.")

    def sim_default(self, spec: OutcomeSpec) -> float:
        """The simulated model's probability of the first label where its file gives none."""
        return 0.5

    def simulate(self, spec: OutcomeSpec, latent: float, u: float) -> str:
        """``latent`` is the probability of the positive label (clipped to [0, 1])."""
        p = min(max(latent, 0.0), 1.0)
        if u < p:
            return f"### {spec.labels[0]}"
        return f"### {spec.labels[1]}"

    def sim_probabilities(self, spec: OutcomeSpec, latent: float) -> dict[str, float]:
        """The probability of each label that :meth:`simulate` answers with (what a simulated model returns as
        log-probabilities): ``latent`` for the first, the rest for the second, 0 for any other."""
        p = min(max(latent, 0.0), 1.0)
        out = dict.fromkeys(spec.labels, 0.0)
        out[spec.labels[0]] = p
        if len(spec.labels) > 1:
            out[spec.labels[1]] = 1.0 - p
        return out

    def measure(self, spec: OutcomeSpec, values: pd.DataFrame) -> np.ndarray:
        index = pd.to_numeric(values["value"], errors="coerce").to_numpy(dtype=np.float64)
        return np.where(np.isnan(index), np.nan, (index == 0).astype(np.float64) * 100.0)

    def probability_measure(self, spec: OutcomeSpec) -> str:
        return f"p({positive(spec)})"

    def comparison(self, spec: OutcomeSpec) -> Comparison:
        """A difference of the shares answering the positive label, in percentage points."""
        answer = sentence_text(positive(spec))
        return Comparison("difference", " pp", f"percentage points of the share answering {positive(spec)}",
                          "{model}: {comparison} is {size} {direction} often answered " + answer
                          + " than {reference}", ("more", "less"), "%", digits=1)


def positive(spec: OutcomeSpec) -> str:
    return spec.positive or spec.labels[0]


KIND = LabelKind("label", ("labels", "positive"), "percentage points", "one of the allowed labels")
