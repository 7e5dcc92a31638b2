"""Today's methods on a study's table, as a run the study records: :func:`release`.

The run builds the magnitude table of one workload query (a SUM by at most two columns, its filter applied),
applies primary and complementary suppression and, in teaching mode, noise infusion, and returns a
:class:`~prdp_core.core.release.Release` that adds **no ledger entry**: none of these methods has a privacy loss
to record — which is the point a review makes of them. Its answers are, per cell, what each method would
publish (teaching mode only: which cells the rules withhold, the true values and the noisy ones are statistics
of the confidential records); in review mode they are only the number of cells each method withholds.

Noise infusion draws one multiplier per owner from the release's noise, inside a declared teaching simulation
(:func:`prdp_core.core.recorder.simulation`): it is never drawn in review mode.
"""

from __future__ import annotations

from typing import Any, Sequence

import pandas as pd

from ...core.errors import ParameterError
from ...core.noise_source import Noise
from ...core.recorder import simulation
from ...core.release import Release
from ...core.workload import Filter
from .cells import cell_table
from .compare import Comparison, compare_methods
from .complementary import suppress
from .noise_infusion import NoiseInfusion, infuse
from .primary import Rules, primary_suppression

MECHANISM = "legacy_sdc.suppression_and_noise_infusion"
#: The default rules and noise infusion (:class:`Rules`, :class:`NoiseInfusion`).
DEFAULT_RULES = Rules()
DEFAULT_INFUSION = NoiseInfusion()


def release(ds: Any, *, measure: str, group_by: Sequence[str], query: str, rules: Rules = DEFAULT_RULES,
            infusion: NoiseInfusion | None = DEFAULT_INFUSION, complementary: bool = True,
            where: Filter | None = None, noise: Noise | None = None, reveal: bool = False) -> Release:
    """Cell suppression (``rules``; with complementary suppression when ``complementary``) and, when ``reveal``
    (teaching mode) and ``infusion`` is given, noise infusion with ``noise``'s generator, on the table
    ``SUM(measure) BY group_by`` of the dataset ``ds`` (records in memory; owners from its schema's owner column,
    else each record its own owner) restricted to ``where``. ``query`` names the table in the answers."""
    table_frame = getattr(ds, "table", None)
    if not isinstance(table_frame, pd.DataFrame):
        raise ParameterError("Cell suppression and noise infusion read the records' contributions per owner: this "
                             "table is held by an engine.",
                             hint="Use data.engine: memory (or a sample of the table) for the legacy comparison.")
    frame = table_frame if where is None else table_frame[where.mask(table_frame)]
    table = cell_table(frame, list(group_by), measure, ds.schema.owner_col)
    verdicts = primary_suppression(table, rules)
    supp = (suppress(table, verdicts["sensitive"].to_numpy(), verdicts["protection"].to_numpy())
            if complementary and table.dims else None)
    infused = None
    if reveal and infusion is not None:
        if noise is None:
            raise ParameterError("Noise infusion needs a seeded noise source.", hint="Pass noise=Noise.teaching(seed).")
        with simulation("noise infusion beside the policy", teaching=True):
            infused = infuse(table, infusion, noise.generator())
    cmp = compare_methods(table, verdicts, supp, infused)
    params = {"measure": measure, "group_by": list(group_by), "p": rules.p, "n": rules.n, "k": rules.k,
              "min_frequency": rules.min_frequency, "complementary": bool(complementary and table.dims),
              "noise_low": None if infusion is None else infusion.low,
              "noise_high": None if infusion is None else infusion.high}
    counts = cmp.for_review().assign(query=query)[["query", "method", "cells", "withheld"]].reset_index(drop=True)
    if reveal:
        answers = cmp.cells.assign(query=query)
        answers = answers[["query", *[c for c in answers.columns if c != "query"]]]
        extras: dict[str, Any] = {"private_legacy": {"table": table, "verdicts": verdicts, "suppression": supp,
                                                     "infused": infused}}
    else:
        answers, extras = counts, {}
    extras["legacy_rules"] = rules.describe() + ("" if infusion is None else "; noise infusion: "
                                                 + infusion.describe())
    return Release(mechanism=MECHANISM, answers=answers.reset_index(drop=True), measure="rho", loss=None,
                   entries=(), params=params, seed=None if noise is None else noise.seed, truth_included=reveal,
                   extras=extras, review_answers=counts)  # a review sees the counts only, never a cell


def beside(rel: Release, dp: pd.DataFrame | None = None, dp_label: str = "DP policy") -> Comparison:
    """The methods of a teaching run ``rel`` (:func:`release` with ``reveal``) set beside a DP release's answers
    ``dp`` of the same query (its rows whose ``query`` is ``rel``'s; none, or no such rows: without DP), the DP
    column named ``dp_label``. Confidential: every cell of the records (teaching mode only)."""
    private = rel.extras.get("private_legacy")
    if private is None:
        raise ParameterError("This comparison holds no cells (a review-mode run): only its counts can be shown.")
    query = str(rel.answers["query"].iloc[0]) if len(rel.answers) else ""
    rows = None
    if dp is not None and {"query", "estimate"} <= set(dp.columns):
        rows = dp[dp["query"] == query]
    return compare_methods(private["table"], private["verdicts"], private["suppression"], private["infused"],
                           None if rows is None or rows.empty else rows, dp_label=dp_label)
