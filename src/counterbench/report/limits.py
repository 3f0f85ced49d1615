"""What the run's design cannot support, in plain words (the report's headlines, after the findings).

Read from the analysis tables and the registered study, never from a preset's name, so a user's own
subset gets the same sentences:

- **A few identifiers per axis**: when an axis was run with fewer identifiers than the study declares,
  the axis-level figures (Mean Δ% per axis, the maximum observed gap, identifier deviation, Kendall's
  W) describe those identifiers only.
- **Thin per-use-case tests**: a comparison on n matched prompts has an exact swap test whose smallest
  p is 2 / 2ⁿ (6 prompts: 0.031); said when the most a canonical pair has in one use case is below
  twice :data:`~counterbench.stats.inference.MIN_SLOTS`, with the averaged pairs' count.
- **Figures without an interval**: cells on fewer than
  :data:`~counterbench.stats.inference.MIN_SLOTS_INTERVAL` slots per use case get none (the slot
  interval is not calibrated there); their number is said.
"""

from __future__ import annotations

import pandas as pd

from counterbench.report.context import ReportContext, _registered
from counterbench.stats.inference import MIN_SLOTS, MIN_SLOTS_INTERVAL

__all__ = ["design_limits"]

#: tables whose rows carry ``n_slots`` and a slot interval (``ci_low``)
INTERVAL_TABLES = ("use_case_axis_mean_delta", "use_case_mean_delta", "axis_mean_delta", "cpg", "cpg_overall",
                   "outcome_gaps")


def _declared_levels(ctx: ReportContext) -> dict[str, int]:
    study = _registered(str(ctx.data.summary.get("study") or ""))
    facets = getattr(study, "facets", ()) if study is not None else ()
    return {str(f.axis or f.name): len(f.levels) for f in facets if getattr(f, "kind", "") == "axis"}


def _few_identifiers(ctx: ReportContext) -> str | None:
    dev = ctx.nonempty("identifier_deviation")
    declared = _declared_levels(ctx)
    if dev is None or not declared or not {"axis", "identifier"} <= set(dev.columns):
        return None
    run = dev.groupby(dev["axis"].astype(str), sort=False)["identifier"].nunique()
    partial = [f"{axis} {n} of {declared[str(axis)]}" for axis, n in run.items()
               if 0 < n < declared.get(str(axis), 0)]
    if not partial:
        return None
    return (f"Only some identifiers of an axis were run ({', '.join(partial)}): the axis figures (Mean Δ% per "
            "axis, the maximum observed gap, identifier deviation, Kendall's W) describe these identifiers, "
            "not the whole axis.")


def _thin_tests(ctx: ReportContext) -> str | None:
    cpg, overall = ctx.nonempty("cpg"), ctx.nonempty("cpg_overall")
    if cpg is None or "n_slots" not in cpg.columns:
        return None
    most = pd.to_numeric(cpg["n_slots"], errors="coerce").max()
    if most != most or most < MIN_SLOTS or most >= 2 * MIN_SLOTS:
        return None
    n = int(most)
    pooled = ""
    if overall is not None and "n_slots" in overall.columns:
        pooled = (f"; the pairs averaged over use cases rest on up to "
                  f"{int(pd.to_numeric(overall['n_slots'], errors='coerce').max())} and carry the finding")
    return (f"Each canonical pair rests on at most {n} matched prompts in a use case: enough for a test "
            f"({MIN_SLOTS} needed; a missing answer leaves too few), but its smallest possible p is "
            f"{2.0 / 2 ** n:.3f}, so only clear gaps in many use cases survive the correction{pooled}.")


def _without_interval(ctx: ReportContext) -> str | None:
    boot = ctx.data.summary.get("bootstrap")
    if isinstance(boot, dict) and not boot.get("replicates"):
        return None
    count = 0
    for name in INTERVAL_TABLES:
        frame = ctx.nonempty(name)
        if frame is None or not {"n_slots", "ci_low"} <= set(frame.columns):
            continue
        slots = pd.to_numeric(frame["n_slots"], errors="coerce")
        count += int(((slots > 0) & pd.to_numeric(frame["ci_low"], errors="coerce").isna()).sum())
    if not count:
        return None
    return (f"{count} figure{'s' if count != 1 else ''} rest on fewer than {MIN_SLOTS_INTERVAL} slots per use case "
            "(or on slots of very unequal weight) and are shown without an interval: too few to calibrate one.")


def design_limits(ctx: ReportContext) -> list[str]:
    """The sentences (see the module docstring); empty when the design supports every figure it shows."""
    return [line for line in (_few_identifiers(ctx), _thin_tests(ctx), _without_interval(ctx)) if line]
