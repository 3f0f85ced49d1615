"""Build the RupeeBias regression golden: every analysis table, both parse profiles, one fixed store.

Run from a checkout (``PYTHONPATH=src python tests/regression/make_golden.py``) to (re)write
``tests/regression/rupeebias_golden.parquet``. The store is ``sim:biased`` + ``sim:fair`` on the whole
English RupeeBias table plus a Hinglish slice (two use cases, 40 whole slots); analyses use few
bootstrap replicates so the regression test stays fast. Everything is deterministic (the simulated
models and every bootstrap stream are seeded), so rerunning this on the same code gives the same file.

Self-contained on purpose: it uses only the public Python API that existed before the study redesign
(``counterbench.prompts``, ``counterbench.run_prompts``, ``counterbench.analyze``), so the golden can
be regenerated on an older checkout and compared against a newer one.
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

import numpy as np
import pandas as pd

HERE = Path(__file__).resolve().parent
GOLDEN = HERE / "rupeebias_golden.parquet"
MODELS = ("sim:biased", "sim:fair")
PROFILES = ("default", "rupeebias-v1")
BOOTSTRAP = 40
SEED = 11
HINGLISH_USE_CASES = ("salary_estimation", "service_pricing_customer")
HINGLISH_SLOTS = 40
SLICE_SEED = 5


def build_prompt_table() -> pd.DataFrame:
    """Full English table + a seeded Hinglish slice of whole slots."""
    import counterbench

    english = counterbench.prompts("rupeebias", language="en")
    hinglish = counterbench.prompts("rupeebias", language="hinglish", use_case=list(HINGLISH_USE_CASES),
                                    sample_slots=HINGLISH_SLOTS, seed=SLICE_SEED)
    return pd.concat([english, hinglish], ignore_index=True)


def build_store(path: Path) -> Path:
    """Run both simulated models on the fixed prompt table into a new store at ``path``."""
    import counterbench

    summary = counterbench.run_prompts(build_prompt_table(), list(MODELS), store=path, handle_signals=False)
    if not summary.complete:
        raise RuntimeError(f"simulated run did not complete: {summary.status}")
    return path


def long_tables(tables: dict[str, pd.DataFrame], profile: str) -> pd.DataFrame:
    """Every cell of every table as one row: profile, table, row, column, text, number."""
    parts = []
    for name in sorted(tables):
        frame = tables[name].reset_index(drop=True)
        for column in frame.columns:
            series = frame[column]
            numeric = pd.api.types.is_numeric_dtype(series) and not pd.api.types.is_bool_dtype(series)
            numbers = series.astype("float64").to_numpy() if numeric else np.full(len(series), np.nan)
            texts = [None if numeric else (None if v is None or (isinstance(v, float) and np.isnan(v)) else str(v))
                     for v in series.tolist()] if not numeric else [None] * len(series)
            parts.append(pd.DataFrame({
                "profile": profile, "table": name, "row": np.arange(len(frame), dtype=np.int64),
                "column": str(column), "text": pd.Series(texts, dtype=object), "number": numbers,
            }))
        if frame.empty:  # keep the header of an empty table
            parts.append(pd.DataFrame({"profile": [profile], "table": [name], "row": [-1],
                                       "column": [",".join(map(str, frame.columns))], "text": [None],
                                       "number": [np.nan]}))
    return pd.concat(parts, ignore_index=True)


def golden_frame(store: Path) -> pd.DataFrame:
    """Analyse ``store`` under both parse profiles; all cells in long form."""
    import counterbench

    frames = []
    for profile in PROFILES:
        result = counterbench.analyze(store, "rupeebias", profile=profile, bootstrap=BOOTSTRAP, seed=SEED)
        frames.append(long_tables(dict(result.tables), profile))
    return pd.concat(frames, ignore_index=True)


def main() -> int:
    with tempfile.TemporaryDirectory() as tmp:
        store = build_store(Path(tmp) / "golden.db")
        frame = golden_frame(store)
    frame.to_parquet(GOLDEN, index=False)
    print(f"wrote {GOLDEN} ({len(frame)} cells, {frame['table'].nunique()} tables)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
