"""Token prices and spend.

Prices are data: ``prices.yaml`` next to this module maps model-string patterns (shell wildcards)
to USD per one million input and output tokens. A user file (``--prices FILE`` or the
``COUNTERBENCH_PRICES`` environment variable) is consulted first. A backend that reports the cost
of a request itself (``ChatResult.cost_usd``, e.g. OpenRouter) wins over the table.

Batch prices (``--batch``) are data too: a file's ``batch:`` section maps patterns to the share of the
price a batch request costs (``"openai:*": 0.5``), and an entry may give its own ``batch_input`` and
``batch_output`` (USD per one million tokens), which win over the share.
"""

from __future__ import annotations

import fnmatch
import math
import os
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any

import yaml

from counterbench.errors import UserError, check_keys
from counterbench.yaml_files import load_strict, read_text_file

PRICES_ENV = "COUNTERBENCH_PRICES"
#: the prices an entry of a price table may give (USD per 1M tokens)
PRICE_KEYS = ("input", "output", "batch_input", "batch_output")


@dataclass(frozen=True)
class Price:
    """USD per one million tokens."""

    input_per_m: float
    output_per_m: float
    #: the entry's own batch prices (USD per 1M tokens), when it gives them
    batch_per_m: tuple[float, float] | None = None

    def cost(self, input_tokens: int | None, output_tokens: int | None) -> float:
        return ((input_tokens or 0) * self.input_per_m + (output_tokens or 0) * self.output_per_m) / 1e6


class PriceTable:
    """Ordered ``(pattern, Price)`` entries; the first pattern matching a model string wins."""

    def __init__(self, entries: list[tuple[str, Price]], sources: list[str],
                 batch_shares: list[tuple[str, float]] | None = None) -> None:
        self.entries = entries
        self.sources = sources
        #: ``(pattern, share of the price)`` of a batch request, first match wins
        self.batch_shares = batch_shares or []

    def lookup(self, model: str, *, batch: bool = False) -> Price | None:
        """The price of ``model``'s requests; with ``batch``, of its batch requests (``None``: unknown)."""
        for pattern, price in self.entries:
            if fnmatch.fnmatchcase(model, pattern):
                return self._batch_price(model, price) if batch else price
        return None

    def _batch_price(self, model: str, price: Price) -> Price | None:
        if price.batch_per_m is not None:
            return Price(*price.batch_per_m)
        share = next((s for pattern, s in self.batch_shares if fnmatch.fnmatchcase(model, pattern)), None)
        return None if share is None else Price(price.input_per_m * share, price.output_per_m * share)


def load_price_table(user_file: Path | str | None = None) -> PriceTable:
    """The built-in table, preceded by ``user_file`` (or ``$COUNTERBENCH_PRICES``) when given."""
    entries: list[tuple[str, Price]] = []
    shares: list[tuple[str, float]] = []
    sources: list[str] = []
    chosen = user_file if user_file is not None else os.environ.get(PRICES_ENV) or None
    if chosen is not None:
        path = Path(chosen)
        if not path.is_file():
            raise UserError(f"price table {path} not found (from --prices or ${PRICES_ENV})")
        _add(_parse(read_text_file(path, f"price table {path}"), str(path)), entries, shares)
        sources.append(str(path))
    builtin = resources.files("counterbench.run").joinpath("prices.yaml").read_text(encoding="utf-8")
    _add(_parse(builtin, "built-in prices.yaml"), entries, shares)
    sources.append("built-in")
    return PriceTable(entries, sources, shares)


def _add(parsed: tuple[list[tuple[str, Price]], list[tuple[str, float]]], entries: list[tuple[str, Price]],
         shares: list[tuple[str, float]]) -> None:
    entries.extend(parsed[0])
    shares.extend(parsed[1])


def _parse(text: str, where: str) -> tuple[list[tuple[str, Price]], list[tuple[str, float]]]:
    try:
        data: Any = load_strict(text, f"price table {where}")
    except yaml.YAMLError as err:
        mark = getattr(err, "problem_mark", None)
        at = f" (line {mark.line + 1})" if mark is not None else ""
        raise UserError(f"price table {where} is not valid YAML{at}") from None
    shares = _batch_shares(data.get("batch") if isinstance(data, dict) else None, where)
    if isinstance(data, dict) and "prices" in data:
        data = data["prices"]
    elif isinstance(data, dict):
        data = {k: v for k, v in data.items() if k != "batch"}
    if not isinstance(data, dict):
        raise UserError(f"price table {where}: expected a mapping 'prices: {{pattern: {{input:, output:}}}}'")
    out: list[tuple[str, Price]] = []
    for pattern, spec in data.items():
        if not isinstance(spec, dict) or "input" not in spec or "output" not in spec:
            raise UserError(f"price table {where}: entry '{pattern}' needs 'input' and 'output' (USD per 1M tokens)")
        check_keys(spec, PRICE_KEYS, f"price table {where}: entry '{pattern}'")
        try:
            numbers = [float(spec[k]) for k in PRICE_KEYS if k in spec]
        except (TypeError, ValueError):
            raise UserError(f"price table {where}: entry '{pattern}' has a non-numeric price") from None
        if not all(math.isfinite(n) for n in numbers):
            raise UserError(f"price table {where}: entry '{pattern}' has a price that is not a finite number")
        if min(numbers) < 0:
            raise UserError(f"price table {where}: entry '{pattern}' has a negative price")
        if len(numbers) == 3:
            raise UserError(f"price table {where}: entry '{pattern}' needs both 'batch_input' and 'batch_output'")
        batch = (numbers[2], numbers[3]) if len(numbers) == 4 else None
        out.append((str(pattern), Price(numbers[0], numbers[1], batch)))
    return out, shares


def _batch_shares(section: Any, where: str) -> list[tuple[str, float]]:
    """A price file's ``batch:`` section: pattern -> the share of the price a batch request costs."""
    if section is None:
        return []
    if not isinstance(section, dict):
        raise UserError(f"price table {where}: 'batch' must map patterns to a share of the price, e.g. 'openai:*': 0.5")
    out = []
    for pattern, share in section.items():
        if isinstance(share, bool) or not isinstance(share, int | float) or not 0 <= share <= 1:
            raise UserError(f"price table {where}: batch share of '{pattern}' must be a number from 0 to 1")
        out.append((str(pattern), float(share)))
    return out


def estimate_input_tokens(system: str | None, user: str | None) -> int:
    """A cheap upper-ish estimate (4 characters per token, plus chat-template overhead)."""
    return (len(system or "") + len(user or "")) // 3 + 16
