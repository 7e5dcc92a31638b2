"""Today's methods beside a per-record DP release of the same cells.

:func:`compare_methods` lines up, for every cell of a magnitude table, what cell suppression publishes (the
true value, or nothing for a primary or complementary suppression), what noise infusion publishes (the noisy
value and its flag; nothing for a J cell) and what a DP release answered (its estimate and error), and sums up
each method over the interior cells: the share of cells and of the table's total it publishes, the median and
90th-percentile relative error of what it publishes, and what it promises.

Which cells the rules suppress, the true values and the errors are statistics of the confidential records:
:meth:`Comparison.for_review` keeps only the number of cells each method withholds (review mode).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from .cells import CellTable
from .complementary import Suppression

#: What each method promises, in the summary's words.
PROMISES = {
    "cell suppression": "No formal guarantee: each published cell passes the rules against their intruder (the "
                        "second-largest contributor, a coalition of n), and the audit bounds what an outsider can "
                        "compute from the published cells — not what a contributor of a withheld cell learns by "
                        "subtracting its own value; nothing bounds what linked tables, other releases or outside "
                        "knowledge reveal.",
    "noise infusion": "No formal guarantee: every company's values are moved by a bounded random share; nothing "
                      "bounds what repeated or linked releases reveal, and the parameters must stay secret.",
    "DP": "A formal guarantee: each record's privacy loss is bounded by its policy loss, whatever else is "
          "published or known (composes over releases in the ledger).",
}


@dataclass(frozen=True)
class Comparison:
    """``cells``: one row per cell (dimensions, ``kind``, ``true``, ``owners``, ``rules``, ``suppression`` status,
    ``suppression_value``, ``noisy``, ``noise_flag``, ``noise_value``, ``dp_estimate``, ``dp_rel_error``);
    ``summary``: one row per method (``method``, ``cells``, ``published``, ``share_cells``, ``share_total``,
    ``median_rel_error``, ``p90_rel_error``, ``promise``). Both are confidential (teaching mode)."""

    cells: pd.DataFrame
    summary: pd.DataFrame

    def for_review(self) -> pd.DataFrame:
        """What review mode may show: per method, the number of interior cells and of cells it withholds."""
        return self.summary[["method", "cells"]].assign(
            withheld=(self.summary["cells"] - self.summary["published"]).astype(int))


def _rel_errors(published: np.ndarray, true: np.ndarray) -> np.ndarray:
    ok = np.isfinite(published) & (true > 0)
    return np.abs(published[ok] - true[ok]) / true[ok]


def _row(method: str, promise: str, published: np.ndarray, true: np.ndarray) -> dict:
    shown = np.isfinite(published)
    err = _rel_errors(published, true)
    total = float(true.sum())
    return {"method": method, "cells": int(len(true)), "published": int(shown.sum()),
            "share_cells": float(shown.mean()) if len(true) else float("nan"),
            "share_total": float(true[shown].sum() / total) if total > 0 else float("nan"),
            "median_rel_error": float(np.median(err)) if len(err) else float("nan"),
            "p90_rel_error": float(np.quantile(err, 0.9)) if len(err) else float("nan"),
            "promise": promise}


def compare_methods(table: CellTable, verdicts: pd.DataFrame, suppression: Suppression | None = None,
                    infused: pd.DataFrame | None = None, dp: pd.DataFrame | None = None,
                    dp_label: str = "DP policy") -> Comparison:
    """The methods side by side on ``table``: ``verdicts`` from
    :func:`~prdp_core.mechanisms.legacy_sdc.primary_suppression`, ``suppression`` from
    :func:`~prdp_core.mechanisms.legacy_sdc.suppress` (None: primary suppression only), ``infused`` from
    :func:`~prdp_core.mechanisms.legacy_sdc.infuse` (None: not run), ``dp`` a DP release's answers for the same
    cells (the table's dimensions and ``estimate``; cells it did not release count as not published)."""
    cells = table.cells.copy()
    true = cells["value"].to_numpy(dtype=float)
    out = cells[[*table.dims, "kind"]].copy()
    out["true"] = true
    out["owners"] = cells["owners"].to_numpy()
    out["rules"] = verdicts["reason"].to_numpy()
    status = (suppression.status.to_numpy() if suppression is not None
              else np.where(verdicts["sensitive"].to_numpy(), "primary", "published"))
    out["suppression"] = status
    out["suppression_value"] = np.where(status == "published", true, np.nan)
    interior = table.interior() if table.dims else np.ones(len(cells), dtype=bool)
    rows = [_row("cell suppression" + ("" if suppression is not None else " (primary only)"),
                 PROMISES["cell suppression"], out["suppression_value"].to_numpy()[interior], true[interior])]
    if infused is not None:
        out["noisy"] = infused["noisy"].to_numpy()
        out["noise_flag"] = infused["flag"].to_numpy()
        out["noise_value"] = np.where(out["noise_flag"] != "J", out["noisy"], np.nan)
        rows.append(_row("noise infusion", PROMISES["noise infusion"], out["noise_value"].to_numpy()[interior],
                         true[interior]))
    if dp is not None and "estimate" in dp.columns:
        keys = [d for d in table.dims]
        est = (dp[keys + ["estimate"]].assign(**{d: dp[d].astype(str) for d in keys})
               .drop_duplicates(keys) if keys else dp[["estimate"]].head(1))
        if keys:
            merged = out[keys].merge(est, on=keys, how="left")
            dp_est = merged["estimate"].to_numpy(dtype=float)
        else:
            dp_est = np.full(len(out), float(est["estimate"].iloc[0]) if len(est) else np.nan)
        out["dp_estimate"] = dp_est
        out["dp_rel_error"] = np.where(true > 0, np.abs(dp_est - true) / np.where(true > 0, true, 1.0), np.nan)
        rows.append(_row(dp_label, PROMISES["DP"], dp_est[interior], true[interior]))
    return Comparison(cells=out, summary=pd.DataFrame(rows))
