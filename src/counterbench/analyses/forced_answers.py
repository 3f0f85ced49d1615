"""Forced answers: a label or choice the model wrote only because a constraint made it. Pure.

With log-probabilities, every yes/no or multiple-choice answer records whether it was *forced*
(``answer_forced``, :mod:`counterbench.outcomes.logprobs`): the token at the answer position was sampled
more than 5 nats below the model's most likely listed token there — a grammar or JSON schema allowed
only the labels, and the model wanted something else (Gemma-3-270M, a base model, wants digits after
``### ``; the grammar writes ``yes`` at log-probability −19.6). Such an answer says what the format
allowed, not what the model would answer; a model whose answers are mostly forced measures nothing about
the people in the prompts, however its gaps come out.

Decisions:

- **Counted**: the parsed (status ``ok``, a value) standard-variant answers with a known flag (stored
  with log-probabilities by a counterbench that records it); answers without one are not counted.
- **Flagged** when more than :data:`FORCED_FLAG_SHARE` (half) of at least ``minimum`` counted answers of a
  model × use case were forced: it is one of the degenerate-answer checks (:mod:`.answer_checks`: named
  first in the findings with the share, not ranked, the gate's ``usable-answers`` rule fails), and
  p(positive) is not its primary measure there (:mod:`.decision_primary`: at most 50% forced).
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from counterbench.outcomes.logprobs import FORCED_NATS

__all__ = ["FORCED_FLAG_SHARE", "forced_counts", "forced_reason"]

#: a model × use case with more than this share of forced answers is flagged
FORCED_FLAG_SHARE = 0.5


def forced_counts(part: pd.DataFrame, counted: np.ndarray) -> tuple[int, int]:
    """(forced, with a known flag) among the rows of ``part`` where ``counted`` is true."""
    if "answer_forced" not in part.columns:
        return 0, 0
    flags = pd.to_numeric(part["answer_forced"], errors="coerce").to_numpy(dtype=np.float64)
    known = counted & np.isfinite(flags)
    return int((flags[known] != 0).sum()), int(known.sum())


def forced_reason(n_forced: int, n_known: int, minimum: int) -> str:
    """The flag's reason (``""``: not flagged) for ``n_forced`` forced of ``n_known`` answers with a flag."""
    if n_known < max(minimum, 1) or n_forced / n_known <= FORCED_FLAG_SHARE:
        return ""
    return (f"{n_forced} of {n_known} answers forced (the answer token lay more than {FORCED_NATS:g} nats below "
            "the token the model preferred there: they say what the answer format allowed, not what the model "
            "would answer)")
