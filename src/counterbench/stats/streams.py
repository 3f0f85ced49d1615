"""The bootstrap's per-block random generators, made fast and bit-identical to numpy's own.

Every bootstrap draws its replicates in blocks, each from ``Generator(PCG64(child))`` where ``child`` is
the block's child of ``numpy.random.SeedSequence(seed).spawn(n_blocks)``
(:func:`counterbench.stats.bootstrap._block_plan`). numpy makes each child in Python-level code (its
entropy is converted word by word), and the generic outcome tables run ~2,000 bootstraps of 40 blocks per
model: building the children took longer than drawing their numbers.

:func:`spawned_generators` gives the same generators: the children's entropy pools and PCG64 seed words
are computed for all children at once with numpy's published algorithm (``SeedSequence.mix_entropy`` and
``generate_state``, uint32 arithmetic), and each ``PCG64`` is seeded from its precomputed words through
the seed-sequence interface numpy offers (:class:`numpy.random.bit_generator.ISeedSequence`). So every
generator's state — and every number it draws — is the one numpy's ``spawn`` gives. (Its
``bit_generator.seed_seq`` is that stand-in, which cannot spawn further: a block's generator only draws.)

That is checked, not assumed: before first use the fast children of a few seeds are compared with
numpy's (:func:`fast_spawn_matches`); if a numpy version ever seeds differently, the plain numpy path is
used. ``tests/stats/test_streams.py`` compares the states of many seeds.
"""

from __future__ import annotations

import functools

import numpy as np
import numpy.typing as npt
from numpy.random.bit_generator import ISeedSequence

__all__ = ["child_seed_words", "fast_spawn_matches", "spawned_generators"]

_INIT_A = 0x43B0D7E5
_MULT_A = 0x931E8875
_INIT_B = 0x8B51F9DD
_MULT_B = 0x58F38DED
_MIX_MULT_L = 0xCA01F9DD
_MIX_MULT_R = 0x4973F715
_XSHIFT = 16
_POOL = 4
_MASK32 = (1 << 32) - 1



def _words(n: int) -> list[int]:
    """An entropy integer as numpy's uint32 words, lowest first (``0`` is one word)."""
    out = [n & _MASK32]
    n >>= 32
    while n > 0:
        out.append(n & _MASK32)
        n >>= 32
    return out


def _hashmix(value: int, const: int) -> tuple[int, int]:
    """numpy's ``hashmix`` on Python ints: (mixed value, next running constant)."""
    value ^= const
    const = (const * _MULT_A) & _MASK32
    value = (value * const) & _MASK32
    return value ^ (value >> _XSHIFT), const


def _mix(x: int, y: int) -> int:
    result = (_MIX_MULT_L * x - _MIX_MULT_R * y) & _MASK32
    return result ^ (result >> _XSHIFT)


@functools.cache
def _key_hashes(n_run: int, stop: int) -> tuple[npt.NDArray[np.uint64], ...]:
    """Per pool word: ``hashmix`` of every spawn key ``0 .. stop - 1`` as the child's last entropy word
    (its running constant depends only on how many words came before it, ``n_run`` of run entropy)."""
    const = _INIT_A
    for _ in range(_POOL + _POOL * (_POOL - 1) + (n_run - _POOL) * _POOL):
        const = (const * _MULT_A) & _MASK32
    keys = np.arange(stop, dtype=np.uint64)
    out = []
    for _ in range(_POOL):
        value = keys ^ np.uint64(const)
        const = (const * _MULT_A) & _MASK32
        value = (value * np.uint64(const)) & np.uint64(_MASK32)
        out.append(value ^ (value >> np.uint64(_XSHIFT)))
    return tuple(out)


#: generate_state(4, uint64): the 8 output words take pool words 0, 1, 2, 3, 0, 1, 2, 3, xor the running
#: constant, multiplied by its next value
_STATE_XOR: list[int] = []
_STATE_MUL: list[int] = []
_const = _INIT_B
for _ in range(2 * _POOL):
    _STATE_XOR.append(_const)
    _const = (_const * _MULT_B) & _MASK32
    _STATE_MUL.append(_const)
del _const


def child_seed_words(seed: int, start: int, n_children: int) -> npt.NDArray[np.uint64]:
    """(n_children × 4) uint64: what ``SeedSequence(seed, spawn_key=(i,)).generate_state(4, np.uint64)`` gives
    for ``i`` in ``start .. start + n_children - 1`` — the words that seed each child's PCG64.

    numpy's ``mix_entropy`` of a child's words (the seed's, padded to the pool size, then the spawn key):
    everything before the key is the same for every child (computed once, on Python ints); the key's hash
    per pool word depends on the key alone (cached); the last mixing and ``generate_state`` run on all
    children at once (uint64 arrays masked to 32 bits)."""
    run = _words(int(seed))
    if len(run) < _POOL:  # numpy pads the run entropy to the pool size when a spawn key follows
        run = run + [0] * (_POOL - len(run))
    if start < 0 or start + n_children > _MASK32 + 1:
        raise ValueError("spawn keys must lie in [0, 2**32)")
    const = _INIT_A
    pool = [0] * _POOL
    for i in range(_POOL):
        pool[i], const = _hashmix(run[i], const)
    for i_src in range(_POOL):
        for i_dst in range(_POOL):
            if i_src != i_dst:
                mixed, const = _hashmix(pool[i_src], const)
                pool[i_dst] = _mix(pool[i_dst], mixed)
    for i_src in range(_POOL, len(run)):
        for i_dst in range(_POOL):
            mixed, const = _hashmix(run[i_src], const)
            pool[i_dst] = _mix(pool[i_dst], mixed)
    mask = np.uint64(_MASK32)
    shift = np.uint64(_XSHIFT)
    keys = _key_hashes(len(run), start + n_children)
    # the key mixed into each pool word: (n_children × 4)
    key_hash = np.stack([k[start:] for k in keys], axis=1)
    pool_arr = (np.uint64(_MIX_MULT_L) * np.array(pool, dtype=np.uint64)[None, :]
                - np.uint64(_MIX_MULT_R) * key_hash) & mask
    pool_arr ^= pool_arr >> shift
    data = pool_arr[:, [0, 1, 2, 3, 0, 1, 2, 3]] ^ np.array(_STATE_XOR, dtype=np.uint64)
    data = (data * np.array(_STATE_MUL, dtype=np.uint64)) & mask
    data ^= data >> shift
    return np.ascontiguousarray(data[:, 0::2] | (data[:, 1::2] << np.uint64(32)), dtype=np.uint64)


class _Words(ISeedSequence):
    """A seed sequence that hands a PCG64 its precomputed seed words (and nothing else)."""

    __slots__ = ("words",)

    def __init__(self, words: npt.NDArray[np.uint64]) -> None:
        self.words = words

    def generate_state(self, n_words: int, dtype: object = np.uint32) -> npt.NDArray[np.uint64]:
        if int(n_words) != 4 or np.dtype(dtype) != np.dtype(np.uint64):  # type: ignore[call-overload]
            raise ValueError("precomputed seed words serve PCG64 (4 uint64 words) only")
        return np.ascontiguousarray(self.words, dtype=np.uint64)  # PCG64 reads the raw buffer


def _numpy_generators(seed: int, n_children: int) -> list[np.random.Generator]:
    children = np.random.SeedSequence(int(seed)).spawn(n_children)
    return [np.random.Generator(np.random.PCG64(child)) for child in children]


def _fast_generators(seed: int, n_children: int) -> list[np.random.Generator]:
    words = child_seed_words(seed, 0, n_children)
    # numpy takes any ISeedSequence (its stubs name SeedSequence only)
    return [np.random.Generator(np.random.PCG64(_Words(row)))  # type: ignore[arg-type]
            for row in words]


@functools.cache
def fast_spawn_matches() -> bool:
    """True when :func:`child_seed_words` gives numpy's PCG64 states (checked once, on a few seeds)."""
    try:
        for seed in (0, 1, 2**32 - 1, 2**32, 2**62 + 12345, 2**63 - 1):
            fast, slow = _fast_generators(seed, 3), _numpy_generators(seed, 3)
            if any(f.bit_generator.state != s.bit_generator.state for f, s in zip(fast, slow, strict=True)):
                return False
    except Exception:  # an interface numpy no longer offers: use numpy's own path
        return False
    return True


def spawned_generators(seed: int, n_children: int) -> list[np.random.Generator]:
    """``[Generator(PCG64(c)) for c in SeedSequence(seed).spawn(n_children)]``, with the same states (see the
    module notes); numpy's own path for a negative seed (which numpy refuses)."""
    s = int(seed)
    if s >= 0 and n_children > 0 and fast_spawn_matches():
        return _fast_generators(s, n_children)
    return _numpy_generators(s, n_children)
