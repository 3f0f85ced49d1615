"""Files counterbench writes get the permissions any file the user creates gets (``0666 & ~umask``).

Atomic writes go through :func:`tempfile.mkstemp`, which creates files readable by their owner only
(0600); renaming keeps that mode, so teammates could not read tables, exports or analyses while
the report next to them was world-readable. :func:`as_user_file` fixes the mode before the rename.
"""

from __future__ import annotations

import os
from pathlib import Path


def current_umask() -> int:
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def as_user_file(path: Path | str) -> None:
    """Give ``path`` the mode a newly created file gets under the current umask."""
    os.chmod(path, 0o666 & ~current_umask())
