"""Which model families have a batch API (``--batch``), and each one's
:class:`~counterbench.models.batch_api.BatchAPI`."""

from __future__ import annotations

from counterbench.errors import UserError
from counterbench.models.base import Backend
from counterbench.models.batch_api import BatchAPI

#: the model families with a batch API
BATCH_FAMILIES = ("openai", "anthropic")


def batch_api_for(backend: Backend) -> BatchAPI:
    """The batch API of ``backend``'s family; a :class:`UserError` for a family without one."""
    from counterbench.models.anthropic_backend import AnthropicBackend
    from counterbench.models.openai_compat import OpenAICompatBackend

    if isinstance(backend, OpenAICompatBackend) and backend.family == "openai":
        from counterbench.models.batch_openai import OpenAIBatchAPI

        return OpenAIBatchAPI(backend)
    if isinstance(backend, AnthropicBackend):
        from counterbench.models.batch_anthropic import AnthropicBatchAPI

        return AnthropicBatchAPI(backend)
    raise UserError(f"--batch works with the model families that have a batch API ({', '.join(BATCH_FAMILIES)}); "
                    f"{backend.name} has none: run it without --batch")
