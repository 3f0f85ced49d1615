"""Per-study analyses: compositions of :mod:`counterbench.stats` into tidy tables (pure, no I/O).

Python API: :func:`counterbench.analyze` (:func:`counterbench.pipeline.analyze`: a store path or a results
DataFrame → :class:`~counterbench.analyses.result.AnalysisResult`; the pipeline reads the store, the
analyses get frames). Modules:

- :mod:`.study` — one study's analysis from its results frame, by outcome kind; :mod:`.outcome_tables` —
  the tables every kind shares (:mod:`.outcome_findings`: their marks and finding in words;
  :mod:`.table_registry`: the registered ones); :mod:`.table_families` — the kinds' own families of
  tables (the amount kind's, ``analyze(results, profile, bootstrap, seed, tau)`` with every relative-gap
  table, its pair gaps, orderings and identifier tables: :mod:`counterbench.families.amount`);
- :mod:`.schema` — the conventions every table shares (the contract with reports and exports);
- :mod:`.profiles` — ``default`` vs the release profile rules; :mod:`.prepare` — row-level rules;
- :mod:`.health` — parse health;
- :mod:`.resampling`, :mod:`.slots` — the stratified pair bootstrap and shared slot resamples;
- :mod:`.io` — writing CSV, Parquet and ``summary.json`` (the only module with file I/O).
"""
