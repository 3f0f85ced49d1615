"""Pure statistics for counterfactual bias audits (paper §4.2, §5–6, Apps. A–E, L).

Every function takes arrays or DataFrames and returns numbers, dataclasses or DataFrames; nothing
here does I/O or keeps global state. Random procedures take a ``seed``; derive per-cell seeds with
:func:`stable_seed`. Module map:

- :mod:`.gaps` — matched pairs, relative gap Δ%, Mean Δ%, Violation@τ
- :mod:`.bootstrap` / :mod:`.cluster_bootstrap` — percentile bootstrap over pairs / over slots
- :mod:`.intervals` — percentile and Wilson intervals
- :mod:`.concordance` — Friedman χ² and Kendall's W
- :mod:`.correlation` — Spearman ρ (single and pairwise)
- :mod:`.multiple_testing` — Fisher's method, Benjamini–Hochberg
- :mod:`.identifier_gaps` — canonical pair gap, maximum observed gap, identifier deviation
- :mod:`.robustness` — question-variant robustness, merit sensitivity, profile rank agreement
- :mod:`.comparisons` — language moderation and fairness ablation
- :mod:`.health` — parse health and refusal rate
- :mod:`.seeding` — stable per-cell seeds
"""

from importlib import import_module
from typing import TYPE_CHECKING, Any

from counterbench.stats.bootstrap import (
    BootstrapResult,
    bootstrap_mean,
    bootstrap_mean_difference,
    bootstrap_violation_rate,
    pair_replicate_means,
)
from counterbench.stats.cluster_bootstrap import (
    cluster_bootstrap,
    cluster_bootstrap_mean,
    cluster_bootstrap_mean_difference,
    cluster_bootstrap_violation_rate,
)
from counterbench.stats.gaps import (
    PairGaps,
    mean_gap,
    pair_gaps,
    relative_gap,
    slot_sums,
    summarise_gaps,
    violation_rate,
)
from counterbench.stats.health import parse_health
from counterbench.stats.identifier_gaps import (
    CanonicalPairGap,
    MaximumObservedGap,
    canonical_pair_gap,
    identifier_deviation,
    maximum_observed_gap,
)
from counterbench.stats.intervals import percentile_interval, wilson_interval
from counterbench.stats.seeding import derive_rng, stable_seed

if TYPE_CHECKING:
    from counterbench.stats.comparisons import GapShift, language_rank_agreement, mean_gap_shift
    from counterbench.stats.concordance import (
        FriedmanResult,
        friedman_kendall_w,
        friedman_kendall_w_stacked,
        kendalls_w,
    )
    from counterbench.stats.correlation import (
        mean_pairwise_spearman,
        min_pairwise_spearman,
        pairwise_spearman,
        spearman,
    )
    from counterbench.stats.multiple_testing import benjamini_hochberg, fisher_combine
    from counterbench.stats.robustness import (
        grouped_mean_ci,
        profile_pair_gaps,
        profile_rank_agreement,
        question_variant_robustness,
        robustness_summary,
    )

#: the modules that load scipy (its statistics take half a second to import) -> the names the package gives from
#: them, each imported on first use, so that e.g. :func:`stable_seed` alone does not load scipy
_LAZY: dict[str, tuple[str, ...]] = {
    "comparisons": ("GapShift", "language_rank_agreement", "mean_gap_shift"),
    "concordance": ("FriedmanResult", "friedman_kendall_w", "friedman_kendall_w_stacked", "kendalls_w"),
    "correlation": ("mean_pairwise_spearman", "min_pairwise_spearman", "pairwise_spearman", "spearman"),
    "multiple_testing": ("benjamini_hochberg", "fisher_combine"),
    "robustness": ("grouped_mean_ci", "profile_pair_gaps", "profile_rank_agreement", "question_variant_robustness",
                   "robustness_summary"),
}
_MODULE_OF = {name: module for module, names in _LAZY.items() for name in names}


def __getattr__(name: str) -> Any:
    module = _MODULE_OF.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(import_module(f"{__name__}.{module}"), name)
    globals()[name] = value
    return value


__all__ = [
    "BootstrapResult",
    "CanonicalPairGap",
    "FriedmanResult",
    "GapShift",
    "MaximumObservedGap",
    "PairGaps",
    "benjamini_hochberg",
    "bootstrap_mean",
    "bootstrap_mean_difference",
    "bootstrap_violation_rate",
    "canonical_pair_gap",
    "cluster_bootstrap",
    "cluster_bootstrap_mean",
    "cluster_bootstrap_mean_difference",
    "cluster_bootstrap_violation_rate",
    "derive_rng",
    "fisher_combine",
    "friedman_kendall_w",
    "friedman_kendall_w_stacked",
    "grouped_mean_ci",
    "identifier_deviation",
    "kendalls_w",
    "language_rank_agreement",
    "maximum_observed_gap",
    "mean_gap",
    "mean_gap_shift",
    "mean_pairwise_spearman",
    "min_pairwise_spearman",
    "pair_gaps",
    "pair_replicate_means",
    "pairwise_spearman",
    "parse_health",
    "percentile_interval",
    "profile_pair_gaps",
    "profile_rank_agreement",
    "question_variant_robustness",
    "relative_gap",
    "robustness_summary",
    "slot_sums",
    "spearman",
    "stable_seed",
    "summarise_gaps",
    "violation_rate",
    "wilson_interval",
]
