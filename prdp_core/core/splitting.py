"""Unit splitting (per-record zCDP paper, Sec. 5, Algorithm 1).

A record whose measure r(a) exceeds the splitting threshold T(a) is cut into pieces of
at most T(a) that sum to r(a); its other measures are cut alongside (zero-padded), and
its conditional attributes (group keys, filters) are copied to every piece. The number
of pieces is

    m(r) = max_a ⌈r(a) / T(a)⌉, at least 1.

Any ρ-zCDP mechanism run on the split table then satisfies P-PRzCDP with
P(r) = ρ·m(r)² (Lemma 7 as proved — the printed statement (ρ|A(r)|)² is a typo; group
privacy of zCDP multiplies ρ by the square of the group size). Sums over split data
have sensitivity T(a): that is how splitting bounds the noise without clipping.

Thresholds may differ between groups (a group value → thresholds table with a ``"*"``
default row): by parallel composition over the groups (Lemma 3) the policy is then
piecewise, each record being split with its own group's thresholds.

Privacy meaning of a threshold: a record with r(a) ≤ T(a) for every measure pays the
base loss; each extra piece multiplies its loss as m². Smaller thresholds mean less
noise on sums and more loss for large records.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Callable, ClassVar, Mapping

import numpy as np
import pandas as pd

from . import limits
from .accounting import LossFunction, register_loss
from .errors import ParameterError, PolicyError, ResourceLimitError
from .loss_profile import Measure
from .validate import non_negative, positive

DEFAULT_KEY = "*"


def _check_threshold(measure: str, value: Any) -> float:
    return positive(f"The threshold of '{measure}'", value, error=PolicyError,
                    hint="A threshold is the largest piece a record is cut into; use a value > 0.")


@dataclass(frozen=True)
class Thresholds:
    """Splitting thresholds T(a) per measure, optionally per group.

    ``rows`` maps a group value (or ``"*"``, the default row) to ``{measure: T}``;
    without ``group_col`` there is a single ``"*"`` row. Build from the plain mapping
    forms with :func:`as_thresholds`.
    """

    rows: tuple[tuple[Any, tuple[tuple[str, float], ...]], ...]
    group_col: str | None = None

    @property
    def measures(self) -> tuple[str, ...]:
        seen: dict[str, None] = {}
        for _, row in self.rows:
            for m, _t in row:
                seen.setdefault(m, None)
        return tuple(seen)

    def as_dict(self) -> dict[Any, dict[str, float]]:
        return {g: dict(row) for g, row in self.rows}

    def default(self) -> dict[str, float] | None:
        d = self.as_dict()
        return d.get(DEFAULT_KEY)

    def for_group(self, value: Any) -> dict[str, float]:
        d = self.as_dict()
        if value in d:
            return d[value]
        if DEFAULT_KEY in d:
            return d[DEFAULT_KEY]
        raise PolicyError(f"No thresholds for {self.group_col} = {value!r} and no default ('*') row.",
                          hint="Add a row for this group or a default row.")

    def to_dict(self) -> dict[str, Any]:
        """Plain form: ``rows`` keyed by the group values as text; ``group_values`` maps that text back to
        a group value that is not text (an integer, a float, a boolean), so :meth:`from_dict` rebuilds the
        same rows after a JSON round trip (a stored ledger's policy matches the same groups)."""
        d: dict[str, Any] = {"group_col": self.group_col, "rows": {str(g): dict(r) for g, r in self.rows}}
        typed = {str(g): _plain_key(g) for g, _ in self.rows if not isinstance(g, str)}
        if typed:
            d["group_values"] = typed
        return d

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> "Thresholds":
        typed = d.get("group_values") or {}
        rows = {typed.get(str(g), g): r for g, r in d["rows"].items()}
        return as_thresholds(rows, group_col=d.get("group_col"))

    def describe(self) -> str:
        def fmt(row: tuple[tuple[str, float], ...]) -> str:
            return ", ".join(f"T({m}) = {t:,.6g}" for m, t in row)
        if self.group_col is None:
            return fmt(self.rows[0][1])
        return "; ".join(f"{self.group_col} = {g}: {fmt(r)}" if g != DEFAULT_KEY else f"otherwise: {fmt(r)}"
                         for g, r in self.rows)

    def validate(self, table: pd.DataFrame, measures: tuple[str, ...] | None = None) -> None:
        """Check measures exist and every group present in ``table`` is covered."""
        self.check(table.columns, measures, lambda: pd.unique(table[self.group_col]))

    def check(self, columns: Any, measures: tuple[str, ...] | None = None,
              group_values: Callable[[], Any] | None = None) -> None:
        """:meth:`validate` on a table's column names; ``group_values()`` lists the values of the
        group column present (asked only when there is no default row) — for tables held by an
        engine too."""
        cols = set(columns)
        for m in self.measures:
            if m not in cols:
                raise PolicyError(f"Threshold given for '{m}', which is not a column of the table.",
                                  hint="Use measure columns of the active dataset.")
        if measures is not None:
            missing = [m for m in self.measures if m not in measures]
            if missing:
                raise PolicyError(f"'{missing[0]}' is not a measure of the dataset.",
                                  hint="Thresholds apply to measure columns only.")
        if self.group_col is not None:
            if self.group_col not in cols:
                raise PolicyError(f"Group column '{self.group_col}' is not in the table.")
            if self.default() is None and group_values is not None:
                present = group_values()
                known = {g for g, _ in self.rows}
                uncovered = [g for g in present if g not in known]
                if uncovered:
                    ex = ", ".join(map(str, uncovered[:3]))
                    raise PolicyError(f"{len(uncovered):,} group value(s) of '{self.group_col}' have no thresholds "
                                      f"(e.g. {ex}).", hint="Add a default ('*') row or a row for each group.")
        meas = self.measures
        for g, row in self.rows:
            names = {m for m, _ in row}
            if names != set(meas):
                lacking = sorted(set(meas) - names)
                raise PolicyError(f"The thresholds row for {g!r} lacks {', '.join(lacking)}.",
                                  hint="Give every row a threshold for every measure.")


def _plain_key(g: Any) -> Any:
    """A group value as a plain JSON scalar (numpy numbers as Python numbers; other objects as text)."""
    if isinstance(g, np.generic):
        g = g.item()
    return g if isinstance(g, (bool, int, float, str)) or g is None else str(g)


def as_thresholds(thresholds: Mapping[Any, Any] | Thresholds, *, group_col: str | None = None) -> Thresholds:
    """Normalise ``{measure: T}`` or ``{group value: {measure: T}, "*": {...}}`` to :class:`Thresholds`.

    Raises :class:`PolicyError` for non-positive or non-numeric thresholds, an empty
    mapping, or a per-group mapping without ``group_col``.
    """
    if isinstance(thresholds, Thresholds):
        if group_col is not None and thresholds.group_col != group_col:
            return Thresholds(thresholds.rows, group_col)
        return thresholds
    if not isinstance(thresholds, Mapping) or not thresholds:
        raise PolicyError("Give at least one splitting threshold (measure → threshold).")
    nested = [isinstance(v, Mapping) for v in thresholds.values()]
    if all(nested):
        if group_col is None:
            keys = list(thresholds)
            if keys == [DEFAULT_KEY]:
                return as_thresholds(thresholds[DEFAULT_KEY])
            raise PolicyError("Per-group thresholds need a group column.", hint="Pass group_col=… .")
        rows = []
        for g, row in thresholds.items():
            if not row:
                raise PolicyError(f"The thresholds row for {g!r} is empty.")
            rows.append((g, tuple((str(m), _check_threshold(str(m), t)) for m, t in row.items())))
        return Thresholds(tuple(rows), group_col)
    if any(nested):
        raise PolicyError("Mix of per-group rows and plain thresholds.",
                          hint="Use {measure: T} or {group: {measure: T}, '*': {measure: T}}.")
    row = tuple((str(m), _check_threshold(str(m), t)) for m, t in thresholds.items())
    return Thresholds(((DEFAULT_KEY, row),), None)


def restrict_thresholds(thresholds: Thresholds, measures: tuple[str, ...] | list[str]) -> Thresholds | None:
    """The thresholds of ``measures`` only (the same rows and group column), or None when no row
    names any of them — what splitting on those measures alone uses (per-measure splitting)."""
    keep = set(measures)
    rows = {g: {m: t for m, t in r if m in keep} for g, r in thresholds.rows}
    rows = {g: r for g, r in rows.items() if r}
    if not rows:
        return None
    return as_thresholds(rows if thresholds.group_col else rows[DEFAULT_KEY], group_col=thresholds.group_col)


def _measure_matrix(table: pd.DataFrame, measures: tuple[str, ...]) -> list[np.ndarray]:
    out = []
    for m in measures:
        v = table[m].to_numpy(dtype="float64", copy=False)
        # two reductions, no temporaries: a NaN makes min() NaN, which fails "≥ 0"
        if v.size and not (v.min() >= 0 and np.isfinite(v.max())):
            raise PolicyError(f"Measure '{m}' has missing, infinite or negative values.",
                              hint="Prepare the dataset first (drop missing rows, shift negatives).")
        out.append(v)
    return out


def _threshold_arrays(table: pd.DataFrame, thr: Thresholds) -> dict[str, np.ndarray | float]:
    """Per-measure threshold: a scalar, or one value per record for per-group thresholds."""
    if thr.group_col is None:
        return dict(thr.rows[0][1])
    key = table[thr.group_col]
    codes, uniques = pd.factorize(key, sort=False)
    missing = codes < 0
    default = thr.default()
    if missing.any() and default is None:
        raise PolicyError(f"{int(missing.sum()):,} record(s) have no value in '{thr.group_col}' and there is no "
                          "default ('*') thresholds row for them.", hint="Add a default row or fill the values.")
    out: dict[str, np.ndarray | float] = {}
    for m in thr.measures:
        # the last slot is the default row: records with a missing group value (code −1) take it
        per_group = np.array([thr.for_group(u)[m] for u in uniques] + [default[m] if default else np.nan],
                             dtype="float64")
        out[m] = per_group[codes] if len(key) else np.empty(0)
    return out


def _pieces(v: np.ndarray, t: np.ndarray | float, out: np.ndarray | None = None,
            scratch: np.ndarray | None = None, flags: np.ndarray | None = None) -> np.ndarray:
    """⌈v / t⌉ corrected so that pieces·t ≥ v holds exactly (in real arithmetic, not just in floats).

    ``out``, ``scratch`` (float) and ``flags`` (bool) are optional buffers of v's shape,
    reused across measures to avoid allocating large temporaries.
    """
    k = np.divide(v, t, out=out)
    np.ceil(k, out=k)
    prod = np.multiply(k, t, out=scratch)
    short = np.less(prod, v, out=flags)
    # where the rounded product equals v exactly, its rounding error decides: k·t < v iff the
    # error of fl(k·t) is negative (TwoProduct, Dekker's splitting; only on these rare ties)
    tie = np.flatnonzero(prod == v)
    if tie.size:
        kt = k[tie]
        tt = t[tie] if isinstance(t, np.ndarray) else np.full(tie.size, float(t))
        short[tie] = _product_error(kt, tt, prod[tie]) < 0
    if short.any():
        k[short] += 1
    return k


def _product_error(a: np.ndarray, b: np.ndarray, p: np.ndarray) -> np.ndarray:
    """a·b − fl(a·b) exactly (Dekker's TwoProduct), for finite values without overflow."""
    def split(x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        c = 134217729.0 * x  # 2^27 + 1
        hi = c - (c - x)
        return hi, x - hi

    ah, al = split(a)
    bh, bl = split(b)
    return ((ah * bh - p) + ah * bl + al * bh) + al * bl


def split_counts(table: pd.DataFrame, thresholds: Mapping[Any, Any] | Thresholds, *,
                 group_col: str | None = None) -> np.ndarray:
    """m(r) = max_a ⌈r(a)/T(a)⌉, at least 1, for every record (vectorised).

    Parameters
    ----------
    table:
        Records with non-negative measure columns.
    thresholds:
        ``{measure: T}``, or ``{group value: {measure: T}, "*": {measure: T}}`` with
        ``group_col`` naming the group column (piecewise policy, Lemma 3).
    group_col:
        The column whose value picks a record's thresholds row.

    Returns an int64 array: the number of pieces of each record, hence its loss multiplier
    m(r)² for every ρ spent on split data.
    """
    thr = as_thresholds(thresholds, group_col=group_col)
    thr.validate(table)
    tarr = _threshold_arrays(table, thr)
    vals = _measure_matrix(table, thr.measures)
    n = len(table)
    m = np.ones(n, dtype="float64")
    k, scratch, flags = np.empty(n), np.empty(n), np.empty(n, dtype=bool)
    for name, v in zip(thr.measures, vals):
        np.maximum(m, _pieces(v, tarr[name], k, scratch, flags), out=m)
    if n and not float(m.max()) <= 2.0**53:  # beyond 2^53 pieces (or inf) the int64 cast is meaningless
        raise ParameterError("A threshold is so small that a record would be cut into more than 2^53 pieces.",
                             hint="Use larger splitting thresholds.")
    return m.astype(np.int64)


def unit_split(table: pd.DataFrame, thresholds: Mapping[Any, Any] | Thresholds, *, id_col: str,
               group_col: str | None = None, measures: tuple[str, ...] | None = None) -> pd.DataFrame:
    """Materialised split table (Algorithm 1).

    Each record becomes m(r) rows: its non-measure columns (id, groups, owner, …) are
    copied; each thresholded measure is cut greedily into pieces of T(a) with the
    remainder in the last non-empty piece and zeros after it, so every piece is ≤ T(a)
    and the pieces sum to r(a) (Table 2(b) of the paper). Measures listed in
    ``measures`` but without a threshold are copied into the first piece and zeroed in
    the others (their sums are preserved too). A ``piece`` column numbers the pieces
    from 1.
    """
    thr = as_thresholds(thresholds, group_col=group_col)
    if id_col not in table.columns:
        raise PolicyError(f"Record id column '{id_col}' is not in the table.")
    m = split_counts(table, thr)
    n = len(table)
    total = int(m.sum())
    if total > limits.MAX_SPLIT_ROWS:
        raise ResourceLimitError(
            f"The split table would have {total:,} rows (limit {limits.MAX_SPLIT_ROWS:,}).",
            hint="Raise the thresholds, or use the engine's sufficient statistics (split counts) instead of "
                 "materialising the table.")
    idx = np.repeat(np.arange(n), m)
    starts = np.concatenate(([0], np.cumsum(m)[:-1]))
    piece = np.arange(idx.size) - np.repeat(starts, m)  # 0-based position within the record
    out = table.iloc[idx].reset_index(drop=True)
    tarr = _threshold_arrays(table, thr)
    for name in thr.measures:
        v = table[name].to_numpy(dtype="float64")[idx]
        t = tarr[name]
        t_rep = t[idx] if isinstance(t, np.ndarray) else t
        out[name] = np.clip(v - piece * t_rep, 0.0, t_rep)
    for name in (measures or ()):
        if name not in thr.measures and name in out.columns:
            v = table[name].to_numpy(dtype="float64")[idx]
            out[name] = np.where(piece == 0, v, 0.0)
    out.insert(list(out.columns).index(id_col) + 1, "piece", piece + 1)
    return out


@register_loss
@dataclass(frozen=True)
class SplitLoss(LossFunction):
    """ρ·m(r)² — the loss of a ρ-zCDP release on data split with ``thresholds`` (Lemma 7)."""

    rho: float
    thresholds: Thresholds
    measure: Measure = "rho"
    kind: ClassVar[str] = "split"

    def __post_init__(self) -> None:
        if not math.isfinite(self.rho) or self.rho < 0:
            raise ParameterError("ρ must be a non-negative number.")

    def __call__(self, table: pd.DataFrame) -> np.ndarray:
        m = split_counts(table, self.thresholds).astype("float64")
        return self.rho * m * m

    def describe(self) -> str:
        return f"{self.rho:.4g}ρ·m(r)², m(r) = max_a ⌈r(a)/T(a)⌉ with {self.thresholds.describe()}"

    def minimum(self) -> float:
        return float(self.rho)

    def to_dict(self) -> dict[str, Any]:
        return {"kind": self.kind, "measure": "rho", "rho": float(self.rho), "thresholds": self.thresholds.to_dict()}

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> "SplitLoss":
        return cls(float(d["rho"]), Thresholds.from_dict(d["thresholds"]))


def thresholds_from_frame(rows: pd.DataFrame, *, group_col: str | None, table: pd.DataFrame | None = None,
                          key_col: str = "group") -> Thresholds:
    """Thresholds from an editor table: one row per group value (``key_col``, ``"*"`` = default)
    and one column per measure.

    Keys typed as text are matched to the table's group values as text (so ``"5"`` finds the
    integer group 5); keys that match no value of ``table[group_col]`` are reported, since a
    typo would silently fall back to the default row.
    """
    if rows is None or len(rows) == 0:
        raise PolicyError("The thresholds table is empty.", hint="Add a default ('*') row.")
    measures = [c for c in rows.columns if c != key_col]
    if not measures:
        raise PolicyError("The thresholds table has no measure columns.")
    lookup: dict[str, Any] = {}
    if group_col is not None and table is not None:
        if group_col not in table.columns:
            raise PolicyError(f"Group column '{group_col}' is not in the table.")
        for v in pd.unique(table[group_col]):
            lookup.setdefault(str(v), v)
    out: dict[Any, dict[str, Any]] = {}  # cells as typed; as_thresholds checks them
    for i, r in enumerate(rows.to_dict("records"), 1):
        key = r.get(key_col)
        key_s = "" if key is None or (isinstance(key, float) and math.isnan(key)) else str(key).strip()
        if not key_s:
            if all(v is None or (isinstance(v, float) and math.isnan(v)) for v in (r.get(m) for m in measures)):
                continue  # a blank row left by the editor
            raise PolicyError(f"Row {i} of the thresholds table has no group value.", hint="Use '*' for the default.")
        if group_col is None or key_s == DEFAULT_KEY:
            gkey: Any = DEFAULT_KEY if key_s == DEFAULT_KEY or group_col is None else key_s
        elif lookup:
            if key_s not in lookup:
                raise PolicyError(f"'{key_s}' is not a value of '{group_col}'.",
                                  hint="Check the spelling, or delete the row.")
            gkey = lookup[key_s]
        else:
            gkey = key_s
        if gkey in out:
            raise PolicyError(f"The thresholds table has two rows for {key_s!r}.")
        out[gkey] = {m: r.get(m) for m in measures}
    if not out:
        raise PolicyError("The thresholds table is empty.", hint="Add a default ('*') row.")
    if group_col is None:
        return as_thresholds(out.get(DEFAULT_KEY) or next(iter(out.values())))
    return as_thresholds(out, group_col=group_col)


def thresholds_to_frame(thr: Thresholds, key_col: str = "group") -> pd.DataFrame:
    """Inverse of :func:`thresholds_from_frame` (for editors)."""
    return pd.DataFrame([{key_col: str(g), **dict(r)} for g, r in thr.rows])


# ---------------------------------------------------------------------------
# Threshold suggestions
# ---------------------------------------------------------------------------


def _positive_quantile(v: np.ndarray, q: float) -> float:
    t = float(np.quantile(v, q)) if v.size else 1.0
    if t <= 0:
        pos = v[v > 0]
        t = float(pos.min()) if pos.size else 1.0
    return t


def _rows_by_group(table: pd.DataFrame, row: Any, group_col: str | None) -> Thresholds:
    """Thresholds from ``row(frame) -> {measure: T}``: one row, or one per group plus a ``"*"`` row
    computed on the whole table (for groups absent from the data)."""
    if group_col is None:
        return as_thresholds(row(table))
    rows: dict[Any, dict[str, float]] = {DEFAULT_KEY: row(table)}
    for g, sub in table.groupby(group_col, sort=True, observed=True):
        rows[g] = row(sub)
    return as_thresholds(rows, group_col=group_col)


def percentile_thresholds(table: pd.DataFrame, measures: tuple[str, ...] | list[str], pct: float | Mapping[str, float],
                          *, group_col: str | None = None) -> Thresholds:
    """Thresholds at chosen percentiles of each measure (the "PctScore" of Table 8).

    ``pct`` in (0, 100], one value or one per measure. With ``group_col`` each group gets
    its own percentiles (plus a ``"*"`` row from the whole table for unseen groups). ``table`` may be a
    dataset held by an engine (one row of thresholds, from its order statistics).
    Computed from the confidential data: a suggestion for the designer, not a public fact.
    """
    def pct_of(m: str) -> float:
        p = float(pct[m]) if isinstance(pct, Mapping) else float(pct)
        if not (0 < p <= 100):
            raise ParameterError(f"The percentile for '{m}' must be in (0, 100] (got {p:g}).")
        return p / 100.0

    measures = tuple(measures)
    if not measures:
        raise PolicyError("Choose at least one measure.")
    engine = _engine_of(table, group_col, "Percentile thresholds per group")
    if engine is not None:  # a dataset held by an engine: its order statistics, the same rule
        return as_thresholds({m: float(engine.threshold_quantiles(m, [pct_of(m)])[0]) for m in measures})

    def row(df: pd.DataFrame) -> dict[str, float]:
        return {m: _positive_quantile(df[m].to_numpy(dtype="float64"), pct_of(m)) for m in measures}

    return _rows_by_group(table, row, group_col)


def _engine_of(table: Any, group_col: str | None, what: str) -> Any:
    """The engine of a dataset it holds (None for a table in memory); ``what`` per group is refused there."""
    engine = getattr(table, "engine", None)
    if engine is not None and group_col is not None:
        raise PolicyError(f"{what} are not available for a table held by an engine.",
                          hint="Suggest one row of thresholds, or type the per-group values.")
    return engine


def threshold_percentiles(table: pd.DataFrame, thresholds: Mapping[Any, Any] | Thresholds) -> dict[str, float]:
    """Share of records (in %) at or below each measure's threshold (PctScore of Table 8); for a dataset
    held by an engine (single-row thresholds), counted there."""
    thr = as_thresholds(thresholds)
    out = {}
    engine = getattr(table, "engine", None)
    if engine is not None and thr.group_col is None:  # counted by the engine that holds the table
        n = engine.n_rows()
        for m, t in dict(thr.rows[0][1]).items():
            out[m] = float((n - int(engine.count_above(m, [t])[0])) / n * 100.0) if n else 100.0
        return out
    tarr = _threshold_arrays(table, thr)
    for m in thr.measures:
        v = table[m].to_numpy(dtype="float64")
        out[m] = float(np.mean(v <= tarr[m]) * 100.0) if v.size else 100.0
    return out


#: Most pieces per record a loss cap can grant (beyond it m² loses float precision; a smaller m
#: only lowers every record's loss, so the cap still holds).
MAX_CAP_PIECES: int = 2**40


def max_pieces_for_cap(cap: float, flat: float, split: float) -> int:
    """Largest m with flat + split·m² ≤ cap (the pieces a record may have under a loss cap),
    at most :data:`MAX_CAP_PIECES`."""
    cap = non_negative("The loss cap", cap, error=PolicyError)
    flat = non_negative("The budget on unsplit data", flat, error=PolicyError)
    split = non_negative("The budget on split data", split, error=PolicyError)
    if split <= 0:
        raise PolicyError("No budget is spent on split data, so thresholds do not change any loss.")
    if cap < flat + split:
        raise PolicyError(f"The cap {cap:g} is below the base loss {flat + split:g} that every record pays.",
                          hint="Raise the cap or lower the budgets.")
    root = math.sqrt((cap - flat) / split)
    if not root < MAX_CAP_PIECES:
        return MAX_CAP_PIECES
    m = int(math.floor(root + 1e-12))
    while flat + split * (m + 1) ** 2 <= cap * (1 + 1e-12):
        m += 1
    while m > 1 and flat + split * m * m > cap * (1 + 1e-12):
        m -= 1
    return max(m, 1)


def _fits(value: float, pieces: int) -> float:
    """The smallest float T with value ≤ pieces·T as split_counts computes it (value/pieces, nudged up)."""
    t = value / pieces
    one = np.array([value])
    while int(_pieces(one, t)[0]) > pieces:
        t = float(np.nextafter(t, np.inf))
    return t


def thresholds_for_cap(table: pd.DataFrame, measures: tuple[str, ...] | list[str], *, cap: float, flat: float,
                       split: float, share: float = 0.0, group_col: str | None = None) -> Thresholds:
    """The smallest (most useful) thresholds meeting a loss cap, for P(r) = flat + split·m(r)².

    * ``share = 0`` — "no record above ``cap``": T(a) = max r(a) / m_max, where m_max is
      the largest number of pieces the cap allows;
    * ``share = q > 0`` — "at most a share q of records above ``cap``": T(a) = Q_a(p) / m_max
      at the smallest common percentile p whose joint share of records with P(r) > cap is
      ≤ q (binary search; the share is monotone in p).

    With ``group_col`` the rule is applied within each group (so it holds overall). On a dataset held by
    an engine: ``share = 0`` only (each measure's largest value is an order statistic there).
    Computed on the confidential data: show it to the designer only.
    """
    measures = tuple(measures)
    if not measures:
        raise PolicyError("Choose at least one measure.")
    if not (0.0 <= share < 1.0):
        raise ParameterError("The share of records allowed above the cap must be in [0, 1).")
    m_max = max_pieces_for_cap(cap, flat, split)
    engine = _engine_of(table, group_col, "Loss-cap thresholds per group")
    if engine is not None:  # "no record above the cap" needs each measure's largest value only
        if share > 0:
            raise PolicyError("A loss cap with a share of records allowed above it needs the records themselves: "
                              "not available for a table held by an engine.",
                              hint="Ask for no record above the cap (share 0), or use percentile thresholds.")
        n = engine.n_rows()
        return as_thresholds({m: _fits(max(float(engine.order_statistics(m, [n - 1])[0]) if n else 1.0, 1e-300), m_max)
                              for m in measures})

    def row(df: pd.DataFrame) -> dict[str, float]:
        vals = {m: df[m].to_numpy(dtype="float64") for m in measures}
        if share == 0.0 or len(df) == 0:
            return {m: _fits(max(float(v.max()) if v.size else 1.0, 1e-300), m_max) for m, v in vals.items()}

        def thr_at(p: float) -> dict[str, float]:
            return {m: _fits(max(_positive_quantile(v, p), 1e-300), m_max) for m, v in vals.items()}

        def share_above(p: float) -> float:
            t = thr_at(p)
            over = np.zeros(len(df), dtype=bool)
            for m, v in vals.items():
                over |= v > m_max * t[m]
            return float(over.mean())

        lo, hi = max(0.0, 1.0 - share - 1e-9), 1.0
        if share_above(lo) <= share:
            return thr_at(lo)
        for _ in range(50):
            mid = 0.5 * (lo + hi)
            if share_above(mid) <= share:
                hi = mid
            else:
                lo = mid
        return thr_at(hi)

    return _rows_by_group(table, row, group_col)
