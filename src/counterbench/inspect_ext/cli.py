"""The ``counterbench import --inspect-log`` verb's body (needs the ``inspect`` extra)."""

from __future__ import annotations

import shlex
import sys
from collections.abc import Sequence
from pathlib import Path

from counterbench.errors import UserError


def import_inspect(paths: Sequence[Path], store: Path, *, label: str | None, profile: str,
                   same_model: bool = False) -> None:
    try:
        import inspect_ai  # noqa: F401
    except ImportError:
        raise UserError("reading Inspect logs needs inspect-ai: pip install 'counterbench[inspect]'") from None
    from counterbench.inspect_ext.importer import import_inspect_logs

    report = import_inspect_logs(paths, store, label=label, profile=profile, same_model=same_model,
                                 command=shlex.join(["counterbench", *sys.argv[1:]]))
    print(f"read {report.samples:,} samples from {len(report.files)} Inspect log(s); stored {report.stored:,} new "
          f"responses ({report.already_stored:,} already in the store)")
    for name, n in sorted(report.by_model.items()):
        print(f"  {name}: {n:,}")
    print("  statuses: " + ", ".join(f"{k} {v:,}" for k, v in sorted(report.statuses.items())))
    print(f"store: {store}")
