"""Slot resampling shared by every table of one model × language × use case.

The cluster bootstrap resamples *slots* (profile × question variant: the prompts that differ only
in the identifier). Every axis of a use case is asked in the same slots, so one set of slot
multiplicities per model × language × use case serves the cluster interval of Mean Δ%, the CPG
interval and the MOG interval of all six axes: the tables of a use case then describe the same
resamples, and 2,000 × slots random draws are made once instead of once per table and axis.

Decisions:

- The *universe* of a group is every (profile, question variant) slot with at least one value in
  it (sorted). A replicate draws as many slots as the universe holds, with replacement; a table
  whose statistic has no data in a drawn slot (e.g. a CPG slot where one of the two identifiers did
  not answer) gets nothing from it, so the number of informative slots varies a little between
  replicates — the usual cluster bootstrap of a ratio estimator. With complete data this is
  exactly resampling the table's own slots.
- Stream: ``stable_seed("slots", model, language, use case, base seed)``; multiplicities from
  :func:`counterbench.stats.cluster_bootstrap.cluster_weights`, kept as float32 (≤ 60 MB for the
  full design of the built-in amount study, 39,150 prompts).
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt
import pandas as pd

from counterbench.stats.arrays import FloatArray
from counterbench.stats.cluster_bootstrap import cluster_weights
from counterbench.stats.seeding import stable_seed

__all__ = ["GROUP_COLUMNS", "SLOT_LABELS", "SlotResampler"]

GROUP_COLUMNS = ["model", "language", "use_case"]
SLOT_LABELS = ["profile_id", "question_variant"]


class SlotResampler:
    """Slot multiplicities (replicates × slots) per model × language × use case, made on demand."""

    def __init__(self, values: pd.DataFrame, n_boot: int, seed: int) -> None:
        self.n_boot = int(n_boot)
        self.seed = int(seed)
        keys = values[GROUP_COLUMNS + SLOT_LABELS].astype(str).drop_duplicates()
        keys = keys.sort_values(GROUP_COLUMNS + SLOT_LABELS, kind="stable")
        self._universe: dict[tuple[str, ...], pd.MultiIndex] = {
            tuple(str(k) for k in key): pd.MultiIndex.from_frame(block[SLOT_LABELS])
            for key, block in keys.groupby(GROUP_COLUMNS, sort=False)
        }
        self._cache: dict[tuple[str, ...], npt.NDArray[np.float32]] = {}

    def universe(self, group: tuple[str, ...]) -> pd.MultiIndex:
        """The sorted (profile, question variant) slots of ``group``."""
        return self._universe[group]

    def weights(self, group: tuple[str, ...], positions: npt.ArrayLike | None = None) -> FloatArray:
        """Multiplicities (n_boot × slots) of the universe ``positions`` (default: all) of ``group``."""
        if group not in self._cache:
            rng = np.random.default_rng(stable_seed("slots", *group, base_seed=self.seed))
            self._cache[group] = cluster_weights(rng, len(self._universe[group]), self.n_boot).astype(np.float32)
        full = self._cache[group]
        if positions is None:
            return full.astype(np.float64)
        return full[:, np.asarray(positions, dtype=np.int64)].astype(np.float64)

    def positions(self, frame: pd.DataFrame) -> npt.NDArray[np.int64]:
        """Position of each row's (profile, question variant) in its group's universe (−1: unknown)."""
        keys = frame[GROUP_COLUMNS + SLOT_LABELS].astype(str)
        table = pd.concat(
            [pd.DataFrame({**dict(zip(GROUP_COLUMNS, group, strict=True)),
                           **{c: index.get_level_values(c) for c in SLOT_LABELS}, "_pos": np.arange(len(index))})
             for group, index in self._universe.items()],
            ignore_index=True,
        )
        merged = keys.merge(table, on=GROUP_COLUMNS + SLOT_LABELS, how="left")
        return merged["_pos"].fillna(-1).to_numpy(dtype=np.int64)
