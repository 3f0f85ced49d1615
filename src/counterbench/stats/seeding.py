"""Stable, per-cell random seeds.

Every random procedure in counterbench takes a seed, and every analysis cell (e.g. one model ×
language × axis) gets its own stream so that adding or removing a cell never changes the numbers of
another (every random stream is seeded from a stable hash of the cell's name).

Decisions:

- The hash is BLAKE2b (8-byte digest) of a canonical text encoding of the base seed and the cell's
  name parts; Python's built-in ``hash()`` is never used because it is salted per process.
- Each part is encoded as ``<type>:<repr-like text>`` and parts are joined with the ASCII unit
  separator, so ``("a", "bc")`` and ``("ab", "c")`` and ``(1,)`` / ``("1",)`` give different seeds.
  Floats use ``repr`` (shortest round-trip form); ``None`` and booleans have their own tags.
- Seeds are non-negative integers below 2**63, accepted by :func:`numpy.random.default_rng`.
"""

from __future__ import annotations

import hashlib
from collections.abc import Hashable

import numpy as np

__all__ = ["derive_rng", "stable_seed"]

_SEPARATOR = "\x1f"


def _encode_part(part: Hashable) -> str:
    """Encode one name part as tagged text so that different types never collide."""
    if part is None:
        return "none:"
    if isinstance(part, bool | np.bool_):
        return f"bool:{bool(part)}"
    if isinstance(part, int | np.integer):
        return f"int:{int(part)}"
    if isinstance(part, float | np.floating):
        return f"float:{float(part)!r}"
    if isinstance(part, str):
        return f"str:{part}"
    if isinstance(part, tuple):
        return "tuple:(" + _SEPARATOR.join(_encode_part(p) for p in part) + ")"
    return f"{type(part).__name__}:{part!s}"


def stable_seed(*parts: Hashable, base_seed: int = 0) -> int:
    """Derive a reproducible 63-bit seed from a base seed and a cell's name.

    Parameters
    ----------
    *parts:
        The cell's name, e.g. ``("gpt-4o-mini", "en", "Religion", "mean_gap")``. Strings, integers,
        floats, booleans, ``None`` and tuples of those are encoded canonically; other objects by
        ``str()``.
    base_seed:
        The run's base seed (the user's ``--seed``).

    Returns
    -------
    int
        A seed in ``[0, 2**63)``, identical across processes, machines and Python versions.
    """
    text = _SEPARATOR.join([_encode_part(int(base_seed)), *(_encode_part(p) for p in parts)])
    digest = hashlib.blake2b(text.encode("utf-8"), digest_size=8, person=b"counterbench").digest()
    return int.from_bytes(digest, "little") >> 1


def derive_rng(*parts: Hashable, base_seed: int = 0) -> np.random.Generator:
    """A :class:`numpy.random.Generator` seeded with :func:`stable_seed` of the same arguments."""
    return np.random.default_rng(stable_seed(*parts, base_seed=base_seed))
