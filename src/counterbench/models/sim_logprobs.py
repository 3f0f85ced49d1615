"""A simulated model's log-probabilities: its planted probability of each allowed answer, as tokens.

With ``--logprobs N`` a ``sim:`` model answering a label or choice prompt returns, besides its text,
the tokens a real backend would: what precedes the answer (``###``), the answer token with the space
before it (`` yes``), and at the answer the ``N`` most likely alternatives. The probabilities are the
ones its answer is drawn from (the kind's ``sim_probabilities``; for ordinal choices, the chance that the
noisy target lands nearest each option), so p(yes) read from them is the planted p(yes), and the
reading of real tokenizers can be tested offline. A simulation file's ``logprobs`` key shapes them::

    logprobs: {variants: 0.4, mass: 0.9}

- ``variants`` (0 ≤ v < 1, default 0): the share of each answer's probability spent on other spellings,
  as real tokenizers do — half on the other case (`` Yes``), half on the other spacing (``yes``); the
  spelling written keeps ``1 − v``. With ``--logprobs 2`` the top two slots then go to spellings of one
  answer and the other answer is missing (an incomplete reading).
- ``mass`` (0 < m ≤ 1, default 1): the share of the probability the allowed answers hold at the answer;
  the rest goes to a token that starts no answer (a line break). A tiny mass (``1e-8``) makes every
  answer *forced*: the answer token lies far below the model's preferred one, as a grammar forces a
  base model that wants digits after ``### ``.

An allowed answer the model never gives still gets :data:`FLOOR` (1e-12) of probability, so it is listed
when ``N`` reaches it (p moves by under 1e-11).
"""

from __future__ import annotations

import math
from collections.abc import Mapping

from counterbench.outcomes.logprobs import TokenLogprob, answer_position

__all__ = ["FLOOR", "OTHER_TOKEN", "answer_tokens", "ordinal_probabilities", "spellings"]

#: the probability an allowed answer gets at least
FLOOR = 1e-12
#: the token that holds the probability the allowed answers do not (it starts no answer)
OTHER_TOKEN = "\n"


def ordinal_probabilities(options: Mapping[str, float], latent: float, noise_sd: float) -> dict[str, float]:
    """The chance of each option of an ordinal choice: the answer is the option nearest (ties: the lower
    value) to ``round(latent × exp(noise_sd × z))``, ``z`` standard normal."""
    order = sorted(options, key=lambda label: options[label])
    out = dict.fromkeys(options, 0.0)
    if noise_sd <= 0 or latent <= 0:
        target = round(latent)
        out[min(order, key=lambda lbl: (abs(options[lbl] - target), options[lbl]))] = 1.0
        return out

    def below(cut: float) -> float:  # P(latent × exp(sd z) < cut)
        return 0.0 if cut <= 0 else 0.5 * (1.0 + math.erf(math.log(cut / latent) / (noise_sd * math.sqrt(2.0))))

    firsts: dict[float, str] = {}  # one label per value: the first declared (min() picks it among ties)
    for label in order:
        firsts.setdefault(options[label], label)
    distinct = sorted(firsts)
    previous = 0.0
    for i, value in enumerate(distinct):
        upper = 1.0 if i + 1 == len(distinct) else below(math.floor((value + distinct[i + 1]) / 2.0) + 0.5)
        out[firsts[value]] = max(upper - previous, 0.0)
        previous = upper
    return out


def spellings(label: str, space: str, variants: float) -> list[tuple[str, float]]:
    """The spellings of ``label`` at the answer with their share of its probability: as written
    (``space + label``) ``1 − variants``; the other case and the other spacing share ``variants``."""
    written = f"{space}{label}"
    if variants <= 0:
        return [(written, 1.0)]
    swapped = label.lower() if label != label.lower() else label[:1].upper() + label[1:]
    others = [f"{space}{swapped}"] if swapped != label else []
    others.append(label if space else f" {label}")
    return [(written, 1.0 - variants), *((token, variants / len(others)) for token in others)]


def answer_tokens(text: str, probabilities: Mapping[str, float], top: int, *, variants: float = 0.0,
                  mass: float = 1.0) -> tuple[TokenLogprob, ...] | None:
    """``text`` (``### yes``) as tokens with the ``top`` most likely alternatives at the answer (module
    notes); ``None`` when the text has no answer or does not start with an allowed one."""
    position = answer_position(text)
    if position is None:
        return None
    rest = text[position:]
    answer = max((label for label in probabilities if rest.startswith(label)), key=len, default=None)
    if answer is None:
        return None
    lead = position - 1 if position > 0 and text[position - 1] == " " else position
    head, token, tail = text[:lead], text[lead: position + len(answer)], text[position + len(answer):]
    space = text[lead:position]
    weights: dict[str, float] = {}
    for label, p in probabilities.items():
        for spelt, share in spellings(label, space, variants):
            weights[spelt] = weights.get(spelt, 0.0) + max(p, FLOOR) * share * mass
    if mass < 1.0:
        weights[OTHER_TOKEN] = weights.get(OTHER_TOKEN, 0.0) + 1.0 - mass
    ranked = sorted(((t, math.log(w)) for t, w in weights.items() if w > 0), key=lambda item: -item[1])
    chosen = weights.get(token)
    sampled = math.log(chosen) if chosen else math.log(FLOOR)
    tokens: list[TokenLogprob] = []
    if head:
        tokens.append((head, 0.0, ((head, 0.0),)[:top]))
    tokens.append((token, sampled, tuple(ranked[:top])))
    if tail:
        tokens.append((tail, 0.0, ((tail, 0.0),)[:top]))
    return tuple(tokens)
