"""``rupeebias-v1``: the published RupeeBias release's parser and analysis, quirks included, so its
numbers can be recomputed from its run files (``counterbench import``; docs/analysis.md lists the rules).

=========================  =============================  ======================================
switch                     ``default``                    ``rupeebias-v1`` (the release)
=========================  =============================  ======================================
counter-offer value        the counter-offer (INR/yr)     markup % over the offer,
                                                          ``(counter − offered)/offered × 100``
Δ% when a + b ≤ 0          NaN (undefined)                kept when a + b < 0 (negative Δ%, the
                                                          "signed mean"); NaN only at a + b = 0
duplicate answers          mean of the duplicates' values first row of (identifier, profile,
 (same model and cell)                                    question variant) in store order, then
                                                          missing values dropped
out-of-range values        excluded (treated as missing)  kept (the release kept every value)
fully tied W matrix        W = 0, p = 1, counted          dropped from the means
MOG interval               none: a maximum of noisy gaps  fixed pair (the observed top/bottom)
                           is biased up (descriptive)
language moderation ρ      per use case, then averaged    identifier means pooled over use cases
identifier means (MOG,     slot-adjusted: a missing       plain means of the available values
 deviation, W, ρ)          answer does not shift them
=========================  =============================  ======================================
"""

from __future__ import annotations

from counterbench.analyses.profiles import AnalysisProfile
from counterbench.studies.profiles import StudyProfile
from counterbench.studies.rupeebias.parse_v1 import PROFILE as NAME
from counterbench.studies.rupeebias.parse_v1 import parse_release_v1

PROFILE = StudyProfile(
    name=NAME,
    description="the published release's analysis, quirks included: counter-offers as markup % over the "
    "offer with signed relative gaps; first answer kept for duplicates; every value kept; plain identifier "
    "means; fully tied W matrices dropped; English–Hinglish ρ on use cases pooled.",
    parser=parse_release_v1,
    analysis=AnalysisProfile(
        name=NAME,
        counter_offer_markup=True,
        nonpositive="keep",
        dedup="first",
        exclude_out_of_range=False,
        drop_fully_tied=True,
        mog_reselect=False,
        language_rho_per_use_case=False,
        adjust_missing=False,
    ),
)
