"""The "Reproduce in Python" code of every page: the page's part of the study config
(:func:`ui.study_export.page_study`) written by the one generator, :func:`prdp_core.study.snippets.snippet`, through the
review boundary (:func:`prdp_core.review.review_boundary.produce`)."""

from __future__ import annotations

from typing import Any

from prdp_core.core.errors import PrdpError
from prdp_core.review.review_boundary import produce

from . import large, state

#: Shown instead of code while the page's settings do not make a valid study (the page says what to fix).
INCOMPLETE = "# The page's settings are not complete yet (its message says what to fix): no code to show.\n"

#: Parts whose mechanisms need the records: on a large dataset they run on the page's sample.
_RECORD_PARTS = ("personalized", "multitier", "granular")


def snippet_code(part: str, pol: Any = None, owner_method: str = "lemma4") -> str:
    """The code of ``part`` (a key of :data:`prdp_core.study.snippets.PARTS`) for the page's current settings;
    ``pol`` is the unit-splitting policy the page shows (policy, run and trade-off parts)."""
    from .study_export import SNIPPET_PAGES, page_study

    try:
        study = page_study(part, pol)
    except (PrdpError, KeyError, TypeError, ValueError):  # a setting being edited: the page says what to fix
        return INCOMPLETE
    src = state.source()
    data_dir, sample = None, None
    if src.get("kind") == "large":  # read in place from the server's data folder, confined to it
        data_dir = str(large.folder())
        if part in _RECORD_PARTS or (part == "budget" and study.mechanisms[0]["model"] == "local"):
            sample = large.sample_choice(SNIPPET_PAGES[part]) or (100_000, 0)
    return produce("snippets", study, teaching=state.teaching(), part=part, data_dir=data_dir, sample=sample,
                   owner_method=owner_method).decode("utf-8")
