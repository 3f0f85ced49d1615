"""Reading a user's YAML file (thresholds, study data, ...) with one clear error per way it can fail."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from counterbench.errors import UserError

__all__ = ["read_yaml_file"]


def read_yaml_file(path: Path, what: str | None = None) -> Any:
    """The parsed content of the YAML file ``path`` (``None`` when empty), ``what`` naming it in errors
    (default: the file's name).

    A file that cannot be read, is not UTF-8 text or is not valid YAML raises
    :class:`~counterbench.errors.UserError`: e.g. ``thresholds file t.yaml: not valid YAML (...)``.
    """
    import yaml

    what = what or path.name
    try:
        return yaml.safe_load(path.read_text(encoding="utf-8"))
    except UnicodeDecodeError as err:
        raise UserError(f"{what}: not UTF-8 text (byte {err.start}); save it as UTF-8") from None
    except OSError as err:
        raise UserError(f"cannot read {what}: {err.strerror or err}") from None
    except yaml.YAMLError as err:
        raise UserError(f"{what}: not valid YAML ({str(err).splitlines()[0]})") from None
