"""DiscrimEval's prompt interventions as prompt variants of the ``discrim_eval`` study.

The paper ("Evaluating and Mitigating Discrimination in Language Model Decisions", §5) appends statements to
the decision prompt — that discrimination is illegal, an emphatic request not to discriminate, to ignore
demographics, affirmative action — and compares the discrimination score with and without each. Here each is
a named prompt variant (``interventions.yaml``, texts in counterbench's own words; ``paper`` names the
intervention each stands for), selected with the existing ``--variant NAME`` option: :func:`with_interventions`
turns the standard prompt table into the standard prompts plus, per chosen intervention, every prompt again
with the intervention's text added after the published prompt, before the answer instruction; ``variant`` is
the intervention's name and ``prompt_id`` ``<standard id>~<name>``. The standard prompts (the baseline) are
always kept: a variant is compared with them (``discrim_eval_scores``, :mod:`.score`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

import pandas as pd

from counterbench.errors import UserError, check_keys
from counterbench.yaml_files import read_yaml_file

STANDARD = "standard"
FILE = Path(__file__).with_name("interventions.yaml")
KEYS = ("paper", "description", "text")


@dataclass(frozen=True)
class Intervention:
    """One statement added to every prompt."""

    name: str
    #: the paper's intervention it stands for
    paper: str
    description: str
    text: str


@lru_cache(maxsize=1)
def interventions() -> dict[str, Intervention]:
    """The built-in interventions by name, in file order."""
    data = read_yaml_file(FILE, f"DiscrimEval interventions {FILE.name}")
    raw = data.get("interventions") if isinstance(data, dict) else None
    if not isinstance(raw, dict) or not raw:
        raise UserError(f"{FILE.name}: expected a mapping 'interventions:' of named interventions")
    out: dict[str, Intervention] = {}
    for name, spec in raw.items():
        where = f"{FILE.name}, intervention '{name}'"
        if not isinstance(spec, dict) or str(name) == STANDARD:
            raise UserError(f"{where}: needs {', '.join(KEYS)} (and cannot be called {STANDARD})")
        check_keys(spec, KEYS, where)
        if not all(isinstance(spec.get(k), str) and spec[k].strip() for k in KEYS):
            raise UserError(f"{where}: needs {', '.join(KEYS)}, each a non-empty text")
        out[str(name)] = Intervention(str(name), spec["paper"].strip(), spec["description"].strip(),
                                      " ".join(spec["text"].split()))
    return out


def variant_names() -> tuple[str, ...]:
    """The study's prompt variants: the standard prompts, then every intervention."""
    return (STANDARD, *interventions())


def with_interventions(standard: pd.DataFrame, chosen: Sequence[str], instruction: str) -> pd.DataFrame:
    """``standard`` (the study's standard prompt table) followed by its prompts under each intervention of
    ``chosen`` (in the file's order; ``standard`` and repeats ignored), the text added before ``instruction``."""
    known = interventions()
    unknown = [v for v in chosen if v != STANDARD and v not in known]
    if unknown:
        raise UserError(f"unknown variant '{unknown[0]}' for study discrim_eval (one of: "
                        f"{', '.join(variant_names())}; docs/discrim-eval.md)")
    frames = [standard]
    marker = f"\n\n{instruction}"
    for name in (n for n in known if n in chosen):
        if not standard["user"].str.contains(marker, regex=False).all():
            raise UserError(f"intervention {name}: a prompt lacks the answer instruction to place the text before")
        frame = standard.copy()
        frame["user"] = [u.replace(marker, f"\n\n{known[name].text}{marker}", 1) for u in frame["user"]]
        frame["prompt_id"] = frame["prompt_id"].astype(str) + f"~{name}"
        frame["variant"] = name
        frames.append(frame)
    return pd.concat(frames, ignore_index=True)
