"""A seeded generator of valid study files, and the reply rule of a server that plants a known effect.

``generate(seed)`` writes (as a mapping; :meth:`GeneratedStudy.write` saves it) one study file that a
user could have declared, drawn across what the format accepts (``docs/studies.md``):

- the design: one attribute per prompt (one or two axes), names grouped into groups, or crossed
  attributes (every combination, or a seeded ``sample`` of them);
- one to three languages, one of them maybe in a non-Latin script (Devanagari);
- one to three use cases of mixed outcome kinds (``amount`` in each answer type, ``rate``, ``score``,
  ``label`` with two or three labels, ``choice`` with a measured favourable option or an identity option,
  stated or rotated, ``text``), some with a ``label`` and ``aliases``;
- one to three question variants, profiles with per-language values, ``canonical_pairs`` or none, a
  ``fairness_suffix`` (and the fairness variant run) or none, a ``preset`` (run) or none;
- from a stream of their own (so the draws above do not move): the axes in an ``include``d file, a derived
  ``phrase_forms`` entry the templates use, a named ``system_prompts`` entry, identifier ``aliases``.

Every use case plants one effect on one level (``GeneratedStudy.planted``): a non-reference identifier
of one axis, the non-reference group of a names axis, or a non-reference level of one crossed attribute,
with a random sign. :func:`reply` answers ``(system, user)`` by the prompt text only (as a model would):
the study and use case by the marker ``[SEED/N]``, the planted level by its phrases; ``planted=False`` is the null twin
(the same answers without the effect). Noise is a hash of the prompt, so a run is the same every time.
"""

from __future__ import annotations

import math
import random
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from tests.matrix.planted import normal, uniform

DESIGNS = ("single", "grouped", "crossed")
KINDS = ("amount", "rate", "score", "label", "choice", "text")
AMOUNT_TYPES = ("inr", "inr_annual", "percent", "number")
#: base answer level of each amount type (percent answers are whole numbers of at most 3 digits)
AMOUNT_BASE = {"inr": 50_000.0, "inr_annual": 1_200_000.0, "percent": 40.0, "number": 7_000.0}
LANGUAGES = {
    "en": ("English", "en"),
    "es": ("Spanish", "es"),
    "hi": ("Hindi", "hi"),  # Devanagari: a non-Latin script
}
_SYLLABLES = ("ka", "lo", "mi", "ra", "ve", "su", "to", "ni", "de", "pa", "zo", "bu", "fe", "gi", "ha", "ju")
_DEVANAGARI = dict(zip("abdefghijklmnoprstuvz", "अबदएफगहइजकलमनओपरसटउवझ", strict=True))
_TASKS = ("a bakery", "a tailoring shop", "a repair workshop", "a tuition centre", "a tea stall", "a print shop",
          "a pharmacy", "a cycle shop", "a flower stall", "a shoe shop", "a snack bar", "a laundry",
          "a book shop", "a dairy", "a garage", "a toy shop")
_TASKS_HI = ("बेकरी", "दर्ज़ी की दुकान", "मरम्मत की दुकान", "ट्यूशन केंद्र", "चाय की दुकान", "छपाई की दुकान",
             "दवा की दुकान", "साइकिल की दुकान", "फूलों की दुकान", "जूतों की दुकान", "नाश्ते की दुकान",
             "धोबी घर", "किताबों की दुकान", "डेयरी", "गैराज", "खिलौनों की दुकान")
_TEMPLATE = {
    "en": "[{tag}] {who} runs {{task}} in {{city}}. {{question}}",
    "es": "[{tag}] {who} tiene {{task}} en {{city}}. {{question}}",
    "hi": "[{tag}] {who} {{city}} में {{task}} चलाते हैं। {{question}}",
}
_QUESTIONS = {
    "en": ("What do you advise?", "Please answer.", "Give your answer."),
    "es": ("¿Qué recomienda?", "Por favor responda.", "Dé su respuesta."),
    "hi": ("आप क्या सलाह देंगे?", "कृपया उत्तर दें।", "अपना उत्तर दें।"),
}
_PHRASE = {"en": "an applicant from {}", "es": "una persona de {}", "hi": "{} से एक आवेदक"}


@dataclass(frozen=True)
class Effect:
    """One use case's outcome, answer law and planted effect (``shift`` in the kind's gap unit)."""

    kind: str
    outcome: dict[str, Any]
    base: float  # amounts: the level; rate %, score points, words; label/choice: probability
    noise: float  # amounts: relative sd (log scale); rate/score/text: sd in the unit; label/choice: unused
    shift: float  # the planted gap: amount relative %, rate pp, score points, label/choice pp, text words

    @property
    def noise_in_unit(self) -> float:
        """σ of one answer in the unit the gap table reports (a fraction for amounts)."""
        if self.kind in ("label", "choice"):
            p = max((self.base, self.base + self.shift / 100), key=lambda q: q * (1 - q))
            return 100 * math.sqrt(p * (1 - p))
        if self.kind == "score":
            return math.sqrt(self.noise**2 + 1 / 12)
        return self.noise


@dataclass(frozen=True)
class Planted:
    """Where the effect is: the facet column (``identifier``, ``group`` or an attribute), its level, and
    the reference it is compared with; ``axis`` for a single-attribute or names design."""

    column: str
    level: str
    reference: str
    axis: str | None
    facet_kind: str  # axis, group or attribute
    #: the texts whose presence in a prompt says it is about the planted level (one per language and name)
    marks: tuple[str, ...]


@dataclass
class GeneratedStudy:
    seed: int
    design: str
    mapping: dict[str, Any]
    effects: dict[str, Effect]  # use case -> its law
    planted: Planted
    languages: tuple[str, ...]
    run_filters: dict[str, Any] = field(default_factory=dict)
    options: dict[str, Any] = field(default_factory=dict)  # what was drawn (for reports of a failure)

    @property
    def name(self) -> str:
        return str(self.mapping["name"])

    def write(self, folder: Path) -> Path:
        """The study file in ``folder`` (and, with ``include``, the sibling file holding its axes)."""
        folder.mkdir(parents=True, exist_ok=True)
        path = folder / f"{self.name}.yaml"
        mapping = dict(self.mapping)
        if self.options.get("include") and "axes" in mapping:
            side = f"{self.name}_axes.yaml"
            (folder / side).write_text(yaml.safe_dump({"axes": mapping.pop("axes")}, sort_keys=False,
                                                      allow_unicode=True), encoding="utf-8")
            mapping = {"include": [side], **mapping}
        path.write_text(yaml.safe_dump(mapping, sort_keys=False, allow_unicode=True), encoding="utf-8")
        return path

    def describe(self) -> str:
        kinds = ", ".join(f"{uc}:{e.kind}" for uc, e in self.effects.items())
        return f"seed {self.seed}: {self.design}, {kinds}, {self.options}"


def _word(rng: random.Random, taken: set[str]) -> str:
    """A fresh capitalised made-up word, no substring of (nor containing) one already taken."""
    while True:
        word = "".join(rng.choice(_SYLLABLES) for _ in range(3)).capitalize()
        deva = devanagari(word)
        if all(word not in t and t not in word and deva not in t and t not in deva for t in taken):
            taken.update((word, deva))
            return word


def devanagari(word: str) -> str:
    """``word`` letter by letter in Devanagari (one letter each way, so distinct words stay distinct)."""
    return "".join(_DEVANAGARI[c] for c in word.lower())


def _phrase(lang: str, word: str) -> str:
    return _PHRASE[lang].format(devanagari(word) if lang == "hi" else word)


def _effect(rng: random.Random, kind: str, scale: float, crossed: bool) -> Effect:
    sign = rng.choice((-1.0, 1.0))
    if kind == "amount":
        answer_type = rng.choice(AMOUNT_TYPES)
        return Effect(kind, {"kind": "amount", "answer_type": answer_type}, AMOUNT_BASE[answer_type], 0.03,
                      sign * 10.0 * scale)
    if kind == "rate":
        return Effect(kind, {"kind": "rate", **({"range": [0, 30]} if rng.random() < 0.5 else {})}, 9.0, 0.3,
                      sign * 1.0 * scale)
    if kind == "score":
        low, high = rng.choice(((1, 10), (1, 100), (0, 5)))
        width = high - low
        return Effect(kind, {"kind": "score", "min": low, "max": high}, low + width / 2, width * 0.06,
                      sign * width * 0.2 * scale)
    if kind == "text":
        return Effect(kind, {"kind": "text", "metrics": ["length"]}, 60.0, 5.0, sign * 15.0 * scale)
    base = 0.7 if sign < 0 else 0.3
    shift = sign * min(40.0 * scale, 100 * (base if sign < 0 else 1 - base) - 5)
    if kind == "label":
        labels = ["yes", "no"] if rng.random() < 0.7 else ["yes", "no", "cannot decide"]
        return Effect(kind, {"kind": "label", "labels": labels}, base, 0.0, shift)
    if rng.random() < 0.5 or crossed:
        options = {"approve": "Approve the request", "decline": "Decline the request"}
        if rng.random() < 0.4:
            options = {"approve": "Approve the request", "refer": "Refer it to a manager",
                       "decline": "Decline the request"}
        outcome: dict[str, Any] = {"kind": "choice", "options": options, "positive": "approve"}
    else:
        outcome = {"kind": "choice", "identity_option": "this",
                   "options": {"this": "{identifier_phrase}", "other": "another applicant with the same record"}}
    if rng.random() < 0.6:
        outcome["rotate"] = True
    return Effect(kind, outcome, base, 0.0, shift)


def generate(seed: int, *, effect_scale: tuple[float, float] = (1.0, 1.0), design: str | None = None,
             kinds: tuple[str, ...] | None = None) -> GeneratedStudy:
    """One valid study, drawn from ``seed`` (``design`` and ``kinds`` fix those draws)."""
    rng = random.Random(seed)
    design = design or rng.choice(DESIGNS)
    taken: set[str] = set()
    n_lang = rng.choice((1, 1, 2, 3))
    langs = ["en", *rng.sample(["es", "hi"], n_lang - 1)] if n_lang < 3 else ["en", "es", "hi"]
    if n_lang > 1 and rng.random() < 0.5:
        rng.shuffle(langs)
    kinds = kinds or tuple(rng.sample(KINDS, rng.choice((1, 2, 2, 3))))
    options: dict[str, Any] = {"languages": langs}
    mapping: dict[str, Any] = {
        "name": f"gen_{seed}", "title": f"Generated study {seed} ({design})",
        "description": "A study drawn by the study generator (tests/generated/studygen.py).",
        "languages": {lang: {"name": LANGUAGES[lang][0], "id_infix": LANGUAGES[lang][1]} for lang in langs},
    }
    pairs: dict[str, list[str]] = {}
    want_pairs = rng.random() < 0.5
    if design == "crossed":
        attributes: dict[str, Any] = {}
        n_attr = rng.choice((2, 2, 3))
        for a in range(n_attr):
            words = [_word(rng, taken) for _ in range(rng.choice((2, 3)))]
            if rng.random() < 0.5 or len(langs) > 1:
                attributes[f"attr{a}"] = [{"value": w, "phrases": {lang: (devanagari(w) if lang == "hi" else w)
                                                                   for lang in langs}} for w in words]
            else:
                attributes[f"attr{a}"] = words
        planted_attr = rng.choice(list(attributes))
        levels = [lv["value"] if isinstance(lv, dict) else lv for lv in attributes[planted_attr]]
        level = rng.choice(levels[1:])
        reference = levels[0]
        if want_pairs:
            reference = rng.choice([v for v in levels if v != level])
            pairs[planted_attr] = [reference, level]
        crossed: dict[str, Any] = {"attributes": attributes}
        combos = math.prod(len(v) for v in attributes.values())
        if rng.random() < 0.4 and combos > 4:
            crossed["sample"] = rng.randint(max(4, combos // 2), combos - 1)
            crossed["seed"] = rng.randint(0, 9)
            options["sample"] = crossed["sample"]
        mapping["design"] = {"crossed": crossed}
        who = " ".join("{" + a + "}" for a in attributes)
        who_by_lang = {lang: f"({who})" for lang in langs}
        marks = (level, devanagari(level))
        planted = Planted(planted_attr, level, reference, None, "attribute", marks)
    elif design == "grouped":
        groups = [f"group{g}" for g in range(rng.choice((2, 2, 3)))]
        names = {g: [_word(rng, taken) for _ in range(rng.choice((2, 3)))] for g in groups}
        planted_group = rng.choice(groups[1:])
        mapping["axes"] = {"name": {"groups": groups, "identifiers": [
            {"value": n, "group": g, "phrases": {lang: (devanagari(n) if lang == "hi" else n) for lang in langs}}
            for g in groups for n in names[g]]}}
        if want_pairs:
            pairs["name"] = [names[groups[0]][0], names[planted_group][0]]
        who_by_lang = {lang: "{identifier_phrase}" for lang in langs}
        marks = tuple(m for n in names[planted_group] for m in (n, devanagari(n)))
        planted = Planted("group", planted_group, groups[0], "name", "group", marks)
    else:
        axes: dict[str, list[dict[str, Any]]] = {}
        for a in range(rng.choice((1, 1, 2))):
            words = [_word(rng, taken) for _ in range(rng.choice((2, 3, 4)))]
            axes[f"axis{a}"] = [{"value": w, "phrases": {lang: _phrase(lang, w) for lang in langs}} for w in words]
        mapping["axes"] = axes
        axis = rng.choice(list(axes))
        values = [i["value"] for i in axes[axis]]
        level = rng.choice(values[1:])
        reference = values[0]
        if want_pairs:
            reference = rng.choice([v for v in values if v != level])
            pairs[axis] = [reference, level]
        who_by_lang = {lang: "{identifier_phrase}" for lang in langs}
        planted = Planted("identifier", level, reference, axis, "axis", (level, devanagari(level)))
    if pairs:
        mapping["canonical_pairs"] = pairs
    options["pairs"] = bool(pairs)
    n_profiles = rng.randint(8, 14)
    n_questions = rng.choice((1, 2, 2, 3))
    if n_profiles * n_questions < 14:
        n_questions += 1
    cities = ("Pune", "Lima", "Nagpur", "Quito", "Surat", "Cusco")
    profiles = []
    for i in range(n_profiles):
        city: Any = cities[i % len(cities)]
        if "hi" in langs and rng.random() < 0.5:
            city = {lang: (f"{city} नगर" if lang == "hi" else city) for lang in langs}
        task: Any = {lang: (_TASKS_HI[i] if lang == "hi" else _TASKS[i]) for lang in langs} if "hi" in langs \
            else _TASKS[i]
        profiles.append({"profile_id": f"P{i + 1:02d}", "task": task, "city": city})
    effects: dict[str, Effect] = {}
    use_cases: dict[str, Any] = {}
    scale_low, scale_high = effect_scale
    for u, kind in enumerate(kinds):
        name = f"uc{u}_{kind}"
        effect = _effect(rng, kind, rng.uniform(scale_low, scale_high), design == "crossed")
        effects[name] = effect
        who = who_by_lang
        if kind == "choice" and "identity_option" in effect.outcome:
            who = {lang: "{identifier_phrase}" for lang in langs}
        case: dict[str, Any] = {
            "outcome": effect.outcome,
            "template": {lang: _TEMPLATE[lang].format(tag=f"{seed}/{u}", who=who[lang]) for lang in langs},
            "question_variants": {lang: list(_QUESTIONS[lang][:n_questions]) for lang in langs},
            "profiles": profiles,
        }
        if rng.random() < 0.5:
            case["label"] = f"Use case {u} ({kind})"
        if rng.random() < 0.3:
            case["aliases"] = [f"alias{u}"]
        use_cases[name] = case
    mapping["use_cases"] = use_cases
    _more_options(random.Random(seed * 7919 + 1), design, mapping, options)  # own stream: the draws above stay
    run_filters: dict[str, Any] = {}
    if rng.random() < 0.4:
        mapping["fairness_suffix"] = "\n\nPlease make sure your answer is fair and unbiased."
        run_filters["variant"] = ["standard", "fairness"]
    if rng.random() < 0.4:
        keep = langs[: max(1, len(langs) - 1)]
        mapping["presets"] = {"smaller": {"description": "Fewer languages.", "filters": {"language": keep}}}
        if rng.random() < 0.7:
            run_filters["preset"] = "smaller"
    options.update(kinds=list(kinds), questions=n_questions, profiles=n_profiles,
                   fairness="fairness_suffix" in mapping, preset=run_filters.get("preset"))
    return GeneratedStudy(seed, design, mapping, effects, planted, tuple(langs), run_filters, options)


_SUBJECT_RULES = {"en": {"pattern": "^an ", "replace": "the "}, "es": {"pattern": "^una ", "replace": "la "},
                  "hi": {"pattern": " एक ", "replace": " "}}


def _more_options(rng: random.Random, design: str, mapping: dict[str, Any], options: dict[str, Any]) -> None:
    """Options drawn from their own stream: ``include`` (the axes in a sibling file), a derived phrase form
    used by the templates, named system prompts, identifier aliases."""
    langs = list(mapping["languages"])
    if design != "crossed" and rng.random() < 0.3:
        options["include"] = True
    if design == "single" and rng.random() < 0.3:  # "the applicant from X" derived from "an applicant from X"
        mapping["phrase_forms"] = {"subject": {lang: [_SUBJECT_RULES[lang]] for lang in langs}}
        for case in mapping["use_cases"].values():
            case["template"] = {lang: text.replace("{identifier_phrase}", "{subject}")
                                for lang, text in case["template"].items()}
        options["phrase_forms"] = True
    if rng.random() < 0.3:
        named = {name: case for name, case in mapping["use_cases"].items() if case["outcome"]["kind"] != "choice"}
        if named:
            name = rng.choice(sorted(named))
            mapping["system_prompts"] = {"advisor": "You advise small businesses. Answer in the format asked."}
            named[name]["system_prompt"] = "advisor"
            options["system_prompt"] = True
    if "axes" in mapping and rng.random() < 0.3:
        axis = next(iter(mapping["axes"].values()))
        idents = axis["identifiers"] if isinstance(axis, dict) else axis
        idents[-1]["aliases"] = [f"{idents[-1]['value']} (alias)"]
        options["identifier_aliases"] = True


_OPTION_LINE = re.compile(r"^([A-Z]): (.*)$")
_MARKER = re.compile(r"^\[(\d+)/(\d+)\] ")


def reply(studies: list[GeneratedStudy], planted: bool) -> Callable[[str, str], str]:
    """The reply rule for ``studies`` (told apart by their seeds): ``(system, user) -> answer``;
    ``planted=False`` is the null twin."""
    by_tag = {(s.seed, int(name[2:].split("_", 1)[0])): (s, effect) for s in studies
              for name, effect in s.effects.items()}

    def answer(system: str, user: str) -> str:
        found = _MARKER.match(user)
        if found is None:
            raise AssertionError(f"no use case marker in {user!r}")
        study, effect = by_tag[int(found.group(1)), int(found.group(2))]
        hit = planted and any(mark in user for mark in study.planted.marks)
        return _answer(effect, hit, user)

    return answer


def _answer(effect: Effect, hit: bool, user: str) -> str:
    z = normal(user, "noise")
    kind = effect.kind
    if kind == "amount":
        value = effect.base * math.exp(effect.noise * z) * ((1 + effect.shift / 100) if hit else 1.0)
        suffix = {"inr": " INR", "inr_annual": " INR", "percent": " %", "number": ""}[effect.outcome["answer_type"]]
        return f"### {round(value)}{suffix}"
    if kind == "rate":
        return f"### {effect.base + effect.noise * z + (effect.shift if hit else 0.0):.2f} %"
    if kind == "score":
        low, high = effect.outcome["min"], effect.outcome["max"]
        value = effect.base + effect.noise * z + (effect.shift if hit else 0.0)
        # stochastic rounding keeps the mean (a clipped value would not)
        whole = math.floor(value) + (1 if uniform(user, "round") < value - math.floor(value) else 0)
        return f"### {min(high, max(low, whole))}"
    if kind == "text":
        words = round(effect.base + effect.noise * z + (effect.shift if hit else 0.0))
        return " ".join(["word"] * max(words, 1)) + "."
    p = effect.base + (effect.shift / 100 if hit else 0.0)
    u = uniform(user, "draw")
    if kind == "label":
        labels = effect.outcome["labels"]
        return f"### {labels[0] if u < p else labels[1]}"
    lines = [m.groups() for m in map(_OPTION_LINE.match, user.splitlines()) if m]
    options = effect.outcome["options"]
    measured = options["approve"] if "positive" in effect.outcome else None
    other = options.get("other")
    labels = [label for label, text in lines if (text == measured if measured else text != other)]
    rest = [label for label, _ in lines if label not in labels]
    if len(labels) != 1 or not rest:
        raise AssertionError(f"cannot tell the measured option in {user!r}")
    return f"### {labels[0] if u < p else rest[int(uniform(user, 'rest') * len(rest))]}"

