"""What the hiring study's report sections share: their group in the report and the words for a prompt variant."""

from __future__ import annotations

from collections.abc import Sequence

import pandas as pd

GROUP = "Hiring markers"


def variant_label(value: object) -> str:
    """The words for a ``rationale`` flag: with or without a rationale."""
    return "with rationale" if bool(value) else "no rationale"


def with_variant(frame: pd.DataFrame) -> pd.DataFrame:
    return frame.assign(variant=frame["rationale"].map(variant_label))


def model_heads(keys: Sequence[tuple[object, ...]]) -> list[str]:
    """Heatmap row groups: the model (``key[0]``) above its first row, ``""`` below (no row label is cut)."""
    return [str(k[0]) if i == 0 or keys[i - 1][0] != k[0] else "" for i, k in enumerate(keys)]
