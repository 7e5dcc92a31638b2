"""Query workloads and the per-record policy they imply under unit splitting.

A workload is a list of aggregate queries (COUNT, SUM(measure), AVG(measure)), each with
an optional group-by and filter and its own zCDP budget ρ_q, answered either

* **before splitting** (flat): COUNT as COUNT DISTINCT of record ids, SUM/AVG with the
  measure top-coded (clamped) at a bound — every record pays ρ_q; or
* **on split data**: SUM/AVG over the split table (sensitivity T(a)) — a record pays
  ρ_q·m(r)² (Lemma 7 as proved; the printed (ρ|A(r)|)² is a typo).

Optional partition selection on split data (unknown group keys) costs ρ_ps·m(r)².

By sequential composition (Lemma 2) the policy loss of a record is

    P(r) = Σ_{flat q ∋ r} ρ_q + Σ_{split q ∋ r} ρ_q·m(r)² (+ ρ_ps·m(r)²),

where "q ∋ r" means r passes q's filter (a filter partitions the record universe, so a
record outside it pays nothing for q — Lemma 3). Group-by keys partition the universe
too: each record sits in one group, so a group-by costs the same as one query.

AVG = noisy SUM / noisy COUNT DISTINCT: its sum part costs ρ_q (·m² on split data) and
its count part ``rho_count`` (flat).

With ``joint=True`` (the paper's Algorithm 1) one split table serves every split query,
with m(r) the max over all thresholded measures; with ``joint=False`` each SUM/AVG on
split data splits on its own measure only (m_a(r) = ⌈r(a)/T(a)⌉), which never costs more.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from typing import Any, Callable, ClassVar, Literal, Mapping

import numpy as np
import pandas as pd

from . import keysets
from .accounting import LossFunction, register_loss
from .errors import ConfigError, ParameterError, PolicyError
from .loss_profile import Measure
from .provenance import check_sources
from .splitting import DEFAULT_KEY, Thresholds, restrict_thresholds, split_counts

QueryKind = Literal["count", "sum", "avg"]

#: What to do about missing values in a group-by column (shared by the policy checks and releases).
MISSING_GROUP_HINT = ("On the Data page (Column roles), put missing group values in a group of their own, or "
                      "group by another column.")


@dataclass(frozen=True)
class Filter:
    """Keep records whose ``column`` takes one of ``values`` (a public predicate)."""

    column: str
    values: tuple[Any, ...]

    def mask(self, table: pd.DataFrame) -> np.ndarray:
        if self.column not in table.columns:
            raise PolicyError(f"Filter column '{self.column}' is not in the table.")
        col = table[self.column]
        # The matching rule depends on the column's type only, never on which values are present:
        # a numeric column compares numbers (text such as "5" typed in an editor is converted; text
        # that is not a number matches nothing), any other column compares text.
        if pd.api.types.is_numeric_dtype(col) and not pd.api.types.is_bool_dtype(col):
            wanted = pd.to_numeric(pd.Series(list(self.values), dtype=object), errors="coerce").dropna()
            return col.isin(wanted.astype("float64").tolist()).to_numpy()
        return col.astype(str).isin([str(v) for v in self.values]).to_numpy()

    def describe(self) -> str:
        vals = ", ".join(map(str, self.values))
        return f"{self.column} = {vals}" if len(self.values) == 1 else f"{self.column} in ({vals})"

    def to_dict(self) -> dict[str, Any]:
        return {"column": self.column, "values": list(self.values)}

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> "Filter":
        return cls(str(d["column"]), tuple(d.get("values") or ()))


@dataclass(frozen=True)
class Query:
    """One aggregate query of a workload.

    Attributes
    ----------
    kind:
        ``"count"``, ``"sum"`` or ``"avg"``.
    measure:
        Measure column for SUM/AVG (None for COUNT).
    rho:
        zCDP budget of the query (of its SUM part for AVG). Every record passing the
        filter pays ``rho`` (flat) or ``rho·m(r)²`` (split).
    split:
        SUM/AVG answered on split data (True) or top-coded at ``clamp`` before splitting
        (False). COUNT is always answered before splitting (COUNT DISTINCT semantics).
    group_by:
        Group-by columns (known keys, or keys found by partition selection).
    filter:
        Optional public predicate; records outside it pay nothing for this query.
    clamp:
        Top-coding bound for a flat SUM/AVG (its sensitivity).
    rho_count:
        Budget of the COUNT DISTINCT denominator of an AVG.
    """

    kind: QueryKind
    measure: str | None = None
    rho: float = 1.0
    split: bool = True
    group_by: tuple[str, ...] = ()
    filter: Filter | None = None
    clamp: float | None = None
    rho_count: float = 0.0
    label: str = ""

    def __post_init__(self) -> None:
        if self.kind not in ("count", "sum", "avg"):
            raise PolicyError(f"Unknown query kind '{self.kind}'.", hint="Use count, sum or avg.")
        object.__setattr__(self, "group_by", tuple(self.group_by))
        if self.kind == "count":
            object.__setattr__(self, "split", False)
            object.__setattr__(self, "measure", None)
        elif not self.measure:
            raise PolicyError(f"A {self.kind.upper()} query needs a measure.")
        for name, v in (("ρ", self.rho), ("ρ of the AVG count", self.rho_count)):
            if not isinstance(v, (int, float)) or not math.isfinite(v) or v < 0:
                raise PolicyError(f"{name} must be a non-negative number (got {v!r}).")
        if self.kind != "count" and not self.split:
            if self.clamp is None or not math.isfinite(self.clamp) or self.clamp <= 0:
                raise PolicyError(f"{self.name()} is answered before splitting: give it a positive top-coding "
                                  "bound (clamp).")
        if self.kind == "avg" and self.rho_count <= 0:
            raise PolicyError(f"{self.name()} needs a budget for its COUNT DISTINCT denominator (rho_count > 0).")

    def name(self) -> str:
        if self.label:
            return self.label
        core = "COUNT(*)" if self.kind == "count" else f"{self.kind.upper()}({self.measure})"
        if self.group_by:
            core += f" BY {', '.join(self.group_by)}"
        if self.filter is not None:
            core += f" WHERE {self.filter.describe()}"
        return core

    def to_dict(self) -> dict[str, Any]:
        return {"kind": self.kind, "measure": self.measure, "rho": float(self.rho), "split": bool(self.split),
                "group_by": list(self.group_by), "filter": None if self.filter is None else self.filter.to_dict(),
                "clamp": self.clamp, "rho_count": float(self.rho_count), "label": self.label}

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> "Query":
        known = {"kind", "measure", "rho", "split", "group_by", "filter", "clamp", "rho_count", "label"}
        unknown = set(d) - known
        if unknown:
            raise ConfigError(f"Unknown query key(s): {', '.join(sorted(unknown))}.")
        return cls(kind=d["kind"], measure=d.get("measure"), rho=float(d.get("rho", 1.0)),
                   split=bool(d.get("split", True)), group_by=tuple(d.get("group_by") or ()),
                   filter=None if not d.get("filter") else Filter.from_dict(d["filter"]),
                   clamp=None if d.get("clamp") is None else float(d["clamp"]),
                   rho_count=float(d.get("rho_count", 0.0)), label=str(d.get("label", "")))


@dataclass(frozen=True)
class Workload:
    """Queries plus the optional partition-selection step; see the module docstring.

    ``group_keys`` are public key lists (column → its listed values, :mod:`prdp_core.core.keysets`): a
    group-by whose columns are all listed is answered on the product of their lists. Given as a
    mapping; kept as (column, values) pairs, for the columns some query groups by."""

    queries: tuple[Query, ...]
    partition_rho: float = 0.0
    joint: bool = True
    group_keys: Any = ()

    def __post_init__(self) -> None:
        object.__setattr__(self, "queries", tuple(self.queries))
        if not math.isfinite(self.partition_rho) or self.partition_rho < 0:
            raise PolicyError("The partition-selection budget must be a non-negative number.")
        grouped = {c for q in self.queries for c in q.group_by}  # lists of columns no query groups by are dropped
        object.__setattr__(self, "group_keys", tuple((c, v) for c, v in keysets.normalize(self.group_keys)
                                                     if c in grouped))
        for q in self.queries:
            keysets.check_cells(q.group_by, self.group_keys)

    def split_measures(self) -> tuple[str, ...]:
        """The measures whose own split counts the per-record losses depend on (each once, in query order):
        those of the SUM/AVG queries answered on split data, none when the workload is split jointly."""
        if self.joint:
            return ()
        return tuple(dict.fromkeys(q.measure for q in self.queries
                                   if q.split and q.kind != "count" and q.measure is not None))

    def validate(self, table: pd.DataFrame, measures: tuple[str, ...] | None = None) -> None:
        self.check(table.columns, measures, lambda cols: {g: int(table[g].isna().sum()) for g in cols})

    def check(self, columns: Any, measures: tuple[str, ...] | None = None,
              missing: Callable[[list[str]], dict[str, int]] | None = None) -> None:
        """:meth:`validate` on a table's column names; ``missing(columns)`` counts the missing values
        of group-by columns — for tables held by an engine too."""
        if not self.queries:
            raise PolicyError("The workload is empty.", hint="Add at least one query.")
        cols = set(columns)
        checked: set[str] = set()
        for q in self.queries:
            if q.measure is not None:
                if q.measure not in cols or (measures is not None and q.measure not in measures):
                    raise PolicyError(f"{q.name()}: '{q.measure}' is not a measure of the dataset.")
            for g in q.group_by:
                if g not in cols:
                    raise PolicyError(f"{q.name()}: group-by column '{g}' is not in the table.")
                if g not in checked:
                    checked.add(g)
                    n_missing = missing([g]).get(g, 0) if missing is not None else 0
                    if n_missing:
                        raise PolicyError(f"{q.name()}: group-by column '{g}' has {n_missing:,} "
                                          "missing value(s).", hint=MISSING_GROUP_HINT)
            if q.filter is not None and q.filter.column not in cols:
                raise PolicyError(f"{q.name()}: filter column '{q.filter.column}' is not in the table.")

    @property
    def flat_rho(self) -> float:
        """ρ every record pays at most from queries answered before splitting."""
        total = 0.0
        for q in self.queries:
            total += q.rho_count if q.kind == "avg" else 0.0
            if not q.split or q.kind == "count":
                total += q.rho
        return total

    @property
    def split_rho(self) -> float:
        """Total ρ spent on split data (multiplied by m(r)² per record)."""
        return sum(q.rho for q in self.queries if q.split and q.kind != "count") + self.partition_rho

    @property
    def total_rho(self) -> float:
        """The base loss: what a record that is never split pays (PolicyMin)."""
        return self.flat_rho + self.split_rho

    def needs_split(self) -> bool:
        return self.split_rho > 0

    def to_dict(self) -> dict[str, Any]:
        d: dict[str, Any] = {"queries": [q.to_dict() for q in self.queries], "partition_rho": float(self.partition_rho),
                             "joint": bool(self.joint)}
        if self.group_keys:
            d["group_keys"] = keysets.as_mapping(self.group_keys)
        return d

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> "Workload":
        return cls(tuple(Query.from_dict(q) for q in d.get("queries", [])), float(d.get("partition_rho", 0.0)),
                   bool(d.get("joint", True)), d.get("group_keys") or ())

    def subset(self, indices: Any) -> "Workload":
        """The workload restricted to the queries at ``indices`` (positions, in workload order), with the
        same partition-selection budget and splitting mode. Releasing fewer queries costs each record
        only the losses of the queries kept (Lemma 2)."""
        idx = sorted({int(i) for i in indices})
        if not idx:
            raise PolicyError("Choose at least one query to release.")
        if idx[0] < 0 or idx[-1] >= len(self.queries):
            raise PolicyError(f"The workload has {len(self.queries)} queries; query {idx[-1] + 1} does not exist.")
        return replace(self, queries=tuple(self.queries[i] for i in idx))

    def scaled(self, factor: float) -> "Workload":
        """The same workload with every budget multiplied by ``factor`` (for sweeps)."""
        if not math.isfinite(factor) or factor <= 0:
            raise ParameterError("The budget scale must be a positive number.")
        return replace(self, queries=tuple(replace(q, rho=q.rho * factor, rho_count=q.rho_count * factor)
                                           for q in self.queries), partition_rho=self.partition_rho * factor)


@register_loss
@dataclass(frozen=True)
class SplittingPolicy(LossFunction):
    """The per-record zCDP policy P of a workload answered with unit splitting.

    This is the public policy function an agency can publish: P(r) depends on the
    record's measures (through m(r)), its group (piecewise thresholds) and the filters
    it passes. Evaluated on real records its values are confidential.
    """

    thresholds: Thresholds
    workload: Workload
    measure: Measure = "rho"
    #: Where each threshold came from, measure → source (``"data: p99 (rounded)"`` for one computed from the
    #: confidential data; a measure not listed was typed in as a public value). See :mod:`prdp_core.core.provenance`.
    #: Given as a mapping; kept as sorted (measure, source) pairs.
    threshold_source: Any = ()
    kind: ClassVar[str] = "splitting_policy"

    def __post_init__(self) -> None:
        src = self.threshold_source
        src = check_sources(dict(src) if isinstance(src, tuple) else src)
        object.__setattr__(self, "threshold_source", tuple(sorted(src.items())))

    def threshold_sources(self) -> dict[str, str]:
        """measure → source of the thresholds not typed in (empty when every threshold is public)."""
        return dict(self.threshold_source)

    def _pieces(self, table: pd.DataFrame, q: Query | None) -> np.ndarray:
        """m(r) for query q (joint: all measures; separate: q's measure only)."""
        if self.workload.joint or q is None or q.measure is None:
            return split_counts(table, self.thresholds).astype("float64")
        sub = restrict_thresholds(self.thresholds, (q.measure,))
        if sub is None:
            raise PolicyError(f"No splitting threshold for '{q.measure}', which {q.name()} sums on split data.",
                              hint="Add a threshold for this measure.")
        return split_counts(table, sub).astype("float64")

    def components(self, table: pd.DataFrame) -> pd.DataFrame:
        """Per-record loss of each query (columns) — their row sums are P(r)."""
        return self.components_from(len(table), lambda q: self._pieces(table, q), lambda f: f.mask(table),
                                    index=table.index)

    def components_from(self, n: int, pieces: Callable[[Query | None], np.ndarray],
                        mask: Callable[[Filter], np.ndarray], *, index: Any = None) -> pd.DataFrame:
        """:meth:`components` from split counts and filter masks: ``pieces(q)`` is m(r) of query q
        (the joint count for ``None``), ``mask(f)`` whether each record passes filter f. Records, or
        the rows of an engine's split-count histogram (one row per distinct combination)."""
        wl = self.workload
        cols: dict[str, np.ndarray] = {}
        joint_m2: np.ndarray | None = None
        for i, q in enumerate(wl.queries):
            inside = mask(q.filter) if q.filter is not None else np.ones(n, dtype=bool)
            if q.kind == "count" or not q.split:
                v = np.full(n, q.rho)
            else:
                if wl.joint:
                    if joint_m2 is None:
                        m = pieces(None)
                        joint_m2 = m * m
                    m2 = joint_m2
                else:
                    m = pieces(q)
                    m2 = m * m
                v = q.rho * m2
            if q.kind == "avg":
                v = v + q.rho_count
            cols[f"{i + 1}. {q.name()}"] = np.where(inside, v, 0.0)
        if wl.partition_rho > 0:
            if joint_m2 is None:
                m = pieces(None)
                joint_m2 = m * m
            cols["partition selection"] = wl.partition_rho * joint_m2
        return pd.DataFrame(cols, index=index)

    def __call__(self, table: pd.DataFrame) -> np.ndarray:
        return self.components(table).to_numpy().sum(axis=1) if len(self.workload.queries) else np.zeros(len(table))

    #: record_loss (:class:`prdp_core.mechanisms.contract.Plan`) is P(r), what a release's ledger entry charges each
    #: record (its realized loss, ``Release.loss``, is at most P(r)).
    exact: ClassVar[bool] = True

    @property
    def loss_kind(self) -> str:
        """Unit of P(r): ``"rho"`` (per-record zCDP)."""
        return self.measure

    def record_loss(self, records: Any) -> np.ndarray:
        """P(r) of each record of ``records`` (a table or a prepared dataset): public thresholds and
        workload applied to each record's own values, before any release."""
        return self(getattr(records, "table", records))

    def describe(self) -> str:
        wl = self.workload
        parts = []
        if wl.flat_rho:
            parts.append(f"{wl.flat_rho:.4g}ρ")
        if wl.split_rho:
            parts.append(f"{wl.split_rho:.4g}ρ·m(r)²")
        form = " + ".join(parts) or "0"
        mode = "" if wl.joint else " (each sum split on its own measure)"
        return f"P(r) = {form}{mode}, with {self.thresholds.describe()} (records outside a query's filter pay " \
               "nothing for it)"

    def minimum(self) -> float:
        return 0.0 if any(q.filter is not None for q in self.workload.queries) else self.workload.total_rho

    def supremum(self) -> float:
        return self.workload.total_rho if not self.workload.needs_split() else math.inf

    def to_dict(self) -> dict[str, Any]:
        d = {"kind": self.kind, "measure": "rho", "thresholds": self.thresholds.to_dict(),
             "workload": self.workload.to_dict()}
        if self.threshold_source:
            d["threshold_source"] = self.threshold_sources()
        return d

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> "SplittingPolicy":
        return cls(Thresholds.from_dict(d["thresholds"]), Workload.from_dict(d["workload"]),
                   threshold_source=d.get("threshold_source") or {})

    def validate(self, table: pd.DataFrame, measures: tuple[str, ...] | None = None) -> None:
        self.thresholds.validate(table, measures)
        self.workload.validate(table, measures)
        self._check_split_measures()

    def check(self, columns: Any, measures: tuple[str, ...] | None = None,
              group_values: Callable[[str], Any] | None = None,
              missing: Callable[[list[str]], dict[str, int]] | None = None) -> None:
        """:meth:`validate` from a table's column names, the values of a column present
        (``group_values(column)``) and missing-value counts (``missing(columns)``): the same checks
        and messages for a table held by an engine."""
        g = self.thresholds.group_col
        self.thresholds.check(columns, measures, None if group_values is None or g is None else
                              (lambda: group_values(g)))
        self.workload.check(columns, measures, missing)
        self._check_split_measures()

    def _check_split_measures(self) -> None:
        stray = [m for m, _ in self.threshold_source if m not in self.thresholds.measures]
        if stray:
            raise PolicyError(f"threshold_source names '{stray[0]}', which has no splitting threshold.",
                              hint="List the source of thresholds of the policy only.")
        for q in self.workload.queries:
            if q.split and q.kind != "count" and q.measure not in self.thresholds.measures:
                raise PolicyError(f"{q.name()} sums '{q.measure}' on split data but '{q.measure}' has no "
                                  "splitting threshold.", hint="Add a threshold for it, or top-code it instead.")

    def public_function(self, measure: str, grid: np.ndarray, *, group: Any = DEFAULT_KEY) -> np.ndarray:
        """P as a function of one measure's (hypothetical) value, the other measures at most
        their thresholds, for a record of ``group`` passing every filter: the curve an agency
        publishes (a step function of ⌈v/T(a)⌉)."""
        thr = self.thresholds.for_group(group) if self.thresholds.group_col else self.thresholds.as_dict()[DEFAULT_KEY]
        if measure not in thr:
            raise PolicyError(f"'{measure}' has no splitting threshold.")
        v = np.asarray(grid, dtype="float64")
        m = np.maximum(1.0, np.ceil(v / thr[measure]))
        wl = self.workload
        total = np.zeros_like(v)
        for q in wl.queries:
            if q.kind == "count" or not q.split:
                total += q.rho
            elif wl.joint or q.measure == measure:
                total += q.rho * m * m
            else:
                total += q.rho  # another measure at most its threshold: one piece
            if q.kind == "avg":
                total += q.rho_count
        total += wl.partition_rho * m * m
        return total


def joint_policy_loss(policy: SplittingPolicy, m: np.ndarray, mask: Callable[[Filter], np.ndarray]) -> np.ndarray:
    """P(r) of a joint workload from the split counts m(r) and filter masks, as a release computes
    it: ρ_q·m(r)² for split queries, ρ_q for flat ones, filters exempting records (scaled in place:
    P = a·m² + b + the filtered terms)."""
    wl = policy.workload
    out = np.square(m, dtype=np.float64)
    a, b = wl.partition_rho, 0.0
    filtered = []
    for q in wl.queries:
        split = q.split and q.kind != "count"
        if q.filter is not None:
            filtered.append(q)
            continue
        a += q.rho if split else 0.0
        b += (0.0 if split else q.rho) + (q.rho_count if q.kind == "avg" else 0.0)
    extra = [np.where(mask(q.filter),  # type: ignore[arg-type]  # filtered holds only the queries with a filter
                      (q.rho * out if (q.split and q.kind != "count") else q.rho)
                      + (q.rho_count if q.kind == "avg" else 0.0), 0.0) for q in filtered]
    out *= a
    out += b
    for e in extra:
        out += e
    return out


def summed_policy_loss(policy: SplittingPolicy, m: np.ndarray, mask: Callable[[Filter], np.ndarray]) -> np.ndarray:
    """P(r) of a joint workload from the split counts, summed query by query (the form a policy
    preview computes; the same sum as :meth:`SplittingPolicy.__call__`)."""
    wl = policy.workload
    n = len(m)
    m2 = m.astype("float64") ** 2
    out = np.zeros(n)
    for q in wl.queries:
        v = q.rho * m2 if (q.split and q.kind != "count") else np.full(n, q.rho)
        if q.kind == "avg":
            v = v + q.rho_count
        out += np.where(mask(q.filter), v, 0.0) if q.filter is not None else v
    out += wl.partition_rho * m2
    return out


def default_workload(measures: tuple[str, ...] | list[str], group_by: tuple[str, ...] = (), *,
                     rho_count: float = 0.5, rho_sum: float = 0.5) -> Workload:
    """COUNT plus one SUM per measure on split data, all grouped by ``group_by``: the CBP workload shape."""
    qs = [Query("count", rho=rho_count, group_by=group_by)]
    qs += [Query("sum", m, rho=rho_sum, split=True, group_by=group_by) for m in measures]
    return Workload(tuple(qs))


def _cell_text(v: Any) -> str:
    """An editor cell as stripped text; an empty, missing (None/NaN) or stringified-missing cell is ""."""
    if v is None or (isinstance(v, float) and math.isnan(v)):
        return ""
    t = str(v).strip()
    return "" if t in ("nan", "None") else t


def workload_from_frame(df: pd.DataFrame) -> Workload:
    """Build a workload from an editor table with columns kind, measure, group_by, rho, split,
    clamp, rho_count (and optionally filter_column, filter_values as text separated by ';')."""
    qs = []
    for i, r in enumerate(df.to_dict("records"), 1):
        kind = _cell_text(r.get("kind")).lower()
        if not kind:  # a blank row (e.g. just added in the editor)
            continue

        def num(key: str, default: float | None = None) -> float | None:
            v = r.get(key)  # noqa: B023 (called within this iteration)
            if v is None or not _cell_text(v):
                return default
            try:
                return float(v)
            except (TypeError, ValueError):
                raise PolicyError(f"Row {i}: '{key}' must be a number (got {v!r}).") from None  # noqa: B023

        gb, fc, fv = (_cell_text(r.get(k)) for k in ("group_by", "filter_column", "filter_values"))
        group_by = tuple(x.strip() for x in gb.split(",") if x.strip())
        if gb and not group_by:
            raise PolicyError(f"Row {i}: the group-by {gb!r} names no column.",
                              hint="List group-by columns separated by commas, or leave the cell empty.")
        filt = None
        if fc:
            vals = tuple(x.strip() for x in fv.split(";") if x.strip())
            if not vals:
                raise PolicyError(f"Row {i}: the filter on '{fc}' has no values.")
            filt = Filter(fc, vals)
        elif fv:
            raise PolicyError(f"Row {i}: filter values {fv!r} are given without a filter column.",
                              hint="Name the column they filter in 'filter_column', or clear the values.")
        measure = _cell_text(r.get("measure")) or None
        try:
            qs.append(Query(kind=kind, measure=measure, rho=num("rho", 0.0) or 0.0,  # type: ignore[arg-type]  # Query refuses a kind other than count, sum or avg (the message names it)
                            split=bool(r.get("split", True)) if r.get("split") is not None else True,
                            group_by=group_by, filter=filt, clamp=num("clamp"),
                            rho_count=num("rho_count", 0.0) or 0.0))
        except PolicyError as err:
            raise PolicyError(f"Row {i}: {err.message}", hint=err.hint) from None
    return Workload(tuple(qs))


def workload_to_frame(wl: Workload) -> pd.DataFrame:
    """Inverse of :func:`workload_from_frame` (for editors)."""
    rows = []
    for q in wl.queries:
        rows.append({"kind": q.kind, "measure": q.measure or "", "group_by": ", ".join(q.group_by),
                     "rho": q.rho, "split": q.split, "clamp": q.clamp, "rho_count": q.rho_count,
                     "filter_column": q.filter.column if q.filter else "",
                     "filter_values": "; ".join(map(str, q.filter.values)) if q.filter else ""})
    return pd.DataFrame(rows, columns=["kind", "measure", "group_by", "rho", "split", "clamp", "rho_count",
                                       "filter_column", "filter_values"])


def filters(group_by: tuple[str, ...], cells: pd.DataFrame) -> tuple[Any, ...] | None:
    """The listed cells as one filter per column (a record is in a listed cell iff it passes all of them),
    or None when the cells are not the product of their columns' values."""
    distinct = [pd.unique(cells[c]) for c in group_by]
    if math.prod(len(d) for d in distinct) != len(cells.drop_duplicates()):
        return None
    return tuple(Filter(c, tuple(v.item() if hasattr(v, "item") else v for v in d)) for c, d in zip(group_by, distinct))
