"""The answer formats shared by the structured-output backends."""

from __future__ import annotations

import re

from counterbench.outcomes.answer_formats import answer_format, known_answer_types


def test_formats() -> None:
    assert known_answer_types() == ["inr", "inr_annual", "number", "percent"]
    assert answer_format(None) is None and answer_format("free_text") is None
    inr = answer_format("inr_annual")
    pct = answer_format("percent")
    assert inr is not None and pct is not None
    for good in ("### 0 INR", "### 1200000 INR", "### 999999999 INR"):
        assert re.fullmatch(inr.regex, good)
    for bad in ("### 01 INR", "### 1000000000 INR", "### 12,00,000 INR", "## 5 INR", "### 5 LPA", "### 5 INR."):
        assert not re.fullmatch(inr.regex, bad)
    assert re.fullmatch(pct.regex, "### 15 %") and not re.fullmatch(pct.regex, "### 1500 %")
    assert 'root ::= "### " number " INR"' in inr.gbnf and "[0-9]{0,8}" in inr.gbnf
    assert '" %"' in pct.gbnf and "[0-9]{0,2}" in pct.gbnf
    schema = inr.json_schema()
    assert schema["type"] == "json_schema" and schema["json_schema"]["strict"] is True
    assert schema["json_schema"]["schema"]["properties"]["answer"]["pattern"] == inr.regex
