"""Python API: ``counterbench.analyze(store_or_results, "rupeebias", ...)``.

Accepts a results DataFrame (``counterbench.run.load_results``) or the path of a store, and
returns an :class:`~counterbench.analyses.rupeebias.AnalysisResult` (``.tables``, ``.summary``,
``.write(folder)``). Heavy imports happen inside the function, so ``import counterbench`` stays
cheap.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from counterbench.errors import UserError

if TYPE_CHECKING:
    import pandas as pd

    from counterbench.analyses.rupeebias import AnalysisResult

__all__ = ["STUDIES", "analyze"]

#: studies that have an analysis
STUDIES = ("rupeebias",)


def _select_models(results: pd.DataFrame, models: Sequence[str]) -> pd.DataFrame:
    known = [str(m) for m in results["model"].drop_duplicates()] if "model" in results.columns else []
    unknown = [m for m in models if m not in known]
    if unknown:
        raise UserError(f"no responses of model {unknown[0]} in the results (models: {', '.join(known) or 'none'})")
    return results[results["model"].isin(list(models))]


def analyze(
    source: pd.DataFrame | str | Path,
    study: str = "rupeebias",
    *,
    models: Sequence[str] | None = None,
    profile: str = "default",
    bootstrap: int = 2000,
    seed: int = 0,
    tau: float = 10.0,
    canonical_pairs: Mapping[str, tuple[str, str]] | None = None,
) -> AnalysisResult:
    """Analyse stored responses of ``study`` and return every table of its analysis.

    ``source``: a results DataFrame or a store path (re-parsed in memory under ``profile``'s parser:
    ``rupeebias-v1`` uses the release's lenient parser). A store is read and analysed one model at a
    time (:mod:`counterbench.analyses.by_model`), so any number of models fits in memory.
    ``models``: keep only these model strings.
    ``profile``, ``bootstrap``, ``seed``, ``tau``, ``canonical_pairs``: see
    :func:`counterbench.analyses.rupeebias.analyze`.
    """
    from counterbench.analyses.profiles import get_profile
    from counterbench.analyses.rupeebias import analyze as analyze_rupeebias

    if study not in STUDIES:
        raise UserError(f"no analysis for study {study!r}; analyses exist for: {', '.join(STUDIES)}")
    get_profile(profile)
    wanted = list(dict.fromkeys(models)) if models else None
    results: Any
    if isinstance(source, str | Path):
        from counterbench.analyses.by_model import analyze_store_by_model

        path = Path(source).expanduser()
        if not path.is_file():
            raise UserError(
                f"store {path} does not exist; run some prompts first (`counterbench run ... --store {path}`)"
            )
        # model by model: peak memory grows with one model's responses, not with the store's
        return analyze_store_by_model(path, wanted, profile=profile, bootstrap=bootstrap, seed=seed, tau=tau,
                                      canonical_pairs=canonical_pairs)
    else:
        results = _select_models(source, wanted) if wanted else source
    return analyze_rupeebias(results, profile=profile, bootstrap=bootstrap, seed=seed, tau=tau,
                             canonical_pairs=canonical_pairs)
