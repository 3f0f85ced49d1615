"""Exact swap (randomisation) tests for matched comparisons: the p-value behind a mark.

A counterfactual audit asks one question of a matched comparison — two identities answered in the
same slot (profile × question), or one slot answered in two languages or under two prompts: *does
the condition change the answer?* Under that null the two answers of a slot are exchangeable, so
swapping them slot by slot gives every arrangement the same probability. The swap test compares the
observed statistic with the statistic of every arrangement (all ``2ⁿ`` when ``n`` slots allow, else
``n_swaps`` random ones): its p-value is exact under the null for any answer law — rounded answers,
heavy tails, slots of very different levels, few slots — which the t-test on a bootstrap standard
error (:mod:`counterbench.stats.inference`) is only approximately. That matters where
Benjamini–Hochberg makes its first mark, at α/m: there an approximate p that is 10% too small puts
the family-wise false-star rate at 5.5% rather than 5% (docs/analysis.md gives the simulation).

Decisions:

- **p-value**: the share of arrangements whose statistic is at least as far from 0 as the observed
  one (two-sided), the observed arrangement included: exact with all ``2ⁿ`` arrangements; with
  random arrangements ``(1 + k) / (1 + B)`` (Phipson and Smyth, *Permutation p-values should never
  be zero*, 2010), which is never below the exact p in expectation — never anti-conservative.
- **Smallest p**: ``2 / 2ⁿ`` (the observed arrangement and its mirror): 3 slots cannot give less
  than 0.25, 10 slots 0.002; with random arrangements ``1 / (1 + B)``.
- **Arrangements are shared**: the random arrangements of ``n`` slots are drawn once per seed and
  ``n`` (:class:`SwapTest`) and used by every test of that size, so an analysis is reproducible and
  fast; each test's p is still exact in the sense above.
- **Ties**: an arrangement counts as "as far" when it is within 1e-9 (relative) of the observed
  distance, so answers rounded to whole numbers do not lose their ties to float error.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np
import numpy.typing as npt

from counterbench.stats.arrays import FloatArray

__all__ = ["DEFAULT_SWAPS", "EXACT_UP_TO", "LabelPermutationTest", "SwapTest", "attainable_level", "fewest_testable"]

Statistic = Callable[[FloatArray], FloatArray]

#: random arrangements per test when 2ⁿ is too many to enumerate
DEFAULT_SWAPS = 9999
#: the largest number of slots whose 2ⁿ arrangements are all enumerated
EXACT_UP_TO = 13
#: random arrangements are drawn this many slots (columns) at a time
_BLOCK = 64
#: blocks of random arrangements kept in memory (later ones are drawn again when needed)
_KEPT_BLOCKS = 8


def attainable_level(n_slots: int, alpha: float, exact_up_to: int = EXACT_UP_TO, n_swaps: int = DEFAULT_SWAPS) -> float:
    """The largest level ≤ ``alpha`` at which a swap test of ``n_slots`` slots rejects with exactly that
    probability under the null: with all ``2ⁿ`` arrangements p moves in steps of ``2 / 2ⁿ`` (an
    arrangement and its mirror are equally far from 0), with random ones in steps of ``1 / (1 + B)``.
    0 when even the smallest p is above ``alpha``."""
    if n_slots <= 0:
        return 0.0
    step = 2.0 / 2.0**n_slots if n_slots <= exact_up_to else 1.0 / (1.0 + n_swaps)
    return float(np.floor(alpha / step + 1e-9) * step)


class SwapTest:
    """Two-sided swap tests of matched slots, with arrangements shared by tests of the same size."""

    def __init__(self, seed: int, n_swaps: int = DEFAULT_SWAPS, exact_up_to: int = EXACT_UP_TO) -> None:
        self.seed = int(seed)
        self.n_swaps = int(n_swaps)
        self.exact_up_to = int(exact_up_to)
        self._exact: dict[int, FloatArray] = {}
        self._blocks: dict[int, FloatArray] = {}

    def arrangements(self, n: int) -> tuple[FloatArray, bool]:
        """(rows × n matrix of 0/1 — 1: the slot's two answers swapped, exact?) for ``n`` slots.

        Random arrangements: block ``k`` of :data:`_BLOCK` columns (slots ``64k`` to ``64k + 63``) is
        drawn from the seed and ``k`` alone, so the arrangements of ``n`` slots are the first ``n``
        columns whatever sizes were asked for before.
        """
        if n <= self.exact_up_to:
            if n not in self._exact:
                codes = np.arange(2**n, dtype=np.int64)
                self._exact[n] = ((codes[:, None] >> np.arange(n, dtype=np.int64)) & 1).astype(np.float64)
            return self._exact[n], True
        blocks = [self._block(k) for k in range(-(-n // _BLOCK))]
        return np.hstack(blocks)[:, :n], False

    def _block(self, k: int) -> FloatArray:
        """Columns ``64k`` to ``64k + 63`` of the random arrangements; the first :data:`_KEPT_BLOCKS` are
        kept (512 slots: 41 MB), later ones drawn again when needed, so memory stays bounded however
        many slots a comparison has."""
        block = self._blocks.get(k)
        if block is None:
            rng = np.random.default_rng([self.seed, k])
            block = np.asfortranarray(rng.integers(0, 2, size=(self.n_swaps, _BLOCK), dtype=np.int8), dtype=np.float64)
            if k < _KEPT_BLOCKS:
                self._blocks[k] = block
        return block

    def _swapped_shift(self, diff: FloatArray) -> tuple[FloatArray, bool]:
        """(rows × columns: how much each arrangement moves the summed statistics, exact?)."""
        n = diff.shape[0]
        if n <= self.exact_up_to:
            swaps, _ = self.arrangements(n)
            return swaps @ diff, True
        # 0 + P0 + P1 + ...: the first product is the sum's start (+ 0.0: the same bits as 0 + P0, a zero's
        # sign included), later ones are made into one reused array — no zeroed array and no new
        # n_swaps × columns array per block, whose allocation cost more than the products
        shift = self._block(0)[:, : min(n, _BLOCK)] @ diff[:_BLOCK]
        shift += 0.0
        part: FloatArray | None = None
        for k in range(1, -(-n // _BLOCK)):
            rows = diff[k * _BLOCK : (k + 1) * _BLOCK]
            part = np.matmul(self._block(k)[:, : rows.shape[0]], rows, out=part)
            shift += part
        return shift, False

    def pvalue(self, first: npt.ArrayLike, second: npt.ArrayLike, statistic: Statistic) -> float:
        """p of "swapping the two conditions changes nothing" for one comparison.

        ``first``/``second``: per matched slot (rows), the sufficient statistics (columns) of the two
        conditions; ``statistic`` maps summed sufficient statistics (rows × columns) to one statistic
        per row — the comparison's estimate is ``statistic(first.sum(axis=0))``, and a swap of slot
        ``i`` exchanges ``first[i]`` and ``second[i]``. NaN when there is no slot or the observed
        statistic is not finite.
        """
        return self.pvalues([(first, second, statistic)])[0]

    def pvalues(self, tests: Sequence[tuple[npt.ArrayLike, npt.ArrayLike, Statistic]]) -> list[float]:
        """:meth:`pvalue` of each ``(first, second, statistic)``. The comparisons of the same number of
        slots share one product with their arrangements (their differences side by side), so many small
        comparisons cost a few large matrix products instead of one each; every p is the one
        :meth:`pvalue` gives alone (a product's column does not depend on the columns beside it)."""
        out = [float("nan")] * len(tests)
        pending: dict[int, list[tuple[int, FloatArray, FloatArray, Statistic, float]]] = {}
        for i, (first, second, statistic) in enumerate(tests):
            a = np.atleast_2d(np.asarray(first, dtype=np.float64))
            b = np.atleast_2d(np.asarray(second, dtype=np.float64))
            if a.shape != b.shape:
                raise ValueError(f"swap test: the two conditions' statistics differ in shape {a.shape} vs {b.shape}")
            if a.shape[0] == 0:
                continue
            with np.errstate(divide="ignore", invalid="ignore"):
                observed = float(np.asarray(statistic(a.sum(axis=0)[None, :]), dtype=np.float64).ravel()[0])
            if np.isfinite(observed):
                pending.setdefault(a.shape[0], []).append((i, a, b - a, statistic, observed))
        for group in pending.values():
            columns = [_distinct_columns(diff) for _, _, diff, _, _ in group]
            stacked = [diff[:, keep] for (_, _, diff, _, _), (keep, _, _) in zip(group, columns, strict=True)]
            shift, exact = self._swapped_shift(np.hstack(stacked))
            start = 0
            for (i, a, _, statistic, observed), (keep, source, sign) in zip(group, columns, strict=True):
                part = shift[:, start + source] * sign
                start += len(keep)
                with np.errstate(divide="ignore", invalid="ignore"):
                    values = np.asarray(statistic(a.sum(axis=0)[None, :] + part), dtype=np.float64).ravel()
                limit = abs(observed) * (1.0 - 1e-9) - 1e-300
                extreme = int(np.count_nonzero(np.abs(np.nan_to_num(values, nan=0.0)) >= limit))
                out[i] = float(min(1.0, extreme / values.size)) if exact else float(
                    min(1.0, (1 + extreme) / (1 + values.size)))
        return out

    def pvalue_of_sum(self, contributions: npt.ArrayLike) -> float:
        """p of a statistic that is a sum of per-slot contributions which change sign under a swap
        (e.g. a weighted mean of per-slot signed gaps)."""
        return self.pvalues_of_sums([contributions])[0]

    def pvalues_of_sums(self, contributions: Sequence[npt.ArrayLike]) -> list[float]:
        """:meth:`pvalue_of_sum` of each entry, sharing products as :meth:`pvalues` does."""
        columns = [np.asarray(c, dtype=np.float64).reshape(-1, 1) for c in contributions]
        return self.pvalues([(c, -c, _first_column) for c in columns])


class LabelPermutationTest:
    """Two-sided permutation tests of two *unmatched* groups (e.g. the profiles of two levels of an
    attribute): the studentized statistic (Welch's t) of the observed labels against ``n_perm`` random
    relabellings of the pooled units, p = ``(1 + k) / (1 + n_perm)`` as :class:`SwapTest`'s random
    arrangements. Exact under "the label changes nothing" for any answer law; studentizing keeps it
    asymptotically valid when the two groups' variances differ (Janssen, *Studentized permutation tests
    for non-i.i.d. hypotheses*, 1997). Welch's t-distribution p-value is not: with few units on one side
    and discrete answers its far tail — where Benjamini–Hochberg makes its first mark — is too light
    (1.5× too many p < 0.00025 in the intersectional study's simulation). The relabellings of sizes ``(n_a, n_b)``
    are drawn once per seed and sizes and shared by every test of those sizes.
    """

    def __init__(self, seed: int, n_perm: int = DEFAULT_SWAPS) -> None:
        self.seed = int(seed)
        self.n_perm = int(n_perm)
        self._cache: dict[tuple[int, int], FloatArray] = {}

    def selections(self, n_a: int, n_b: int) -> FloatArray:
        """(n_perm × (n_a + n_b)) 0/1 matrix: 1 where a relabelling puts the unit in the first group."""
        key = (int(n_a), int(n_b))
        if key not in self._cache:
            rng = np.random.default_rng([self.seed, n_a, n_b])
            self._cache[key] = _smallest(rng.random((self.n_perm, n_a + n_b)), int(n_a))
        return self._cache[key]

    def pvalue(self, a: npt.ArrayLike, b: npt.ArrayLike) -> float:
        """p of "the two groups' labels are exchangeable" by Welch's t; NaN with < 2 units a side or t undefined."""
        x = np.asarray(a, dtype=np.float64).ravel()
        y = np.asarray(b, dtype=np.float64).ravel()
        x, y = x[np.isfinite(x)], y[np.isfinite(y)]
        if x.size < 2 or y.size < 2:
            return float("nan")
        pooled = np.concatenate([x, y])
        shift = pooled.mean()
        pooled = pooled - shift  # sums of squares without cancellation
        observed = _welch(np.array([x.sum() - x.size * shift]), np.array([((x - shift) ** 2).sum()]),
                          pooled.sum(), (pooled**2).sum(), x.size, y.size)[0]
        if not np.isfinite(observed):
            return float("nan")
        pick = self.selections(x.size, y.size)
        values = _welch(pick @ pooled, pick @ (pooled**2), pooled.sum(), (pooled**2).sum(), x.size, y.size)
        limit = abs(observed) * (1.0 - 1e-9) - 1e-300
        extreme = int(np.count_nonzero(np.abs(np.nan_to_num(values, nan=0.0)) >= limit))
        return float(min(1.0, (1 + extreme) / (1 + values.size)))


def _smallest(draws: FloatArray, k: int) -> FloatArray:
    """0/1 matrix of ``draws``' shape: 1 at each row's ``k`` smallest draws — the first ``k`` of the row's
    argsort. Each row's k-th smallest draw (a partition: linear, where the argsort and its scatter were
    4× slower) bounds them; a row whose draws tie across that bound (not seen: the draws are 53-bit) is
    picked by its argsort instead, so the picks are the argsort's in every case."""
    if k <= 0 or k >= draws.shape[1]:
        return np.full(draws.shape, 1.0 if k > 0 else 0.0)
    below = draws <= np.partition(draws, k - 1, axis=1)[:, k - 1 : k]
    picked = below.astype(np.float64)
    for row in np.flatnonzero(np.count_nonzero(below, axis=1) != k):
        picked[row] = 0.0
        picked[row, np.argsort(draws[row])[:k]] = 1.0
    return picked


def _welch(sum_a: FloatArray, sq_a: FloatArray, total: float, total_sq: float, n_a: int, n_b: int) -> FloatArray:
    """Welch's t of group a versus the rest from group sums and sums of squares (vectorised over rows)."""
    sum_b, sq_b = total - sum_a, total_sq - sq_a
    mean_a, mean_b = sum_a / n_a, sum_b / n_b
    var_a = np.maximum(sq_a - n_a * mean_a**2, 0.0) / (n_a - 1)
    var_b = np.maximum(sq_b - n_b * mean_b**2, 0.0) / (n_b - 1)
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.asarray((mean_a - mean_b) / np.sqrt(var_a / n_a + var_b / n_b), dtype=np.float64)


def fewest_testable(alpha: float = 0.05) -> int:
    """The fewest matched slots whose swap test can give p ≤ ``alpha`` at all (``2 / 2ⁿ ≤ alpha``):
    6 at 0.05. Below it a comparison cannot be marked whatever the data say, so a report calls it
    untested ("too few ... to test") rather than showing a blank that reads as "no difference"."""
    return max(1, int(np.ceil(np.log2(2.0 / float(alpha)) - 1e-12)))


def _distinct_columns(diff: FloatArray) -> tuple[list[int], npt.NDArray[np.int64], FloatArray]:
    """(columns of ``diff`` to multiply, and per column: which of them it is and its sign, 0 for an
    all-zero column). A comparison's differences repeat: the reference's columns are the comparison's
    negated, and a count column is 0 when every slot has as many answers of both conditions; the
    arrangements' product of a negated column is the negated product and of a zero column 0, exactly,
    so each distinct column is multiplied once."""
    m = diff.shape[1]
    keep: list[int] = []
    source = np.zeros(m, dtype=np.int64)
    sign = np.zeros(m)
    for j in range(m):
        col = diff[:, j]
        if not col.any():
            continue
        for pos, k in enumerate(keep):
            if np.array_equal(col, diff[:, k]):
                source[j], sign[j] = pos, 1.0
                break
            if np.array_equal(col, -diff[:, k]):
                source[j], sign[j] = pos, -1.0
                break
        else:
            source[j], sign[j] = len(keep), 1.0
            keep.append(j)
    if not keep:  # nothing moves: one zero column keeps the product's shape
        keep = [0]
    return keep, source, sign


def _first_column(totals: FloatArray) -> FloatArray:
    return np.asarray(totals[:, 0], dtype=np.float64)
