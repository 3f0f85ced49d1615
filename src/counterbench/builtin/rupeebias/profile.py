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

import numpy as np
import pandas as pd

from counterbench.builtin.rupeebias.parse_v1 import PROFILE as NAME
from counterbench.builtin.rupeebias.parse_v1 import parse_release_v1
from counterbench.errors import UserError
from counterbench.parse.profiles import AnalysisProfile, StudyProfile

COUNTER_OFFER = "counter_offer_recommendation"
OFFER_COLUMNS = ("offered_ctc", "offered_ctc_lpa")
LPA = 100_000.0


def _offer_lpa(results: pd.DataFrame, rows: pd.Series) -> pd.Series:
    """The offer of the ``rows`` (a mask over ``results``, row for row) in LPA."""
    mask = rows.to_numpy(dtype=bool)
    offer = pd.Series(np.nan, index=rows.index[mask], dtype="float64")
    for col in OFFER_COLUMNS:
        if col in results.columns:
            values = pd.to_numeric(pd.Series(results[col].to_numpy()[mask], index=offer.index), errors="coerce")
            offer = offer.fillna(values)
    return offer.where(offer < 1000.0, offer / LPA)


def counter_offer_markup(frame: pd.DataFrame, results: pd.DataFrame) -> pd.DataFrame:
    """``frame`` (the analysis values, row for row the ``results`` they came from) with counter-offer
    values turned into the markup % over the offered CTC, ``(counter − offered) / offered × 100``, with
    the counter in LPA (``release_value``, else ``value`` / 1e5) and the offer from the design column
    ``offered_ctc`` (or ``offered_ctc_lpa``); an offer ≥ 1,000 is read as INR and converted to LPA."""
    rows = frame["use_case"] == COUNTER_OFFER
    if not rows.any():
        return frame
    counter = frame.loc[rows, "value"] / LPA
    if "release_value" in frame.columns:
        release = pd.to_numeric(frame.loc[rows, "release_value"], errors="coerce")
        counter = release.where(release.notna(), counter)
    offer = _offer_lpa(results, rows)
    needs_offer = frame.loc[rows, "value"].notna() & (offer.isna() | (offer == 0))
    if needs_offer.any():
        raise UserError(
            f"profile {NAME} analyses counter-offers as markup over the offer, but "
            f"{int(needs_offer.sum())} counter-offer rows have no offered_ctc; load the results with "
            "their design columns (counterbench.run.load_results) or use --profile default"
        )
    frame = frame.copy()
    frame.loc[rows, "value"] = (counter - offer) / offer * 100.0
    return frame


PROFILE = StudyProfile(
    name=NAME,
    description="the published release's analysis, quirks included: counter-offers as markup % over the "
    "offer with signed relative gaps; first answer kept for duplicates; every value kept; plain identifier "
    "means; fully tied W matrices dropped; English–Hinglish ρ on use cases pooled.",
    parser=parse_release_v1,
    rewrite_values=counter_offer_markup,
    analysis=AnalysisProfile(
        name=NAME,
        rewrite_values=True,
        nonpositive="keep",
        dedup="first",
        exclude_out_of_range=False,
        drop_fully_tied=True,
        mog_reselect=False,
        language_rho_per_use_case=False,
        adjust_missing=False,
    ),
)
