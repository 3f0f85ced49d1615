"""Model backends: one protocol (:mod:`.base`), one small module per backend, a lazy registry.

``create_backend("sim:biased")`` returns a :class:`Backend`; ``list_backends()`` says which kinds are
ready here. Backend modules are imported only when their kind is used, so a missing optional SDK
(``anthropic``, ``llama_cpp``) breaks only its own kind.
"""

from counterbench.models.base import Backend, BackendError, ChatRequest, ChatResult, GenerationConfig
from counterbench.models.registry import (
    BackendInfo,
    ModelSpec,
    create_backend,
    list_backends,
    parse_model_string,
)

__all__ = [
    "Backend",
    "BackendError",
    "BackendInfo",
    "ChatRequest",
    "ChatResult",
    "GenerationConfig",
    "ModelSpec",
    "create_backend",
    "list_backends",
    "parse_model_string",
]
