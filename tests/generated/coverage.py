"""What of the study file format a generated study exercises (the CI seeds must cover every feature)."""

from __future__ import annotations

from tests.generated.studygen import AMOUNT_TYPES, DESIGNS, KINDS, GeneratedStudy


def features(study: GeneratedStudy) -> set[str]:
    """What of the study file format ``study`` exercises in its run (the CI test covers every one)."""
    out = {f"design:{study.design}"}
    for effect in study.effects.values():
        out.add(f"kind:{effect.kind}")
        if effect.kind == "amount":
            out.add(f"amount:{effect.outcome['answer_type']}")
        if effect.kind == "choice":
            out.add("choice:identity" if "identity_option" in effect.outcome else "choice:positive")
            out.add("choice:rotated" if effect.outcome.get("rotate") else "choice:stated")
            if len(effect.outcome["options"]) > 2:
                out.add("choice:3 options")
        if effect.kind == "label" and len(effect.outcome["labels"]) > 2:
            out.add("label:3 labels")
    run = study.languages
    if study.run_filters.get("preset"):
        out.add("preset")
        run = tuple(study.mapping["presets"]["smaller"]["filters"]["language"])
    out.add("languages:several" if len(run) > 1 else "languages:one")
    if "hi" in run:
        out.add("languages:non-Latin script")
    out.add("canonical pairs" if study.options["pairs"] else "no canonical pairs")
    if study.design == "crossed":
        out.add("crossed:sample" if "sample" in study.options else "crossed:all combinations")
    out.add("question variants:several" if study.options["questions"] > 1 else "question variants:one")
    if study.run_filters.get("variant"):
        out.add("fairness variant")
    out.add("use cases:mixed kinds" if len(study.effects) > 1 else "use cases:one")
    out.update(key.replace("_", " ") for key in ("include", "phrase_forms", "system_prompt", "identifier_aliases")
               if study.options.get(key))
    return out


#: every feature a generated study can exercise
ALL_FEATURES = frozenset({
    *(f"design:{d}" for d in DESIGNS), *(f"kind:{k}" for k in KINDS), *(f"amount:{t}" for t in AMOUNT_TYPES),
    "choice:identity", "choice:positive", "choice:rotated", "choice:stated", "choice:3 options", "label:3 labels",
    "preset", "languages:several", "languages:one", "languages:non-Latin script", "canonical pairs",
    "no canonical pairs", "crossed:sample", "crossed:all combinations", "question variants:several",
    "question variants:one", "fairness variant", "use cases:mixed kinds", "use cases:one", "include",
    "phrase forms", "system prompt", "identifier aliases"})
