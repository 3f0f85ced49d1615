"""The ``amount`` kind's family: the pair-gap tables (leaderboard, Mean Δ%, Kendall's W, canonical pair gaps, ...).

``tables.py`` declares them (names, columns, descriptions, why one is empty); ``family.py`` registers them as
the family of every kind the pair-gap analysis reads (``pair_tables``), with the analysis that makes them
(:mod:`counterbench.families.amount.analysis`), the report's sections and the gate's rules.
"""
