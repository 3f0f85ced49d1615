"""counterbench's version, for provenance records (kept at the bottom layer so any module may read it)."""

from importlib.metadata import PackageNotFoundError, version

try:
    __version__ = version("counterbench")
except PackageNotFoundError:  # running from a source tree
    __version__ = "0.0.0+unknown"
