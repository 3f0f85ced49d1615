"""RupeeBias (*RupeeBias: Auditing Demographic Bias in Indian Economic Guidance from LLMs*): a
declarative study (``study.yaml`` and its data files) with the published release's importer and its
``rupeebias-v1`` parse and analysis rules."""

from __future__ import annotations

from importlib import resources

from counterbench.studies.base import Study
from counterbench.studies.declarative import DeclarativeStudy
from counterbench.studies.definition import parse_study, read_study_mapping


class RupeeBias(DeclarativeStudy):
    """The declared study plus what a simulated model answers for its use cases (``sim_answers.yaml``:
    per-profile figures in INR and %, its refusal texts; the ``simulated_answers`` hook)."""

    simulated_answers = resources.files(__name__).joinpath("sim_answers.yaml")


def create_study() -> Study:
    """The RupeeBias study, read from this package's ``study.yaml``."""
    with resources.as_file(resources.files(__name__).joinpath("study.yaml")) as path:
        data = read_study_mapping(path)
    return RupeeBias(parse_study(data, source="built-in study rupeebias"))
