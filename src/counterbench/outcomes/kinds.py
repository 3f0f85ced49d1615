"""The outcome kind's extension point, declared in one place: the :class:`OutcomeKind` protocol (what every
kind must define), :class:`KindDefaults` (each optional member, with what it means when a kind leaves it
out), :func:`member` (the only way the core reads an optional member) and :data:`KINDS`, the registry.

The core asks a kind, never branches on its name: which tables analyse it (``pair_tables``), how an answer
becomes a number and rows (``measure``, ``offered_rows``), how two answers compare (``comparison``), what the
simulated model answers (``simulate``, ``sim_*``), which log-probability labels it reads
(``probability_labels``) and what a prompt must give it (``fields_problem``). ``tests/test_layers.py`` greps
the core for kinds' names.
"""

from __future__ import annotations

from collections.abc import Mapping
from types import ModuleType
from typing import Any, Protocol

import numpy as np
import pandas as pd

from counterbench.outcomes.base import Comparison, Constraint, OutcomeSpec, comparison_of, encode_generic
from counterbench.parse.result import ParsedAnswer
from counterbench.registry import Registry


class OutcomeKind(Protocol):
    """What every outcome kind defines (``docs/extending.md``); the optional members are :class:`KindDefaults`'s."""

    name: str
    #: keys a study file may give in a use case's ``outcome`` mapping (besides ``kind``)
    keys: tuple[str, ...]
    #: how the difference between two groups is expressed (``percentage points``, ``points``, ...)
    difference_unit: str
    #: what a parsed (``ok``) answer holds, for the report's parse health (``a usable number``)
    usable_answer: str

    def describe(self, spec: OutcomeSpec) -> str:
        """What ``measure`` is, for tables and the report (``share answering yes (%)``)."""
        ...

    def spec(self, raw: Mapping[str, Any], fail: Any) -> OutcomeSpec:
        """Validate a study file's ``outcome`` mapping; ``fail(key, message)`` returns a UserError."""
        ...

    def decode(self, text: str) -> OutcomeSpec:
        """The spec back from its ``answer_type`` string (the bare name, or what the kind's ``encode`` wrote)."""
        ...

    def instruction(self, spec: OutcomeSpec) -> str:
        """The default system instruction (used when the use case names no system prompt)."""
        ...

    def constraint(self, spec: OutcomeSpec) -> Constraint | None: ...

    def parse(self, spec: OutcomeSpec, text: str | None, profile: str) -> ParsedAnswer: ...

    def simulate(self, spec: OutcomeSpec, latent: float, u: float) -> str:
        """The simulated model's answer for a latent value (after planted effects) and a uniform draw."""
        ...

    def measure(self, spec: OutcomeSpec, values: pd.DataFrame) -> np.ndarray:
        """Per results row, the number the analysis compares (NaN when the row has none)."""
        ...


class KindDefaults:
    """Every optional member of an outcome kind, with its meaning when the kind leaves it out."""

    #: the simulated model's latent value gets its multiplicative noise
    sim_noise = True
    #: the simulated model's latent value is a probability (a simulation file's default must be in [0, 1])
    sim_probability = False
    #: the simulated probability is of the label the use case's ``label_from`` column names
    sim_target_first = False
    #: ``share``: the measure is already 100 × "selected" (the impact-ratio table's selection rate); without
    #: it an answer selects above the median of its model × use case × language
    selection = "above_median"
    #: its answers are also analysed by the pair-gap (amount) tables: Δ%, V@τ, W, MOG (``families/amount/``)
    pair_tables = False
    #: the noise ``counterbench power`` assumes without ``--noise-sd`` (``None``: the unit's default)
    power_noise: float | None = None

    def encode(self, spec: OutcomeSpec) -> str:
        """The ``answer_type`` string: the name and the parameters as JSON (``base.encode_generic``)."""
        return encode_generic(spec)

    def comparison(self, spec: OutcomeSpec) -> Comparison:
        """A difference in the kind's ``difference_unit`` (``base.comparison_of``)."""
        return comparison_of(get(spec.kind), spec)

    def sim_default(self, spec: OutcomeSpec) -> float:
        """60% of the way up a ``low``–``high`` scale, an even chance between labels, else 8."""
        if spec.low is not None and spec.high is not None:
            return float(spec.low + 0.6 * (spec.high - spec.low))
        if spec.labels:
            return 1.0 / len(spec.labels)
        return 8.0

    def sim_probabilities(self, spec: OutcomeSpec, latent: float) -> dict[str, float] | None:
        """The probability of each allowed answer the simulated model draws from (``None``: not a short list)."""
        return None

    def option_values(self, spec: OutcomeSpec, metadata: Mapping[str, Any]) -> dict[str, float]:
        """label -> the number its option stands for, when every option stands for one (else empty)."""
        return {}

    def offered_rows(self, spec: OutcomeSpec, values: pd.DataFrame) -> pd.DataFrame:
        """The rows the analysis measures, with ``y``: one per answer, its ``measure``."""
        return values.assign(y=get(spec.kind).measure(spec, values))

    def probability_labels(self, spec: OutcomeSpec) -> tuple[str, ...]:
        """The allowed answers whose log-probabilities the run stores (empty: none is read)."""
        return ()

    def probability_measure(self, spec: OutcomeSpec) -> str:
        """The decision probability's name (``p(yes)``)."""
        return "p(answer)"

    def probability_rows(self, spec: OutcomeSpec, part: pd.DataFrame) -> pd.DataFrame:
        """``part`` with ``y`` = the decision probability in %, from its ``_p_<label>`` columns (the first of its
        ``probability_labels``)."""
        first = member(get(spec.kind), "probability_labels")(spec)[0]
        return part.assign(y=part[f"_p_{first}"])

    def fields_problem(self, spec: OutcomeSpec, fields: Mapping[str, Any]) -> str | None:
        """What a prompt's fields lack for this outcome to be analysed, in words (``None``: nothing)."""
        return None


#: the optional members' names (``tests/test_extending_guide.py`` checks the guide lists them all)
OPTIONAL_MEMBERS = tuple(name for name in vars(KindDefaults) if not name.startswith("_"))
_DEFAULTS = KindDefaults()


def member(kind: object, name: str) -> Any:
    """The kind's own optional member ``name``, else :class:`KindDefaults`'s."""
    if name not in OPTIONAL_MEMBERS:
        raise AttributeError(f"{name!r} is not an optional member of an outcome kind")
    own = getattr(kind, name, None)
    return own if own is not None else getattr(_DEFAULTS, name)


def defines(kind: object, name: str) -> bool:
    """Whether the kind defines the optional member ``name`` itself (rather than taking :class:`KindDefaults`')."""
    if name not in OPTIONAL_MEMBERS:
        raise AttributeError(f"{name!r} is not an optional member of an outcome kind")
    return getattr(kind, name, None) is not None


#: every outcome kind by name
KINDS: Registry[OutcomeKind] = Registry("outcome kind", "counterbench.outcomes")


def get(name: str) -> OutcomeKind:
    return KINDS.get(name)


def kind_member(spec: OutcomeSpec, name: str) -> Any:
    """:func:`member` of ``spec``'s kind (:class:`KindDefaults`'s for a kind no longer registered)."""
    return member(KINDS.get(spec.kind) if spec.kind in KINDS else None, name)


def encode(spec: OutcomeSpec) -> str:
    """``spec`` as an ``answer_type`` string: the kind's own ``encode(spec)`` where it defines one (the built-in
    kinds' compact forms, ``score:1:10``, ``label:yes|no``), else :func:`counterbench.outcomes.base.encode_generic`."""
    return str(kind_member(spec, "encode")(spec))


def _kind_of(_name: str, loaded: Any) -> Any:
    """What a reference names: a module's ``KIND``, or the kind object itself."""
    return loaded.KIND if isinstance(loaded, ModuleType) else loaded


KINDS.adapt = _kind_of
for _name in ("amount", "rate", "score", "label", "choice", "text"):
    KINDS.register(_name, reference=f"counterbench.outcomes.{_name}")
