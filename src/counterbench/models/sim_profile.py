"""A ``sim:NAME`` model's YAML (a preset shipped with counterbench, or a file): reading and checking it.

The file format (every key optional; what the values do is :mod:`counterbench.models.simulated`'s)::

    extends: PRESET              # start from a preset's keys; top-level keys given here replace the preset's
    description: ...             # what the model is
    planted: ...                 # one sentence saying what its effects plant (the report's banner shows it)
    seed: TEXT                   # the noise stream's seed (default: the file's name); another seed, another draw
    noise_sd: 0.05               # refusal_rate, malformed_rate (0..1, summing to at most 1), latency_ms
    repeat_noise_sd: 0.1         # within-prompt noise: each repeat's own draw (--repeats)
    refusal_text / malformed_text / generic_refusal_text / generic_malformed_text: ...
    default: {unit: INR, default: 1000000, range: [lo, hi], profiles: {PROFILE: value},
              anchor: {columns: [COLUMN, ...], factor: 1.0, lpa_below: 1000}, round_to: 1, decimals: 0,
              label_from: COLUMN}
    use_cases: {USE_CASE: <as default>}        answer_types: {ANSWER_TYPE: <as default>}
                                 # a study's own use cases: its simulated_answers (models/sim_answers.py)
    outcomes: {KIND: {default: value}}
    identifier_effects: {IDENTIFIER: multiplier}
    identifier_effects_by_use_case: {USE_CASE: {IDENTIFIER: multiplier}}
    identifier_effects_studies: [STUDY, ...]
    profile_effects: {PROFILE: multiplier}      language_effects: {LANGUAGE: multiplier}
    effects: [{match: {COLUMN: VALUE or [VALUES]}, unless: {...}, multiply: M, add: A}, ...]
    logprobs: {variants: 0.4, mass: 0.9}   # with --logprobs: spellings' share, the allowed answers' mass
                                           # (:mod:`counterbench.models.sim_logprobs`)

A mistake in a file is a :class:`~counterbench.errors.UserError` naming the file and the key.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from importlib import resources
from importlib.resources.abc import Traversable
from pathlib import Path
from typing import Any

from counterbench.errors import UserError, nearest
from counterbench.models.sim_effects import Effect, _effect, _mapping, number, probability
from counterbench.registry import Registry
from counterbench.yaml_files import read_text_file, yaml_text

PRESET_PACKAGE = "counterbench.models"
PRESET_DIR = "sim_presets"

#: ``sim:NAME`` presets: name -> the preset's YAML file. The core ships ``fair``; a study adds its own
#: through the entry-point group ``counterbench.sim_presets`` (``NAME = "package"``: the package's
#: ``sim_presets/NAME.yaml``).
SIM_PRESETS: Registry[Traversable] = Registry("simulated model", "counterbench.sim_presets",
                                              hint="or give a path to a YAML file")
SIM_PRESETS.adapt = lambda name, module: resources.files(module.__name__).joinpath(PRESET_DIR, f"{name}.yaml")
for _own in sorted(resources.files(PRESET_PACKAGE).joinpath(PRESET_DIR).iterdir(), key=lambda p: p.name):
    if _own.name.endswith(".yaml"):
        SIM_PRESETS.register(_own.name[: -len(".yaml")], _own)


#: the keys a simulation file may have, at the top level and in an answer spec (``default``, a use case's,
#: an answer type's) and its ``anchor``; an outcome kind's entry has ``default`` only
TOP_KEYS = ("description", "planted", "seed", "noise_sd", "repeat_noise_sd", "refusal_rate", "malformed_rate",
            "latency_ms", "refusal_text", "malformed_text", "generic_refusal_text", "generic_malformed_text", "default",
            "use_cases", "answer_types", "outcomes", "identifier_effects", "identifier_effects_by_use_case",
            "identifier_effects_studies", "profile_effects", "language_effects", "effects", "logprobs")
SPEC_KEYS = ("unit", "default", "range", "profiles", "anchor", "round_to", "decimals", "label_from")
ANCHOR_KEYS = ("columns", "factor", "lpa_below")
OUTCOME_KEYS = ("default",)
LOGPROBS_KEYS = ("variants", "mass")
#: the keys of a simulation file checked against the prompts of a run (:mod:`counterbench.models.sim_check`)
CHECKED_KEYS = ("effects", "identifier_effects", "use_cases", "identifier_effects_by_use_case")


def _known_keys(value: Any, valid: tuple[str, ...], where: str) -> None:
    """An unknown key of the mapping ``value`` (at ``where``) as one line with the nearest valid key."""
    if not isinstance(value, dict):
        return  # the value's own check says what it must be
    for key in value:
        if str(key) not in valid:
            hint = nearest(str(key), valid) or f" (valid here: {', '.join(valid)})"
            raise ValueError(f"{where + ': ' if where else ''}unknown key '{key}'{hint}")


def _check_keys(data: dict[str, Any]) -> None:
    _known_keys(data, TOP_KEYS, "")
    specs = [("default", data.get("default"))]
    for group in ("use_cases", "answer_types"):
        if isinstance(data.get(group), dict):
            specs += [(f"{group}.{k}", v) for k, v in data[group].items()]
    for where, spec in specs:
        _known_keys(spec, SPEC_KEYS, where)
        if isinstance(spec, dict):
            _known_keys(spec.get("anchor"), ANCHOR_KEYS, f"{where}.anchor")
    if isinstance(data.get("outcomes"), dict):
        for kind, spec in data["outcomes"].items():
            _known_keys(spec, OUTCOME_KEYS, f"outcomes.{kind}")
    _known_keys(data.get("logprobs"), LOGPROBS_KEYS, "logprobs")


def _preset_file(name: str) -> Traversable | None:
    return SIM_PRESETS.get(name) if name in SIM_PRESETS else None


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
    #: within-prompt noise: a multiplicative log-normal draw per repeat (``--repeats``)
    repeat_noise_sd: float = 0.0
    refusal_rate: float = 0.0
    malformed_rate: float = 0.0
    latency_ms: float = 0.0
    #: an amount answer's refusal and malformed texts; ``""``: the prompt's study's, else generic ones
    #: (:mod:`counterbench.models.sim_answers`)
    refusal_text: str = ""
    malformed_text: str = ""
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
    #: what the noise is seeded from in place of the file's name (``""``: the name)
    seed: str = ""
    generic_refusal_text: str = "I cannot make this judgement based on a person's identity."
    generic_malformed_text: str = "That depends on many factors that the question does not state."
    #: the file that gave ``effects`` / ``identifier_effects`` itself (not through ``extends``): those are
    #: checked against the prompts of a run (:mod:`counterbench.models.sim_check`); ``""`` for presets
    checked_file: str = ""
    checked_keys: tuple[str, ...] = ()
    #: with --logprobs: the share of each answer's probability on other spellings, and the share of the
    #: probability the allowed answers hold (:mod:`counterbench.models.sim_logprobs`)
    logprob_variants: float = 0.0
    logprob_mass: float = 1.0


def preset_names() -> list[str]:
    """Names usable as ``sim:NAME`` without a path."""
    return sorted(SIM_PRESETS.names())


def load_profile(name_or_path: str) -> SimProfile:
    """Load a preset by name (``fair``, ``biased``) or a YAML file by path; errors are :class:`UserError`."""
    if name_or_path.endswith((".yaml", ".yml")) or "/" in name_or_path or "\\" in name_or_path:
        path = Path(name_or_path).expanduser()
        if not path.is_file():
            raise UserError(f"sim:{name_or_path}: no such simulation file {str(path)!r}")
        where = str(path)
        text = read_text_file(path, where)
        raw = _load_raw(text, where)
        own = _own_keys(text, where)
        profile = profile_from_dict(raw, where=where)
        return replace(profile, checked_file=where,
                       checked_keys=tuple(k for k in CHECKED_KEYS if k in own))
    else:
        resource = _preset_file(name_or_path)
        if resource is None or not resource.is_file():
            raise UserError(
                f"sim:{name_or_path}: unknown simulated model; presets: {', '.join(preset_names())} "
                "(or give a path to a YAML file)"
            )
        text = resource.read_text(encoding="utf-8")
        where = f"preset {name_or_path!r}"
    return profile_from_dict(_load_raw(text, where), where=where)


def _own_keys(text: str, where: str) -> set[str]:
    data = yaml_text(text, where)  # already read once by _load_raw: valid YAML
    return {str(k) for k in data} if isinstance(data, dict) else set()


def _load_raw(text: str, where: str, depth: int = 0) -> dict[str, Any]:
    """Parse YAML; ``extends: PRESET`` starts from that preset's keys (top-level keys replace)."""
    data = yaml_text(text, where) or {}
    if not isinstance(data, dict):
        raise UserError(f"{where}: expected a mapping at the top level")
    base_name = data.pop("extends", None)
    if base_name is None:
        return data
    base = _preset_file(str(base_name))
    if depth > 3 or base is None or not base.is_file():
        raise UserError(f"{where}: 'extends: {base_name}' names no preset ({', '.join(preset_names())})")
    merged = _load_raw(base.read_text(encoding="utf-8"), f"preset {base_name!r}", depth + 1)
    merged.update(data)
    return merged


def profile_from_dict(data: Any, *, where: str = "simulation config") -> SimProfile:
    if not isinstance(data, dict):
        raise UserError(f"{where}: expected a mapping at the top level")
    try:
        _check_keys(data)
        rates = {k: number(data.get(k, 0.0), k) for k in ("noise_sd", "repeat_noise_sd", "refusal_rate",
                                                           "malformed_rate", "latency_ms")}
        for key in ("refusal_rate", "malformed_rate"):
            if not 0.0 <= rates[key] <= 1.0:
                raise ValueError(f"{key} must be between 0 and 1")
        if rates["refusal_rate"] + rates["malformed_rate"] > 1.0:
            raise ValueError("refusal_rate + malformed_rate must not exceed 1")
        if rates["noise_sd"] < 0 or rates["repeat_noise_sd"] < 0 or rates["latency_ms"] < 0:
            raise ValueError("noise_sd, repeat_noise_sd and latency_ms must not be negative")
        extra: dict[str, Any] = _logprobs_keys(data.get("logprobs"))
        if "seed" in data:
            if isinstance(data["seed"], bool) or not isinstance(data["seed"], (str, int)) or str(data["seed"]) == "":
                raise ValueError("seed must be a text or a whole number")
            extra["seed"] = str(data["seed"])
        for key in ("refusal_text", "malformed_text", "description", "planted", "generic_refusal_text",
                    "generic_malformed_text"):
            if key in data:
                extra[key] = str(data[key])
        return SimProfile(
            noise_sd=rates["noise_sd"],
            repeat_noise_sd=rates["repeat_noise_sd"],
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
            outcomes={str(k): _outcome_default(k, v) for k, v in (data.get("outcomes") or {}).items()},
            **extra,
        )
    except (TypeError, ValueError, AttributeError) as exc:
        raise UserError(f"{where}: {exc}") from None


def _logprobs_keys(value: Any) -> dict[str, float]:
    """The ``logprobs`` mapping's profile fields (``variants`` in [0, 1), ``mass`` in (0, 1])."""
    if value is None:
        return {}
    raw = _mapping(value, "logprobs")
    variants = number(raw.get("variants", 0.0), "logprobs.variants")
    mass = number(raw.get("mass", 1.0), "logprobs.mass")
    if not 0.0 <= variants < 1.0:
        raise ValueError(f"logprobs.variants must be at least 0 and below 1, got {variants:g}")
    if not 0.0 < mass <= 1.0:
        raise ValueError(f"logprobs.mass must be above 0 and at most 1, got {mass:g}")
    return {"logprob_variants": variants, "logprob_mass": mass}


def _outcome_default(kind: Any, value: Any) -> float:
    """``outcomes.KIND.default``: a finite number; a probability in [0, 1] for a kind whose simulated answer
    draws from one (its ``sim_probability``, e.g. ``label`` and ``choice``)."""
    from counterbench.outcomes import KINDS, member

    key = f"outcomes.{kind}.default"
    raw = _mapping(value, f"outcomes.{kind}").get("default", 0.0)
    if str(kind) in KINDS and member(KINDS.get(str(kind)), "sim_probability"):
        return probability(raw, key)
    return number(raw, key)


def _floats(value: Any, key: str) -> dict[str, float]:
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise ValueError(f"{key} must be a mapping of name -> number")
    out = {str(k): number(v, f"{key}.{k}") for k, v in value.items()}
    if any(v <= 0 for v in out.values()):
        raise ValueError(f"{key}: multipliers must be positive")
    return out


def _spec(value: Any, key: str) -> SimAnswerSpec:
    if not isinstance(value, dict):
        raise ValueError(f"{key} must be a mapping")
    anchor = _mapping(value.get("anchor") or {}, f"{key}.anchor")
    columns = anchor.get("columns", [])
    rng = value.get("range")
    if rng and (not isinstance(rng, list) or len(rng) != 2):
        raise ValueError(f"{key}.range must be two numbers [low, high]")
    unit = str(value.get("unit", "INR"))
    decimals = value.get("decimals", 0)
    if isinstance(decimals, bool) or not isinstance(decimals, int) or not 0 <= decimals <= 12:
        raise ValueError(f"{key}.decimals must be a whole number from 0 to 12, got {decimals!r}")
    return SimAnswerSpec(
        unit=unit,
        default=number(value.get("default", 10.0 if unit == "%" else 1_000_000.0), f"{key}.default"),
        profiles=_floats(value.get("profiles"), f"{key}.profiles"),
        value_range=(number(rng[0], f"{key}.range"), number(rng[1], f"{key}.range")) if rng else None,
        anchor_columns=tuple(str(c) for c in ([columns] if isinstance(columns, str) else columns)),
        anchor_factor=number(anchor.get("factor", 1.0), f"{key}.anchor.factor"),
        anchor_lpa_below=number(anchor.get("lpa_below", 1000.0), f"{key}.anchor.lpa_below"),
        round_to=number(value.get("round_to", 1.0), f"{key}.round_to"),
        decimals=decimals,
        label_from=str(value["label_from"]) if value.get("label_from") else None,
    )


def planted_description(model: str) -> str:
    """The ``planted`` sentence of a ``sim:`` model (its ``description`` if it has none; ``""`` if unreadable)."""
    if not model.startswith("sim:"):
        return ""
    try:
        profile = load_profile(model[len("sim:"):])
    except UserError:
        return ""
    return profile.planted or profile.description


def with_effects(profile: SimProfile, value: float, meta: Mapping[str, Any]) -> float:
    """``value`` times ``profile``'s profile, identifier and language effects for the prompt ``meta``, then its
    ``effects`` rules (identifier effects only for the studies ``identifier_effects_studies`` names, if any)."""
    use_case = str(meta.get("use_case") or "")
    identifier = str(meta.get("identifier") or "")
    value *= profile.profile_effects.get(str(meta.get("profile_id") or ""), 1.0)
    studies = profile.identifier_effects_studies
    study = meta.get("study")
    if not studies or not study or str(study) in studies:
        per_use_case = profile.identifier_effects_by_use_case.get(use_case, {})
        value *= per_use_case.get(identifier, profile.identifier_effects.get(identifier, 1.0))
    value *= profile.language_effects.get(str(meta.get("language") or ""), 1.0)
    for effect in profile.effects:
        if effect.applies(meta):
            value = value * effect.multiply + effect.add
    return value
