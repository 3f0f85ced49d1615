"""``choice``: one of N labelled options (``A``/``B``, ``1``..``5``), each standing for something the prompt
varies — a level, a document, a person. The prompt table says what each option stands for in columns
``option_<LABEL>`` (e.g. ``option_A = Emily``), and what that identity has of its own in columns
``option_<LABEL>_<column>`` (``option_A_group = north``, ``option_A_age = 50``: the facets of a grouped or
crossed design compare those); the analysis maps the chosen option back to it and
compares how often each identity is chosen when it is offered (a win rate, %).

Multi-identity prompts (two documents in two positions, N options) come from a Python study that fills
those columns; see ``docs/extending.md``."""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from typing import Any

import numpy as np
import pandas as pd

from counterbench.outcomes.base import (
    SEPARATOR,
    Comparison,
    OutcomeSpec,
    decode_generic,
    encode_generic,
    is_generic_encoding,
)
from counterbench.outcomes.choice_options import KEYS, declared_options, measured_share, read_declared
from counterbench.outcomes.common import Fail, LabelledKind, required_labels


def option_column(label: str) -> str:
    return f"option_{label}"


class ChoiceKind(LabelledKind):
    """The measure is the chosen option's index (the analysis maps it through the ``option_*`` columns)."""
    #: whether the simulated model's latent value gets its multiplicative noise
    sim_noise = False
    #: the simulated model's latent value is a probability: a simulation file's default must be in [0, 1]
    sim_probability = True

    def describe(self, spec: OutcomeSpec) -> str:
        options = dict(declared_options(spec))
        if options:
            return f"share choosing '{options[str(spec.positive)]}' (%)"
        return "share chosen when offered (%)"

    def read(self, raw: Mapping[str, Any], fail: Fail) -> OutcomeSpec:
        if isinstance(raw.get("options"), Mapping):  # a study file's options: texts, positions, the one measured
            return read_declared(raw, fail)
        for key in ("labels", "positive", "identity_option", "rotate"):
            if key in raw:
                raise fail(key, "applies when options name their texts, e.g. options: {approve: Approve it, ...}")
        needs = "a choice outcome needs its options, e.g. options: {approve: Approve it, decline: Decline it}"
        return OutcomeSpec("choice", labels=required_labels(raw, "options", needs, fail))

    def encode(self, spec: OutcomeSpec) -> str:
        if declared_options(spec):
            return encode_generic(spec)
        return "choice:" + SEPARATOR.join(spec.labels)

    def decode(self, text: str) -> OutcomeSpec:
        if is_generic_encoding(text):
            return decode_generic(text)
        return OutcomeSpec("choice", labels=tuple(text.split(":", 1)[1].split("|")))

    def measure(self, spec: OutcomeSpec, values: pd.DataFrame) -> np.ndarray:
        """A declared choice: 100 × "chose the measured option"; otherwise the chosen option's index."""
        if declared_options(spec):
            return measured_share(spec, values)
        return super().measure(spec, values)

    def offered_rows(self, spec: OutcomeSpec, values: pd.DataFrame) -> pd.DataFrame:
        """The rows the analysis measures: one per answer for a declared choice (its identity is the
        prompt's), one per offered option when the options are identities (:func:`chosen_rows`)."""
        if declared_options(spec):
            return values.assign(y=self.measure(spec, values))
        return chosen_rows(spec, values)

    def instruction(self, spec: OutcomeSpec) -> str:
        return (f"Choose exactly one option: {', '.join(spec.labels)}. Answer on a single line in this format:\n"
                "### <OPTION>\nNo explanation.")

    def sim_default(self, spec: OutcomeSpec) -> float:
        """The simulated model's probability of the first option where its file gives none: uniform."""
        return 1.0 / max(len(spec.labels), 1)

    def simulate(self, spec: OutcomeSpec, latent: float, u: float) -> str:
        """``latent`` is the probability of choosing the first option (the rest share the remainder)."""
        p = min(max(latent, 0.0), 1.0)
        if u < p or len(spec.labels) == 1:
            return f"### {spec.labels[0]}"
        rest = spec.labels[1:]
        index = min(int((u - p) / max(1.0 - p, 1e-12) * len(rest)), len(rest) - 1)
        return f"### {rest[index]}"

    def sim_probabilities(self, spec: OutcomeSpec, latent: float) -> dict[str, float]:
        """The probability of each option that :meth:`simulate` answers with: ``latent`` for the first, the
        rest shared equally by the others."""
        p = min(max(latent, 0.0), 1.0)
        if len(spec.labels) == 1:
            return {spec.labels[0]: 1.0}
        rest = (1.0 - p) / (len(spec.labels) - 1)
        return {label: p if i == 0 else rest for i, label in enumerate(spec.labels)}

    def option_values(self, spec: OutcomeSpec, metadata: Mapping[str, Any]) -> dict[str, float]:
        """label -> numeric value when every option stands for a number (``option_<L>`` columns)."""
        out = {}
        for label in spec.labels:
            try:
                out[label] = float(metadata[option_column(label)])
            except (KeyError, TypeError, ValueError):
                return {}
        return out if all(math.isfinite(v) for v in out.values()) else {}

    def fields_problem(self, spec: OutcomeSpec, fields: Mapping[str, Any]) -> str | None:
        """An answer means nothing without the ``option_<LABEL>`` fields saying what each option is (unless the
        outcome declares its options' texts: the prompt lists them)."""
        if declared_options(spec):
            return None
        missing = [option_column(label) for label in spec.labels if option_column(label) not in fields]
        if not missing:
            return None
        return (f"a choice outcome needs a profile field {missing[0]} for each option (what option it stands for); "
                "without them no answer can be analysed")

    def probability_measure(self, spec: OutcomeSpec) -> str:
        return "p(option)"

    def probability_rows(self, spec: OutcomeSpec, part: pd.DataFrame) -> pd.DataFrame:
        """One row per offered option (:func:`chosen_rows`), ``y`` its option's decision probability in %."""
        part = chosen_rows(spec, part)
        picked = part["position"].map(lambda label: f"_p_{label}")
        y = [row[col] for row, col in zip(part.to_dict("records"), picked, strict=True)]
        return part.assign(y=np.asarray(y, dtype=np.float64))

    def comparison(self, spec: OutcomeSpec) -> Comparison:
        """A difference of the shares chosen when offered (a declared choice: of the measured option), in
        percentage points."""
        options = dict(declared_options(spec))
        if options:
            text = options[str(spec.positive)].replace("{", "{{").replace("}", "}}")
            return Comparison("difference", " pp", "percentage points of the share chosen",
                              f"{{model}} chooses '{text}' {{size}} {{direction}} often for {{comparison}} than for "
                              "{reference}", ("more", "less"), "%", digits=1)
        return Comparison("difference", " pp", "percentage points of the share chosen",
                          "{model} chooses {comparison} {size} {direction} often than {reference} when offered",
                          ("more", "less"), "%", digits=1)


def option_attributes(label: str, columns: Iterable[str]) -> dict[str, str]:
    """``option_<LABEL>_<column>`` -> ``<column>``: what the option's identity has of its own (its group, a
    crossed attribute such as ``age``), for the facets that compare those columns."""
    prefix = f"{option_column(label)}_"
    return {c: c[len(prefix):] for c in columns if c.startswith(prefix) and len(c) > len(prefix)}


def chosen_rows(spec: OutcomeSpec, values: pd.DataFrame) -> pd.DataFrame:
    """One row per (response, offered option): ``identifier`` it stands for, ``position``, ``chosen`` (0/100);
    the option's own attributes (``option_A_group`` -> ``group``, ...) replace the prompt's columns."""
    index = pd.to_numeric(values["value"], errors="coerce").to_numpy(dtype=np.float64)
    parts = []
    for i, label in enumerate(spec.labels):
        column = option_column(label)
        if column not in values.columns:
            continue
        own = {target: values[source].astype(object)
               for source, target in option_attributes(label, values.columns).items()}
        part = values.drop(columns=["identifier", *own], errors="ignore").assign(
            identifier=values[column].astype(object), position=label, **own,
            y=np.where(np.isnan(index), np.nan, (index == i).astype(np.float64) * 100.0))
        parts.append(part[part["identifier"].notna()])
    if not parts:
        return values.iloc[0:0].assign(position=None, y=np.nan)
    return pd.concat(parts, ignore_index=True)


KIND = ChoiceKind("choice", KEYS, "percentage points", "one of the offered options")
