"""A ``choice`` declared in a study file: the options' texts, their positions, and the option measured.

::

    outcome:
      kind: choice
      options: {approve: "Approve the request", refer: "Refer it to a manager", decline: "Decline it"}
      positive: approve          # the option whose share is measured (or:)
      # identity_option: self    # the option that stands for the person the prompt describes
      rotate: true               # every prompt in each cyclic order of the options (default: as listed)
      labels: [A, B, C]          # what the model answers (default A, B, C, ...)

Each prompt lists the options under its question as ``A: <text>`` lines (an option's text may use the
template's placeholders, e.g. ``{identifier_phrase}`` for the identity option). With ``rotate`` every
prompt is asked once per cyclic order (prompt ids end ``_o1``, ``_o2``, ...; the order is a slot column,
so every level is compared within the same order). The prompt table stores, per prompt, the order
(``option_order``) and the label at which the measured option stood (``measured_option``); an answer's
measure is 100 × "the model chose the measured option", so the share chosen per level is analysed like
any other kind's measure (gaps in percentage points, matched within slots).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
import pandas as pd

from counterbench.outcomes.base import OutcomeSpec
from counterbench.outcomes.common import Fail, labels_of

__all__ = ["KEYS", "MEASURED_COLUMN", "ORDER_COLUMN", "declared_options", "measured_label", "measured_share",
           "option_lines", "read_declared", "rotations"]

#: prompt-table columns of a declared choice: the label the measured option stood at, and the order's number
MEASURED_COLUMN = "measured_option"
ORDER_COLUMN = "option_order"
KEYS = ("options", "labels", "positive", "identity_option", "rotate")


def read_declared(raw: Mapping[str, Any], fail: Fail) -> OutcomeSpec:
    """The spec of a choice whose ``options`` is a mapping name → text (see the module docstring)."""
    options = raw["options"]
    if len(options) < 2:
        raise fail("options", "a choice needs at least two options")
    names = labels_of([str(k) for k in options], "options", fail)
    texts = []
    for name in options:
        text = options[name]
        if not isinstance(text, str) or not text.strip() or "\n" in text:
            raise fail(f"options.{name}", "an option's text must be one non-empty line")
        texts.append(text.strip())
    labels = (labels_of(raw["labels"], "labels", fail) if "labels" in raw
              else tuple(chr(ord("A") + i) for i in range(len(names))))
    if len(labels) != len(names):
        raise fail("labels", f"give one label per option ({len(names)}), got {len(labels)}")
    given = [key for key in ("positive", "identity_option") if key in raw]
    if len(given) != 1:
        raise fail("positive", "name the option whose share is measured: positive: NAME (a favourable answer) or "
                               "identity_option: NAME (the option standing for the person described)")
    measured = str(raw[given[0]])
    if measured not in names:
        raise fail(given[0], f"unknown option '{measured}' (options: {', '.join(names)})")
    rotate = raw.get("rotate", False)
    if not isinstance(rotate, bool):
        raise fail("rotate", f"expected true or false, got {rotate!r}")
    extra = (("measure", given[0]), ("options", tuple(zip(names, texts, strict=True))), ("rotate", rotate))
    return OutcomeSpec("choice", labels=labels, positive=measured, extra=extra)


def declared_options(spec: OutcomeSpec) -> tuple[tuple[str, str], ...]:
    """(name, text) of each option a study file declared, in its order; empty for a choice whose options
    are identities filled by the prompt table (``option_<LABEL>`` columns)."""
    options = dict(spec.extra).get("options") or ()
    return tuple((str(name), str(text)) for name, text in options)


def rotations(spec: OutcomeSpec) -> list[tuple[tuple[str, str], ...]]:
    """The orders in which the options are shown: every cyclic order with ``rotate``, else the one listed."""
    options = declared_options(spec)
    if not dict(spec.extra).get("rotate"):
        return [options]
    return [options[k:] + options[:k] for k in range(len(options))]


def option_lines(spec: OutcomeSpec, order: tuple[tuple[str, str], ...]) -> str:
    """The options as the prompt lists them: ``A: <text>`` lines in ``order``."""
    return "\n".join(f"{label}: {text}" for label, (_, text) in zip(spec.labels, order, strict=True))


def measured_label(spec: OutcomeSpec, order: tuple[tuple[str, str], ...]) -> str:
    """The label at which the measured option stands in ``order``."""
    return spec.labels[[name for name, _ in order].index(str(spec.positive))]


def measured_share(spec: OutcomeSpec, values: pd.DataFrame) -> np.ndarray:
    """100 × "the chosen option is the measured one" (NaN where there is no answer)."""
    index = pd.to_numeric(values["value"], errors="coerce").to_numpy(dtype=np.float64)
    labels = np.array(spec.labels, dtype=object)
    ok = np.isfinite(index) & (index >= 0) & (index < len(labels))
    chosen = np.full(len(index), None, dtype=object)
    chosen[ok] = labels[index[ok].astype(np.int64)]
    measured = values[MEASURED_COLUMN].astype(object).to_numpy() if MEASURED_COLUMN in values.columns else None
    if measured is None:
        return np.full(len(index), np.nan)
    return np.where(ok, (chosen == measured).astype(np.float64) * 100.0, np.nan)
