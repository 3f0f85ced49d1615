"""Per-study analyses: compositions of :mod:`counterbench.stats` into tidy tables (pure, no I/O).

Python API: :func:`counterbench.analyses.api.analyze` (a store path or a results DataFrame →
:class:`~counterbench.analyses.rupeebias.AnalysisResult`). Modules:

- :mod:`.rupeebias` — ``analyze(results, profile, bootstrap, seed, tau)``: every table of spec §3;
- :mod:`.schema` — table names, columns and what a row is (the contract with reports and exports);
- :mod:`.profiles` — ``default`` vs ``rupeebias-v1`` rules; :mod:`.prepare` — row-level rules;
- :mod:`.magnitude`, :mod:`.ordering`, :mod:`.identifiers`, :mod:`.health` — the tables;
- :mod:`.resampling`, :mod:`.slots` — the stratified pair bootstrap and shared slot resamples;
- :mod:`.io` — writing CSV, Parquet and ``summary.json`` (the only module with file I/O).
"""
