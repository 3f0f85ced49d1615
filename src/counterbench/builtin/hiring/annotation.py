"""Human validation of the marker baskets (paper "Small Changes, Big Impact" App. L): an annotation sheet
(CSV) to hand to annotators, and the import of their answers with recoverability and agreement.

**Export** (:func:`annotation_sheet`): one item per basket (ethnicity × gender × variation), each a
resume — a job's neutral template, jobs taken in turn — with its Additional Information section. With
``progressive`` the items are revealed in five steps as in the paper: step 0 no Additional
Information, steps 1–3 the activities, volunteering and hobbies lines in an order drawn per item, step
4 all four with languages last; otherwise one step (4, all markers). Items are shuffled (seeded) and
named ``H001``, ``H002``, ... so neither the order nor the id reveals the group. The **sheet** holds
what annotators see and blank answer columns (``annotator``, ``realistic``, ``gender``, ``ethnicity``);
the **key** (keep it away from annotators) holds each item's true group and the categories shown.

**Import** (:func:`read_annotations`, :func:`annotation_tables`): the filled sheets (one per
annotator, or one with a row per annotator × item × step) are checked against the key — an unknown
item or step, an answer not among the options, a missing annotator name: one line naming the file
and row. Blank answers are not judgements. Per attribute × step: macro-F1 over the true classes
("Cannot determine" counts as wrong, :func:`.recoverability.macro_f1`), accuracy and the "cannot
determine" share; and the agreement over items judged by at least two annotators: the number of
annotator pairs, the share of pairs that agree, and Krippendorff's α (nominal, "Cannot determine" a
category of its own; :func:`counterbench.stats.agreement.krippendorff_alpha_nominal`).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import pandas as pd

from counterbench.builtin.hiring.data import BasketSet, ResumeTemplate
from counterbench.builtin.hiring.recoverability import CANNOT, macro_f1
from counterbench.builtin.hiring.resumes import fill
from counterbench.errors import UserError
from counterbench.stats.agreement import krippendorff_alpha_nominal, pair_agreement
from counterbench.stats.seeding import derive_rng
from counterbench.table_files import read_csv_file

SHEET_COLUMNS = ["item_id", "step", "resume", "gender_options", "ethnicity_options", "annotator", "realistic",
                 "gender", "ethnicity"]
KEY_COLUMNS = ["item_id", "step", "ethnicity", "gender", "variation", "job_id", "shown"]
ANSWERS = ("gender", "ethnicity")
REALISTIC = ("yes", "no")
#: the middle categories revealed in random order before the languages line (paper App. L)
MIDDLE = ("activities", "volunteering", "hobbies")


def _steps(progressive: bool, rng_order: Sequence[str]) -> list[tuple[int, tuple[str, ...]]]:
    if not progressive:
        return [(4, ("languages", *MIDDLE))]
    return [(k, tuple(rng_order[:k])) for k in range(4)] + [(4, (*rng_order, "languages"))]


def annotation_sheet(baskets: BasketSet, templates: Sequence[ResumeTemplate], *, progressive: bool = True,
                     seed: int = 0) -> tuple[pd.DataFrame, pd.DataFrame]:
    """``(sheet, key)`` for the baskets (see the module docstring)."""
    if not templates:
        raise UserError("the annotation sheet needs at least one resume template")
    rng = derive_rng("annotation-sheet", baskets.name, base_seed=seed)
    order = rng.permutation(len(baskets.baskets))
    sheet, key = [], []
    labels = {"gender": ", ".join([*baskets.genders, CANNOT]), "ethnicity": ", ".join([*baskets.ethnicities, CANNOT])}
    for number, index in enumerate(order, start=1):
        basket = baskets.baskets[int(index)]
        template = templates[(number - 1) % len(templates)]
        item = f"H{number:03d}"
        middle = [MIDDLE[int(i)] for i in rng.permutation(len(MIDDLE))]
        for step, shown in _steps(progressive, middle):
            sheet.append({"item_id": item, "step": step, "resume": fill(template.text, basket.markers, shown),
                          "gender_options": labels["gender"], "ethnicity_options": labels["ethnicity"],
                          "annotator": "", "realistic": "", "gender": "", "ethnicity": ""})
            key.append({"item_id": item, "step": step, "ethnicity": basket.ethnicity, "gender": basket.gender,
                        "variation": basket.variation, "job_id": template.job_id, "shown": "+".join(shown)})
    return pd.DataFrame(sheet, columns=SHEET_COLUMNS), pd.DataFrame(key, columns=KEY_COLUMNS)


def _read_csv(path: Path, needed: Sequence[str]) -> pd.DataFrame:
    return read_csv_file(path, needed=needed, hint="save the sheet as UTF-8 CSV")


def read_annotations(paths: Sequence[str | Path], key_path: str | Path) -> pd.DataFrame:
    """The judgements of the filled sheets joined with the key: one row per annotator × item × step."""
    key = _read_csv(Path(key_path), KEY_COLUMNS)
    key["step"] = key["step"].astype(int)
    known = {(r["item_id"], r["step"]): r for r in key.to_dict("records")}
    classes = {"gender": sorted(set(key["gender"])), "ethnicity": sorted(set(key["ethnicity"]))}
    rows = []
    for raw in paths:
        path = Path(raw)
        frame = _read_csv(path, ["item_id", "step", "annotator", *ANSWERS])
        for line, r in enumerate(frame.to_dict("records"), start=2):  # line 1 is the header
            where = f"{path.name} line {line}"
            if not any(str(r[c]).strip() for c in ANSWERS):
                continue  # not judged
            step = str(r["step"]).strip()
            item = (str(r["item_id"]).strip(), int(step) if step.isdigit() else -1)
            if item not in known:
                raise UserError(f"{where}: item {item[0]} step {r['step']} is not in the key {Path(key_path).name}")
            annotator = str(r["annotator"]).strip()
            if not annotator:
                raise UserError(f"{where}: no annotator name (each judgement needs one, for the agreement)")
            row = {**known[item], "annotator": annotator,
                   "realistic": str(r.get("realistic", "")).strip().lower() or None}
            if row["realistic"] is not None and row["realistic"] not in REALISTIC:
                raise UserError(f"{where}: realistic must be yes or no, got '{r['realistic']}'")
            for attribute in ANSWERS:
                answer = str(r[attribute]).strip()
                options = {c.lower(): c for c in [*classes[attribute], CANNOT]}
                if answer and answer.lower() not in options:
                    raise UserError(f"{where}: {attribute} '{answer}' is not one of {', '.join(options.values())}")
                row[f"{attribute}_answer"] = options[answer.lower()] if answer else None
            rows.append(row)
    if not rows:
        raise UserError("no judgements in the annotation files (every gender and ethnicity cell is blank)")
    out = pd.DataFrame(rows)
    twice = out.duplicated(["annotator", "item_id", "step"])
    if twice.any():
        first = out[twice].iloc[0]
        raise UserError(f"annotator {first['annotator']} judged item {first['item_id']} step {first['step']} twice")
    return out


def annotation_tables(judgements: pd.DataFrame) -> dict[str, pd.DataFrame]:
    """``annotation_recoverability`` and ``annotation_agreement`` per attribute × step, and ``annotation_realism``."""
    recover, agree = [], []
    for attribute in ANSWERS:
        classes = sorted(set(judgements[attribute]))
        for step, part in judgements.groupby("step", sort=True):
            answered = part[part[f"{attribute}_answer"].notna()]
            if answered.empty:
                continue
            truth, answer = answered[attribute].astype(str), answered[f"{attribute}_answer"].astype(str)
            recover.append({"attribute": attribute, "step": int(str(step)), "n": len(answered),
                            "macro_f1": macro_f1(truth, answer, classes),
                            "accuracy": float((truth == answer).mean()),
                            "cannot_share": float(answer.eq(CANNOT).mean())})
            units = answered.groupby("item_id")[f"{attribute}_answer"].agg(list)
            pairs, share = pair_agreement(units.to_dict())
            agree.append({"attribute": attribute, "step": int(str(step)),
                          "items": int((units.map(len) >= 2).sum()), "pairs": pairs, "pair_agreement": share,
                          "krippendorff_alpha": krippendorff_alpha_nominal(units.to_dict())})
    judged = judgements[judgements["realistic"].notna()]
    realism = pd.DataFrame([{"judgements": len(judged), "realistic_share": float(judged["realistic"].eq("yes").mean())
                             if len(judged) else float("nan")}])
    return {"annotation_recoverability": pd.DataFrame(recover), "annotation_agreement": pd.DataFrame(agree),
            "annotation_realism": realism}
