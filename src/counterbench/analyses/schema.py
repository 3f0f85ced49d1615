"""The conventions every analysis table shares. Reports and exports rely on these staying stable.

Where tables are declared: the generic tables every kind shares in :mod:`.table_registry` (and
:mod:`.outcome_tables`), a kind's own family of tables in its package under ``counterbench/families/``
(the amount kind's: :mod:`counterbench.families.amount.tables`), registered in :data:`.table_families.FAMILIES`.

Conventions shared by every table:

- One row per cell, tidy. ``model`` is the model string; ``language`` the language code the study
  declares (``en``, ``es``, ...); ``use_case`` the study's use-case name (aliases reported under the
  study's own name); ``axis`` and ``identifier`` as in the prompt table.
- Columns that depend on the study are written as templates (``{lang}_mean_delta``: one column per
  language the study declares, in study order), expanded for one study by its family's declarations.
- Δ% and Mean Δ% are in percent (paper §4.2); ``v10`` columns hold Violation@τ in percent for the τ
  in the ``tau`` column (10 unless ``--tau`` says otherwise); ``*_share`` and ``share`` columns are
  fractions in [0, 1].
- ``ci_low``/``ci_high``: *the* 95% interval. For every gap statistic it resamples slots (the
  prompts that differ only in the identifier; paired where two arms share slots), expanded for few
  slots (:mod:`counterbench.stats.inference`); for per-setting statistics (ρ) it resamples the
  settings. ``pair_ci_low``/``pair_ci_high``: the paper's method (pairs resampled), kept as a
  labelled column; too narrow, because pairs of one slot are not independent. ``v10_ci_*``: slots;
  ``v10_pair_ci_*``: pairs; ``v10_wilson_ci_*``: Wilson. ``n_slots``: the slots behind the interval.
- Marks (``significant``): Benjamini–Hochberg ``q_value`` ≤ 0.05 within a family — one model's rows
  of the table — and only where ``testable`` (enough matched slots; ``MIN_SLOTS``). Methods,
  families, replicates and seeds are in the summary's ``ci_methods`` and ``marks``.
- Rows are ordered by model (leaderboard rank), then language, use case, axis, identifier in study
  order. Empty tables keep their columns.
"""

from __future__ import annotations

__all__: list[str] = []
