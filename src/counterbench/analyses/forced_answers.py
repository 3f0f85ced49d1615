"""Forced answers: a label or choice the model wrote only because a constraint made it. Pure.

With log-probabilities, every yes/no or multiple-choice answer records whether it was *forced*
(``answer_forced``, :mod:`counterbench.outcomes.logprobs`): the token at the answer position was sampled
more than 5 nats below the model's most likely listed token there — a grammar or JSON schema allowed
only the labels, and the model wanted something else (Gemma-3-270M, a base model, wants digits after
``### ``; the grammar writes ``yes`` at log-probability −19.6). Such an answer says what the format
allowed, not what the model would answer; a model whose answers are mostly forced measures nothing about
the people in the prompts, however its gaps come out.

Decisions:

- **Rows**: the usable (status ``ok``) standard-variant answers of label and choice use cases with a
  known flag (stored with log-probabilities, by a counterbench that records it).
- **Flagged** when more than :data:`FLAG_SHARE` (half) of a model × use case's answers were forced: the
  findings name it with the share, and p(positive) is not its primary measure there
  (:mod:`.decision_primary`: at most 50% forced).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pandas as pd

from counterbench.outcomes.base import OutcomeSpec
from counterbench.outcomes.logprobs import FORCED_NATS

__all__ = ["FLAG_SHARE", "FORCED_ANSWERS", "forced_answers", "forced_findings"]

#: a model × use case with more than this share of forced answers is flagged
FLAG_SHARE = 0.5
#: the table's name, columns and description
FORCED_ANSWERS = (
    "forced_answers",
    ("model", "use_case", "kind", "n_answers", "n_read", "n_forced", "forced_share", "flagged"),
    "per model and label/choice use case: the answers whose token at the answer position lay more than "
    f"{FORCED_NATS:g} nats below the model's preferred token there (forced by the answer format); flagged when "
    "most were",
)


def forced_answers(standard: pd.DataFrame, outcomes: Mapping[str, OutcomeSpec]) -> pd.DataFrame:
    """One row per model × label/choice use case with at least one known forced flag (module notes)."""
    columns = list(FORCED_ANSWERS[1])
    if standard.empty or "answer_forced" not in standard.columns:
        return pd.DataFrame(columns=columns)
    usable = standard[standard["status"].astype(str).eq("ok")]
    out: list[dict[str, Any]] = []
    for (model, use_case), part in usable.groupby(["model", "use_case"], sort=False, observed=True):
        spec = outcomes.get(str(use_case))
        if spec is None or spec.kind not in ("label", "choice"):
            continue
        flags = pd.to_numeric(part["answer_forced"], errors="coerce").dropna()
        if flags.empty:
            continue
        n_forced = int((flags != 0).sum())
        share = n_forced / len(flags)
        out.append({"model": str(model), "use_case": str(use_case), "kind": spec.kind, "n_answers": len(part),
                    "n_read": len(flags), "n_forced": n_forced, "forced_share": share,
                    "flagged": bool(share > FLAG_SHARE)})
    return pd.DataFrame(out, columns=columns)


def forced_findings(table: pd.DataFrame | None, use_case_names: Mapping[str, str] | None = None) -> list[str]:
    """One sentence per flagged model × use case, naming the model, the share and what it means."""
    if table is None or table.empty:
        return []
    names = dict(use_case_names or {})
    lines = []
    for row in table[table["flagged"].astype(bool)].to_dict("records"):
        where = names.get(str(row["use_case"]), str(row["use_case"]))
        lines.append(
            f"{row['model']}: {int(row['n_forced']):,} of {int(row['n_read']):,} answers to {where} "
            f"({100.0 * float(row['forced_share']):.1f}%) were forced — the answer token lay more than "
            f"{FORCED_NATS:g} nats below the token the model preferred there, so these answers say what the answer "
            f"format allowed, not what the model would answer; its results for {where} are flagged, not evidence "
            "of fairness or bias.")
    return lines
