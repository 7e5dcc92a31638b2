"""Per-record privacy-loss profiles: the numbers behind every policy-loss chart.

A :class:`LossProfile` holds the loss each record of a real table would incur under a
policy (or a release), in one of two measures:

* ``"rho"`` — zero-concentrated DP (per-record zCDP, P-PRzCDP of the per-record zCDP
  paper, Def. 6): a record r with loss P(r) has d_α(M(D)‖M(D∖{r})) ≤ α·P(r) for all α > 1;
* ``"eps"`` — pure differential privacy (E-PrDP of the general framework paper, Def. 3.7):
  outputs change by a factor at most e^{E(r)} when r is added or removed.

Per-record losses of real records are **confidential** (only the policy's functional form
is public): the app shows them to the designer with that warning and review-mode exports
leave them out.

Owner (group) losses, e.g. of a firm owning several establishments:

* zCDP, Lemma 4 (simple group privacy): J · Σ_j P(r_j) for an owner with J records;
* zCDP, Lemma 5 (advanced, order-dependent): inf_{k>1} Σ_j k^j/(k−1)·P(r_(j)) with the
  losses sorted decreasingly — only valid if records are removed in the most favourable
  order, so the app labels it as an *optimistic* view;
* pure ε: Σ_j E(r_j) (group privacy of pure DP is additive).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

import numpy as np
import pandas as pd

from .errors import ParameterError
from .wording import share_in_words

Measure = Literal["rho", "eps"]
MEASURE_SYMBOL = {"rho": "ρ", "eps": "ε"}


def _check_measure(measure: str) -> None:
    if measure not in MEASURE_SYMBOL:
        raise ParameterError(f"Unknown loss measure '{measure}'.", hint="Use 'rho' (zCDP) or 'eps' (pure DP).")


def format_loss(x: float, measure: Measure = "rho") -> str:
    """A loss with its unit, readable at any magnitude: 0.25ρ, 19ρ, 480,000ρ."""
    sym = MEASURE_SYMBOL[measure]
    if not np.isfinite(x):
        return f"∞{sym}"
    if abs(x) >= 1e4:
        return f"{x:,.0f}{sym}"
    return f"{x:.3g}{sym}"


def ecdf(values: np.ndarray, *, max_points: int = 4000) -> tuple[np.ndarray, np.ndarray]:
    """Empirical CDF as step points (x ascending, share of values ≤ x).

    With few distinct values (the usual case: losses are ρ·m², m integer) every jump is
    kept exactly; otherwise the curve is thinned to ``max_points`` steps that still pass
    through exact ECDF points.
    """
    v = np.asarray(values, dtype=float)
    if v.size == 0:
        return np.array([]), np.array([])
    u, counts = np.unique(v, return_counts=True)
    y = np.cumsum(counts) / v.size
    if u.size > max_points:
        idx = np.unique(np.concatenate((np.linspace(0, u.size - 1, max_points).astype(int), [u.size - 1])))
        u, y = u[idx], y[idx]
    return u, y


@dataclass(frozen=True)
class LossProfile:
    """Per-record losses of the records of a table, in one measure.

    Attributes
    ----------
    values:
        Loss of each record, aligned with the rows of the table it was computed on.
        Confidential: each value reveals something about that record.
    measure:
        ``"rho"`` (zCDP) or ``"eps"`` (pure DP).
    label:
        Name shown in legends ("T(EMP) = 100, ρ = 1").
    base:
        The loss of the smallest records (PolicyMin): the "base loss" a share-above is
        measured against. Defaults to the smallest value present.
    """

    values: np.ndarray
    measure: Measure = "rho"
    label: str = ""
    base: float | None = None
    owners: np.ndarray | None = field(default=None, repr=False)

    def __post_init__(self) -> None:
        _check_measure(self.measure)
        v = np.asarray(self.values, dtype=float)
        if v.ndim != 1:
            raise ParameterError("Losses must be a one-dimensional array.")
        if v.size and (not np.isfinite(v).all() or (v < 0).any()):
            raise ParameterError("Losses must be finite and non-negative.")
        object.__setattr__(self, "values", v)

    @property
    def n(self) -> int:
        return int(self.values.size)

    @property
    def base_loss(self) -> float:
        if self.base is not None:
            return float(self.base)
        return float(self.values.min()) if self.n else 0.0

    def ecdf(self, max_points: int = 4000) -> tuple[np.ndarray, np.ndarray]:
        return ecdf(self.values, max_points=max_points)

    def quantile(self, q: float | np.ndarray) -> float | np.ndarray:
        return np.quantile(self.values, q)

    def share_above(self, level: float | None = None) -> float:
        """Share of records whose loss exceeds ``level`` (default: the base loss)."""
        lv = self.base_loss if level is None else float(level)
        return float(np.mean(self.values > lv * (1 + 1e-12))) if self.n else 0.0

    def count_above(self, level: float | None = None) -> int:
        lv = self.base_loss if level is None else float(level)
        return int(np.sum(self.values > lv * (1 + 1e-12)))

    def top_k(self, k: int = 10) -> tuple[np.ndarray, np.ndarray]:
        """Row positions and losses of the k largest losses (largest first)."""
        k = max(0, min(int(k), self.n))
        if k == 0:
            return np.array([], dtype=int), np.array([])
        idx = np.argpartition(-self.values, k - 1)[:k]
        idx = idx[np.argsort(-self.values[idx], kind="stable")]
        return idx, self.values[idx]

    def summary(self) -> dict[str, float]:
        v = self.values
        if not self.n:
            return {"records": 0}
        return {
            "records": self.n, "min": float(v.min()), "median": float(np.median(v)),
            "p90": float(np.quantile(v, 0.9)), "p99": float(np.quantile(v, 0.99)), "max": float(v.max()),
            "mean": float(v.mean()), "share_above_base": self.share_above(),
        }

    def by_group(self, groups: np.ndarray | pd.Series | pd.Categorical, name: str = "group") -> pd.DataFrame:
        """Per-group summaries: records, min, median, max, share above the base loss.

        ``groups``: one label per record (a categorical is grouped by its codes, which is much
        faster for string labels); records with a missing label are left out."""
        g = groups if isinstance(groups, pd.Categorical) else np.asarray(groups)
        if len(g) != self.n:
            raise ParameterError("Group labels must have one value per record.")
        base = self.base_loss
        df = pd.DataFrame({name: g, "loss": self.values, "above": self.values > base * (1 + 1e-12)})
        out = df.groupby(name, sort=True, observed=True).agg(
            records=("loss", "size"), min=("loss", "min"), median=("loss", "median"), max=("loss", "max"),
            share_above_base=("above", "mean"))
        out = out.reset_index()
        if isinstance(out[name].dtype, pd.CategoricalDtype):
            out[name] = out[name].astype(out[name].cat.categories.dtype)
        return out

    def plain_language(self, level: float | None = None, noun: str = "records") -> str:
        """A read-out such as "1 in 100 records pays more than 4ρ"."""
        lv = self.base_loss if level is None else float(level)
        return plain_language(self.share_above(lv), self.n, lv, float(self.values.max()) if self.n else 0.0,
                              self.measure, noun)


def plain_language(share: float, n: int, level: float, largest: float, measure: Measure = "rho",
                   noun: str = "records", qualifier: str = "") -> str:
    """The read-out of a loss profile or distribution: "1 in 100 records pays more than 4ρ; the
    largest loss is 19ρ" (``qualifier`` follows the level, e.g. a binned distribution's bound)."""
    if share == 0:
        return f"No one of the {n:,} {noun} pays more than {format_loss(level, measure)}."
    ratio = share_in_words(share, noun, singular="pays", plural="pay")
    return (f"{ratio} more than {format_loss(level, measure)}{qualifier}; the largest loss is "
            f"{format_loss(largest, measure)}.")


def owner_losses(losses: np.ndarray, owners: np.ndarray | pd.Series, *, measure: Measure = "rho",
                 method: Literal["lemma4", "lemma5"] = "lemma4", k_grid: int = 256) -> pd.Series:
    """Losses of owners (groups of records, e.g. firms) from their records' losses.

    ``method="lemma4"`` (the default, order-agnostic): J·Σ P(r_j) for zCDP, Σ E(r_j) for
    pure ε. ``method="lemma5"``: the order-dependent zCDP bound of Lemma 5, losses sorted
    decreasingly, in the form its proof gives: inf_{k>1} Σ_{j<J} k^j/(k−1)·P(r_(j)) +
    k^{J−1}·P(r_(J)). (The lemma as printed uses k^J/(k−1) for the last term too, which is
    looser: for two equal losses it exceeds Lemma 4's 4P; the proof's form equals 4P
    there and P1 + P2 + 2√(P1·P2) for J = 2, as the paper's own example derives.) The
    infimum is taken over a grid of k (every k gives a valid bound, so the grid minimum
    is valid and slightly looser), and the result is never above Lemma 4's.
    Returns a Series indexed by owner.
    """
    _check_measure(measure)
    p = np.asarray(losses, dtype=float)
    own = np.asarray(owners)
    if own.size != p.size:
        raise ParameterError("Owner ids must have one value per record.")
    if own.dtype.kind in "iu" and own.size and own.min() >= 0 and own.max() < 4 * own.size + 1024:
        # integer ids (e.g. codes already factorised): dense sorted codes by counting, O(n)
        present = np.bincount(own) > 0
        uniques = pd.Index(np.flatnonzero(present))
        codes = (np.cumsum(present) - 1)[own]
    else:
        codes, uniques = pd.factorize(pd.Series(own), sort=True)
        if (codes < 0).any():
            raise ParameterError("Owner ids must not be missing.")
    m = uniques.size
    total = np.bincount(codes, weights=p, minlength=m)
    if measure == "eps":
        if method == "lemma5":
            raise ParameterError("Lemma 5 is a zCDP bound; pure-ε group losses simply add.")
        return pd.Series(total, index=uniques, name="owner_loss")
    size = np.bincount(codes, minlength=m).astype(float)
    if method == "lemma4":
        return pd.Series(size * total, index=uniques, name="owner_loss")
    # Lemma 5: rank j (1-based) of each record within its owner, losses decreasing
    order = np.lexsort((-p, codes))
    sorted_codes = codes[order]
    starts = np.searchsorted(sorted_codes, np.arange(m))
    j = np.empty(p.size, dtype=float)
    j[order] = np.arange(p.size) - starts[sorted_codes] + 1
    last = j == size[codes]  # the last step of the chain: coefficient k^(J-1) instead of k^J/(k-1)
    km1 = np.logspace(-4, 3, k_grid)  # k − 1
    best = size * total  # Lemma 4 is also valid: report the smaller of the two bounds
    logp = np.log(np.where(p > 0, p, 1.0))
    for d in km1:
        lk = np.log1p(d)
        with np.errstate(over="ignore"):
            terms = np.where(p > 0, np.exp(np.minimum(j * lk + logp, 700.0)), 0.0) / d
        terms[last] *= d / (1.0 + d)
        val = np.bincount(codes, weights=terms, minlength=m)
        best = np.minimum(best, val)
    return pd.Series(best, index=uniques, name="owner_loss")
