"""Shared CLI option logic."""

from __future__ import annotations

from counterbench.commands.common import filters_from_options, resolve_structured


def test_structured_defaults_on_only_for_the_embedded_model() -> None:
    assert resolve_structured(None, ["local"]) is True
    assert resolve_structured(None, ["local:/models/x.gguf"]) is True
    assert resolve_structured(None, ["local", "openai:gpt-4o-mini"]) is False
    assert resolve_structured(None, ["sim:biased"]) is False
    assert resolve_structured(False, ["local"]) is False
    assert resolve_structured(True, ["openai:gpt-4o-mini"]) is True


def test_empty_option_lists_mean_all() -> None:
    filters = filters_from_options(use_case=[], language=["en"])
    assert filters.use_case is None
    assert filters.language == ["en"]
