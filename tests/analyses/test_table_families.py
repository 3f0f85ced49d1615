"""The kind-keyed table families (issue 31): the amount tables are the amount kind's registered family, chosen
by the analysed kinds; ``analyses/`` declares none of a family's tables."""

from __future__ import annotations

import pandas as pd

from counterbench.analyses import schema
from counterbench.analyses.table_families import FAMILIES, TableFamily, analysed_kinds, families_for
from counterbench.analyses.table_registry import TABLES
from counterbench.families.amount.tables import TABLE_COLUMNS
from counterbench.registry import load_reference


def test_the_amount_tables_are_the_amount_kinds_registered_family() -> None:
    assert "amount" in FAMILIES.names()
    family = FAMILIES.get("amount")
    assert FAMILIES.entries()["amount"].source.startswith("entry point ")  # registered as a package's would be
    assert isinstance(family, TableFamily) and family.kind == "amount"
    assert dict(family.tables) == TABLE_COLUMNS and "leaderboard" in family.tables
    assert set(family.descriptions) == set(family.tables)
    assert not set(family.tables) & set(TABLES.names())  # not the tables every kind shares
    for reference in (family.report_sections, family.report_methods, family.gate_rules, family.analysis,
                      family.analysis_by_model):
        assert load_reference(reference)
    assert not hasattr(schema, "TABLE_COLUMNS")  # analyses/ keeps only the shared conventions


def test_a_family_is_chosen_by_the_analysed_kinds() -> None:
    amount = FAMILIES.get("amount")
    assert families_for(["amount", "rate"]) == [amount]
    assert families_for(["rate", "label"]) == []
    assert families_for([None]) == [amount]  # a store written before kinds existed holds amounts
    board = {"leaderboard": pd.DataFrame({"model": ["m"]})}
    assert analysed_kinds({"analysed_kinds": ["rate"], "outcome_kinds": {"u": "amount"}}, board) == ["rate"]
    assert analysed_kinds({"outcome_kinds": {"u": "rate", "v": "rate"}}, board) == ["rate"]
    gaps = pd.DataFrame({"kind": ["label", "amount", "label"]})
    assert analysed_kinds({}, {"outcome_gaps": gaps}) == ["label", "amount"]
    assert analysed_kinds({}, board) == [None]
