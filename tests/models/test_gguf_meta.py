"""GGUF metadata: a model file without a chat template is warned about at load and badged in the report.

The fixtures are real GGUF headers written here (magic, version 3, counts, typed key/value pairs, an
array of strings like a vocabulary); the embedded SmolLM2 GGUF is read as a file that has a template.
"""

from __future__ import annotations

import struct
from pathlib import Path

import pandas as pd
import pytest

from counterbench.models.gguf_meta import GGUFError, gguf_metadata, has_chat_template, model_file_notes
from counterbench.models.llamacpp import default_model_path, engine_available
from counterbench.report.context import ReportInput, build_context, model_kind


def _string(text: str) -> bytes:
    data = text.encode()
    return struct.pack("<Q", len(data)) + data


def write_gguf(path: Path, template: str | None) -> Path:
    pairs = [(_string("general.architecture"), struct.pack("<I", 8) + _string("gemma3")),
             (_string("gemma3.context_length"), struct.pack("<I", 4) + struct.pack("<I", 32768)),
             (_string("tokenizer.ggml.tokens"),
              struct.pack("<I", 9) + struct.pack("<IQ", 8, 3) + b"".join(_string(t) for t in ("<pad>", "a", "b"))),
             (_string("tokenizer.ggml.scores"), struct.pack("<I", 9) + struct.pack("<IQ", 6, 3) + b"\0" * 12)]
    if template is not None:
        pairs.append((_string("tokenizer.chat_template"), struct.pack("<I", 8) + _string(template)))
    body = b"".join(k + v for k, v in pairs)
    path.write_bytes(b"GGUF" + struct.pack("<IQQ", 3, 0, len(pairs)) + body)
    return path


def test_metadata_is_read_and_a_missing_template_is_named(tmp_path: Path):
    bare = write_gguf(tmp_path / "gemma-3-270m.gguf", None)
    meta = gguf_metadata(bare)
    assert meta["general.architecture"] == "gemma3" and meta["gemma3.context_length"] == 32768
    assert meta["tokenizer.ggml.tokens"] == "[3 items]" and meta["tokenizer.ggml.scores"] == "[3 items]"
    assert not has_chat_template(bare) and model_file_notes(bare) == ["no chat template"]
    chat = write_gguf(tmp_path / "chat.gguf", "{% for m in messages %}{{ m.content }}{% endfor %}")
    assert has_chat_template(chat) and model_file_notes(chat) == []


def test_a_file_that_is_not_gguf_is_refused_and_gets_no_badge(tmp_path: Path):
    junk = tmp_path / "x.gguf"
    junk.write_bytes(b"not a model at all")
    with pytest.raises(GGUFError):
        gguf_metadata(junk)
    assert model_file_notes(junk) == [] and model_file_notes(tmp_path / "missing.gguf") == []
    cut = write_gguf(tmp_path / "cut.gguf", "t")
    cut.write_bytes(cut.read_bytes()[:40])
    with pytest.raises(GGUFError, match="ends inside"):
        gguf_metadata(cut)


@pytest.mark.skipif(default_model_path() is None, reason="the embedded GGUF is not installed")
def test_the_embedded_model_has_a_chat_template():
    assert has_chat_template(default_model_path())  # type: ignore[arg-type]


@pytest.mark.skipif(not engine_available(), reason="xllamacpp is not installed")
def test_loading_a_file_without_a_template_warns_and_names_it_after_the_file(tmp_path: Path,
                                                                             capsys: pytest.CaptureFixture[str]):
    from counterbench.models import create_backend

    bare = write_gguf(tmp_path / "gemma-3-270m.gguf", None)
    backend = create_backend(f"local:{bare}", env={})
    err = capsys.readouterr().err
    assert "warning: gemma-3-270m: gemma-3-270m.gguf has no tokenizer.chat_template" in err
    assert backend.name == "gemma-3-270m" and backend.spec == f"local:{bare}"  # type: ignore[attr-defined]
    chat = write_gguf(tmp_path / "chat.gguf", "{{ messages }}")
    create_backend(f"local:{chat}", env={})
    assert "chat_template" not in capsys.readouterr().err


def test_the_report_badges_a_model_file_without_a_template(tmp_path: Path):
    bare = write_gguf(tmp_path / "gemma-3-270m.gguf", None)
    summary = {"models": {"gemma-3-270m": {}, "local": {}, "gpt": {}},
               "model_specs": {"gemma-3-270m": f"local:{bare}"}}
    ctx = build_context(ReportInput({"parse_health": pd.DataFrame()}, summary))
    assert ctx.kind_label("gemma-3-270m") == "local model file · no chat template"
    assert ctx.kind_label("local") == "demo model" and ctx.kind_label("gpt") == "real"
    assert model_kind("local", False, "local:/elsewhere/local.gguf") == "local"
    from counterbench.report.methods import banners

    assert any(b.title == "No chat template: gemma-3-270m." for b in banners(ctx))
