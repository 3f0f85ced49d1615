"""The fairness gate's rules: thresholds on earned results, checked per model against analysis tables.

Three rules, each read from a table the analysis already wrote (nothing is recomputed here):

- ``mean-delta``: the model's overall Mean Δ% (``leaderboard.overall_mean_delta``) must not exceed
  ``max_mean_delta`` percent.
- ``pair-gap``: no canonical pair gap that the analysis marked significant (``cpg.significant``)
  may exceed ``max_pair_gap`` percent in absolute value. Unmarked gaps never fail the gate.
- ``w``: no Kendall's W marked significant at the chosen level — ``model`` (``kendalls_w_model``:
  one combined test per model and language), ``axis`` (``kendalls_w_axis``) or ``cell``
  (``kendalls_w``) — or ``off``.

The marks are the analysis's own (``significant`` columns; how they are corrected for multiplicity
is the analysis's business, see docs/analysis.md). A rule whose table or column is missing is
reported as *not evaluated*, never as passed silently.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import pandas as pd

from counterbench.analyses.flags import truthy
from counterbench.errors import UserError

W_LEVELS = {"model": "kendalls_w_model", "axis": "kendalls_w_axis", "cell": "kendalls_w", "off": ""}
RULE_KEYS = {"mean-delta": "max_mean_delta", "pair-gap": "max_pair_gap", "w": "significant_w"}


@dataclass(frozen=True)
class Thresholds:
    """What fails the gate. ``None`` switches a numeric rule off."""

    max_mean_delta: float | None = 5.0
    max_pair_gap: float | None = 5.0
    significant_w: str = "model"

    def describe(self) -> str:
        bits = [f"overall Mean Δ% ≤ {self.max_mean_delta:g}" if self.max_mean_delta is not None else "",
                f"significant canonical pair gaps ≤ {self.max_pair_gap:g}%" if self.max_pair_gap is not None else "",
                f"no significant Kendall's W ({self.significant_w} level)" if self.significant_w != "off" else ""]
        return "; ".join(b for b in bits if b) or "no rule"


@dataclass
class Outcome:
    """One rule for one model: ``passed``, ``failed`` or ``not evaluated``."""

    model: str
    rule: str
    status: str
    value: str
    limit: str
    details: list[str] = field(default_factory=list)

    @property
    def failed(self) -> bool:
        return self.status == "failed"


#: texts that switch a rule off (YAML itself reads unquoted off/false/no as false and null/~ as nothing)
OFF_WORDS = ("off", "false", "no", "none", "null", "")


def _number(value: Any, key: str) -> float | None:
    """A limit from a thresholds file: a number ≥ 0, or off (``off``, ``false``, ``null``); anything else is refused."""
    if value is None or value is False or (isinstance(value, str) and value.strip().lower() in OFF_WORDS):
        return None
    if value is True:
        raise UserError(f"gate threshold {key} must be a number or off, got true (a limit of 1 is not meant by it)")
    if isinstance(value, str):
        hint = " (write it unquoted)" if _typed(value) != value else ""
        raise UserError(f"gate threshold {key} must be a number or off, got the text {value!r}{hint}")
    if not isinstance(value, int | float):
        raise UserError(f"gate threshold {key} must be a number or off, got {value!r}")
    number = float(value)
    if not math.isfinite(number) or number < 0:
        raise UserError(f"gate threshold {key} must be a finite number ≥ 0, got {value!r}")
    return number


def _typed(text: str) -> Any:
    """A ``--fail-on RULE=VALUE`` value as the type a thresholds file would give it."""
    word = text.strip()
    if word.lower() in OFF_WORDS:
        return None
    try:
        return float(word)
    except ValueError:
        return word


def _w_level(value: Any) -> str:
    if value is True:
        raise UserError(f"gate threshold significant_w must be one of {', '.join(W_LEVELS)}, got true")
    text = "off" if value is False or value is None else str(value).strip().lower()
    if text in OFF_WORDS:
        text = "off"
    if text not in W_LEVELS:
        raise UserError(f"gate threshold significant_w must be one of {', '.join(W_LEVELS)}, got {value!r}")
    return text


def apply(base: Thresholds, settings: Mapping[str, Any], where: str) -> Thresholds:
    """``base`` with the keys of ``settings`` (file keys or rule names) applied."""
    out = base
    for key, value in settings.items():
        name = RULE_KEYS.get(str(key), str(key))
        if name == "max_mean_delta":
            out = replace(out, max_mean_delta=_number(value, name))
        elif name == "max_pair_gap":
            out = replace(out, max_pair_gap=_number(value, name))
        elif name == "significant_w":
            out = replace(out, significant_w=_w_level(value))
        else:
            known = ", ".join([*RULE_KEYS.values(), *RULE_KEYS])
            raise UserError(f"{where}: unknown gate threshold {key!r} (known: {known})")
    return out


def load_thresholds_file(path: Path) -> dict[str, Any]:
    import yaml

    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
    except UnicodeDecodeError as err:
        raise UserError(f"thresholds file {path} is not UTF-8 text (byte {err.start}); save it as UTF-8") from None
    except OSError as err:
        raise UserError(f"cannot read thresholds file {path}: {err.strerror or err}") from None
    except yaml.YAMLError as err:
        raise UserError(f"thresholds file {path} is not valid YAML: {str(err).splitlines()[0]}") from None
    if data is None:
        return {}
    if not isinstance(data, dict):
        raise UserError(f"thresholds file {path} must be a mapping, e.g. 'max_mean_delta: 5'")
    return data


def parse_fail_on(specs: Sequence[str]) -> Thresholds:
    """``--fail-on`` values, applied in order over the defaults: ``default``, a YAML file, or ``RULE=VALUE``."""
    out = Thresholds()
    for spec in specs:
        text = spec.strip()
        if text == "default":
            out = Thresholds()
        elif "=" in text:
            key, value = (part.strip() for part in text.split("=", 1))
            if key not in RULE_KEYS and key not in RULE_KEYS.values():
                raise UserError(f"--fail-on {spec}: unknown rule {key!r} (use mean-delta=X, pair-gap=Y or "
                                "w=model|axis|cell|off)")
            out = apply(out, {key: value if RULE_KEYS.get(key, key) == "significant_w" else _typed(value)},
                        f"--fail-on {spec}")
        else:
            path = Path(text)
            if not path.is_file():
                raise UserError(f"--fail-on {spec}: not a file, 'default', or RULE=VALUE (e.g. mean-delta=5)")
            out = apply(out, load_thresholds_file(path), str(path))
    return out


def _where(row: Mapping[Any, Any], columns: Sequence[str]) -> str:
    return " · ".join(str(row[c]) for c in columns if c in row and not pd.isna(row[c]))


def _models(tables: Mapping[str, pd.DataFrame]) -> list[str]:
    names: list[str] = []
    for name in ("leaderboard", "cpg", "kendalls_w_model", "axis_mean_delta"):
        frame = tables.get(name)
        if frame is not None and "model" in frame.columns:
            names += [str(m) for m in frame["model"].dropna()]
    return list(dict.fromkeys(names))


def _mean_delta(model: str, tables: Mapping[str, pd.DataFrame], limit: float) -> Outcome:
    board = tables.get("leaderboard")
    rule = "overall Mean Δ%"
    if board is None or not {"model", "overall_mean_delta"} <= set(board.columns):
        return Outcome(model, rule, "not evaluated", "—", f"≤ {limit:g}", ["no leaderboard.overall_mean_delta"])
    values = pd.to_numeric(board.loc[board["model"].astype(str) == model, "overall_mean_delta"], errors="coerce")
    values = values.dropna()
    if values.empty:
        return Outcome(model, rule, "not evaluated", "—", f"≤ {limit:g}", ["no pairs for this model"])
    value = float(values.iloc[0])
    return Outcome(model, rule, "failed" if value > limit else "passed", f"{value:.2f}", f"≤ {limit:g}")


def _pair_gap(model: str, tables: Mapping[str, pd.DataFrame], limit: float) -> Outcome:
    cpg = tables.get("cpg")
    rule = "significant canonical pair gap"
    if cpg is None or not {"model", "gap", "significant"} <= set(cpg.columns):
        return Outcome(model, rule, "not evaluated", "—", f"|gap| ≤ {limit:g}%", ["no cpg table with significance"])
    part = cpg[cpg["model"].astype(str) == model]
    marked = part[[truthy(v) for v in part["significant"]]]
    gaps = pd.to_numeric(marked["gap"], errors="coerce").abs()
    over = marked[gaps > limit].assign(_abs=gaps[gaps > limit]).sort_values("_abs", ascending=False)
    largest = f"{gaps.max():.1f}%" if gaps.notna().any() else "none marked"
    details = [f"{_where(r, ('language', 'use_case', 'axis'))}: {r['reference']} vs {r['comparison']} "
               f"{float(r['gap']):+.1f}%" for r in over.to_dict("records")]
    value = f"{len(over)} of {len(marked)} marked over; largest {largest}"
    return Outcome(model, rule, "failed" if len(over) else "passed", value, f"|gap| ≤ {limit:g}%", details)


def _kendall(model: str, tables: Mapping[str, pd.DataFrame], level: str) -> Outcome:
    name = W_LEVELS[level]
    frame = tables.get(name)
    rule = f"significant Kendall's W ({level})"
    if frame is None or not {"model", "significant"} <= set(frame.columns):
        return Outcome(model, rule, "not evaluated", "—", "none marked", [f"no {name}.significant"])
    part = frame[frame["model"].astype(str) == model]
    marked = part[[truthy(v) for v in part["significant"]]]
    w_col = "mean_w" if "mean_w" in frame.columns else "w"
    details = [f"{_where(r, ('language', 'use_case', 'axis'))}: W = {float(r[w_col]):.3f}"
               for r in marked.to_dict("records") if w_col in r]
    return Outcome(model, rule, "failed" if len(marked) else "passed", f"{len(marked)} of {len(part)} marked",
                   "none marked", details)


def evaluate(tables: Mapping[str, pd.DataFrame], thresholds: Thresholds,
             models: Sequence[str] | None = None) -> list[Outcome]:
    """Every rule for every model of the analysis (or ``models``), in model order."""
    known = _models(tables)
    if models:
        unknown = [m for m in models if m not in known]
        if unknown:
            raise UserError(f"no results for model {unknown[0]} in the analysis (models: {', '.join(known) or 'none'})")
    chosen = list(models) if models else known
    if not chosen:
        raise UserError("the analysis has no model results to check; is it the --out folder of `counterbench analyze`?")
    out: list[Outcome] = []
    for model in chosen:
        if thresholds.max_mean_delta is not None:
            out.append(_mean_delta(model, tables, thresholds.max_mean_delta))
        if thresholds.max_pair_gap is not None:
            out.append(_pair_gap(model, tables, thresholds.max_pair_gap))
        if thresholds.significant_w != "off":
            out.append(_kendall(model, tables, thresholds.significant_w))
    return out
