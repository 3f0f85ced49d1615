"""``sim:NAME`` — a simulated model with known, configurable bias (for tests and demos).

Answers are a pure function of the model name, the request and its seed::

    value = baseline(use case, profile) × profile effect × identifier effect × language effect × noise

* **baseline** — from the YAML's ``use_cases[<use_case>]`` section (or ``answer_types[<answer_type>]``,
  then ``default``): ``anchor`` when the request metadata has one of its design columns (e.g.
  ``offered_ctc_lpa``; value × ``factor``, numbers below ``lpa_below`` read as lakh), else an
  explicit per-profile value from ``profiles``, else a value drawn deterministically from ``range``
  by the profile id, else ``default``;
* **effects** — multipliers: ``profile_effects[profile_id]``, ``identifier_effects[identifier]``
  (overridden per use case by ``identifier_effects_by_use_case``), ``language_effects[language]``;
* **noise** — ``exp(noise_sd × z)`` with ``z`` standard normal, seeded from a SHA-256 of
  ``name | prompt_id | seed`` (never Python's ``hash()``), so the same request always gets the
  same answer, in any process;
* ``refusal_rate`` / ``malformed_rate`` — the same seeded stream decides whether to answer with
  ``refusal_text`` or ``malformed_text`` (free text without a number) instead;
* ``latency_ms`` — optional ``asyncio.sleep`` per request;
* ``extends: PRESET`` — start from a preset's keys; top-level keys given here replace the preset's.

* ``identifier_effects_studies`` — when given, ``identifier_effects`` apply only to prompts of these
  studies (so a preset written for one study does not touch another study's identically named
  identifiers);
* **effects** (any study) — a list of rules ``{match: {COLUMN: VALUE, ...}, unless: {...}, multiply: M,
  add: A}``: a prompt whose metadata (any prompt-table column: ``identifier``, ``group``, a crossed
  attribute such as ``gender``, ``use_case``, ``language``, ``level_index`` = the identifier's position in
  its axis) matches every ``match`` entry (a value or a list of values) and not every ``unless`` entry
  gets its expected value multiplied by ``M`` and then ``A`` added;
* ``planted`` — one sentence saying what the effects plant (the report's banner shows it).

Answers follow the request's outcome kind (:mod:`counterbench.outcomes`, from ``answer_type``):
amounts ``### 1234000 INR`` / ``### 12.5 %`` as above; for ``rate``, ``score`` and ``text`` the
expected value (a rate in %, a score, a word count) gets the same multiplicative noise and is
formatted by the kind (scores are rounded stochastically, so their mean stays the expected value);
for ``label`` and ``choice`` the expected value is the probability of the positive label / first
option and one seeded uniform draw picks the answer (a use case's ``label_from: COLUMN`` makes it the
probability of the label that metadata column names, e.g. the true one, instead of the first).
Their baselines: ``use_cases[USE_CASE].default``,
else ``outcomes[KIND].default``, else the kind's own (rate 8, score 60% up the scale, label 0.5,
choice 1/N, text 150 words or, scored by ``mgl``, grade 11). A ``choice`` whose options stand for numbers (the prompt's
``option_<LABEL>`` columns, e.g. the STEM study's explanation levels 1–5) is *ordinal*: the expected
value is that number (baseline ``use_cases[USE_CASE].default``, else the middle of the options' values),
it gets the multiplicative noise and the answer is the option nearest to it, rounded. A ``text`` outcome
is written to its first metric (``length``: words; ``mgl``: prose at that grade level).

It reads only ``request.metadata`` and ``request.answer_type``: nothing study-specific lives in this
code (the presets' identifier names are data).
"""

from __future__ import annotations

import asyncio
import hashlib
import math
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from importlib import resources
from pathlib import Path
from typing import Any

import yaml

from counterbench.errors import UserError
from counterbench.models.base import ChatRequest, ChatResult
from counterbench.models.sim_effects import Effect, _effect, _kind_default, _mapping

PRESET_PACKAGE = "counterbench.models"
PRESET_DIR = "sim_presets"


@dataclass(frozen=True)
class SimAnswerSpec:
    """How one use case (or answer type) is answered."""

    unit: str = "INR"
    default: float = 1_000_000.0
    profiles: Mapping[str, float] = field(default_factory=dict)
    value_range: tuple[float, float] | None = None
    anchor_columns: tuple[str, ...] = ()
    anchor_factor: float = 1.0
    anchor_lpa_below: float = 1000.0
    round_to: float = 1.0
    decimals: int = 0
    #: for a ``label`` outcome: the request-metadata column naming the label whose probability the
    #: expected value is (e.g. ``truth``); without it, the answer type's first label
    label_from: str | None = None


@dataclass(frozen=True)
class SimProfile:
    """A parsed simulation YAML. See the module docstring for the meaning of every field."""

    description: str = ""
    noise_sd: float = 0.0
    refusal_rate: float = 0.0
    malformed_rate: float = 0.0
    latency_ms: float = 0.0
    refusal_text: str = "I cannot provide salary advice based on identity."
    malformed_text: str = "It depends on many factors such as skills, location and current market demand."
    use_cases: Mapping[str, SimAnswerSpec] = field(default_factory=dict)
    answer_types: Mapping[str, SimAnswerSpec] = field(default_factory=dict)
    default: SimAnswerSpec = field(default_factory=SimAnswerSpec)
    identifier_effects: Mapping[str, float] = field(default_factory=dict)
    identifier_effects_by_use_case: Mapping[str, Mapping[str, float]] = field(default_factory=dict)
    profile_effects: Mapping[str, float] = field(default_factory=dict)
    language_effects: Mapping[str, float] = field(default_factory=dict)
    effects: tuple[Effect, ...] = ()
    outcomes: Mapping[str, float] = field(default_factory=dict)
    #: when given, identifier effects apply only to prompts of these studies (prompts without a study too)
    identifier_effects_studies: tuple[str, ...] = ()
    planted: str = ""
    generic_refusal_text: str = "I cannot make this judgement based on a person's identity."
    generic_malformed_text: str = "That depends on many factors that the question does not state."


def preset_names() -> list[str]:
    """Names usable as ``sim:NAME`` without a path."""
    folder = resources.files(PRESET_PACKAGE).joinpath(PRESET_DIR)
    return sorted(p.name[: -len(".yaml")] for p in folder.iterdir() if p.name.endswith(".yaml"))


def load_profile(name_or_path: str) -> SimProfile:
    """Load a preset by name (``fair``, ``biased``) or a YAML file by path; errors are :class:`UserError`."""
    if name_or_path.endswith((".yaml", ".yml")) or "/" in name_or_path or "\\" in name_or_path:
        path = Path(name_or_path).expanduser()
        if not path.is_file():
            raise UserError(f"sim:{name_or_path}: no such simulation file {str(path)!r}")
        text = path.read_text(encoding="utf-8")
        where = str(path)
    else:
        resource = resources.files(PRESET_PACKAGE).joinpath(PRESET_DIR, f"{name_or_path}.yaml")
        if not resource.is_file():
            raise UserError(
                f"sim:{name_or_path}: unknown simulated model; presets: {', '.join(preset_names())} "
                "(or give a path to a YAML file)"
            )
        text = resource.read_text(encoding="utf-8")
        where = f"preset {name_or_path!r}"
    return profile_from_dict(_load_raw(text, where), where=where)


def _load_raw(text: str, where: str, depth: int = 0) -> dict[str, Any]:
    """Parse YAML; ``extends: PRESET`` starts from that preset's keys (top-level keys replace)."""
    try:
        data = yaml.safe_load(text) or {}
    except yaml.YAMLError as exc:
        raise UserError(f"{where}: not valid YAML ({str(exc).splitlines()[0]})") from None
    if not isinstance(data, dict):
        raise UserError(f"{where}: expected a mapping at the top level")
    base_name = data.pop("extends", None)
    if base_name is None:
        return data
    base = resources.files(PRESET_PACKAGE).joinpath(PRESET_DIR, f"{base_name}.yaml")
    if depth > 3 or not base.is_file():
        raise UserError(f"{where}: 'extends: {base_name}' names no preset ({', '.join(preset_names())})")
    merged = _load_raw(base.read_text(encoding="utf-8"), f"preset {base_name!r}", depth + 1)
    merged.update(data)
    return merged


def profile_from_dict(data: Any, *, where: str = "simulation config") -> SimProfile:
    if not isinstance(data, dict):
        raise UserError(f"{where}: expected a mapping at the top level")
    try:
        rates = {k: float(data.get(k, 0.0)) for k in ("noise_sd", "refusal_rate", "malformed_rate", "latency_ms")}
        for key in ("refusal_rate", "malformed_rate"):
            if not 0.0 <= rates[key] <= 1.0:
                raise ValueError(f"{key} must be between 0 and 1")
        if rates["refusal_rate"] + rates["malformed_rate"] > 1.0:
            raise ValueError("refusal_rate + malformed_rate must not exceed 1")
        if rates["noise_sd"] < 0 or rates["latency_ms"] < 0:
            raise ValueError("noise_sd and latency_ms must not be negative")
        extra: dict[str, Any] = {}
        for key in ("refusal_text", "malformed_text", "description", "planted", "generic_refusal_text",
                    "generic_malformed_text"):
            if key in data:
                extra[key] = str(data[key])
        return SimProfile(
            noise_sd=rates["noise_sd"],
            refusal_rate=rates["refusal_rate"],
            malformed_rate=rates["malformed_rate"],
            latency_ms=rates["latency_ms"],
            use_cases={str(k): _spec(v, f"use_cases.{k}") for k, v in (data.get("use_cases") or {}).items()},
            answer_types={str(k): _spec(v, f"answer_types.{k}") for k, v in (data.get("answer_types") or {}).items()},
            default=_spec(data.get("default") or {}, "default"),
            identifier_effects=_floats(data.get("identifier_effects"), "identifier_effects"),
            identifier_effects_by_use_case={
                str(k): _floats(v, f"identifier_effects_by_use_case.{k}")
                for k, v in (data.get("identifier_effects_by_use_case") or {}).items()
            },
            profile_effects=_floats(data.get("profile_effects"), "profile_effects"),
            language_effects=_floats(data.get("language_effects"), "language_effects"),
            effects=tuple(_effect(e, i) for i, e in enumerate(data.get("effects") or [])),
            identifier_effects_studies=tuple(str(x) for x in (data.get("identifier_effects_studies") or [])),
            outcomes={str(k): float(_mapping(v, f"outcomes.{k}").get("default", 0.0))
                      for k, v in (data.get("outcomes") or {}).items()},
            **extra,
        )
    except (TypeError, ValueError, AttributeError) as exc:
        raise UserError(f"{where}: {exc}") from None


def _floats(value: Any, key: str) -> dict[str, float]:
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise ValueError(f"{key} must be a mapping of name -> number")
    out = {str(k): float(v) for k, v in value.items()}
    if any(v <= 0 for v in out.values()):
        raise ValueError(f"{key}: multipliers must be positive")
    return out


def _spec(value: Any, key: str) -> SimAnswerSpec:
    if not isinstance(value, dict):
        raise ValueError(f"{key} must be a mapping")
    anchor = value.get("anchor") or {}
    columns = anchor.get("columns", [])
    rng = value.get("range")
    unit = str(value.get("unit", "INR"))
    return SimAnswerSpec(
        unit=unit,
        default=float(value.get("default", 10.0 if unit == "%" else 1_000_000.0)),
        profiles=_floats(value.get("profiles"), f"{key}.profiles"),
        value_range=(float(rng[0]), float(rng[1])) if rng else None,
        anchor_columns=tuple(str(c) for c in ([columns] if isinstance(columns, str) else columns)),
        anchor_factor=float(anchor.get("factor", 1.0)),
        anchor_lpa_below=float(anchor.get("lpa_below", 1000.0)),
        round_to=float(value.get("round_to", 1.0)),
        decimals=int(value.get("decimals", 0)),
        label_from=str(value["label_from"]) if value.get("label_from") else None,
    )


def stable_unit_floats(*parts: object, count: int = 3) -> list[float]:
    """``count`` floats in [0, 1) from a SHA-256 of ``parts`` (identical in every process)."""
    digest = hashlib.sha256("|".join(str(p) for p in parts).encode("utf-8")).digest()
    return [int.from_bytes(digest[8 * i : 8 * i + 8], "big") / 2.0**64 for i in range(count)]


class SimulatedBackend:
    """A deterministic stand-in for a model. Its outputs are always labelled simulated."""

    simulated = True

    def __init__(self, name: str, profile: SimProfile) -> None:
        self.name = name
        self.profile = profile

    def __repr__(self) -> str:
        return f"SimulatedBackend(name={self.name!r})"

    def _spec_for(self, request: ChatRequest) -> SimAnswerSpec:
        use_case = str(request.metadata.get("use_case") or "")
        if use_case in self.profile.use_cases:
            return self.profile.use_cases[use_case]
        if request.answer_type and request.answer_type in self.profile.answer_types:
            return self.profile.answer_types[request.answer_type]
        return self.profile.default

    def expected_value(self, request: ChatRequest) -> float:
        """The noise-free value for ``request`` (baseline × all effects) — the oracle for tests."""
        meta = request.metadata
        spec = self._spec_for(request)
        profile_id = str(meta.get("profile_id") or "")
        identifier = str(meta.get("identifier") or "")
        use_case = str(meta.get("use_case") or "")
        value = _baseline(spec, profile_id, meta)
        value *= self.profile.profile_effects.get(profile_id, 1.0)
        if self._identifier_effects_apply(meta):
            per_use_case = self.profile.identifier_effects_by_use_case.get(use_case, {})
            value *= per_use_case.get(identifier, self.profile.identifier_effects.get(identifier, 1.0))
        value *= self.profile.language_effects.get(str(meta.get("language") or ""), 1.0)
        return self._apply_effects(value, meta)

    def _identifier_effects_apply(self, meta: Mapping[str, Any]) -> bool:
        studies = self.profile.identifier_effects_studies
        study = meta.get("study")
        return not studies or not study or str(study) in studies

    def _apply_effects(self, value: float, meta: Mapping[str, Any]) -> float:
        for effect in self.profile.effects:
            if effect.applies(meta):
                value = value * effect.multiply + effect.add
        return value

    def expected_outcome(self, request: ChatRequest) -> float:
        """Noise-free latent value for a non-amount outcome (rate %, score, probability, word count)."""
        from counterbench.outcomes import spec_from_answer_type

        spec = spec_from_answer_type(str(request.answer_type))
        meta = request.metadata
        use_case = str(meta.get("use_case") or "")
        profile_id = str(meta.get("profile_id") or "")
        if use_case in self.profile.use_cases:
            value = _baseline(self.profile.use_cases[use_case], profile_id, meta)
        elif spec.kind in self.profile.outcomes:
            value = self.profile.outcomes[spec.kind]
        else:
            value = _kind_default(spec)
        value *= self.profile.profile_effects.get(profile_id, 1.0)
        if self._identifier_effects_apply(meta):
            per_use_case = self.profile.identifier_effects_by_use_case.get(use_case, {})
            identifier = str(meta.get("identifier") or "")
            value *= per_use_case.get(identifier, self.profile.identifier_effects.get(identifier, 1.0))
        value *= self.profile.language_effects.get(str(meta.get("language") or ""), 1.0)
        return self._apply_effects(value, meta)

    def _answer_outcome(self, request: ChatRequest) -> str:
        from counterbench.outcomes import get_kind, spec_from_answer_type

        p = self.profile
        spec = spec_from_answer_type(str(request.answer_type))
        u_outcome, u1, u2, u3 = stable_unit_floats(self.name, request.prompt_id, request.config.seed, count=4)
        if u_outcome < p.refusal_rate:
            return p.generic_refusal_text
        if u_outcome < p.refusal_rate + p.malformed_rate:
            return p.generic_malformed_text
        ordinal = _ordinal_options(spec, request.metadata)
        if ordinal:
            return self._answer_ordinal(request, ordinal, u1, u2)
        latent = self.expected_outcome(request)
        if spec.kind == "label":
            spec = self._target_first(spec, request)
        if spec.kind in ("rate", "score", "text"):
            z = math.sqrt(-2.0 * math.log(1.0 - u1)) * math.cos(2.0 * math.pi * u2)
            latent *= math.exp(p.noise_sd * z)
        return get_kind(spec.kind).simulate(spec, latent, u3)

    def _target_first(self, spec: Any, request: ChatRequest) -> Any:
        """The label named by the use case's ``label_from`` column first (the rest in declared order).

        So a prompt's answer type can list its labels in a fixed order (the true one is never first by
        construction, which would leak it to a model reading the schema) while the simulated model still
        knows which label its expected value is the probability of.
        """
        use_case = str(request.metadata.get("use_case") or "")
        column = self.profile.use_cases[use_case].label_from if use_case in self.profile.use_cases else None
        target = request.metadata.get(column) if column else None
        if target is None or str(target) not in spec.labels:
            return spec
        return replace(spec, labels=(str(target), *(lbl for lbl in spec.labels if lbl != str(target))))

    def _answer_ordinal(self, request: ChatRequest, options: dict[str, float], u1: float, u2: float) -> str:
        """A choice among options that stand for ordered values (e.g. explanation levels 1–5).

        The expected value is the use case's ``default`` (else the middle of the options' values) after
        the effects; times log-normal noise (``noise_sd``), rounded; the answer is the option whose value
        is nearest.
        """
        use_case = str(request.metadata.get("use_case") or "")
        values = sorted(options.values())
        base = self.profile.use_cases[use_case].default if use_case in self.profile.use_cases else (
            (values[0] + values[-1]) / 2.0)
        latent = self._apply_effects(base, request.metadata)
        z = math.sqrt(-2.0 * math.log(1.0 - u1)) * math.cos(2.0 * math.pi * u2)
        target = round(latent * math.exp(self.profile.noise_sd * z))
        label = min(options, key=lambda lbl: (abs(options[lbl] - target), options[lbl]))
        return f"### {label}"

    def answer(self, request: ChatRequest) -> str:
        """The text this model answers (synchronous and pure)."""
        from counterbench.outcomes import is_generic

        if is_generic(request.answer_type):
            return self._answer_outcome(request)
        p = self.profile
        u_outcome, u1, u2 = stable_unit_floats(self.name, request.prompt_id, request.config.seed)
        if u_outcome < p.refusal_rate:
            return p.refusal_text
        if u_outcome < p.refusal_rate + p.malformed_rate:
            return p.malformed_text
        z = math.sqrt(-2.0 * math.log(1.0 - u1)) * math.cos(2.0 * math.pi * u2)  # Box-Muller
        value = self.expected_value(request) * math.exp(p.noise_sd * z)
        return format_answer(value, self._spec_for(request))

    async def complete(self, request: ChatRequest) -> ChatResult:
        if self.profile.latency_ms > 0:
            await asyncio.sleep(self.profile.latency_ms / 1000.0)
        text = self.answer(request)
        return ChatResult(
            text=text,
            finish_reason="stop",
            input_tokens=(len(request.system) + len(request.user)) // 4,
            output_tokens=max(1, len(text) // 4),
            latency_ms=self.profile.latency_ms,
            model_reported=self.name,
        )

    async def aclose(self) -> None:
        return None


def _baseline(spec: SimAnswerSpec, profile_id: str, meta: Mapping[str, Any]) -> float:
    for column in spec.anchor_columns:
        raw = meta.get(column)
        try:
            anchor = float(raw) if raw is not None and raw != "" else None
        except (TypeError, ValueError):
            anchor = None
        if anchor is not None and anchor > 0:
            if anchor < spec.anchor_lpa_below:
                anchor *= 100_000.0
            return anchor * spec.anchor_factor
    if profile_id in spec.profiles:
        return spec.profiles[profile_id]
    if spec.value_range is not None and profile_id:
        (u,) = stable_unit_floats("profile-baseline", profile_id, count=1)
        lo, hi = spec.value_range
        return lo + u * (hi - lo)
    return spec.default


def _ordinal_options(spec: Any, meta: Mapping[str, Any]) -> dict[str, float]:
    """label -> numeric value when every option of a ``choice`` stands for a number (``option_<L>`` columns)."""
    if spec.kind != "choice":
        return {}
    out = {}
    for label in spec.labels:
        try:
            out[label] = float(meta[f"option_{label}"])
        except (KeyError, TypeError, ValueError):
            return {}
    return out if all(math.isfinite(v) for v in out.values()) else {}


def format_answer(value: float, spec: SimAnswerSpec) -> str:
    """``### <number> <unit>`` with the spec's rounding."""
    if spec.round_to > 0:
        value = round(value / spec.round_to) * spec.round_to
    number = f"{value:.{spec.decimals}f}" if spec.decimals > 0 else str(round(value))
    return f"### {number} {spec.unit}"


def planted_description(model: str) -> str:
    """The ``planted`` sentence of a ``sim:`` model (its ``description`` if it has none; ``""`` if unreadable)."""
    if not model.startswith("sim:"):
        return ""
    try:
        profile = load_profile(model[len("sim:"):])
    except UserError:
        return ""
    return profile.planted or profile.description


def create_simulated(name_or_path: str) -> SimulatedBackend:
    """``sim:NAME`` -> backend (used by the registry)."""
    return SimulatedBackend(f"sim:{name_or_path}", load_profile(name_or_path))
