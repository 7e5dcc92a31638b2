"""Profiles and order statistics of measures in SQL: exact counts above values, exact order statistics,
and the profile of a measure (quantiles, log histogram, top-1% share, Lorenz points) — from its value
histogram when it has few distinct values, else by order statistics. A mixin of
:class:`~prdp_core.engines.sql_engine.SQLEngine` (it uses the engine's ``_exec``, ``_frame``,
``column_kinds`` and ``_order_statistics``)."""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any, Sequence

import numpy as np

from ..core.errors import ParameterError
from ..data.profile import DatasetProfile, Histogram, MeasureProfile
from . import sql as sqlgen

if TYPE_CHECKING:
    import pandas as pd

    from .base import ColumnKind

#: A measure with at most this many distinct values (by an approximate count) is profiled from its

#: value histogram — one GROUP BY, every read-out exact on the driver; others by order statistics.
PROFILE_VALUES = 2_000_000


def profile_of_values(name: str, u: np.ndarray, c: np.ndarray, bins: int, pop: np.ndarray
                      ) -> tuple[MeasureProfile, Histogram, tuple[np.ndarray, np.ndarray]]:
    """The profile, log histogram and Lorenz curve of a measure from its sorted distinct values
    ``u`` and their counts ``c`` (the read-outs of :func:`prdp_core.data.profile.profile_sorted`,
    :func:`~prdp_core.data.profile.log_histogram` and :func:`~prdp_core.data.profile.lorenz_from_sorted` on
    the sorted column: order statistics exact, sums to rounding)."""
    n = int(c.sum())
    ends = np.cumsum(c)                        # rank r lies in value j = first with ends[j] > r
    mass = np.cumsum(u * c)                    # Σ of the values up to u_j
    at = lambda r: float(u[np.searchsorted(ends, np.asarray(r) + 1, side="left")])  # noqa: E731

    def cum(k: int) -> float:
        """Σ of the k smallest values."""
        if k <= 0:
            return 0.0
        j = int(np.searchsorted(ends, k, side="left"))
        before = int(ends[j - 1]) if j else 0
        return float((mass[j - 1] if j else 0.0) + (k - before) * u[j])

    def quant(q: float) -> float:
        pos = q * (n - 1)
        lo = int(math.floor(pos))
        a, b = at(lo), at(min(lo + 1, n - 1))
        return float(a + (b - a) * (pos - lo))

    total = float(mass[-1])
    k = max(1, int(math.ceil(0.01 * n)))
    top = total - cum(n - k)
    scale = float(np.max(np.abs(u)))
    if n < 3:
        skew = float("nan")
    elif scale == 0 or not math.isfinite(scale):
        skew = 0.0
    else:
        d = u / scale - (total / scale) / n
        m2 = float(np.dot(c, d * d) / n)
        skew = 0.0 if m2 <= 1e-300 else float(np.dot(c, d * d * d) / n) / m2 ** 1.5
    zeros = int(c[u <= 0].sum())
    prof = MeasureProfile(name, n, zeros, float(u[0]), quant(0.5), quant(0.9), quant(0.99), float(u[-1]),
                          total / n, total, skew, (top / total) if total > 0 else float("nan"))
    pos = u > 0
    if not pos.any():
        hist = Histogram(np.array([1.0, 10.0]), np.array([0]), zeros)
    else:
        lo, hi = float(u[pos][0]), float(u[-1])
        if hi <= lo * (1 + 1e-12):
            lo, hi = lo / 1.5, hi * 1.5
        edges = np.logspace(np.log10(lo), np.log10(hi), bins + 1)
        edges[0], edges[-1] = lo, hi
        hcounts, _ = np.histogram(u[pos], bins=edges, weights=c[pos])
        hist = Histogram(edges, np.rint(hcounts).astype(np.int64), zeros)
    if float(u[-1]) <= 0 or total <= 0:
        return prof, hist, (pop, pop.copy())
    x = pop * n
    kk = np.minimum(np.floor(x).astype(np.int64), n - 1)
    share = np.array([(cum(int(k_)) + (xv - k_) * at(int(k_))) / total for k_, xv in zip(kk, x)])
    share[-1] = 1.0 if x[-1] >= n else share[-1]
    return prof, hist, (pop, share)


class ProfileStatistics:
    """Exact counts, order statistics and profiles of measures, for SQL engines."""

    if TYPE_CHECKING:  # provided by SQLEngine, the class this one is mixed into
        d: sqlgen.Dialect
        relation: str

        def column_kinds(self) -> dict[str, ColumnKind]: ...
        def n_rows(self) -> int: ...
        def null_counts(self, columns: Sequence[str]) -> dict[str, int]: ...
        def _exec(self, sql: str) -> list[tuple]: ...
        def _frame(self, sql: str) -> pd.DataFrame: ...
        def _order_statistics(self, v: str, ranks: Sequence[int], n: int, parts: Sequence[str]
                              ) -> tuple[tuple, dict[int, float]]: ...

    def _checked_measure(self, column: str) -> str:
        """A column as DOUBLE, after checking it holds finite non-negative numbers (ParameterError)."""
        kinds = self.column_kinds()
        if column not in kinds:
            raise ParameterError(f"Column '{column}' is not in the table.")
        i = self.d.ident(column)
        v = self.d.as_double(i) if kinds[column] in ("number", "bool") else self.d.try_double(i)
        v = f"COALESCE({v}, {self.d.double(float('nan'))})"
        bad = self._exec(f"SELECT {self.d.count_if(f'{self.d.isnan(v)} OR {self.d.isinf(v)} OR {v} < 0')} "
                         f"FROM {self.relation}")
        if bad[0][0]:
            raise ParameterError(f"Column '{column}' must hold finite non-negative numbers to be summed "
                                 "or maximised (the papers assume non-negative measures).")
        return v

    def count_above(self, column: str, values: Sequence[float]) -> np.ndarray:
        v = self._checked_measure(column)
        vals = [float(x) for x in values]
        if not vals:
            return np.zeros(0, dtype=np.int64)
        parts = ", ".join(self.d.count_if(f"{v} > {self.d.double(x)}") if not math.isnan(x) else "0" for x in vals)
        return np.asarray(self._exec(f"SELECT {parts} FROM {self.relation}")[0], dtype=np.int64)

    def order_statistics(self, column: str, ranks: Sequence[int]) -> np.ndarray:
        v = self._checked_measure(column)
        r = [int(x) for x in ranks]
        if not r:
            return np.zeros(0)
        n = self.n_rows()
        if min(r) < 0 or max(r) >= n:
            raise ParameterError(f"Ranks must lie in [0, {n - 1}].")
        _, order = self._order_statistics(v, sorted(set(r)), n, ())
        return np.asarray([order[k] for k in r], dtype=float)

    # -- profile -----------------------------------------------------------------------------

    def profile(self, measures: Sequence[str], *, bins: int = 40, lorenz_points: int = 201) -> DatasetProfile:
        """Two passes per measure: one for the order statistics every read-out needs (exact, by rank)
        with the counts, extremes and sums; one counting and summing the values between those
        order statistics and in the log-histogram bins (two CASE trees), with the moments about the
        median — from which quantiles, the top-1% share, the Lorenz curve, the histogram and the
        skewness follow exactly as :func:`prdp_core.data.profile.profile_sorted` computes them."""
        d = self.d
        ms = list(measures)
        kinds = self.column_kinds()
        for m in ms:
            if m not in kinds:
                raise ParameterError(f"Column '{m}' is not in the table.")
        vs = {m: d.as_double(d.ident(m)) for m in ms}
        nulls = self.null_counts(ms)
        pop = np.linspace(0.0, 1.0, lorenz_points)
        profs, hists, lor = {}, {}, {}
        for m in ms:  # one measure at a time: exact order statistics hold the column in memory (or spill)
            n = self.n_rows() - nulls[m]
            plan: dict[str, Any] = {"n": n}
            v = vs[m]
            approx = self._exec(f"SELECT approx_count_distinct({v}) FROM {self.relation}")[0][0] if n else 0
            if n and approx <= PROFILE_VALUES:
                frame = self._frame(f"SELECT {v} AS __v, count(*) AS __n FROM {self.relation} WHERE {v} IS NOT NULL "
                                    f"GROUP BY __v ORDER BY __v")
                if len(frame) <= 2 * PROFILE_VALUES:
                    profs[m], hists[m], lor[m] = profile_of_values(
                        m, frame["__v"].to_numpy(dtype=float), frame["__n"].to_numpy(dtype=np.int64), bins, pop)
                    continue
            parts = [d.count_if(f"{v} <= 0"), f"min({v})", f"max({v})", f"sum({v})", f"min({v}) FILTER (WHERE {v} > 0)",
                     f"max(abs({v}))"]
            if n:
                ranks: set[int] = set()
                for q in (0.5, 0.9, 0.99):
                    lo = int(math.floor(q * (n - 1)))
                    ranks |= {lo, min(lo + 1, n - 1)}
                k = max(1, int(math.ceil(0.01 * n)))
                plan["k"] = k
                ranks.add(n - k)
                ranks |= set(int(r) for r in np.minimum(np.floor(pop * n).astype(np.int64), n - 1))
                plan["ranks"] = sorted(ranks)
                row, plan["order"] = self._order_statistics(v, plan["ranks"], n, parts)
            else:
                row = tuple(self._exec(f"SELECT {', '.join(parts)} FROM {self.relation}")[0])
            zeros, mn, mx, total, lo_pos, scale = row
            profs[m], hists[m], lor[m] = self._profile_one(m, vs[m], plan, int(zeros), mn, mx, total, lo_pos,
                                                          scale, bins, pop)
        return DatasetProfile(profs, hists, lor)

    def _profile_one(self, m: str, v: str, plan: dict[str, Any], zeros: int, mn: Any, mx: Any, total: Any,
                     lo_pos: Any, scale: Any, bins: int, pop: np.ndarray
                     ) -> tuple[MeasureProfile, Histogram, tuple[np.ndarray, np.ndarray]]:
        d = self.d
        n = plan["n"]
        if n == 0:
            nan = float("nan")
            return (MeasureProfile(m, 0, 0, nan, nan, nan, nan, nan, nan, 0.0, nan, nan),
                    Histogram(np.array([1.0, 10.0]), np.array([0]), 0), (pop, pop.copy()))
        order = plan["order"]
        thresholds = np.array(sorted(set(order.values())))
        # value histogram: edges of the log histogram (zeros apart), numpy's histogram rule
        if lo_pos is None:
            edges = None
        else:
            lo, hi = float(lo_pos), float(mx)
            if hi <= lo * (1 + 1e-12):
                lo, hi = lo / 1.5, hi * 1.5
            edges = np.logspace(np.log10(lo), np.log10(hi), bins + 1)
            edges[0], edges[-1] = lo, hi
        scale_f = float(scale)
        # moments about c = the scaled median (near the mean: no cancellation), corrected to the mean
        c = (float(order[int(math.floor(0.5 * (n - 1)))]) / scale_f) if scale_f > 0 else 0.0
        w = f"({v} / {d.double(scale_f)} - {d.double(c)})" if scale_f > 0 else d.double(0.0)
        bucket = sqlgen.bucket_sql(d, v, thresholds, side="right")
        hbin = (f"(CASE WHEN {v} > 0 THEN least({sqlgen.bucket_sql(d, v, edges, side='right')} - 1, {bins - 1}) "
                "ELSE -1 END)") if edges is not None else "-1"
        rows = self._exec(f"SELECT {bucket} AS __b, {hbin} AS __h, count(*), sum({v}), sum({w}), sum({w} * {w}), "
                          f"sum({w} * {w} * {w}) FROM {self.relation} WHERE {v} IS NOT NULL GROUP BY ALL")
        nb = thresholds.size + 1
        cnt = np.zeros(nb, dtype=np.int64)
        sm = np.zeros(nb)
        s1 = s2 = s3 = 0.0
        hcounts = np.zeros(bins, dtype=np.int64)
        for b, h, k_, s, x1, x2, x3 in rows:
            cnt[int(b)] += int(k_)
            sm[int(b)] += float(s)
            s1, s2, s3 = s1 + float(x1), s2 + float(x2), s3 + float(x3)
            if int(h) >= 0:
                hcounts[int(h)] += int(k_)
        below_n = np.cumsum(cnt)  # bucket b holds the values with #{T ≤ v} = b: #{v < T_j} = Σ_{b ≤ j}
        below_s = np.cumsum(sm)

        def cum(k: int) -> float:
            """Σ of the k smallest values: those below s_k, and k − #{v < s_k} copies of s_k."""
            if k <= 0:
                return 0.0
            if k >= n:
                return float(total)
            t = order[k]
            j = int(np.searchsorted(thresholds, t))
            return float(below_s[j] + (k - below_n[j]) * t)

        def quant(q: float) -> float:
            pos = q * (n - 1)
            lo = int(math.floor(pos))
            hi = min(lo + 1, n - 1)
            a, b = order[lo], order[hi]
            return float(a + (b - a) * (pos - lo))

        tot = float(total)
        top = tot - cum(n - plan["k"])
        dm = s1 / n  # mean − c
        m2 = s2 / n - dm * dm
        m3 = s3 / n - 3.0 * dm * (s2 / n) + 2.0 * dm ** 3
        if n < 3:
            skew = float("nan")
        elif scale_f == 0 or not math.isfinite(scale_f) or m2 <= 1e-300:
            skew = 0.0
        else:
            skew = m3 / m2 ** 1.5
        prof = MeasureProfile(name=m, count=n, zeros=zeros, min=float(mn), median=quant(0.5), p90=quant(0.9),
                              p99=quant(0.99), max=float(mx), mean=tot / n, total=tot, skewness=skew,
                              top1_share=(top / tot) if tot > 0 else float("nan"))
        hist = Histogram(edges, hcounts, zeros) if edges is not None else Histogram(np.array([1.0, 10.0]),
                                                                                 np.array([0]), zeros)
        # Lorenz curve: the piecewise-linear cumulative share at evenly spaced population shares
        if float(mx) <= 0 or tot <= 0:
            return prof, hist, (pop, pop.copy())
        x = pop * n
        kk = np.minimum(np.floor(x).astype(np.int64), n - 1)
        share = np.array([(cum(int(k_)) + (xv - k_) * order[int(k_)]) / tot for k_, xv in zip(kk, x)])
        share[-1] = 1.0 if x[-1] >= n else share[-1]
        return prof, hist, (pop, share)
