"""What a GGUF model file says about itself: its metadata keys, read from the file's header.

A GGUF file starts with ``GGUF``, a version (``uint32``, 2 or 3), the tensor count and the metadata count
(``uint64`` each), then the metadata as key (a length-prefixed UTF-8 string), value type (``uint32``) and
value, little-endian (the GGUF specification in the ggml repository). Only the header is read — never the
weights — and arrays (the tokenizer's vocabulary) are skipped, not kept. Nothing is executed: a chat
template is read as text.

Why it matters: llama.cpp formats chat messages with the file's ``tokenizer.chat_template``; a file
without one (a base model, or a conversion that dropped it) is silently given ChatML, whose markers are
plain text to a model not trained on them — it echoes the prompt or writes ``<|im_start|>`` into its
answers. :func:`model_file_notes` names that, for the warning at load and the report's badge.
"""

from __future__ import annotations

import struct
from pathlib import Path
from typing import Any, BinaryIO

__all__ = ["CHAT_TEMPLATE_KEY", "GGUFError", "gguf_metadata", "has_chat_template", "model_file_notes"]

CHAT_TEMPLATE_KEY = "tokenizer.chat_template"
NO_CHAT_TEMPLATE = "no chat template"
_SCALARS = {0: "<B", 1: "<b", 2: "<H", 3: "<h", 4: "<I", 5: "<i", 6: "<f", 7: "<?", 10: "<Q", 11: "<q", 12: "<d"}
_STRING, _ARRAY = 8, 9
#: a sanity cap on one string's length (a chat template is a few KB): a corrupt length is refused, not read
_MAX_STRING = 1 << 24


class GGUFError(ValueError):
    """The file is not a GGUF file this reader understands."""


def _read(handle: BinaryIO, size: int) -> bytes:
    data = handle.read(size)
    if len(data) != size:
        raise GGUFError("the file ends inside its metadata")
    return data


def _unpack(handle: BinaryIO, fmt: str) -> Any:
    return struct.unpack(fmt, _read(handle, struct.calcsize(fmt)))[0]


def _string(handle: BinaryIO) -> str:
    size = _unpack(handle, "<Q")
    if size > _MAX_STRING:
        raise GGUFError(f"a metadata string of {size} bytes")
    return _read(handle, size).decode("utf-8", errors="replace")


def _value(handle: BinaryIO, kind: int, keep: bool) -> Any:
    if kind in _SCALARS:
        return _unpack(handle, _SCALARS[kind])
    if kind == _STRING:
        if keep:
            return _string(handle)
        handle.seek(_unpack(handle, "<Q"), 1)
        return None
    if kind == _ARRAY:
        item, count = _unpack(handle, "<I"), _unpack(handle, "<Q")
        if item in _SCALARS:  # fixed size: skipped in one seek
            handle.seek(struct.calcsize(_SCALARS[item]) * count, 1)
        else:
            for _ in range(count):
                _value(handle, item, keep=False)
        return f"[{count} items]"
    raise GGUFError(f"unknown metadata value type {kind}")


def gguf_metadata(path: Path | str) -> dict[str, Any]:
    """Every metadata key of the GGUF file at ``path`` with its value (arrays as ``"[N items]"``).

    Raises :class:`GGUFError` for a file that is not GGUF (or is cut short), ``OSError`` when it cannot be read.
    """
    with open(path, "rb") as handle:
        if handle.read(4) != b"GGUF":
            raise GGUFError(f"{path} is not a GGUF file (no GGUF magic)")
        version = _unpack(handle, "<I")
        if version not in (2, 3):
            raise GGUFError(f"{path}: GGUF version {version} is not supported (2 or 3)")
        _unpack(handle, "<Q")  # tensor count
        n_keys = _unpack(handle, "<Q")
        out: dict[str, Any] = {}
        for _ in range(n_keys):
            key = _string(handle)
            out[key] = _value(handle, _unpack(handle, "<I"), keep=True)
        return out


def has_chat_template(path: Path | str) -> bool:
    """Whether the file carries a non-empty ``tokenizer.chat_template``."""
    template = gguf_metadata(path).get(CHAT_TEMPLATE_KEY)
    return isinstance(template, str) and bool(template.strip())


def model_file_notes(path: Path | str) -> list[str]:
    """Badges for a model file: ``no chat template`` when it lacks one; nothing for an unreadable file
    (llama.cpp says what is wrong with it when it loads)."""
    try:
        return [] if has_chat_template(path) else [NO_CHAT_TEMPLATE]
    except (OSError, GGUFError):
        return []
