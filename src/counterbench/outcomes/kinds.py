"""The registry of outcome kinds (:data:`KINDS`), apart from the package so that a kind's module and
:mod:`counterbench.outcomes.base` can reach it without importing the package that imports them."""

from __future__ import annotations

from types import ModuleType
from typing import TYPE_CHECKING, Any

from counterbench.registry import Registry

if TYPE_CHECKING:
    from counterbench.outcomes.base import OutcomeKind

#: every outcome kind by name
KINDS: Registry[OutcomeKind] = Registry("outcome kind", "counterbench.outcomes")


def _kind_of(_name: str, loaded: Any) -> Any:
    """What a reference names: a module's ``KIND``, or the kind object itself."""
    return loaded.KIND if isinstance(loaded, ModuleType) else loaded


KINDS.adapt = _kind_of
for _name in ("amount", "rate", "score", "label", "choice", "text"):
    KINDS.register(_name, reference=f"counterbench.outcomes.{_name}")
