"""The built-in backend factories: a parsed model string and the environment -> a backend.

Each is registered by reference in :data:`counterbench.models.registry.BACKENDS`, so this module and a
backend's own module are imported only when a model string of its kind is used.
"""

from __future__ import annotations

import importlib.util
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from counterbench.errors import UserError
from counterbench.models.base import Backend
from counterbench.models.registry import (
    HTTP_CLIENT_VAR,
    OPENAI_URL,
    OPENROUTER_HEADERS,
    OPENROUTER_URL,
    ModelSpec,
    api_key,
    check_url,
    ollama_base_url,
)


def _openai_compat(spec: ModelSpec, env: Mapping[str, str], *, base_url: str | None, **options: Any) -> Backend:
    from counterbench.models.openai_compat import HTTPClientChoice, OpenAICompatBackend

    if base_url is None:  # URL kinds always carry one (checked by parse_model_string)
        raise UserError(f"model {spec.raw!r}: no base URL")
    client = (env.get(HTTP_CLIENT_VAR) or "auto").strip().lower()
    if client not in ("auto", "aiohttp"):
        raise UserError(f"{HTTP_CLIENT_VAR} must be 'auto' or 'aiohttp', got {client!r}")
    http_client: HTTPClientChoice = "aiohttp" if client == "aiohttp" else "auto"
    if len(spec.replicas) > 1:
        from counterbench.models.replicas import ReplicaBackend

        return ReplicaBackend([OpenAICompatBackend(name=spec.raw, model=spec.model, base_url=url,
                                                   http_client=http_client, family=spec.kind, **options)
                               for url in spec.replicas])
    return OpenAICompatBackend(
        name=spec.raw, model=spec.model, base_url=base_url, http_client=http_client, family=spec.kind, **options
    )


def make_openai(spec: ModelSpec, env: Mapping[str, str], timeout_s: float) -> Backend:
    key = api_key(env, "OPENAI_API_KEY", spec.raw, required=True)
    base = check_url(env.get("OPENAI_BASE_URL") or OPENAI_URL, "OPENAI_BASE_URL")
    return _openai_compat(
        spec, env, base_url=base, api_key=key, timeout_s=timeout_s, max_tokens_field="max_completion_tokens"
    )


def make_openrouter(spec: ModelSpec, env: Mapping[str, str], timeout_s: float) -> Backend:
    key = api_key(env, "OPENROUTER_API_KEY", spec.raw, required=True)
    base = check_url(env.get("OPENROUTER_BASE_URL") or OPENROUTER_URL, "OPENROUTER_BASE_URL")
    return _openai_compat(
        spec,
        env,
        base_url=base,
        api_key=key,
        timeout_s=timeout_s,
        extra_headers=OPENROUTER_HEADERS,
        reasoning_style="openrouter",
    )


def make_vllm(spec: ModelSpec, env: Mapping[str, str], timeout_s: float) -> Backend:
    key = api_key(env, "VLLM_API_KEY", spec.raw, required=False)
    return _openai_compat(spec, env, base_url=spec.url, api_key=key, timeout_s=timeout_s)


def make_llamacpp(spec: ModelSpec, env: Mapping[str, str], timeout_s: float) -> Backend:
    key = api_key(env, "LLAMACPP_API_KEY", spec.raw, required=False)
    return _openai_compat(spec, env, base_url=spec.url, api_key=key, timeout_s=timeout_s)


def make_openai_compatible(spec: ModelSpec, env: Mapping[str, str], timeout_s: float) -> Backend:
    key = api_key(env, "OPENAI_COMPATIBLE_API_KEY", spec.raw, required=False)
    return _openai_compat(spec, env, base_url=spec.url, api_key=key, timeout_s=timeout_s)


def make_ollama(spec: ModelSpec, env: Mapping[str, str], timeout_s: float) -> Backend:
    key = api_key(env, "OLLAMA_API_KEY", spec.raw, required=False)
    return _openai_compat(spec, env, base_url=ollama_base_url(env), api_key=key, timeout_s=timeout_s)


def make_anthropic(spec: ModelSpec, env: Mapping[str, str], timeout_s: float) -> Backend:
    if importlib.util.find_spec("anthropic") is None:
        raise UserError(f"model {spec.raw!r} needs the anthropic SDK: pip install 'counterbench[anthropic]'")
    key = api_key(env, "ANTHROPIC_API_KEY", spec.raw, required=True)
    base = env.get("ANTHROPIC_BASE_URL")
    from counterbench.models.anthropic_backend import AnthropicBackend

    return AnthropicBackend(
        name=spec.raw,
        model=spec.model,
        api_key=key or "",
        base_url=check_url(base, "ANTHROPIC_BASE_URL") if base else None,
        timeout_s=timeout_s,
    )


def make_local(spec: ModelSpec, env: Mapping[str, str], timeout_s: float) -> Backend:
    from counterbench.models.llamacpp import LlamaCppBackend

    if not spec.model:
        return LlamaCppBackend(name="local")
    path = Path(spec.model).expanduser()
    if path.suffix.lower() != ".gguf":
        raise UserError(f"model {spec.raw!r}: local:PATH must name a .gguf file")
    # named after the file (``local:/models/gemma-3-270m.gguf`` -> ``gemma-3-270m``); the full spec stays recorded
    return LlamaCppBackend(name=path.with_suffix("").name, model_path=path, spec=spec.raw)  # the file's name


def make_sim(spec: ModelSpec, env: Mapping[str, str], timeout_s: float) -> Backend:
    from counterbench.models.simulated import create_simulated

    return create_simulated(spec.model)
