"""Model labels: ``--model LABEL=SPEC`` names a model ``LABEL`` in the store, every table, chart and
report, while ``SPEC`` (the model string) says how to reach it and stays recorded with the run.

A label is split off before the model string is parsed, and only when the text before the first
``=`` has no ``:`` (so ``openai:some=model`` is a model string, not a label). The labelled backend
delegates every call to the backend of ``SPEC``, which keeps its own name: a simulated model answers
the same whatever its label.
"""

from __future__ import annotations

import re
from typing import Any

from counterbench.errors import UserError
from counterbench.models.base import Backend, ChatRequest, ChatResult

_LABEL = re.compile(r"^[^\s:=][^:=]*$")


def split_label(model: str) -> tuple[str | None, str]:
    """``"gpt=openai:gpt-4o-mini"`` -> ``("gpt", "openai:gpt-4o-mini")``; no label -> ``(None, model)``."""
    head, sep, tail = model.partition("=")
    if not sep or ":" in head:
        return None, model
    label = head.strip()
    if not label or not _LABEL.match(label):
        raise UserError(f"model {model!r}: a label must be non-empty text without ':' or '=', e.g. gpt4o=openai:gpt-4o")
    if not tail.strip():
        raise UserError(f"model {model!r}: the model string after '{label}=' is missing")
    return label, tail.strip()


def model_spec(backend: Any) -> str:
    """The model string a backend was made from (its name when it has no label)."""
    return str(getattr(backend, "spec", None) or backend.name)


class LabelledBackend:
    """``inner`` under another name; everything else (timeouts, simulated flag, calls) is ``inner``'s."""

    def __init__(self, label: str, inner: Backend, spec: str) -> None:
        self.name = label
        self.spec = spec
        self.inner = inner
        self.simulated = inner.simulated

    def __getattr__(self, item: str) -> Any:
        return getattr(self.inner, item)

    def __repr__(self) -> str:
        return f"LabelledBackend(name={self.name!r}, inner={self.inner!r})"

    async def complete(self, request: ChatRequest) -> ChatResult:
        return await self.inner.complete(request)

    async def aclose(self) -> None:
        await self.inner.aclose()
