"""What every study offers the rest of counterbench.

A study turns its data into a prompt table (one row per prompt). The prompt layer
(:mod:`counterbench.prompts`) filters that table, keeping whole *slots* — the groups of prompts that
differ only in the counterfactual attribute — so any subset still supports matched comparisons.
Single-attribute studies (declared in YAML) use :class:`DeclarativeStudy`; studies with
intersectional profiles or documents with placeholder slots implement the same protocol with their
own expansion function and slot columns.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

import pandas as pd

#: columns every prompt table has, in this order; design columns follow

if TYPE_CHECKING:
    from counterbench.outcomes.base import OutcomeSpec


@dataclass(frozen=True)
class Facet:
    """One family of comparisons the analysis makes: the levels of one column, each against a reference.

    ``column`` holds the level (``identifier``, ``group``, a crossed attribute such as ``age``);
    ``axis`` restricts the rows to one axis (``None``: every row). ``kind`` is ``axis``, ``group`` or
    ``attribute`` (crossed) — the report words each differently.
    """

    name: str
    column: str
    levels: tuple[str, ...]
    reference: str
    axis: str | None = None
    kind: str = "axis"


class Study(Protocol):
    """A named study that can expand itself into a prompt table."""

    name: str
    title: str
    #: where the study came from (``built-in`` or a file path), for messages
    source: str
    #: columns whose values identify a slot (prompts that differ only in the counterfactual)
    slot_columns: tuple[str, ...]
    #: the column holding the counterfactual unit (an identifier, or an intersectional profile)
    counterfactual_column: str
    #: named filter presets, e.g. ``quick``
    presets: Mapping[str, Mapping[str, Any]]
    #: axis -> (reference, comparison) for the canonical pair gap; empty when the study names none
    canonical_pairs: Mapping[str, tuple[str, str]]
    description: str
    #: language code -> name, in study order
    languages: Mapping[str, str]
    #: axes (or crossed attributes), in study order
    axes: tuple[str, ...]
    #: the comparisons the analysis makes (see :class:`Facet`)
    facets: tuple[Facet, ...]
    #: use case -> its outcome
    outcomes: Mapping[str, OutcomeSpec]

    def expand(self, variants: Sequence[str] = ("standard",)) -> pd.DataFrame:
        """Return the full prompt table for the given variants, in canonical order."""
        ...

    def system_prompt_for(self, use_case: str, variant: str = "standard") -> str:
        """The system message a use case sends (used to pair release prompts with Table 21)."""
        ...

    def canonical_use_case(self, name: str) -> str:
        """Map an alias (e.g. ``service_pricing_client``) to the study's own use-case name."""
        ...

    def canonical_identifier(self, name: str) -> str:
        """Map an identifier alias to the study's own value (unknown names are returned unchanged)."""
        ...
