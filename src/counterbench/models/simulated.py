"""``sim:NAME`` — a simulated model with known, configurable bias (for tests and demos).

Answers are a pure function of the model name, the request and its seed::

    value = baseline(use case, profile) × profile effect × identifier effect × language effect × noise

* **baseline** — from the YAML's ``use_cases[<use_case>]`` section, else the prompt's study's
  (its ``simulated_answers``, :mod:`counterbench.models.sim_answers`), else ``answer_types[<answer_type>]``,
  then ``default``: ``anchor`` when the request metadata has one of its design columns (value ×
  ``factor``, numbers below ``lpa_below`` read as lakh), else an explicit per-profile value from
  ``profiles``, else a value drawn deterministically from ``range`` by the profile id, else ``default``;
* **effects** — multipliers: ``profile_effects[profile_id]``, ``identifier_effects[identifier]``
  (overridden per use case by ``identifier_effects_by_use_case``), ``language_effects[language]``;
* **noise** — ``exp(noise_sd × z)`` with ``z`` standard normal, seeded from a SHA-256 of ``name | prompt_id |
  seed`` (never Python's ``hash()``; a simulation file's name counts as ``sim:FILENAME``, without its directory),
  so the same request always gets the same answer, in any process and in any checkout;
* **repeats** (``--repeats``) — the noise above is the prompt's own; repeat k ≥ 1 takes its refusal and label
  draws from its own stream, and ``repeat_noise_sd`` multiplies every repeat by ``exp(repeat_noise_sd × z_k)``,
  ``z_k`` seeded by the repeat's index: within-prompt noise apart from ``noise_sd`` and the slots' baselines;
* ``refusal_rate`` / ``malformed_rate`` — the same seeded stream decides whether to answer with ``refusal_text``
  or ``malformed_text`` (free text without a number; the file's, else the study's, else generic) instead;
* ``latency_ms`` — optional ``asyncio.sleep`` per request;
* ``extends: PRESET`` — start from a preset's keys; top-level keys given here replace the preset's;
* ``identifier_effects_studies`` — when given, ``identifier_effects`` apply only to prompts of these
  studies (so a preset written for one study leaves another study's identically named ones alone);
* **effects** (any study) — a list of rules ``{match: {COLUMN: VALUE, ...}, unless: {...}, multiply: M, add: A}``:
  a prompt whose metadata (any prompt-table column: ``identifier``, ``group``, a crossed attribute such as
  ``gender``, ``use_case``, ``language``, ``level_index`` = the identifier's position in its axis) matches every
  ``match`` entry (a value or a list of values) and not every ``unless`` entry gets its expected value
  multiplied by ``M`` and then ``A`` added;
* ``planted`` — one sentence saying what the effects plant (the report's banner shows it).

Answers follow the request's outcome kind (:mod:`counterbench.outcomes`, from ``answer_type``):
amounts ``### 1234000 INR`` / ``### 12.5 %`` as above; for ``rate``, ``score`` and ``text`` the
expected value (a rate in %, a score, a word count) gets the same multiplicative noise and is
formatted by the kind (scores are rounded stochastically, so their mean stays the expected value);
for ``label`` and ``choice`` the expected value is the probability of the positive label / first
option and one seeded uniform draw picks the answer (a use case's ``label_from: COLUMN`` makes it the
probability of the label that metadata column names, e.g. the true one, instead of the first).
Their baselines: ``use_cases[USE_CASE].default`` (the file's or the study's), else ``outcomes[KIND].default``,
else the kind's own (rate 8, score 60% up the scale, label 0.5, choice 1/N, text 150 words or, scored by
``mgl``, grade 11). A ``choice`` whose options stand for numbers (the prompt's ``option_<LABEL>`` columns, e.g.
explanation levels 1–5) is *ordinal*: the expected value is that number (baseline the use case's ``default``,
else the middle of the options' values), it gets the multiplicative noise and the answer is the option nearest
to it, rounded. A ``text`` outcome is written to its first metric (``length``: words; ``mgl``: prose at that
grade level).

With ``--logprobs N``, a label or choice answer comes with tokens and log-probabilities as a real
backend's would: at the answer, the ``N`` most likely of the allowed answers' planted probabilities
(:meth:`SimulatedBackend.planted_probabilities`), optionally split across spellings and sharing the
probability with a token that starts no answer (the file's ``logprobs: {variants, mass}``; see
:mod:`counterbench.models.sim_logprobs`), so p(yes) can be shown and tested offline.

It reads only ``request.metadata`` and ``request.answer_type``: nothing study-specific lives in this code.
"""

from __future__ import annotations

import asyncio
import hashlib
import math
from collections.abc import Mapping
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from counterbench.models.base import ChatRequest, ChatResult, wants_logprobs
from counterbench.models.sim_answers import StudyAnswers, amount_texts, study_answers
from counterbench.models.sim_effects import _kind_default
from counterbench.models.sim_profile import (
    SimAnswerSpec,
    SimProfile,
    load_profile,
    planted_description,
    preset_names,
    profile_from_dict,
    with_effects,
)

if TYPE_CHECKING:
    import pandas as pd

__all__ = [
    "SimAnswerSpec",
    "SimProfile",
    "SimulatedBackend",
    "create_simulated",
    "format_answer",
    "load_profile",
    "planted_description",
    "planted_reach",
    "preset_names",
    "profile_from_dict",
    "stable_unit_floats",
    "standard_normal",
]


def standard_normal(u1: float, u2: float) -> float:
    """A standard normal draw from two uniform ones in [0, 1) (Box-Muller)."""
    return math.sqrt(-2.0 * math.log(1.0 - u1)) * math.cos(2.0 * math.pi * u2)


def stable_unit_floats(*parts: object, count: int = 3) -> list[float]:
    """``count`` floats in [0, 1) from a SHA-256 of ``parts`` (identical in every process)."""
    digest = hashlib.sha256("|".join(str(p) for p in parts).encode("utf-8")).digest()
    return [int.from_bytes(digest[8 * i : 8 * i + 8], "big") / 2.0**64 for i in range(count)]


class SimulatedBackend:
    """A deterministic stand-in for a model. Its outputs are always labelled simulated."""

    simulated = True

    def __init__(self, name: str, profile: SimProfile, *, seed_name: str | None = None) -> None:
        self.name = name
        #: study name (``""``: none) -> its simulated answers, kept here so that a copy sent to a worker has them
        self._answers: dict[str, StudyAnswers | None] = {}
        self._own_texts = (profile.refusal_text, profile.malformed_text)  # "": the study's, else generic
        refusal, malformed = self._texts({})  # the profile shows those of a prompt without a study
        self.profile = replace(profile, refusal_text=refusal, malformed_text=malformed)
        #: what the noise is seeded from in place of ``name`` (a simulation file's: its file name)
        self.seed_name = seed_name or name

    def __repr__(self) -> str:
        return f"SimulatedBackend(name={self.name!r})"

    def check_prompts(self, table: pd.DataFrame) -> None:
        """Refuse, before the first request, a simulation file whose effects name a column, identifier or
        group no prompt of ``table`` has (:func:`counterbench.models.sim_check.check_prompts`); find the
        simulated answers of the prompts' studies."""
        from counterbench.models.sim_check import check_prompts

        check_prompts(self.profile, table, self.name)
        for study in table["study"].unique() if "study" in table.columns else ():
            self._study_answers({"study": study})

    def _study_answers(self, meta: Mapping[str, Any]) -> StudyAnswers | None:
        """The prompt's study's simulated answers (:func:`counterbench.models.sim_answers.study_answers`)."""
        study = meta.get("study")
        key = study if isinstance(study, str) else ""
        if key not in self._answers:
            self._answers[key] = study_answers(key)
        return self._answers[key]

    def _use_case_spec(self, meta: Mapping[str, Any]) -> SimAnswerSpec | None:
        """The prompt's use case's answer spec: the file's own ``use_cases`` entry, else its study's;
        ``None`` when neither has one."""
        use_case = str(meta.get("use_case") or "")
        if use_case in self.profile.use_cases:
            return self.profile.use_cases[use_case]
        answers = self._study_answers(meta) if use_case else None
        return answers.use_cases.get(use_case) if answers is not None else None

    def _texts(self, meta: Mapping[str, Any]) -> tuple[str, str]:
        """An amount answer's refusal and malformed texts: the file's own, else the prompt's study's, else
        generic ones."""
        own = self._own_texts
        return own if all(own) else amount_texts(own, self._study_answers(meta))

    def _spec_for(self, request: ChatRequest) -> SimAnswerSpec:
        spec = self._use_case_spec(request.metadata)
        if spec is not None:
            return spec
        if request.answer_type and request.answer_type in self.profile.answer_types:
            return self.profile.answer_types[request.answer_type]
        return self.profile.default

    def expected_value(self, request: ChatRequest) -> float:
        """The noise-free value for ``request`` (baseline × all effects) — the oracle for tests."""
        meta = request.metadata
        return self._with_effects(_baseline(self._spec_for(request), str(meta.get("profile_id") or ""), meta), meta)

    def _with_effects(self, value: float, meta: Mapping[str, Any]) -> float:
        """``value`` times the profile, identifier and language effects, then the ``effects`` rules."""
        return with_effects(self.profile, value, meta)

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
        profile_id = str(meta.get("profile_id") or "")
        own = self._use_case_spec(meta)
        if own is not None:
            value = _baseline(own, profile_id, meta)
        elif spec.kind in self.profile.outcomes:
            value = self.profile.outcomes[spec.kind]
        else:
            value = _kind_default(spec)
        return self._with_effects(value, meta)

    def _repeat_draws(self, request: ChatRequest, u_outcome: float, u_draw: float) -> tuple[float, float, float]:
        """A repeat's (refusal draw, label draw) — repeat 0's are the prompt's — and its within-prompt noise factor."""
        k = request.config.repeat
        if k:
            u_outcome, u_draw = stable_unit_floats(self.seed_name, request.prompt_id, request.config.seed, "repeat",
                                                   k, count=2)
        sd = self.profile.repeat_noise_sd
        if sd <= 0:
            return u_outcome, u_draw, 1.0
        z1, z2 = stable_unit_floats(self.seed_name, request.prompt_id, request.config.seed, "repeat-noise", k,
                                    count=2)
        return u_outcome, u_draw, math.exp(sd * standard_normal(z1, z2))

    def _answer_outcome(self, request: ChatRequest) -> str:
        from counterbench.outcomes import get_kind, member, spec_from_answer_type

        p = self.profile
        spec = spec_from_answer_type(str(request.answer_type))
        u_outcome, u1, u2, u3 = stable_unit_floats(self.seed_name, request.prompt_id, request.config.seed, count=4)
        u_outcome, u3, within = self._repeat_draws(request, u_outcome, u3)
        if u_outcome < p.refusal_rate:
            return p.generic_refusal_text
        if u_outcome < p.refusal_rate + p.malformed_rate:
            return p.generic_malformed_text
        ordinal = _ordinal_options(spec, request.metadata)
        if ordinal:
            return self._answer_ordinal(request, ordinal, u1, u2)
        latent = self.expected_outcome(request)
        kind = get_kind(spec.kind)
        if member(kind, "sim_target_first"):
            spec = self._target_first(spec, request)
        if member(kind, "sim_noise"):  # a plug-in kind's value is noisy unless it says otherwise
            z = standard_normal(u1, u2)
            latent *= math.exp(p.noise_sd * z) * within
        return kind.simulate(spec, latent, u3)

    def planted_probabilities(self, request: ChatRequest) -> dict[str, float] | None:
        """The probability of each allowed answer of a label or choice request — what its answer is drawn
        from, before refusals and malformed answers; ``None`` for other answers."""
        from counterbench.models.sim_logprobs import ordinal_probabilities
        from counterbench.outcomes import defines, get_kind, is_generic, member, spec_from_answer_type

        if not is_generic(request.answer_type):
            return None
        spec = spec_from_answer_type(str(request.answer_type))
        kind = get_kind(spec.kind)
        if not defines(kind, "sim_probabilities"):
            return None
        ordinal = _ordinal_options(spec, request.metadata)
        if ordinal:
            return ordinal_probabilities(ordinal, self._ordinal_latent(request, ordinal), self.profile.noise_sd)
        if member(kind, "sim_target_first"):
            spec = self._target_first(spec, request)
        probabilities = member(kind, "sim_probabilities")(spec, self.expected_outcome(request))
        return None if probabilities is None else dict(probabilities)

    def _target_first(self, spec: Any, request: ChatRequest) -> Any:
        """The label named by the use case's ``label_from`` column first (the rest in declared order).

        So a prompt's answer type can list its labels in a fixed order (the true one is never first by
        construction, which would leak it to a model reading the schema) while the simulated model still
        knows which label its expected value is the probability of.
        """
        own = self._use_case_spec(request.metadata)
        column = own.label_from if own is not None else None
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
        latent = self._ordinal_latent(request, options)
        z = standard_normal(u1, u2)
        target = round(latent * math.exp(self.profile.noise_sd * z))
        label = min(options, key=lambda lbl: (abs(options[lbl] - target), options[lbl]))
        return f"### {label}"

    def _ordinal_latent(self, request: ChatRequest, options: dict[str, float]) -> float:
        """An ordinal choice's expected value: the use case's ``default`` (else the middle of the options'
        values) after the effects."""
        own = self._use_case_spec(request.metadata)
        values = sorted(options.values())
        base = own.default if own is not None else (values[0] + values[-1]) / 2.0
        return self._apply_effects(base, request.metadata)

    def answer(self, request: ChatRequest) -> str:
        """The text this model answers (synchronous and pure)."""
        from counterbench.outcomes import is_generic

        if is_generic(request.answer_type):
            return self._answer_outcome(request)
        p = self.profile
        u_outcome, u1, u2 = stable_unit_floats(self.seed_name, request.prompt_id, request.config.seed)
        u_outcome, _, within = self._repeat_draws(request, u_outcome, 0.0)
        if u_outcome < p.refusal_rate + p.malformed_rate:
            refusal, malformed = self._texts(request.metadata)
            return refusal if u_outcome < p.refusal_rate else malformed
        z = standard_normal(u1, u2)
        value = self.expected_value(request) * math.exp(p.noise_sd * z) * within
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
            token_logprobs=self.answer_tokens(request, text),
        )

    def answer_tokens(self, request: ChatRequest, text: str) -> tuple[Any, ...] | None:
        """``text`` as tokens with log-probabilities when ``request`` asks for them (``--logprobs``) and is a
        label or choice prompt (module notes); ``None`` otherwise, and for a refusal or malformed answer."""
        if not wants_logprobs(request):
            return None
        from counterbench.models.sim_logprobs import answer_tokens

        probabilities = self.planted_probabilities(request)
        if not probabilities:
            return None
        return answer_tokens(text, probabilities, request.config.logprobs, variants=self.profile.logprob_variants,
                             mass=self.profile.logprob_mass)

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
    """label -> numeric value when every option stands for a number (the kind's ``option_values``)."""
    from counterbench.outcomes import kind_member

    return dict(kind_member(spec, "option_values")(spec, meta))


def format_answer(value: float, spec: SimAnswerSpec) -> str:
    """``### <number> <unit>`` with the spec's rounding."""
    if spec.round_to > 0:
        value = round(value / spec.round_to) * spec.round_to
    number = f"{value:.{spec.decimals}f}" if spec.decimals > 0 else str(round(value))
    return f"### {number} {spec.unit}"


def create_simulated(name_or_path: str) -> SimulatedBackend:
    """``sim:NAME`` -> backend (used by the registry). A simulation file's answers are seeded from its file
    name (or its ``seed:``), not the directory it sits in, so the same file answers the same wherever the project is
    checked out."""
    profile = load_profile(name_or_path)
    seed_name = f"sim:{Path(profile.checked_file).name}" if profile.checked_file else None
    if profile.seed:  # the file's own seed: the same draw under any file name
        seed_name = f"sim-seed:{profile.seed}"
    return SimulatedBackend(f"sim:{name_or_path}", profile, seed_name=seed_name)


def planted_reach(results: pd.DataFrame) -> dict[str, bool]:
    """Whether each ``sim:`` model's effects reach its prompts (:func:`counterbench.models.sim_check.planted_reach`)."""
    from counterbench.models.sim_check import planted_reach as reach

    return reach(results)
