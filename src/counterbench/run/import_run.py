"""An import is a run: the one frame every import (recovery files, Inspect logs) goes through.

Before anything is written, each label's model string is checked against the store's (``same_model``
skips the check, as ``--same-model`` does for ``run``); the import is recorded as a run of kind
``import`` with the redacted command and its parameters, finished ``completed`` or ``failed`` with the
error count; and an import that created the store and was refused or failed before storing an answer
leaves no file behind.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from counterbench.run.redact import Redactor
from counterbench.run.store import Store, open_store, remove_store_files


@contextmanager
def import_run(store_path: Path | str, specs: Mapping[str, str], *, what: str, command: str, default_command: str,
               params: Mapping[str, Any], redactor: Redactor, same_model: bool = False,
               errors: Callable[[], int] = lambda: 0, stored: Callable[[], int] = lambda: 0,
               ) -> Iterator[tuple[Store, int]]:
    """Open the store at ``store_path`` for an import of the labels in ``specs`` (label -> model string) and
    yield it with the import's run id. ``what`` names the source in a refusal ("this import");
    ``errors``/``stored`` are read when the import ends (its error count; how many answers it stored —
    a new store that received none is removed when the import fails)."""
    from counterbench.run.identity import check_model_spec
    from counterbench.version import __version__

    path = Path(store_path)
    created, kept = not path.exists(), False
    try:
        with open_store(path) as store:
            if not same_model:  # before anything is written: a refused import stores nothing
                for model, spec in specs.items():
                    check_model_spec(store, model, spec, what)
            run_id = store.start_run("import", redactor.redact(command) or default_command, dict(params),
                                     __version__)
            status = "failed"
            try:
                yield store, run_id
                status = "completed"
            finally:
                store.finish_run(run_id, status, {"sent": 0, "cached": 0, "errors": errors()})
            kept = True
    finally:
        if created and not kept and stored() == 0:
            remove_store_files(path)
