"""What every simulated model answers for one study's use cases: the study's ``simulated_answers`` hook.

A simulation preset (``sim:fair``) holds only what fits any study: noise, refusal and malformed rates,
generic texts, each answer type's and outcome kind's default. A study says what a simulated model
answers for *its* use cases through its optional hook ``simulated_answers``
(:class:`counterbench.studies.hooks.StudyHooks`): a mapping, or the path of a YAML file, with the keys

    use_cases: {USE_CASE: {unit, default, range, profiles, anchor, round_to, decimals, label_from}}
    refusal_text: ...       # what its amount answers say when refusing (default: a generic sentence)
    malformed_text: ...     # and when answering without a number

(an answer spec as in a simulation file, ``docs/studies.md``). A prompt's answer spec is then the
simulation file's own ``use_cases`` entry, else its study's (the prompt's ``study`` column; a prompt
without one is the default study's), else the file's ``answer_types`` entry, else its ``default``.

The study is found by name the way the study registry finds it — a study registered in code
(:func:`counterbench.studies.registry.register_study` passes it here), one of the entry-point group
``counterbench.studies``, or a study object the registry was handed (``counterbench.prompts(study)``,
:func:`offer`) — but without importing the studies layer, which sits above this one; so the hook is read
here as the attribute :class:`~counterbench.studies.hooks.StudyHooks` declares. A study declared in a
study file has no hooks: a simulation file's own ``use_cases`` serve it.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from importlib.resources.abc import Traversable
from pathlib import Path
from typing import Any

from counterbench.errors import UserError
from counterbench.registry import Registry
from counterbench.yaml_files import yaml_text

__all__ = ["GENERIC_MALFORMED", "GENERIC_REFUSAL", "HOOK", "StudyAnswers", "amount_texts", "forget", "offer",
           "register", "study_answers", "unregister"]

#: the study hook's name (declared with its type in :class:`counterbench.studies.hooks.StudyHooks`)
HOOK = "simulated_answers"
#: an amount answer's refusal and malformed texts when neither the simulation file nor the study gives one
GENERIC_REFUSAL = "I cannot give this figure based on a person's identity."
GENERIC_MALFORMED = "It depends on many factors that the question does not state."
ANSWER_KEYS = ("use_cases", "refusal_text", "malformed_text")

#: study name -> its factory (or study object, or study file path), as the study registry has it
_STUDIES: Registry[Any] = Registry("study", "counterbench.studies")
#: the ``counterbench.defaults`` entry ``study``: the study of a prompt without a ``study`` column
_DEFAULTS: Registry[Any] = Registry("default", "counterbench.defaults")
_CACHE: dict[str, StudyAnswers | None] = {}


@dataclass(frozen=True)
class StudyAnswers:
    """A study's simulated answers: an answer spec per use case and, optionally, its own texts."""

    use_cases: Mapping[str, Any] = field(default_factory=dict)  # use case -> SimAnswerSpec
    refusal_text: str = ""
    malformed_text: str = ""


def amount_texts(own: tuple[str, str], answers: StudyAnswers | None) -> tuple[str, str]:
    """An amount answer's refusal and malformed texts: ``own`` (a simulation file's), else the study's, else
    generic ones."""
    refusal, malformed = own
    return (refusal or (answers.refusal_text if answers else "") or GENERIC_REFUSAL,
            malformed or (answers.malformed_text if answers else "") or GENERIC_MALFORMED)


def register(name: str, study: Any) -> None:
    """``name``'s study as registered in code (a factory, a study object or a study file's path)."""
    _STUDIES.register(name, study, source="registered in code", replace=True)
    forget(name)


def offer(study: Any) -> None:
    """A study object in use (given as an object, or built from a file) whose name is not registered: its
    answers serve the prompts of that name in this process."""
    name = getattr(study, "name", None)
    if isinstance(name, str) and name and getattr(study, HOOK, None) is not None and name not in _STUDIES:
        register(name, study)


def unregister(name: str) -> None:
    """Forget the study ``name`` registered in code (its answers too)."""
    _STUDIES.unregister(name)
    forget(name)


def forget(name: str | None = None) -> None:
    """Drop the cached answers of ``name`` (of every study when ``None``)."""
    if name is None:
        _CACHE.clear()
    else:
        _CACHE.pop(name, None)


def _default_study() -> str:
    return str(_DEFAULTS.get("study")) if "study" in _DEFAULTS else ""


def study_answers(study: object) -> StudyAnswers | None:
    """The simulated answers of the study named ``study`` (``None``/``""``: the default study); ``None``
    when that study is not registered by name or has no ``simulated_answers`` hook."""
    name = study if isinstance(study, str) and study else _default_study()  # None, "", NaN: no study
    if name not in _CACHE:
        _CACHE[name] = _load(name) if name and name in _STUDIES else None
    return _CACHE[name]


def _load(name: str) -> StudyAnswers | None:
    made = _STUDIES.build(name, f"study {name} could not be built for its simulated answers")
    given = getattr(made, HOOK, None)  # a study file's path (str/Path) has no hooks
    if given is None or isinstance(made, str | Path):
        return None
    return answers_from(given, f"study {name}: {HOOK}")


def answers_from(given: Any, where: str) -> StudyAnswers:
    """A ``simulated_answers`` hook's value (a mapping, or a YAML file's path) as :class:`StudyAnswers`."""
    from counterbench.models.sim_profile import ANCHOR_KEYS, SPEC_KEYS, _known_keys, _spec

    if isinstance(given, str | Path | Traversable):
        where = f"{where} ({getattr(given, 'name', given)})"
        data = yaml_text(Path(given).read_text(encoding="utf-8") if isinstance(given, str | Path)
                         else given.read_text(encoding="utf-8"), where) or {}
    else:
        data = given
    try:
        if not isinstance(data, Mapping):
            raise ValueError("expected a mapping")
        _known_keys(dict(data), ANSWER_KEYS, "")
        use_cases = data.get("use_cases") or {}
        if not isinstance(use_cases, Mapping):
            raise ValueError("use_cases must be a mapping of use case -> answer spec")
        for key, spec in use_cases.items():
            _known_keys(spec, SPEC_KEYS, f"use_cases.{key}")
            if isinstance(spec, Mapping):
                _known_keys(spec.get("anchor"), ANCHOR_KEYS, f"use_cases.{key}.anchor")
        return StudyAnswers(
            use_cases={str(k): _spec(v, f"use_cases.{k}") for k, v in use_cases.items()},
            refusal_text=str(data.get("refusal_text") or ""),
            malformed_text=str(data.get("malformed_text") or ""),
        )
    except (TypeError, ValueError, AttributeError) as exc:
        raise UserError(f"{where}: {exc}") from None
