"""Keep API keys out of everything the engine writes (store, logs, messages).

Backends already keep their key out of their messages; this is the engine's second line of
defence: every string it stores (response text, error text, the recorded command) passes through
:meth:`Redactor.redact`, which replaces the value of any secret-looking environment variable
(``*_API_KEY``, ``*_TOKEN``, ``*_SECRET``, ...; from the process environment and the ``.env``
file the user named) with ``***``. The check is a substring test per secret, cheap enough for
every response.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from pathlib import Path

_SECRET_NAME = re.compile(r"(API_?KEY|TOKEN|SECRET|PASSWORD|PASSWD|CREDENTIAL|AUTH)", re.IGNORECASE)
_MIN_SECRET_LEN = 8


class Redactor:
    """Replaces known secret values with ``***``."""

    def __init__(self, secrets: set[str]) -> None:
        self.secrets = tuple(sorted((s for s in secrets if len(s) >= _MIN_SECRET_LEN), key=len, reverse=True))

    @classmethod
    def from_environment(cls, env: Mapping[str, str] | None = None, dotenv_path: Path | None = None) -> Redactor:
        values: dict[str, str] = dict(os.environ if env is None else env)
        if dotenv_path is not None and Path(dotenv_path).is_file():
            try:
                from dotenv import dotenv_values

                values.update({k: v for k, v in dotenv_values(dotenv_path).items() if v is not None})
            except Exception:  # the registry reports a bad env file
                pass
        return cls({v.strip() for k, v in values.items() if _SECRET_NAME.search(k) and v and v.strip()})

    def redact(self, text: str | None) -> str | None:
        if not text or not self.secrets:
            return text
        for secret in self.secrets:
            if secret in text:
                text = text.replace(secret, "***")
        return text
