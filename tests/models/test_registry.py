"""Model strings -> backends: parsing, environment and .env handling, errors, list_backends."""

from __future__ import annotations

import importlib.util
import os
from pathlib import Path

import pytest

from counterbench.errors import UserError
from counterbench.models import Backend, create_backend, list_backends, parse_model_string
from counterbench.models.openai_compat import OpenAICompatBackend
from counterbench.models.registry import ollama_base_url
from counterbench.models.simulated import SimulatedBackend
from tests.models.conftest import PLANTED_KEY


@pytest.mark.parametrize(
    ("model", "kind", "name", "url"),
    [
        ("openai:gpt-4o-mini", "openai", "gpt-4o-mini", None),
        ("openrouter:google/gemini-3-flash", "openrouter", "google/gemini-3-flash", None),
        ("anthropic:claude-haiku-4.5", "anthropic", "claude-haiku-4.5", None),
        ("ollama:qwen2.5:0.5b", "ollama", "qwen2.5:0.5b", None),
        ("vllm:http://host:8000/v1:meta-llama/Llama-3-8B", "vllm", "meta-llama/Llama-3-8B", "http://host:8000/v1"),
        ("vllm:http://host:8000:qwen2.5:0.5b", "vllm", "qwen2.5:0.5b", "http://host:8000"),
        ("vllm:https://gpu.example.org/v1:m", "vllm", "m", "https://gpu.example.org/v1"),
        ("vllm:http://[::1]:8000/v1:m:x", "vllm", "m:x", "http://[::1]:8000/v1"),
        (
            "openai-compatible:http://127.0.0.1:8080/v1/:my-model",
            "openai-compatible",
            "my-model",
            "http://127.0.0.1:8080/v1",
        ),
        ("local", "local", "", None),
        ("local:/models/x.gguf", "local", "/models/x.gguf", None),
        ("sim:biased", "sim", "biased", None),
        ("  sim:fair  ", "sim", "fair", None),
    ],
)
def test_parse_model_strings(model: str, kind: str, name: str, url: str | None) -> None:
    spec = parse_model_string(model)
    assert (spec.kind, spec.model, spec.url) == (kind, name, url)


@pytest.mark.parametrize(
    ("model", "fragment"),
    [
        ("gpt-4o-mini", "did you mean openai:gpt-4o-mini"),
        ("bedrock:claude", "unknown model"),
        ("openai:", "model name after 'openai:' is missing"),
        ("vllm:host:8000:model", "expected vllm:URL:MODEL"),
        ("vllm:http://host:8000/v1", "expected vllm:URL:MODEL"),
        ("vllm:ftp://host/v1:m", "expected vllm:URL:MODEL"),
        ("vllm:http://host:99999/v1:m", "not a valid URL"),
        ("openai-compatible:http://user:pw@host/v1:m", "credentials"),
        ("", "unknown model"),
    ],
)
def test_bad_model_strings_are_one_line_user_errors(model: str, fragment: str) -> None:
    with pytest.raises(UserError) as err:
        create_backend(model, env={})
    assert fragment in str(err.value)
    assert "\n" not in str(err.value)


def test_credentials_in_url_are_refused() -> None:
    from counterbench.models.registry import check_url

    with pytest.raises(UserError, match="credentials"):
        check_url("http://user:secret@host/v1", "OPENAI_BASE_URL")


@pytest.mark.parametrize(
    ("model", "var"),
    [
        ("openai:gpt-4o-mini", "OPENAI_API_KEY"),
        ("openrouter:x/y", "OPENROUTER_API_KEY"),
        ("anthropic:claude-haiku-4.5", "ANTHROPIC_API_KEY"),
    ],
)
def test_missing_key_names_the_variable(model: str, var: str) -> None:
    if model.startswith("anthropic") and importlib.util.find_spec("anthropic") is None:
        pytest.skip("anthropic SDK not installed")
    with pytest.raises(UserError, match=var):
        create_backend(model, env={"PATH": "/usr/bin"})


def test_key_with_header_breaking_characters_is_refused_without_echoing_it() -> None:
    with pytest.raises(UserError) as err:
        create_backend("openai:gpt-x", env={"OPENAI_API_KEY": PLANTED_KEY + "\nX-Evil: 1"})
    assert PLANTED_KEY not in str(err.value)


def test_bad_base_url_from_env() -> None:
    with pytest.raises(UserError, match="OPENAI_BASE_URL"):
        create_backend("openai:gpt-x", env={"OPENAI_API_KEY": PLANTED_KEY, "OPENAI_BASE_URL": "not a url"})


def test_openai_backend_from_env_has_redacted_repr() -> None:
    backend = create_backend("openai:gpt-4o-mini", env={"OPENAI_API_KEY": PLANTED_KEY})
    assert isinstance(backend, OpenAICompatBackend)
    assert isinstance(backend, Backend)
    assert backend.name == "openai:gpt-4o-mini" and backend.base_url == "https://api.openai.com/v1"
    assert PLANTED_KEY not in repr(backend) and PLANTED_KEY not in str(vars(backend).get("name"))
    assert "***" in repr(backend)


def test_dotenv_file_is_read_without_touching_os_environ(tmp_path: Path) -> None:
    env_file = tmp_path / "keys.env"
    env_file.write_text(f"OPENROUTER_API_KEY={PLANTED_KEY}\nOPENROUTER_BASE_URL=http://127.0.0.1:9/api/v1\n")
    before = dict(os.environ)
    backend = create_backend("openrouter:x/y", dotenv_path=env_file, env={})
    assert isinstance(backend, OpenAICompatBackend)
    assert backend.base_url == "http://127.0.0.1:9/api/v1"
    assert dict(os.environ) == before


def test_dotenv_values_win_over_the_environment(tmp_path: Path) -> None:
    env_file = tmp_path / ".env"
    env_file.write_text("OPENAI_BASE_URL=http://127.0.0.1:9/v1\n")
    backend = create_backend(
        "openai:m", dotenv_path=env_file, env={"OPENAI_API_KEY": "k", "OPENAI_BASE_URL": "http://other/v1"}
    )
    assert isinstance(backend, OpenAICompatBackend) and backend.base_url == "http://127.0.0.1:9/v1"


def test_missing_dotenv_file(tmp_path: Path) -> None:
    with pytest.raises(UserError, match="does not exist"):
        create_backend("sim:fair", dotenv_path=tmp_path / "nope.env", env={})


def test_openai_key_is_never_sent_to_other_servers() -> None:
    env = {"OPENAI_API_KEY": PLANTED_KEY}
    for model in ("vllm:http://127.0.0.1:8000/v1:m", "openai-compatible:http://127.0.0.1:1/v1:m", "ollama:q"):
        backend = create_backend(model, env=env)
        assert isinstance(backend, OpenAICompatBackend)
        assert "Authorization" not in backend._headers


@pytest.mark.parametrize(
    ("host", "url"),
    [
        (None, "http://127.0.0.1:11434/v1"),
        ("0.0.0.0", "http://127.0.0.1:11434/v1"),
        ("gpu-box:1234", "http://gpu-box:1234/v1"),
        ("https://ollama.example.org", "https://ollama.example.org:11434/v1"),
        ("http://[::1]:5000", "http://[::1]:5000/v1"),
    ],
)
def test_ollama_host(host: str | None, url: str) -> None:
    assert ollama_base_url({"OLLAMA_HOST": host} if host else {}) == url


def test_sim_and_errors() -> None:
    backend = create_backend("sim:biased", env={})
    assert isinstance(backend, SimulatedBackend) and backend.simulated and backend.name == "sim:biased"
    with pytest.raises(UserError, match="presets: biased, fair"):
        create_backend("sim:nope", env={})
    with pytest.raises(UserError, match="no such simulation file"):
        create_backend("sim:/no/such/file.yaml", env={})


def test_local_path_errors(tmp_path: Path) -> None:
    if importlib.util.find_spec("xllamacpp") is None:
        with pytest.raises(UserError, match=r"counterbench\[local\]"):
            create_backend("local", env={})
        return
    with pytest.raises(UserError, match="no GGUF file"):
        create_backend(f"local:{tmp_path / 'missing.gguf'}", env={})
    with pytest.raises(UserError, match=r"\.gguf"):
        create_backend(f"local:{tmp_path / 'model.bin'}", env={})


def test_missing_anthropic_sdk_breaks_only_anthropic(monkeypatch: pytest.MonkeyPatch) -> None:
    real_find_spec = importlib.util.find_spec

    def fake_find_spec(name: str, *args: object) -> object:
        return None if name == "anthropic" else real_find_spec(name, *args)  # type: ignore[arg-type]

    monkeypatch.setattr(importlib.util, "find_spec", fake_find_spec)
    with pytest.raises(UserError, match=r"counterbench\[anthropic\]"):
        create_backend("anthropic:claude-x", env={"ANTHROPIC_API_KEY": PLANTED_KEY})
    assert create_backend("openai:m", env={"OPENAI_API_KEY": "k"}).name == "openai:m"
    assert create_backend("sim:fair", env={}).simulated
    rows = {row.kind: row for row in list_backends(env={}, probe=False)}
    assert not rows["anthropic"].ready and "counterbench[anthropic]" in rows["anthropic"].detail


def test_list_backends_reports_readiness() -> None:
    rows = list_backends(env={"OPENAI_API_KEY": PLANTED_KEY, "OLLAMA_HOST": "127.0.0.1:9"}, probe=True)
    by_kind = {row.kind: row for row in rows}
    assert set(by_kind) == {
        "openai", "openrouter", "anthropic", "vllm", "llamacpp", "ollama", "openai-compatible", "local", "sim"
    }
    assert by_kind["openai"].ready and not by_kind["openrouter"].ready
    assert "OPENROUTER_API_KEY" in by_kind["openrouter"].detail
    assert not by_kind["ollama"].ready and "not reachable" in by_kind["ollama"].detail
    assert by_kind["sim"].ready
    assert all(PLANTED_KEY not in f"{row}" for row in rows)
    for row in rows:
        parse_model_string(row.example)  # every example is a valid model string


def test_bad_timeout() -> None:
    with pytest.raises(UserError, match="timeout"):
        create_backend("sim:fair", env={}, timeout_s=0)
