"""Log-probabilities of the allowed answers of a ``label`` or ``choice`` use case.

Where a backend returns token log-probabilities (OpenAI-protocol ``logprobs``/``top_logprobs``, the
embedded llama.cpp model), the run stores, next to the sampled answer, the log-probability of each
allowed label or option, so analyses can use p(yes) as well as the answer, as DiscrimEval does
(Tamkin et al., "Evaluating and Mitigating Discrimination in Language Model Decisions").

Decisions:

- **Where the answer is** (:func:`answer_position`, on the token texts joined): in a structured JSON
  answer (the text starts with ``{``), the first character of the ``"answer"`` string; otherwise the first
  non-blank character of the text — a bare answer (``yes``, DiscrimEval's format). In both, an answer
  written ``### <ANSWER>`` (the outcome kinds' format, also after a rationale) starts after the first
  ``###`` and its spaces. The answer position is the token holding that character.
- **What is read there.** The most likely tokens at that position (``top_logprobs``, plus the sampled
  token itself), without the part of the token that comes before the answer (``" yes"`` after ``###``,
  ``'"yes'`` after ``"answer": ``). An allowed answer's probability is the sum over those distinct
  tokens whose text, stripped and lower-cased, is a non-empty prefix of the answer (lower-cased): for
  one-token answers the answer's own probability, every spelling counted (``Yes``, ``yes``, `` yes``);
  for longer ones (``cannot decide``) the probability of starting it. Answers sharing a first token get
  the same value.
- **Absent** answers (none of the listed tokens starts them) are left out of the mapping rather than
  guessed; an empty mapping is stored as nothing (``None``). Text that does not start with an allowed
  answer (``I would say yes``, ``**Yes**``) has none at its answer position: nothing is stored.
- **Decision probabilities** (:func:`answer_probabilities`, what analyses use): the stored values
  normalised over the allowed answers, an absent answer counting as 0 (it was less likely than every
  listed token).
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Sequence

#: one token of a response: (token, log-probability, its top alternatives as (token, log-probability))
TokenLogprob = tuple[str, float, tuple[tuple[str, float], ...]]

__all__ = ["TokenLogprob", "allowed_answers", "answer_logprobs", "answer_logprobs_json", "answer_position",
           "answer_probabilities"]

MARKER = "###"
_JSON_ANSWER = re.compile(r'"answer"\s*:\s*"')


def allowed_answers(answer_type: str | None) -> tuple[str, ...]:
    """The labels (``label:yes|no``) or options (``choice:A|B``) an answer type allows; empty otherwise."""
    from counterbench.outcomes import kind_of_answer_type, spec_from_answer_type

    kind = kind_of_answer_type(answer_type)
    if kind not in ("label", "choice") or answer_type is None:
        return ()
    return tuple(str(v) for v in spec_from_answer_type(answer_type).labels)


def answer_position(text: str) -> int | None:
    """Index in ``text`` of the answer's first character (see the module notes); ``None`` when there is none."""
    start = len(text) - len(text.lstrip())
    if text.startswith("{", start):  # a structured answer: the "answer" string, ### or not
        found = _JSON_ANSWER.search(text)
        if found is None:
            return None
        start = found.end()
        if text.startswith(MARKER, start):
            start += len(MARKER)
    else:
        marker = text.find(MARKER)
        if marker >= 0:
            start = marker + len(MARKER)
    while start < len(text) and text[start] in " \t":
        start += 1
    return start if start < len(text) else None


def answer_logprobs(answers: Sequence[str], tokens: Sequence[TokenLogprob] | None) -> dict[str, float] | None:
    """Answer -> log-probability at the answer position (see the module notes); ``None`` when there are
    no tokens, no answer position or no allowed answer among the listed tokens."""
    if not tokens or not answers:
        return None
    text = ""
    starts = []
    for token, _, _ in tokens:
        starts.append(len(text))
        text += token
    position = answer_position(text)
    if position is None:
        return None
    index = next(i for i, start in enumerate(starts) if start <= position < start + len(tokens[i][0]))
    token, logprob, top = tokens[index]
    lead = token[: position - starts[index]]  # what the token holds before the answer: " ", '"', ...
    candidates = dict([*top, (token, logprob)])  # distinct tokens (the sampled one is usually listed too)
    out: dict[str, float] = {}
    for answer in answers:
        wanted = answer.lower()
        matches = [lp for cand, lp in candidates.items()
                   if (c := (cand[len(lead):] if lead and cand.startswith(lead) else cand).strip().lower())
                   and wanted.startswith(c)]
        if matches:
            out[answer] = _logsumexp(matches)
    return out or None


def _logsumexp(values: Sequence[float]) -> float:
    top = max(values)
    return top + math.log(sum(math.exp(v - top) for v in values)) if math.isfinite(top) else top


def answer_logprobs_json(answer_type: str | None, tokens: Sequence[TokenLogprob] | None) -> str | None:
    """:func:`answer_logprobs` for the answers ``answer_type`` allows, as the store's JSON text."""
    if not tokens:
        return None
    found = answer_logprobs(allowed_answers(answer_type), tokens)
    return json.dumps(found, ensure_ascii=False, sort_keys=True) if found else None


def answer_probabilities(stored: object, answers: Sequence[str]) -> dict[str, float] | None:
    """Each allowed answer's probability from a stored ``answer_logprobs`` value (JSON text or a mapping),
    normalised over ``answers`` (absent ones: 0); ``None`` when nothing usable was stored."""
    if isinstance(stored, str):
        try:
            stored = json.loads(stored)
        except ValueError:
            return None
    if not isinstance(stored, dict):
        return None
    raw = {a: math.exp(float(v)) for a in answers
           if isinstance(v := stored.get(a), int | float) and not isinstance(v, bool) and math.isfinite(v)}
    total = sum(raw.values())
    if not raw or not total > 0:
        return None
    return {a: raw.get(a, 0.0) / total for a in answers}
