"""Reading a user's YAML file (thresholds, study data, ...) with one clear error per way it can fail."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from counterbench.errors import UserError

__all__ = ["read_yaml_file"]


def read_yaml_file(path: Path, what: str) -> Any:
    """The parsed content of the YAML file ``path`` (``None`` when empty), ``what`` naming it in errors.

    A file that cannot be read, is not UTF-8 text or is not valid YAML raises
    :class:`~counterbench.errors.UserError`: e.g. ``thresholds file t.yaml is not valid YAML: ...``.
    """
    import yaml

    try:
        return yaml.safe_load(path.read_text(encoding="utf-8"))
    except UnicodeDecodeError as err:
        raise UserError(f"{what} {path} is not UTF-8 text (byte {err.start}); save it as UTF-8") from None
    except OSError as err:
        raise UserError(f"cannot read {what} {path}: {err.strerror or err}") from None
    except yaml.YAMLError as err:
        raise UserError(f"{what} {path} is not valid YAML: {str(err).splitlines()[0]}") from None
