"""One study's answers read from a store: the reading the pipeline does before any analysis.

The analyses take frames only (:mod:`counterbench.analyses.study`); these functions are where a store
path becomes those frames — the whole study's results (:func:`load_study_results`), or one model's at a
time (:func:`study_models` and :func:`model_results_reader`, for the bounded-memory amount analysis, or
:func:`load_model_results` for a single read).
A store may hold several studies: only the named study's rows are kept (they are never pooled).
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path

import pandas as pd

from counterbench.errors import UserError

__all__ = ["SEPARATOR", "count_answers", "load_model_results", "load_study_results", "model_results_reader",
           "results_of_study", "study_models", "table_prompt_ids"]

#: between a study's name and its prompt id where a store namespaces the id (:mod:`counterbench.run.prompt_ids`)
SEPARATOR = ":"


def results_of_study(results: pd.DataFrame, study: str) -> pd.DataFrame:
    """The rows of study ``study`` (all rows when the frame has no ``study`` column, e.g. a hand-made one),
    with the prompt table's own ids (a store may namespace them: :func:`table_prompt_ids`)."""
    if "study" not in results.columns:
        return results
    column = results["study"].astype(object)
    mine = results[column.eq(study) | column.isna()]
    if mine.empty:
        present = sorted({str(s) for s in column.dropna().unique()})
        raise UserError(f"no responses of study {study} in these results (studies present: "
                        f"{', '.join(present) or 'none'}); give the study the answers belong to")
    return table_prompt_ids(mine.reset_index(drop=True), study)


def table_prompt_ids(results: pd.DataFrame, study: str) -> pd.DataFrame:
    """``results`` (rows of ``study`` only) with namespaced prompt ids back to the prompt table's ids."""
    if "prompt_id" not in results.columns or results.empty:
        return results
    ids = results["prompt_id"].astype(str)
    prefix = f"{study}{SEPARATOR}"
    spaced = ids.str.startswith(prefix)
    if not spaced.any():
        return results
    results = results.copy()
    results.loc[spaced, "prompt_id"] = ids[spaced].str.slice(len(prefix))
    return results


def _existing(path: Path | str) -> Path:
    store = Path(path).expanduser()
    if not store.is_file():
        raise UserError(f"store {store} does not exist; run some prompts first "
                        f"(`counterbench run ... --store {store}`)")
    return store


def load_study_results(path: Path | str, study: str, *, models: Sequence[str] | None, profile: str) -> pd.DataFrame:
    """The store's answers of ``study`` (re-parsed under ``profile``), only ``models`` when given."""
    from counterbench.run.results import load_results

    store = _existing(path)
    results = load_results(store, list(models) if models else None, profile)
    if results.empty:
        raise UserError(f"store {store} has no responses yet; run `counterbench run ... --store {store}` first")
    return results_of_study(results, study)


def study_models(path: Path | str, study: str) -> list[str]:
    """The models that answered ``study`` in the store (a store may hold other studies' models)."""
    from counterbench.run.store import open_store

    store = _existing(path)
    with open_store(store, create=False) as opened:
        rows = opened.query(
            "SELECT DISTINCT r.model FROM responses r JOIN prompts p "
            "ON p.prompt_id = r.prompt_id AND p.prompt_hash = r.prompt_hash "
            "WHERE p.study = ? OR p.study IS NULL ORDER BY r.model", (study,))
        models = [str(m) for (m,) in rows]
    if not models:
        raise UserError(f"no responses of study {study} in store {store}; give the study the answers belong to")
    return models


def count_answers(path: Path | str) -> int:
    """How many answers the store holds (every model and study)."""
    from counterbench.run.store import open_store

    with open_store(_existing(path), create=False) as opened:
        return int(opened.query("SELECT count(*) FROM responses")[0][0])


def load_model_results(path: Path | str, study: str, model: str, profile: str) -> pd.DataFrame:
    """One model's answers of ``study`` (re-parsed under ``profile``)."""
    from counterbench.run.results import load_results

    return results_of_study(load_results(_existing(path), [model], profile), study)


@contextlib.contextmanager
def model_results_reader(path: Path | str, study: str, profile: str) -> Iterator[Callable[[str], pd.DataFrame]]:
    """``load(model)``: one model's answers of ``study`` at a time (as :func:`load_model_results`), from one open
    store whose prompts' side is read once (:class:`~counterbench.run.results_reader.ResultsReader`)."""
    from counterbench.run.results import read_results
    from counterbench.run.results_reader import ResultsReader
    from counterbench.run.sidecars import sidecars_removed_on_failure

    store = _existing(path)
    with sidecars_removed_on_failure(store), ResultsReader(store) as reader:
        yield lambda model: results_of_study(read_results(reader, [model], profile), study)
