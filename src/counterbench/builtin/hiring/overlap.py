"""How much text two job descriptions or two resumes share: word 5-gram Jaccard similarity.

The built-in data promise (``docs/hiring.md``): no two jobs and no two neutral resumes share more than
:data:`MAX_SHARED` of their word 5-grams, so each job is its own text, not a copy with another employer
line. The marker section's placeholders are the same in every resume and count like any other words.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from itertools import combinations

#: the largest share of word 5-grams two built-in jobs (or two resumes) may have in common
MAX_SHARED = 0.5
_WORD = re.compile(r"\w+")


def shingles(text: str, n: int = 5) -> frozenset[tuple[str, ...]]:
    """The set of lower-cased word ``n``-grams of ``text`` (the whole text if it is shorter)."""
    words = _WORD.findall(text.lower())
    if len(words) < n:
        return frozenset({tuple(words)})
    return frozenset(tuple(words[i:i + n]) for i in range(len(words) - n + 1))


def jaccard(a: frozenset[tuple[str, ...]], b: frozenset[tuple[str, ...]]) -> float:
    """|a ∩ b| / |a ∪ b| (0 for two empty sets)."""
    union = len(a | b)
    return len(a & b) / union if union else 0.0


def max_pairwise_overlap(texts: Sequence[str], n: int = 5) -> float:
    """The largest word ``n``-gram Jaccard similarity over all pairs of ``texts``."""
    sets = [shingles(t, n) for t in texts]
    return max((jaccard(a, b) for a, b in combinations(sets, 2)), default=0.0)
