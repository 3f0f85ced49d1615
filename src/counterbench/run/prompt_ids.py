"""Prompt ids unique per study in a store.

Two studies may give prompts the same id (a use case of the same name in a language of the same
``id_infix``: ``approve_en_00001`` in both). A store keeps one answer per ``(prompt_id, model,
config)``, so the second study's prompt would look like the first's with changed text. The rule: a
prompt of study ``S`` with id ``p`` is stored as ``S:p`` when the store already holds ``p`` for another
study and not for ``S`` itself, or already holds ``S:p`` (a resumed run). The first study keeps its
plain ids, so stores written before the rule read and resume exactly as before; a namespaced id is
read back as the prompt table's own (:func:`counterbench.run.study_results.table_prompt_ids`), so each
study is analysed with its own prompts.
"""

from __future__ import annotations

from typing import Any

from counterbench.run.plan import PromptItem
from counterbench.run.store import PROMPT_RECORD_COLUMNS, Store
from counterbench.run.study_results import SEPARATOR

__all__ = ["store_prompt_ids"]

_STUDY = PROMPT_RECORD_COLUMNS.index("study")


def store_prompt_ids(store: Store, items: list[PromptItem], records: list[tuple[Any, ...]]) -> list[tuple[Any, ...]]:
    """Give every prompt of ``items``/``records`` (the same prompts, in the same order) its id in
    ``store``: the items are changed in place, the records returned (renamed where the rule says)."""
    known = store.prompt_studies()
    out: list[tuple[Any, ...]] = []
    for item, record in zip(items, records, strict=True):
        study = record[_STUDY]
        pid = str(record[0])
        if study is not None:
            study = str(study)
            spaced = f"{study}{SEPARATOR}{pid}"
            holders = known.get(pid, set())
            if spaced in known or (holders and study not in holders):
                item.prompt_id = spaced
                if "prompt_id" in item.metadata:
                    item.metadata["prompt_id"] = spaced
                record = (spaced, *record[1:])
        out.append(record)
    return out
