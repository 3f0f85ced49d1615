"""Build the RupeeBias regression golden: every analysis table, both parse profiles, one fixed store.

Run from a checkout (``PYTHONPATH=src python tests/regression/make_golden.py``) to (re)write
``tests/regression/rupeebias_golden.parquet``; ``... make_golden.py --add TABLE COLUMN...`` adds a new
table column only, after checking that every cell already in the golden is unchanged;
``... make_golden.py --replace TABLE COLUMN... [--replace TABLE COLUMN...]`` rewrites the named columns
(a deliberate change of method), after checking that every other cell is unchanged. The store is
``sim:biased`` + ``sim:fair`` on the whole English RupeeBias table plus a Hinglish slice (two use
cases, 40 whole slots); analyses use few bootstrap replicates so the regression test stays fast.
Everything is deterministic (the simulated models and every bootstrap stream are seeded), so
rerunning this on the same code gives the same file.

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


KEY = ["profile", "table", "row", "column"]


def differences(golden: pd.DataFrame, now: pd.DataFrame) -> pd.DataFrame:
    """Cells of ``golden`` that ``now`` lacks or holds with another text or number (to 1e-12)."""
    merged = golden.merge(now, on=KEY, how="left", suffixes=("_golden", "_now"), indicator=True)
    text_g, text_n = merged["text_golden"], merged["text_now"]
    same_text = (text_g.isna() & text_n.isna()) | (text_g == text_n)
    close = np.isclose(merged["number_now"].to_numpy(), merged["number_golden"].to_numpy(), rtol=1e-12,
                       atol=1e-12, equal_nan=True)
    return merged[(merged["_merge"] != "both") | ~same_text | ~close]


def add_columns(table: str, columns: list[str]) -> int:
    """Add ``columns`` of ``table`` to the golden, after checking every cell already in it is unchanged."""
    golden = pd.read_parquet(GOLDEN)
    with tempfile.TemporaryDirectory() as tmp:
        now = golden_frame(build_store(Path(tmp) / "golden.db"))
    changed = differences(golden, now)
    if not changed.empty:
        print(f"{len(changed)} golden cells changed; not writing:\n{changed[KEY].head(20)}")
        return 1
    new = now[(now["table"] == table) & now["column"].isin(columns)]
    missing = set(columns) - set(new["column"])
    if missing or golden[(golden["table"] == table) & golden["column"].isin(columns)].shape[0]:
        print(f"columns {sorted(missing) or columns} of {table}: not computed now, or already in the golden")
        return 1
    pd.concat([golden, new], ignore_index=True).to_parquet(GOLDEN, index=False)
    print(f"all {len(golden)} golden cells unchanged; added {len(new)} cells ({table}: {', '.join(columns)})")
    return 0


def replace_columns(targets: dict[str, list[str]]) -> int:
    """Rewrite the ``targets`` (table -> columns) cells, after checking every other cell is unchanged."""
    golden = pd.read_parquet(GOLDEN)
    with tempfile.TemporaryDirectory() as tmp:
        now = golden_frame(build_store(Path(tmp) / "golden.db"))

    def chosen(frame: pd.DataFrame) -> pd.Series:
        hit = pd.Series(False, index=frame.index)
        for table, columns in targets.items():
            hit |= (frame["table"] == table) & frame["column"].isin(columns)
        return hit

    changed = differences(golden[~chosen(golden)], now)
    if not changed.empty:
        print(f"{len(changed)} golden cells outside {targets} changed; not writing:\n{changed[KEY].head(20)}")
        return 1
    old, new = golden[chosen(golden)], now[chosen(now)]
    if len(old) != len(new):
        print(f"the replaced columns have {len(new)} cells now and {len(old)} in the golden; not writing")
        return 1
    moved = differences(old, new)
    pd.concat([golden[~chosen(golden)], new], ignore_index=True).to_parquet(GOLDEN, index=False)
    print(f"all {int((~chosen(golden)).sum())} other golden cells unchanged; replaced {len(new)} cells, "
          f"{len(moved)} of them changed ({targets})")
    return 0


def main(argv: list[str]) -> int:
    """No argument: write the golden anew. ``--add TABLE COLUMN...``: add new columns, the rest held fixed.
    ``--replace TABLE COLUMN...`` (repeatable): rewrite those columns, the rest held fixed."""
    if argv[:1] == ["--add"] and len(argv) >= 3:
        return add_columns(argv[1], argv[2:])
    if argv[:1] == ["--replace"]:
        targets: dict[str, list[str]] = {}
        for chunk in " ".join(argv).split("--replace")[1:]:
            words = chunk.split()
            if len(words) < 2:
                print("usage: make_golden.py --replace TABLE COLUMN... [--replace TABLE COLUMN...]")
                return 2
            targets.setdefault(words[0], []).extend(words[1:])
        return replace_columns(targets)
    with tempfile.TemporaryDirectory() as tmp:
        store = build_store(Path(tmp) / "golden.db")
        frame = golden_frame(store)
    frame.to_parquet(GOLDEN, index=False)
    print(f"wrote {GOLDEN} ({len(frame)} cells, {frame['table'].nunique()} tables)")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
