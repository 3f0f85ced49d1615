"""Log-probabilities of the allowed answers of a ``label`` or ``choice`` use case.

Where a backend returns token log-probabilities (OpenAI-protocol ``logprobs``/``top_logprobs``, the
embedded llama.cpp model), the run stores, next to the sampled answer, the log-probability of each
allowed label or option, so analyses can use p(yes) as well as the answer, as DiscrimEval does
(Tamkin et al., "Evaluating and Mitigating Discrimination in Language Model Decisions").

Decisions:

- **Where the answer is.** The answer format is ``### <ANSWER>``: the answer position is the token
  holding the first character after the first ``###`` and its spaces (token texts are joined to find it, so a
  JSON-wrapped answer such as ``{"answer": "### yes"}`` works too). No ``###``: nothing is stored.
- **What is read there.** The most likely tokens at that position (``top_logprobs``, plus the sampled
  token itself). An allowed answer's log-probability is the largest among those tokens whose text,
  stripped and lower-cased, is a non-empty prefix of the answer (lower-cased): for one-token answers
  (``yes``, ``no``, ``A``) that is the answer's own probability; for longer ones (``cannot decide``) the
  probability of its first token. Answers sharing a first token get the same value.
- **Absent** answers (none of the listed tokens starts them) are left out of the mapping rather than
  guessed; an empty mapping is stored as nothing (``None``).
"""

from __future__ import annotations

import json
from collections.abc import Sequence

#: one token of a response: (token, log-probability, its top alternatives as (token, log-probability))
TokenLogprob = tuple[str, float, tuple[tuple[str, float], ...]]

__all__ = ["TokenLogprob", "allowed_answers", "answer_logprobs", "answer_logprobs_json"]

MARKER = "###"


def allowed_answers(answer_type: str | None) -> tuple[str, ...]:
    """The labels (``label:yes|no``) or options (``choice:A|B``) an answer type allows; empty otherwise."""
    from counterbench.outcomes import kind_of_answer_type, spec_from_answer_type

    kind = kind_of_answer_type(answer_type)
    if kind not in ("label", "choice") or answer_type is None:
        return ()
    return tuple(str(v) for v in spec_from_answer_type(answer_type).labels)


def answer_logprobs(answers: Sequence[str], tokens: Sequence[TokenLogprob] | None) -> dict[str, float] | None:
    """Answer -> log-probability at the answer position (see the module docstring); ``None`` when
    there are no tokens, no answer position or no allowed answer among the listed tokens."""
    if not tokens or not answers:
        return None
    text = ""
    starts = []
    for token, _, _ in tokens:
        starts.append(len(text))
        text += token
    marker = text.find(MARKER)
    if marker < 0:
        return None
    position = marker + len(MARKER)
    while position < len(text) and text[position] == " ":
        position += 1
    # the token holding the answer's first character (it may also hold the spaces before it: " yes")
    index = next((i for i, start in enumerate(starts) if start <= position < start + len(tokens[i][0])), None)
    if index is None:
        return None
    token, logprob, top = tokens[index]
    candidates = [(token, logprob), *top]
    out: dict[str, float] = {}
    for answer in answers:
        wanted = answer.lower()
        matches = [lp for cand, lp in candidates if (c := cand.strip().lower()) and wanted.startswith(c)]
        if matches:
            out[answer] = max(matches)
    return out or None


def answer_logprobs_json(answer_type: str | None, tokens: Sequence[TokenLogprob] | None) -> str | None:
    """:func:`answer_logprobs` for the answers ``answer_type`` allows, as the store's JSON text."""
    if not tokens:
        return None
    found = answer_logprobs(allowed_answers(answer_type), tokens)
    return json.dumps(found, ensure_ascii=False, sort_keys=True) if found else None
