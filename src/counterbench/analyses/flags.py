"""Reading a boolean mark (``significant``, ``testable``, ``included``) from an analysis table cell.

Tables written to CSV and read back hold ``"True"``/``"False"`` strings, Parquet holds booleans, and an
empty cell is NaN; :func:`truthy` reads all of them the same way (NaN and unknown text are false).
"""

from __future__ import annotations

import math
from typing import Any

__all__ = ["truthy"]


def truthy(value: Any) -> bool:
    """Whether a mark cell says yes: ``True``, ``1``, ``"true"``/``"1"``/``"yes"``; NaN, empty and the rest are no."""
    if isinstance(value, str):
        return value.strip().lower() in ("true", "1", "yes")
    try:
        return bool(value) and not (isinstance(value, float) and math.isnan(value))
    except (TypeError, ValueError):
        return False
