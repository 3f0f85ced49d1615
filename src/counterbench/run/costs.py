"""Token prices and spend.

Prices are data: ``prices.yaml`` next to this module maps model-string patterns (shell wildcards)
to USD per one million input and output tokens. A user file (``--prices FILE`` or the
``COUNTERBENCH_PRICES`` environment variable) is consulted first. A backend that reports the cost
of a request itself (``ChatResult.cost_usd``, e.g. OpenRouter) wins over the table.
"""

from __future__ import annotations

import fnmatch
import os
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any

import yaml

from counterbench.errors import UserError

PRICES_ENV = "COUNTERBENCH_PRICES"


@dataclass(frozen=True)
class Price:
    """USD per one million tokens."""

    input_per_m: float
    output_per_m: float

    def cost(self, input_tokens: int | None, output_tokens: int | None) -> float:
        return ((input_tokens or 0) * self.input_per_m + (output_tokens or 0) * self.output_per_m) / 1e6


class PriceTable:
    """Ordered ``(pattern, Price)`` entries; the first pattern matching a model string wins."""

    def __init__(self, entries: list[tuple[str, Price]], sources: list[str]) -> None:
        self.entries = entries
        self.sources = sources

    def lookup(self, model: str) -> Price | None:
        for pattern, price in self.entries:
            if fnmatch.fnmatchcase(model, pattern):
                return price
        return None


def load_price_table(user_file: Path | str | None = None) -> PriceTable:
    """The built-in table, preceded by ``user_file`` (or ``$COUNTERBENCH_PRICES``) when given."""
    entries: list[tuple[str, Price]] = []
    sources: list[str] = []
    chosen = user_file if user_file is not None else os.environ.get(PRICES_ENV) or None
    if chosen is not None:
        path = Path(chosen)
        if not path.is_file():
            raise UserError(f"price table {path} not found (from --prices or ${PRICES_ENV})")
        try:
            text = path.read_text(encoding="utf-8")
        except OSError as err:
            raise UserError(f"cannot read price table {path}: {err.strerror or err}") from None
        entries.extend(_parse(text, str(path)))
        sources.append(str(path))
    builtin = resources.files("counterbench.run").joinpath("prices.yaml").read_text(encoding="utf-8")
    entries.extend(_parse(builtin, "built-in prices.yaml"))
    sources.append("built-in")
    return PriceTable(entries, sources)


def _parse(text: str, where: str) -> list[tuple[str, Price]]:
    try:
        data: Any = yaml.load(text, Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))
    except yaml.YAMLError as err:
        mark = getattr(err, "problem_mark", None)
        at = f" (line {mark.line + 1})" if mark is not None else ""
        raise UserError(f"price table {where} is not valid YAML{at}") from None
    if isinstance(data, dict) and "prices" in data:
        data = data["prices"]
    if not isinstance(data, dict):
        raise UserError(f"price table {where}: expected a mapping 'prices: {{pattern: {{input:, output:}}}}'")
    out: list[tuple[str, Price]] = []
    for pattern, spec in data.items():
        if not isinstance(spec, dict) or "input" not in spec or "output" not in spec:
            raise UserError(f"price table {where}: entry '{pattern}' needs 'input' and 'output' (USD per 1M tokens)")
        try:
            price = Price(float(spec["input"]), float(spec["output"]))
        except (TypeError, ValueError):
            raise UserError(f"price table {where}: entry '{pattern}' has a non-numeric price") from None
        if price.input_per_m < 0 or price.output_per_m < 0:
            raise UserError(f"price table {where}: entry '{pattern}' has a negative price")
        out.append((str(pattern), price))
    return out


def estimate_input_tokens(system: str | None, user: str | None) -> int:
    """A cheap upper-ish estimate (4 characters per token, plus chat-template overhead)."""
    return (len(system or "") + len(user or "")) // 3 + 16
