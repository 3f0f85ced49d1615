"""Whose answers a store holds: a model label's answers come from one endpoint and one model string.

Both checks refuse, with one line, a run (or an import) that would add another model's answers to a
label's stored ones, unless the user says it is the same model (``--endpoint-moved``, ``--same-model``).
"""

from __future__ import annotations

import re

from counterbench.errors import UserError
from counterbench.run.store import Store


def check_endpoint(store: Store, model: str, endpoint: str | None) -> None:
    """Refuse to add answers from another endpoint to a model's stored answers (unless the user says so)."""
    others = sorted((e or "the provider's default URL") for e in store.endpoints_of(model) if e != endpoint)
    if others:
        here = endpoint or "the provider's default URL"
        raise UserError(
            f"the store holds {model} answers from {others[0]}, but this run sends to {here}; the same name "
            "on another endpoint may be another model: use another --store, or pass --endpoint-moved if it is "
            "the same model"
        )


_URL = re.compile(r"https?://[^/\s,]+(?:/[^:\s,]*)?")


def _without_urls(spec: str) -> str:
    """A model string without its server addresses (``vllm:http://h:8000/v1:M`` -> ``vllm::M``)."""
    return _URL.sub("", spec)


def check_model_spec(store: Store, model: str, spec: str, what: str = "this run") -> None:
    """Refuse to add answers to a label's stored answers from another model string (unless the user says so);
    ``what`` names the adding command in the message (a run, an import)."""
    others = sorted(str(s) for s in store.recorded_for(model, "model_specs")
                    if s is not None and _without_urls(str(s)) != _without_urls(spec))
    if others:
        raise UserError(
            f"the store holds answers labelled {model} from model {others[0]}, but {what} gives {model}={spec}; "
            "a label names one model: use another label or --store, or pass --same-model if it is the same model"
        )
