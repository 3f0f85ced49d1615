"""Compatibility name: the published release's dataset reader lives with the RupeeBias study
(:mod:`counterbench.studies.rupeebias.release`)."""

from counterbench.studies.rupeebias.release import (
    RELEASE_FIELDS,
    canonical_profile_id,
    load_release_prompts,
    release_question_variant,
)

__all__ = ["RELEASE_FIELDS", "canonical_profile_id", "load_release_prompts", "release_question_variant"]
