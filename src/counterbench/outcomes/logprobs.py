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
- **Complete** (:class:`AnswerReading`, stored per answer as ``answer_complete``): what the listed tokens
  do not show cannot move p by more than half a percentage point. The unlisted tokens hold at most what
  the listed ones leave of the probability (1 − their sum), and, each unlisted spelling of an allowed
  answer being less likely than the least likely listed token, at most ``answers × SPELLINGS_BOUND ×
  p(least likely listed)`` with up to :data:`SPELLINGS_BOUND` (10) spellings each; complete when the
  smaller bound is at most :data:`NEGLIGIBLE_SHARE` (0.5%) of the mass with it — an allowed answer that
  is not listed at all counts as 0 then. A reading where an allowed answer is missing and nothing bounds
  it (no alternatives listed) is incomplete; so is one that lists every answer but only some of their
  spellings while much probability stays unlisted (``--logprobs 5`` with three spellings each). A
  tokenizer that spends the listed slots on spellings (SmolLM2's top two at ``### `` are `` Yes`` and
  `` yes``) leaves ``no`` unlisted with a large bound: incomplete.
- **Mass** (``answer_mass``): the summed probability of the allowed answers found (every spelling), the
  share of the model's probability that the allowed answers hold at the answer; a lower bound when
  incomplete. A base model that wants digits after ``### `` holds almost none there.
- **Forced** (``answer_forced``): the token at the answer position was sampled more than
  :data:`FORCED_NATS` (5 nats: a probability ratio under 1/148) below the most likely listed token — a
  constraint (a grammar, a JSON schema) made the model write an answer it did not prefer. At temperature
  0 an unconstrained model samples its most likely token (a gap of 0), and at temperature 1 a token 5
  nats below the best is drawn at most about once in 150 answers. Unknown (``None``) when no alternatives
  were listed.
- **Decision probabilities** (:func:`answer_probabilities`, what analyses use): the stored values
  normalised over the allowed answers when the reading is complete (an answer left out because it
  cannot matter counts as 0); an incomplete reading has no value (missing, never 0). Stores written
  before ``answer_complete`` existed: complete when every allowed answer is stored.
"""

from __future__ import annotations

import functools
import json
import math
import re
from collections.abc import Sequence
from dataclasses import dataclass

#: one token of a response: (token, log-probability, its top alternatives as (token, log-probability))
TokenLogprob = tuple[str, float, tuple[tuple[str, float], ...]]

__all__ = [
    "FORCED_NATS",
    "NEGLIGIBLE_SHARE",
    "NO_READING",
    "SPELLINGS_BOUND",
    "AnswerColumns",
    "AnswerReading",
    "TokenLogprob",
    "allowed_answers",
    "answer_columns",
    "answer_logprobs",
    "answer_logprobs_json",
    "answer_mass",
    "answer_position",
    "answer_probabilities",
    "read_answer",
    "stored_complete",
]

MARKER = "###"
#: an answer token sampled more than this many nats below the most likely listed token was forced
FORCED_NATS = 5.0
#: a reading with allowed answers missing is still complete when they can hold at most this share of the mass
NEGLIGIBLE_SHARE = 0.005
#: how many spellings (case, spaces, first tokens) a missing answer is assumed to have at most, for that bound
SPELLINGS_BOUND = 10
_JSON_ANSWER = re.compile(r'"answer"\s*:\s*"')


@functools.lru_cache(maxsize=256)
def allowed_answers(answer_type: str | None) -> tuple[str, ...]:
    """The allowed answers whose log-probabilities an answer type's kind reads (its ``probability_labels``: a
    label's labels, ``label:yes|no``, a choice's options, ``choice:A|B``); empty otherwise."""
    from counterbench.outcomes import kind_member, kind_of_answer_type, spec_from_answer_type

    if answer_type is None or kind_of_answer_type(answer_type) is None:
        return ()
    spec = spec_from_answer_type(answer_type)
    return tuple(kind_member(spec, "probability_labels")(spec))


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


@dataclass(frozen=True)
class AnswerReading:
    """What the tokens at the answer position say about the allowed answers (module notes)."""

    #: allowed answer -> log-probability (every spelling summed), for the answers found
    logprobs: dict[str, float]
    #: every allowed answer found, or the missing ones cannot matter
    complete: bool
    #: the summed probability of the allowed answers found
    mass: float
    #: the answer token lay more than FORCED_NATS below the best listed token (None: nothing listed)
    forced: bool | None
    #: how many nats the answer token lay below the best listed token (None: nothing listed)
    below_best: float | None


def read_answer(answers: Sequence[str], tokens: Sequence[TokenLogprob] | None) -> AnswerReading | None:
    """The reading at the answer position (module notes); ``None`` when there are no tokens, no allowed
    answers or no answer position."""
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
    found: dict[str, float] = {}
    for answer in answers:
        wanted = answer.lower()
        matches = [lp for cand, lp in candidates.items()
                   if (c := (cand[len(lead):] if lead and cand.startswith(lead) else cand).strip().lower())
                   and wanted.startswith(c)]
        if matches:
            found[answer] = _logsumexp(matches)
    mass = sum(math.exp(v) for v in found.values())
    missing = [a for a in dict.fromkeys(answers) if a not in found]
    listed = [lp for _, lp in dict(top).items() if math.isfinite(lp)]
    complete = not missing
    if listed and mass > 0:  # what the unlisted tokens hold could be any answer's (a spelling not listed)
        unlisted = max(1.0 - sum(math.exp(lp) for lp in listed), 0.0)  # all the listed tokens leave over
        bound = min(unlisted, len(set(answers)) * SPELLINGS_BOUND * math.exp(min(listed)))
        complete = bound <= NEGLIGIBLE_SHARE * (mass + bound)
    best = max(listed, default=None)
    below = max(best - logprob, 0.0) if best is not None and math.isfinite(logprob) else None
    return AnswerReading(found, complete, mass, None if below is None else below > FORCED_NATS, below)


def answer_logprobs(answers: Sequence[str], tokens: Sequence[TokenLogprob] | None) -> dict[str, float] | None:
    """Answer -> log-probability at the answer position (see the module notes); ``None`` when there are
    no tokens, no answer position or no allowed answer among the listed tokens."""
    reading = read_answer(answers, tokens)
    return (reading.logprobs or None) if reading is not None else None


def _logsumexp(values: Sequence[float]) -> float:
    top = max(values)
    return top + math.log(sum(math.exp(v - top) for v in values)) if math.isfinite(top) else top


def answer_logprobs_json(answer_type: str | None, tokens: Sequence[TokenLogprob] | None) -> str | None:
    """:func:`answer_logprobs` for the answers ``answer_type`` allows, as the store's JSON text."""
    return answer_columns(answer_type, tokens)[0]


#: a response's stored reading: ``answer_logprobs`` (JSON), ``answer_complete``, ``answer_mass``, ``answer_forced``
AnswerColumns = tuple[str | None, int | None, float | None, int | None]
NO_READING: AnswerColumns = (None, None, None, None)


def answer_columns(answer_type: str | None, tokens: Sequence[TokenLogprob] | None) -> AnswerColumns:
    """The store's four reading columns for the answers ``answer_type`` allows (all ``None`` without a
    reading: no tokens, not a label or choice answer, no answer position)."""
    if not tokens:
        return NO_READING
    reading = read_answer(allowed_answers(answer_type), tokens)
    if reading is None:
        return NO_READING
    found = json.dumps(reading.logprobs, ensure_ascii=False, sort_keys=True) if reading.logprobs else None
    forced = None if reading.forced is None else int(reading.forced)
    return found, int(reading.complete), reading.mass, forced


def _stored_mapping(stored: object) -> dict[str, float] | None:
    """A stored ``answer_logprobs`` value (JSON text or a mapping) as answer -> finite log-probability."""
    if isinstance(stored, str):
        try:
            stored = json.loads(stored)
        except ValueError:
            return None
    if not isinstance(stored, dict):
        return None
    return {str(a): float(v) for a, v in stored.items()
            if isinstance(v, int | float) and not isinstance(v, bool) and math.isfinite(v)}


def _known_flag(value: object) -> bool | None:
    """A stored 0/1 flag (``None``, NaN and ``pd.NA``: unknown)."""
    if value is None or isinstance(value, str):
        return None
    try:
        number = float(value)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        return None
    return None if math.isnan(number) else bool(number)


def stored_complete(stored: object, answers: Sequence[str], complete: object = None) -> bool | None:
    """Whether a stored reading is complete: the stored ``answer_complete`` flag when known, else (stores
    written before it) every allowed answer stored; ``None`` when no allowed answer's value was stored."""
    mapping = _stored_mapping(stored)
    if not mapping:
        return None
    flag = _known_flag(complete)
    return flag if flag is not None else all(a in mapping for a in answers)


def answer_mass(stored: object, answers: Sequence[str]) -> float | None:
    """The summed probability of the allowed answers in a stored ``answer_logprobs`` value (``None``: none)."""
    mapping = _stored_mapping(stored)
    if mapping is None:
        return None
    return sum(math.exp(v) for a, v in mapping.items() if a in answers)


def answer_probabilities(stored: object, answers: Sequence[str], complete: object = None) -> dict[str, float] | None:
    """Each allowed answer's probability from a stored ``answer_logprobs`` value (JSON text or a mapping),
    normalised over ``answers`` — ``None`` when nothing usable was stored or the reading is incomplete
    (``complete``: the stored ``answer_complete`` flag; unknown: :func:`stored_complete` decides)."""
    mapping = _stored_mapping(stored)
    if not mapping or not stored_complete(mapping, answers, complete):
        return None
    raw = {a: math.exp(mapping[a]) for a in answers if a in mapping}
    total = sum(raw.values())
    if not raw or not total > 0:
        return None
    return {a: raw.get(a, 0.0) / total for a in answers}
