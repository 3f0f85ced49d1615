"""What the hiring study's report sections share: their group in the report, their texts
(``data/report_sections.yaml``), the words for a prompt variant and the model heads of a heatmap's rows."""

from __future__ import annotations

from collections.abc import Sequence
from functools import lru_cache
from typing import Any

import pandas as pd
import yaml

from counterbench.builtin.hiring.data import builtin_path
from counterbench.report.context import ReportContext
from counterbench.report.document import Section, attach_table

GROUP = "Hiring markers"


@lru_cache(maxsize=1)
def _section_texts() -> dict[str, dict[str, Any]]:
    data: dict[str, dict[str, Any]] = yaml.safe_load(builtin_path("report_sections.yaml").read_text(encoding="utf-8"))
    return data


def open_section(ctx: ReportContext, key: str) -> tuple[Section, pd.DataFrame | None]:
    """Section ``key`` of the report's hiring group, its title and introduction from ``report_sections.yaml``,
    with its tables attached: the rows of the first (``None`` when it is empty)."""
    spec = _section_texts()[key]
    s = Section(key, str(spec["title"]), str(spec["blurb"]), group=GROUP)
    return s, attach_table(s, ctx, *spec["tables"])


def variant_label(value: object) -> str:
    """The words for a ``rationale`` flag: with or without a rationale."""
    return "with rationale" if bool(value) else "no rationale"


def with_variant(frame: pd.DataFrame) -> pd.DataFrame:
    return frame.assign(variant=frame["rationale"].map(variant_label))


def model_heads(keys: Sequence[tuple[object, ...]]) -> list[str]:
    """Heatmap row groups: the model (``key[0]``) above its first row, ``""`` below (no row label is cut)."""
    return [str(k[0]) if i == 0 or keys[i - 1][0] != k[0] else "" for i, k in enumerate(keys)]
