"""The fast block generators (:mod:`counterbench.stats.streams`) are numpy's spawned generators, state for state."""

from __future__ import annotations

import numpy as np
import pytest

from counterbench.stats import streams
from counterbench.stats.bootstrap import _block_plan

SEEDS = [0, 1, 7, 2**31, 2**32 - 1, 2**32, 2**33 + 7, 2**63 - 1, 2**64, 2**100 + 3, 2**128 + 5, 2**200]


def _numpy(seed: int, n: int) -> list[np.random.Generator]:
    return [np.random.Generator(np.random.PCG64(c)) for c in np.random.SeedSequence(seed).spawn(n)]


def test_the_self_check_passes() -> None:
    assert streams.fast_spawn_matches()


@pytest.mark.parametrize("seed", SEEDS + [int(s) for s in np.random.default_rng(3).integers(0, 2**63, 60)])
def test_same_states_and_draws_as_numpys_spawn(seed: int) -> None:
    fast, slow = streams._fast_generators(seed, 41), _numpy(seed, 41)
    assert [f.bit_generator.state for f in fast] == [s.bit_generator.state for s in slow]
    assert np.array_equal(fast[40].integers(0, 53, (50, 53)), slow[40].integers(0, 53, (50, 53)))


def test_seed_words_are_numpys_generate_state() -> None:
    words = streams.child_seed_words(12345, 3, 5)
    expected = [np.random.SeedSequence(12345, spawn_key=(i,)).generate_state(4, np.uint64) for i in range(3, 8)]
    assert np.array_equal(words, np.array(expected))


def test_block_plan_keeps_its_streams() -> None:
    plan = _block_plan(2000, 99)
    assert [p[:2] for p in plan] == [(i * 50, (i + 1) * 50) for i in range(40)]
    assert [p[2].bit_generator.state for p in plan] == [g.bit_generator.state for g in _numpy(99, 40)]
    seq_plan = _block_plan(120, np.random.SeedSequence(99))  # a SeedSequence: numpy's own path
    assert [p[2].bit_generator.state for p in seq_plan] == [g.bit_generator.state for g in _numpy(99, 3)]


def test_a_wrong_check_falls_back_to_numpy(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(streams, "fast_spawn_matches", lambda: False)
    got = streams.spawned_generators(5, 3)
    assert [g.bit_generator.state for g in got] == [g.bit_generator.state for g in _numpy(5, 3)]
    assert not any(isinstance(g.bit_generator.seed_seq, streams._Words) for g in got)


def test_the_check_can_fail(monkeypatch: pytest.MonkeyPatch) -> None:
    streams.fast_spawn_matches.cache_clear()
    monkeypatch.setattr(streams, "_STATE_XOR", [x ^ 1 for x in streams._STATE_XOR])
    try:
        assert not streams.fast_spawn_matches()
    finally:
        streams.fast_spawn_matches.cache_clear()
