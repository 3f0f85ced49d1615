"""Outcome kinds: one module each, found through one registry.

``amount`` (money or a number with units; relative gap Δ%), ``rate`` (a percentage:
difference in percentage points and relative), ``score`` (a bounded integer scale), ``label`` (one of
a declared set of words), ``choice`` (one of N labelled options, mapped back to what each stands for)
and ``text`` (free text scored by named metrics). The kinds are the entries of :data:`KINDS`, a
:class:`~counterbench.registry.Registry`: the built-in ones are registered here by reference (loaded on
first use); a package adds a kind with an entry point in the ``counterbench.outcomes`` group (a module
defining ``KIND``, or the kind object itself), code with ``KINDS.register(name, kind)``.
"""

from __future__ import annotations

import functools
from typing import TYPE_CHECKING

from counterbench.errors import UserError
from counterbench.outcomes.kinds import KINDS, OutcomeKind, defines, encode, kind_member, member

if TYPE_CHECKING:
    from counterbench.outcomes.base import Constraint, OutcomeSpec
    from counterbench.parse.result import ParsedAnswer

__all__ = ["KINDS", "OutcomeKind", "defines", "encode", "kind_member", "member"]

#: answer types of the ``amount`` kind (the parser's rules.yaml types)
AMOUNT_ANSWER_TYPES = ("inr_annual", "percent", "inr", "number")
#: the answer types a study file may give instead of an ``outcome`` (the amounts', and free ``text``)
LEGACY_ANSWER_TYPES = (*AMOUNT_ANSWER_TYPES, "text")


def kind_names() -> list[str]:
    return KINDS.names()


def get_kind(name: str) -> OutcomeKind:
    """The kind called ``name``; an unknown name is a :class:`UserError` listing the kinds."""
    try:
        return KINDS.get(name)
    except UserError:
        if name in KINDS:
            raise  # a registered kind that failed to load: the registry's message names it
        raise UserError(f"unknown outcome kind '{name}' (one of: {', '.join(KINDS)})") from None


def usable_answer_words(kinds: list[str]) -> str:
    """What a usable answer holds for these kinds, in words (``a usable number or one of the allowed
    labels``); unknown kinds are skipped, and no known kind means ``amount``'s words."""
    words = list(dict.fromkeys(get_kind(k).usable_answer for k in kinds if k in KINDS))
    if not words:
        words = [get_kind("amount").usable_answer]
    return words[0] if len(words) == 1 else ", ".join(words[:-1]) + " or " + words[-1]


def legacy_outcome(answer_type: str) -> OutcomeSpec:
    """The outcome of a study file's bare ``answer_type`` (one of :data:`LEGACY_ANSWER_TYPES`): free text
    scored by its length, or an amount of that answer type."""
    from counterbench.outcomes.base import OutcomeSpec

    if answer_type == "text":
        return OutcomeSpec("text", metrics=("length",))
    return get_kind("amount").decode(answer_type)


def has_pair_tables(kind: str | None) -> bool:
    """Whether the pair-gap tables (Δ%, V@τ, W, MOG) analyse answers of ``kind`` (the kind's ``pair_tables``;
    a missing or unknown kind is ``amount``'s, as in stores written before kinds existed)."""
    return bool(member(get_kind(kind if kind is not None and kind in KINDS else "amount"), "pair_tables"))


def measures_share(kind: str) -> bool:
    """Whether ``kind``'s measure is 100 × "selected" (its ``selection`` is ``share``: a label's, a choice's), so a
    group's answers are counts (Fisher's exact test) and its mean a share (a logit model)."""
    return kind in KINDS and member(get_kind(kind), "selection") == "share"


def kind_of_answer_type(answer_type: str | None) -> str | None:
    """The kind an ``answer_type`` string belongs to (``None`` for missing/unknown)."""
    if not answer_type:
        return None
    if answer_type in AMOUNT_ANSWER_TYPES:
        return "amount"
    head = answer_type.split(":", 1)[0]
    return head if head in KINDS else None


@functools.lru_cache(maxsize=256)
def spec_from_answer_type(answer_type: str) -> OutcomeSpec:
    kind = kind_of_answer_type(answer_type)
    if kind is None:
        raise UserError(f"unknown answer type '{answer_type}'")
    from counterbench.outcomes.base import decode_generic, is_generic_encoding

    if is_generic_encoding(answer_type):  # a kind's parameters written by encode_generic
        return decode_generic(answer_type)
    return get_kind(kind).decode(answer_type)


def is_generic(answer_type: str | None) -> bool:
    """True for answer types parsed by an outcome kind other than ``amount`` (rate, score, label, ...)."""
    kind = kind_of_answer_type(answer_type)
    return kind is not None and kind != "amount"


def parse_outcome(answer_type: str, text: str | None, profile: str = "default") -> ParsedAnswer:
    """Parse one response of a use case whose outcome is ``answer_type``."""
    spec = spec_from_answer_type(answer_type)
    return get_kind(spec.kind).parse(spec, text, profile)


def constraint_for(answer_type: str | None) -> Constraint | None:
    """The structured-output constraint of ``answer_type`` (``None`` when the kind has none)."""
    if not answer_type or kind_of_answer_type(answer_type) is None:
        return None
    spec = spec_from_answer_type(answer_type)
    return get_kind(spec.kind).constraint(spec)
