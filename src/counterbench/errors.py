"""The one exception type for user mistakes.

A :class:`UserError` is raised for anything a user can fix (bad study file, unknown model string,
missing API key, unwritable path, ...). Its message is one line that says what is wrong and where;
the CLI prints it and exits with code 2, without a traceback. Bugs raise ordinary exceptions.
"""

from __future__ import annotations

import difflib
from collections.abc import Sequence


class UserError(Exception):
    """A mistake the user can fix. ``str(err)`` is a single, self-contained line."""

    def __init__(self, message: str) -> None:
        super().__init__(" ".join(message.split()))


def nearest(key: str, valid: Sequence[str]) -> str:
    """``"; did you mean 'x'?"`` for the closest valid key, or ``""`` (for a :class:`UserError`'s message)."""
    match = difflib.get_close_matches(key, list(valid), n=1, cutoff=0.6)
    return f"; did you mean '{match[0]}'?" if match else ""
