"""Per-study analyses: compositions of :mod:`counterbench.stats` into tidy tables (pure, no I/O).

Python API: :func:`counterbench.analyze` (:func:`counterbench.pipeline.analyze`: a store path or a results
DataFrame → :class:`~counterbench.analyses.result.AnalysisResult`; the pipeline reads the store, the
analyses get frames). Modules:

- :mod:`.study` — one study's analysis from its results frame, by outcome kind; :mod:`.amounts` —
  ``analyze(results, profile, bootstrap, seed, tau)``: every relative-gap table of an amount study;
  :mod:`.outcome_tables` — the tables of the other outcome kinds (:mod:`.outcome_findings`: their
  marks and finding in words);
- :mod:`.schema` — table names, columns and what a row is (the contract with reports and exports);
- :mod:`.profiles` — ``default`` vs the release profile rules; :mod:`.prepare` — row-level rules;
- :mod:`.magnitude`, :mod:`.ordering`, :mod:`.identifiers`, :mod:`.health` — the tables;
- :mod:`.resampling`, :mod:`.slots` — the stratified pair bootstrap and shared slot resamples;
- :mod:`.io` — writing CSV, Parquet and ``summary.json`` (the only module with file I/O).
"""
