"""Previewing a per-record zCDP policy on real records (and their owners) before any release.

:func:`preview_policy` evaluates a :class:`~prdp_core.core.workload.SplittingPolicy` on a
dataset and returns what the policy designer looks at: the record-level loss profile,
the owner-level profile (Lemma 4; optionally the order-dependent Lemma 5 bound, which the
app labels as an optimistic view), the share of records that are split, and summaries.
All of it describes confidential records.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property
from typing import Literal

import numpy as np
import pandas as pd

from ..core.distribution import LossDistribution
from ..core.errors import PolicyError
from ..core.loss_profile import LossProfile, owner_losses
from ..core.splitting import split_counts
from ..core.workload import SplittingPolicy, summed_policy_loss
from ..data.codes import column_codes
from ..data.dataset import Dataset
from ..engines import EngineDataset, SplitHistogram


def _column_codes(table: pd.DataFrame, col: str) -> tuple[np.ndarray, pd.Index]:
    """A column's values as sorted integer codes (−1 for missing) and their labels, factorised
    once per (immutable) dataset table and column (:func:`prdp_core.data.codes.column_codes`).

    Codes in sorted order keep the owners in the same order as factorising the ids themselves,
    so owner losses are unchanged."""
    return column_codes(table, col, sort=True)


@dataclass(eq=False)
class PolicyPreview:
    """What a policy means for the records of one dataset.

    Per-record and per-owner losses are computed on first use (the CDF over records
    needs only the split counts).
    """

    policy: SplittingPolicy
    dataset: Dataset
    pieces: np.ndarray
    owner_method: str = "lemma4"
    label: str = ""

    @cached_property
    def records(self) -> LossProfile:
        """Loss of every record (confidential)."""
        with np.errstate(over="ignore", invalid="ignore"):
            if self.policy.workload.joint:
                values = summed_policy_loss(self.policy, self.pieces, lambda f: f.mask(self.dataset.table))
            else:
                values = self.policy(self.dataset.table)
        _check_finite(values, "record")
        return LossProfile(values, "rho", self.label or "records", base=self.policy.workload.total_rho)

    @cached_property
    def owners(self) -> LossProfile | None:
        """Loss of every owner (Lemma 4, or the Lemma 5 bound), or None without an owner column."""
        col = self.dataset.schema.owner_col
        if not col:
            return None
        codes, _ = _column_codes(self.dataset.table, col)
        owners = codes if (codes >= 0).all() else self.dataset.table[col]  # missing ids: owner_losses says so
        with np.errstate(over="ignore", invalid="ignore"):
            ol = owner_losses(self.records.values, owners, measure="rho",
                              method=self.owner_method)  # type: ignore[arg-type]  # owner_method is a str field; preview_policy only accepts lemma4 or lemma5
        _check_finite(ol.to_numpy(), "owner")
        return LossProfile(ol.to_numpy(), "rho", (self.label + " " if self.label else "") + "owners",
                           base=self.policy.workload.total_rho)

    @property
    def share_split(self) -> float:
        """Share of records cut into more than one piece (the records paying more than the base)."""
        return float(np.mean(self.pieces > 1)) if self.pieces.size else 0.0

    def summary(self) -> dict[str, float]:
        s = self.records.summary()
        s.update({"base_loss": self.policy.workload.total_rho, "share_split": self.share_split,
                  "max_pieces": int(self.pieces.max()) if self.pieces.size else 0})
        if self.owners is not None:
            s["owners"] = self.owners.n
            s["owner_max"] = float(self.owners.values.max()) if self.owners.n else 0.0
        return s

    def by_group(self, col: str) -> pd.DataFrame:
        """Per-group summaries of the record losses over the dataset column ``col`` (confidential);
        records with a missing group label are left out, as in a pandas group-by."""
        if col not in self.dataset.table.columns:
            raise PolicyError(f"Column '{col}' is not in the dataset.")
        codes, labels = _column_codes(self.dataset.table, col)
        return self.records.by_group(pd.Categorical.from_codes(codes, categories=labels), name=col)

    def record_cdf(self) -> tuple[np.ndarray, np.ndarray]:
        """The policy-loss CDF over records.

        When every record's loss is flat + split·m(r)² (joint splitting, no filters) the CDF
        follows from a histogram of the split counts in O(n), without sorting the losses.
        """
        wl = self.policy.workload
        m = self.pieces
        if (wl.joint and not any(q.filter is not None for q in wl.queries) and m.size
                and int(m.max()) <= 50_000_000):
            counts = np.bincount(m)
            k = np.flatnonzero(counts)
            x = wl.flat_rho + wl.split_rho * k.astype("float64") ** 2
            return x, np.cumsum(counts[k]) / m.size
        return self.records.ecdf()

    def levels(self) -> dict[str, float]:
        """Named loss levels for conversion tables: base, median, p90, p99 and max of records."""
        v = self.records.values
        return {"base loss (unsplit records)": self.policy.workload.total_rho,
                "median record": float(np.median(v)), "90th percentile": float(np.quantile(v, 0.9)),
                "99th percentile": float(np.quantile(v, 0.99)), "largest record": float(v.max())}


#: Piece counts whose losses :func:`public_levels` names.
PUBLIC_PIECES = (2, 5, 10, 100)


def public_levels(policy: SplittingPolicy, pieces: tuple[int, ...] = PUBLIC_PIECES) -> dict[str, float]:
    """Named loss levels read off the public policy function alone — no record is looked at: the base loss
    (a record never split) and the loss of a hypothetical record cut into m pieces on every measure it is
    summed on, passing every filter: flat ρ + split ρ·m². These are what a reviewer may convert to (ε, δ)
    without seeing the data (:meth:`PolicyPreview.levels` names the levels of real records instead)."""
    wl = policy.workload
    out = {"base loss (unsplit records)": wl.total_rho}
    for m in pieces:
        out[f"a record cut into {int(m)} pieces"] = wl.flat_rho + wl.split_rho * float(m) ** 2
    return out


@dataclass(eq=False)
class EnginePolicyPreview:
    """What a policy means for the records of a dataset held by an engine: the read-outs of
    :class:`PolicyPreview`, computed from the split-count histogram (records) and the engine's
    owner aggregates (owners), exactly — as distributions instead of per-record arrays."""

    policy: SplittingPolicy
    dataset: EngineDataset
    histogram: SplitHistogram
    owner_method: str = "lemma4"
    label: str = ""

    def _losses(self, hist: SplitHistogram) -> np.ndarray:
        from .unit_splitting import policy_loss_of_histogram

        with np.errstate(over="ignore", invalid="ignore"):
            values = policy_loss_of_histogram(self.policy, hist, summed=True)
        _check_finite(values, "record")
        return values

    @cached_property
    def records(self) -> LossDistribution:
        """Losses of the records, as a distribution (confidential)."""
        return LossDistribution.from_counts(self._losses(self.histogram), self.histogram.counts, "rho",
                                            label=self.label or "records", base=self.policy.workload.total_rho)

    @cached_property
    def owners(self) -> LossDistribution | None:
        """Losses of the owners (Lemma 4, or the Lemma 5 bound), or None without an owner column."""
        col = self.dataset.schema.owner_col
        if not col:
            return None
        dist = self.dataset.engine.unit_losses(self.histogram, self._losses(self.histogram), owner_col=col,
                                               method=self.owner_method)  # type: ignore[arg-type]  # owner_method is a str field; preview_policy only accepts lemma4 or lemma5
        return dist.with_label((self.label + " " if self.label else "") + "owners", self.policy.workload.total_rho)

    @property
    def share_split(self) -> float:
        n = self.histogram.n
        return float(self.histogram.counts[self.histogram.column("m") > 1].sum() / n) if n else 0.0

    def summary(self) -> dict[str, float]:
        s = self.records.summary()
        m = self.histogram.column("m")
        s.update({"base_loss": self.policy.workload.total_rho, "share_split": self.share_split,
                  "max_pieces": int(m.max()) if m.size else 0})
        if self.owners is not None:
            s["owners"] = self.owners.n
            s["owner_max"] = self.owners.max
        return s

    def by_group(self, col: str) -> pd.DataFrame:
        """Per-group summaries of the record losses over column ``col`` (the columns of
        :meth:`PolicyPreview.by_group`; records with a missing group label are left out)."""
        if col not in self.dataset.columns:
            raise PolicyError(f"Column '{col}' is not in the dataset.")
        h = self.histogram
        hist = self.dataset.engine.split_histogram(h.thresholds, measures=h.measures, filters=h.filters, by=(col,))
        values = self._losses(hist)
        frame = pd.DataFrame({col: hist.keys[col], "loss": values, "n": hist.counts}).dropna(subset=[col])
        base = self.policy.workload.total_rho
        rows = []
        for g, part in frame.groupby(col, sort=True):
            d = LossDistribution.from_counts(part["loss"].to_numpy(), part["n"].to_numpy())
            rows.append({col: g, "records": d.n, "min": d.min, "median": float(d.quantile(0.5)), "max": d.max,
                         "share_above_base": d.share_above(base)})
        return pd.DataFrame(rows, columns=[col, "records", "min", "median", "max", "share_above_base"])

    def record_cdf(self) -> tuple[np.ndarray, np.ndarray]:
        """The policy-loss CDF over records (exact)."""
        return self.records.ecdf()

    def levels(self) -> dict[str, float]:
        """Named loss levels for conversion tables: base, median, p90, p99 and max of records."""
        return self.records.levels(self.policy.workload.total_rho)


def preview_policy(ds: Dataset | EngineDataset, policy: SplittingPolicy, *, label: str = "",
                   owner_method: Literal["lemma4", "lemma5"] = "lemma4",
                   pieces: np.ndarray | None = None) -> PolicyPreview | EnginePolicyPreview:
    """Evaluate ``policy`` on every record of ``ds`` (and on its owners, if it has an owner column).

    ``pieces`` may pass precomputed split counts (a cache) for the policy's thresholds. A dataset
    held by an engine gives an :class:`EnginePolicyPreview` (the same read-outs, computed there).
    """
    if isinstance(ds, EngineDataset):
        ds.engine.validate_policy(policy, ds.schema.measures)
        wl = policy.workload
        own = wl.split_measures()
        filters = tuple(dict.fromkeys(q.filter for q in wl.queries if q.filter is not None))
        hist = ds.engine.split_histogram(policy.thresholds, measures=own, filters=filters)
        return EnginePolicyPreview(policy, ds, hist, owner_method, label)
    policy.validate(ds.table, ds.schema.measures)
    m = split_counts(ds.table, policy.thresholds) if pieces is None else np.asarray(pieces)
    if m.shape[0] != ds.n:
        raise PolicyError("The precomputed split counts do not match the dataset.")
    return PolicyPreview(policy, ds, m, owner_method, label)


def _check_finite(values: np.ndarray, who: str) -> None:
    """Refuse losses that overflow the floating-point range, saying what to change."""
    if values.size and not np.isfinite(values).all():
        raise PolicyError(f"Some {who} losses are too large to compute (they exceed the floating-point range).",
                          hint="Lower the budgets ρ or raise the splitting thresholds.")


def group_summary(preview: PolicyPreview, ds: Dataset, group_col: str) -> pd.DataFrame:
    """Per-group summary of record losses (records, share above base, median, max)."""
    return preview.records.by_group(ds.table[group_col].to_numpy(), name=group_col)
