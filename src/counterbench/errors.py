"""The one exception type for user mistakes.

A :class:`UserError` is raised for anything a user can fix (bad study file, unknown model string,
missing API key, unwritable path, ...). Its message is one line that says what is wrong and where;
the CLI prints it and exits with code 2, without a traceback. Bugs raise ordinary exceptions.
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable, Sequence


class UserError(Exception):
    """A mistake the user can fix. ``str(err)`` is a single, self-contained line."""

    def __init__(self, message: str) -> None:
        super().__init__(" ".join(message.split()))


def nearest(key: str, valid: Sequence[str]) -> str:
    """``"; did you mean 'x'?"`` for the closest valid key, or ``""`` (for a :class:`UserError`'s message)."""
    match = difflib.get_close_matches(key, list(valid), n=1, cutoff=0.6)
    return f"; did you mean '{match[0]}'?" if match else ""


def check_keys(obj: Iterable[object], allowed: Sequence[str], where: str, what: str = "key") -> None:
    """A :class:`UserError` for the first key of ``obj`` not in ``allowed``: ``where: unknown key 'x'; did you
    mean 'y'? (allowed: ...)`` (``what`` names a key: ``field``, ``column``, ...)."""
    unknown = sorted(str(k) for k in obj if k not in allowed)
    if unknown:
        raise UserError(f"{where}: unknown {what} '{unknown[0]}'{nearest(unknown[0], allowed)} "
                        f"(allowed: {', '.join(allowed)})")


def cannot_read(what: str, err: OSError) -> UserError:
    """The one-line error for a file that could not be opened or read: ``cannot read WHAT: no such file``
    (likewise ``it is a folder``, else the system's reason)."""
    if isinstance(err, FileNotFoundError):
        reason = "no such file"
    elif isinstance(err, IsADirectoryError):
        reason = "it is a folder"
    else:
        reason = f"{err.strerror or err}"
    return UserError(f"cannot read {what}: {reason}")
