"""Python API: ``counterbench.analyze(store_or_results, study, ...)``.

Accepts a results DataFrame (``counterbench.run.load_results``) or the path of a store, and
returns an :class:`~counterbench.analyses.result.AnalysisResult` (``.tables``, ``.summary``,
``.write(folder)``) for one study: the store's rows of other studies are left out. The work is done
by :func:`counterbench.analyses.study.analyze_study` (the one store → analysis path).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import pandas as pd

    from counterbench.analyses.result import AnalysisResult
    from counterbench.studies.base import Study

__all__ = ["analyze"]


def analyze(
    source: pd.DataFrame | str | Path,
    study: str | Path | Study | None = None,
    *,
    models: Sequence[str] | None = None,
    profile: str = "default",
    bootstrap: int = 2000,
    seed: int = 0,
    tau: float = 10.0,
    canonical_pairs: Mapping[str, tuple[str, str]] | None = None,
) -> AnalysisResult:
    """Analyse stored responses of ``study`` (a registered name, a study file or a study object).

    ``source``: a results DataFrame or a store path (re-parsed in memory under ``profile``'s parser:
    the release profile uses the release's lenient parser). ``models``: keep only these model strings.
    ``bootstrap``: replicates per interval; ``seed``: the base seed of every bootstrap stream;
    ``tau``: the Violation@τ threshold (amount outcomes); ``canonical_pairs``: default the study's.
    """
    from counterbench.analyses.study import analyze_study

    return analyze_study(source, study, models=models, profile=profile, bootstrap=bootstrap, seed=seed, tau=tau,
                         canonical_pairs=canonical_pairs)
