"""The privacy ledger: releases, their per-record loss functions, composition, conversions.

A **loss function** is the public form of what a release promises each record: a
function of a (hypothetical) record's values, e.g. "ρ for everyone" or "ρ·m(r)² with
m(r) = max_a ⌈r(a)/T(a)⌉". Evaluated on a real table it gives per-record losses, which
are confidential.

Composition (per-record zCDP paper, Lemmas 2–3; general framework, Sec. 3):

* sequential — losses add per record (:class:`SumLoss`, and :meth:`Ledger.total`);
* parallel over a partition of the record universe (e.g. disjoint groups with their own
  thresholds) — each record pays only its own part's loss, so the worst case over the
  universe is the max over parts (:class:`ParallelLoss`).

Measures: ``"rho"`` (zCDP) and ``"eps"`` (pure DP). A pure ε-DP release is also
ε²/2-zCDP (Bun and Steinke 2016, Prop. 1.4), which is how mixed ledgers are totalled in ρ.

Conversions to (ε, δ)-DP are in :mod:`prdp_core.core.conversions` (:func:`zcdp_to_approx_dp`, …),
re-exported here.
"""

from __future__ import annotations

import math
from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from typing import Any, ClassVar, Iterable, Literal

import numpy as np
import pandas as pd

from .conversions import approx_dp_delta, conversion_table, pure_to_zcdp, zcdp_to_approx_dp
from .errors import ConfigError, ParameterError, PolicyError, PrdpError
from .loss_profile import MEASURE_SYMBOL, Measure, _check_measure
from .neighbours import AddRemove, NeighbourRelation, as_neighbours
from .provenance import DATA_DERIVED_COLUMN, data_derived
from .registry import Registry
from .secure import mode_label
from .validate import non_negative as _check_nonneg

# ---------------------------------------------------------------------------
# Loss functions
# ---------------------------------------------------------------------------

LOSS_KINDS: Registry[type["LossFunction"]] = Registry("loss-function")


def register_loss(cls: type["LossFunction"]) -> type["LossFunction"]:
    """Class decorator: make a loss-function kind loadable by :func:`loss_from_dict`."""
    return LOSS_KINDS.register(cls)


class LossFunction(ABC):
    """The public form of a per-record loss: record values → loss (in ``measure``)."""

    kind: ClassVar[str] = "abstract"
    measure: Measure

    @abstractmethod
    def __call__(self, table: pd.DataFrame) -> np.ndarray:
        """Loss of every record (row) of ``table``."""

    @abstractmethod
    def describe(self) -> str:
        """One-line public form, e.g. "0.5ρ for every record"."""

    def minimum(self) -> float:
        """Loss of the records the policy treats best (PolicyMin)."""
        return 0.0

    def supremum(self) -> float:
        """Largest loss over the record universe (inf when unbounded, as for splitting)."""
        return math.inf

    @abstractmethod
    def to_dict(self) -> dict[str, Any]:
        ...


def loss_from_dict(d: dict[str, Any]) -> LossFunction:
    """Rebuild a loss function serialised by ``to_dict``."""
    return LOSS_KINDS.get(d.get("kind")).from_dict(d)  # type: ignore[attr-defined]  # Registry.get returns the class registered for the kind (it raises for an unknown one)


@register_loss
@dataclass(frozen=True)
class FlatLoss(LossFunction):
    """The same loss for every record: a standard (global) DP or zCDP release."""

    value: float
    measure: Measure = "rho"
    kind: ClassVar[str] = "flat"

    def __post_init__(self) -> None:
        _check_measure(self.measure)
        if not math.isfinite(self.value) or self.value < 0:
            raise ParameterError("A loss must be a non-negative finite number.")

    def __call__(self, table: pd.DataFrame) -> np.ndarray:
        return np.full(len(table), float(self.value))

    def describe(self) -> str:
        return f"{self.value:.4g}{MEASURE_SYMBOL[self.measure]} for every record"

    def minimum(self) -> float:
        return float(self.value)

    def supremum(self) -> float:
        return float(self.value)

    def to_dict(self) -> dict[str, Any]:
        return {"kind": self.kind, "value": float(self.value), "measure": self.measure}

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> "FlatLoss":
        return cls(float(d["value"]), d.get("measure", "rho"))


@register_loss
@dataclass(frozen=True)
class SumLoss(LossFunction):
    """Sequential composition: the per-record losses of the parts add (Lemma 2)."""

    parts: tuple[LossFunction, ...]
    measure: Measure = "rho"
    kind: ClassVar[str] = "sum"

    def __post_init__(self) -> None:
        for p in self.parts:
            if p.measure != self.measure:
                raise PolicyError("Sequential composition needs parts in the same measure; convert ε to ρ first.")

    def __call__(self, table: pd.DataFrame) -> np.ndarray:
        out = np.zeros(len(table))
        for p in self.parts:
            out = out + p(table)
        return out

    def describe(self) -> str:
        return " + ".join(f"({p.describe()})" for p in self.parts) or "no loss"

    def minimum(self) -> float:
        return float(sum(p.minimum() for p in self.parts))

    def supremum(self) -> float:
        return float(sum(p.supremum() for p in self.parts))

    def to_dict(self) -> dict[str, Any]:
        return {"kind": self.kind, "measure": self.measure, "parts": [p.to_dict() for p in self.parts]}

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> "SumLoss":
        return cls(tuple(loss_from_dict(p) for p in d.get("parts", [])), d.get("measure", "rho"))


@register_loss
@dataclass(frozen=True)
class ParallelLoss(LossFunction):
    """Parallel composition over a partition by ``column`` (Lemma 3): each record pays its part's loss.

    ``parts`` maps a group value to the loss function of that part; ``default`` covers
    every other value (the universe must be covered). The worst case over the universe is
    the max over parts.
    """

    column: str
    parts: tuple[tuple[Any, LossFunction], ...]
    default: LossFunction | None = None
    measure: Measure = "rho"
    kind: ClassVar[str] = "parallel"

    def __call__(self, table: pd.DataFrame) -> np.ndarray:
        if self.column not in table.columns:
            raise PolicyError(f"The policy is split by '{self.column}', which is not a column of the table.")
        key = table[self.column]
        out = np.full(len(table), np.nan)
        for value, fn in self.parts:
            m = (key == value).to_numpy()
            if m.any():
                out[m] = fn(table.loc[m])
        rest = np.isnan(out)
        if rest.any():
            if self.default is None:
                missing = pd.unique(key[rest])[:3]
                raise PolicyError(f"No policy part covers {self.column} = {', '.join(map(str, missing))}.",
                                  hint="Add a row for these values or a default ('*') row.")
            out[rest] = self.default(table.loc[rest])
        return out

    def describe(self) -> str:
        parts = [f"{self.column} = {v}: {f.describe()}" for v, f in self.parts]
        if self.default is not None:
            parts.append(f"otherwise: {self.default.describe()}")
        return "; ".join(parts)

    def _all(self) -> list[LossFunction]:
        return [f for _, f in self.parts] + ([self.default] if self.default is not None else [])

    def minimum(self) -> float:
        return float(min(f.minimum() for f in self._all()))

    def supremum(self) -> float:
        return float(max(f.supremum() for f in self._all()))

    def to_dict(self) -> dict[str, Any]:
        return {"kind": self.kind, "measure": self.measure, "column": self.column,
                "parts": [{"value": v, "loss": f.to_dict()} for v, f in self.parts],
                "default": None if self.default is None else self.default.to_dict()}

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> "ParallelLoss":
        return cls(d["column"], tuple((p["value"], loss_from_dict(p["loss"])) for p in d.get("parts", [])),
                   None if d.get("default") is None else loss_from_dict(d["default"]), d.get("measure", "rho"))


@register_loss
@dataclass(frozen=True)
class RecordLoss(LossFunction):
    """Realised per-record losses of a data-dependent release (no public closed form).

    Used when a mechanism's delivered loss depends on the data set (e.g. the PrDP
    framework delivers ε_τ-based losses, Sample delivers min(Φ, t)). ``values`` are
    aligned with the rows of the table the release ran on; they are confidential and
    :meth:`to_dict` keeps only their summary unless ``include_values`` is set.
    """

    values: tuple[float, ...] | np.ndarray
    measure: Measure = "eps"
    note: str = ""
    bound: float = math.inf
    kind: ClassVar[str] = "record"

    def __call__(self, table: pd.DataFrame) -> np.ndarray:
        v = np.asarray(self.values, dtype=float)
        if v.size != len(table):
            raise PolicyError("These per-record losses belong to a table with a different number of records.")
        return v

    def describe(self) -> str:
        return self.note or "data-dependent per-record loss"

    def minimum(self) -> float:
        v = np.asarray(self.values, dtype=float)
        return float(v.min()) if v.size else 0.0

    def supremum(self) -> float:
        return float(self.bound)

    def to_dict(self, include_values: bool = False) -> dict[str, Any]:
        v = np.asarray(self.values, dtype=float)
        d: dict[str, Any] = {"kind": self.kind, "measure": self.measure, "note": self.note,
                             "bound": None if math.isinf(self.bound) else float(self.bound), "n": int(v.size)}
        if include_values:
            d["values"] = v.tolist()
        return d

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> "RecordLoss":
        if "values" not in d:
            raise ConfigError("These per-record losses were exported without their values (review mode).")
        b = d.get("bound")
        return cls(np.asarray(d["values"], dtype=float), d.get("measure", "eps"), d.get("note", ""),
                   math.inf if b is None else float(b))


@register_loss
@dataclass(frozen=True)
class DistributionLoss(LossFunction):
    """Realised losses of a data-dependent release on a table held by an engine: known as a
    distribution (how many records pay each loss), not record by record.

    Like :class:`RecordLoss` the losses are confidential and :meth:`to_dict` keeps only a summary;
    evaluating it on a table (per-record ledger totals) is refused: those need the records."""

    distribution: Any  # prdp_core.core.distribution.LossDistribution
    measure: Measure = "eps"
    note: str = ""
    bound: float = math.inf
    kind: ClassVar[str] = "distribution"

    def __call__(self, table: pd.DataFrame) -> np.ndarray:
        raise PolicyError("These losses belong to a table held by an engine: they are known as a distribution, not "
                          "record by record.", hint="Per-record ledger totals need the records (a table in memory).")

    def describe(self) -> str:
        return self.note or "data-dependent per-record loss"

    def minimum(self) -> float:
        return float(self.distribution.min) if self.distribution.n else 0.0

    def supremum(self) -> float:
        return float(self.bound)

    def to_dict(self) -> dict[str, Any]:
        return {"kind": self.kind, "measure": self.measure, "note": self.note,
                "bound": None if math.isinf(self.bound) else float(self.bound), "n": int(self.distribution.n)}

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> "DistributionLoss":
        raise ConfigError("These per-record losses were exported as a summary (a table held by an engine).")


def as_rho(fn: LossFunction, table: pd.DataFrame) -> np.ndarray:
    """Per-record loss in zCDP units (pure ε converted by ε²/2)."""
    v = fn(table)
    return v if fn.measure == "rho" else pure_to_zcdp(v)


# ---------------------------------------------------------------------------
# The ledger
# ---------------------------------------------------------------------------


@dataclass(frozen=True)
class LedgerEntry:
    """One release recorded in the ledger."""

    label: str
    mechanism: str
    loss: LossFunction
    params: dict[str, Any] = field(default_factory=dict)
    seed: int | None = None
    secure: bool = False
    #: Neighbour relation the loss is stated under (:mod:`prdp_core.core.neighbours`; its name is accepted and
    #: parsed): losses stated under different relations do not add up directly.
    neighbours: NeighbourRelation = AddRemove()

    def __post_init__(self) -> None:
        object.__setattr__(self, "neighbours", as_neighbours(self.neighbours))

    @property
    def measure(self) -> Measure:
        return self.loss.measure

    def to_dict(self) -> dict[str, Any]:
        return {"label": self.label, "mechanism": self.mechanism, "loss": self.loss.to_dict(),
                "params": _plain(self.params), "seed": self.seed, "secure": self.secure,
                "neighbours": self.neighbours.name}

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> "LedgerEntry":
        try:
            return cls(label=str(d["label"]), mechanism=str(d["mechanism"]), loss=loss_from_dict(d["loss"]),
                       params=dict(d.get("params") or {}), seed=d.get("seed"), secure=bool(d.get("secure", False)),
                       neighbours=as_neighbours(str(d.get("neighbours", AddRemove.name))))
        except KeyError as exc:
            raise ConfigError(f"A ledger entry lacks the key {exc}.") from None


def _plain(obj: Any) -> Any:
    """Make params YAML/JSON friendly (numpy scalars and arrays to Python)."""
    if isinstance(obj, dict):
        return {str(k): _plain(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [_plain(v) for v in obj]
    if isinstance(obj, np.generic):
        return obj.item()
    if isinstance(obj, np.ndarray):
        return obj.tolist()
    return obj


@dataclass
class Ledger:
    """An ordered list of releases; per-record totals by sequential composition."""

    entries: list[LedgerEntry] = field(default_factory=list)

    def add(self, entry: LedgerEntry) -> "Ledger":
        self.entries.append(entry)
        return self

    def extend(self, entries: Iterable[LedgerEntry]) -> "Ledger":
        self.entries.extend(entries)
        return self

    def __len__(self) -> int:
        return len(self.entries)

    def measures(self) -> set[str]:
        return {e.measure for e in self.entries}

    def total(self, table: pd.DataFrame, measure: Measure = "rho") -> np.ndarray:
        """Per-record total loss of all releases (sequential composition).

        In ``"rho"`` pure-ε entries count as ε²/2 each. In ``"eps"`` every entry must be
        pure ε (zCDP has no pure-ε equivalent).
        """
        _check_measure(measure)
        notions = {e.neighbours.name for e in self.entries}
        if len(notions) > 1:
            raise PolicyError("The ledger mixes neighbour notions (" + ", ".join(sorted(notions)) + "): their losses "
                              "do not add up as they are.", hint="Total the releases of each notion separately.")
        out = np.zeros(len(table))
        for e in self.entries:
            if measure == "rho":
                out = out + as_rho(e.loss, table)
            else:
                if e.measure != "eps":
                    raise PolicyError(f"'{e.label}' is a zCDP release: totals in pure ε are not defined.",
                                      hint="Total the ledger in ρ instead.")
                out = out + e.loss(table)
        return out

    def summary(self, table: pd.DataFrame | None = None) -> pd.DataFrame:
        """One row per release: label, mechanism, measure, public form, min and sup over the universe, seed,
        mode, the parameters computed from the confidential data (:func:`prdp_core.core.provenance.data_derived`;
        empty when all were typed in) and (when a table is given) the largest loss among its records."""
        rows = []
        for i, e in enumerate(self.entries, 1):
            row = {"#": i, "release": e.label, "mechanism": e.mechanism, "measure": MEASURE_SYMBOL[e.measure],
                   "neighbours": e.neighbours.name,
                   "policy (public form)": e.loss.describe(), "base loss": e.loss.minimum(),
                   "worst case": e.loss.supremum(), "seed": e.seed, "secure": e.secure,
                   "mode": mode_label(e.secure), DATA_DERIVED_COLUMN: "; ".join(data_derived(e.params))}
            if table is not None:
                v = e.loss(table)
                row["largest record loss"] = float(v.max()) if v.size else 0.0
            rows.append(row)
        return pd.DataFrame(rows)

    def running_totals(self, table: pd.DataFrame | None = None, *, on_table: Iterable[bool] | None = None,
                       others: Literal["worst", "skip"] = "worst") -> pd.DataFrame:
        """The ledger's losses added up release after release (sequential composition), one row per entry.

        Public columns: the entry's *base loss* and *worst case* over the record universe, and their sums
        so far in ρ (``base total (ρ)``, ``worst-case total (ρ)``; pure ε counted as ε²/2). With ``table``
        (the records the releases ran on) also statistics of the records, confidential: the *largest record
        loss* of the entry and the *largest record total* so far — the per-record sum's maximum, in ρ, and in
        ε while every release counted is pure ε. Per-record values themselves are never returned.

        ``on_table[i]`` says whether entry i ran on ``table``'s records (default: all did). An entry that did
        not, or whose loss cannot be evaluated on ``table`` (a data-dependent loss of another table, a column
        the table lacks), counts at its worst case for every record with ``others="worst"`` — sound when the
        records are the same people in another version of the data — and is left out of every total with
        ``others="skip"`` — releases on unrelated data. ``counted`` says how each entry was counted
        (``"records"``; ``"public form"`` without a table; ``"worst case"``; ``"not counted"``). Totals are
        NaN from the first entry whose neighbour notion differs from the earlier ones' (their losses do not
        add up as they are)."""
        flags = [True] * len(self.entries) if on_table is None else [bool(x) for x in on_table]
        if len(flags) != len(self.entries):
            raise ParameterError("on_table must say, for every ledger entry, whether it ran on the table.")
        n = 0 if table is None else len(table)
        tot_rho = np.zeros(n)
        tot_eps: np.ndarray | None = np.zeros(n)
        base = worst = 0.0
        notions: set[NeighbourRelation] = set()
        rows = []
        for i, (e, here) in enumerate(zip(self.entries, flags), 1):
            values: np.ndarray | None = None
            if table is not None and here:
                try:
                    values = np.asarray(e.loss(table), dtype=float)
                except (PrdpError, KeyError, ValueError, TypeError):  # not a loss of these records
                    values = None
            if values is not None:
                counted = "records"
            elif here and table is None:
                counted = "public form"
            else:
                counted = "worst case" if others == "worst" else "not counted"
            row: dict[str, Any] = {"#": i, "release": e.label, "measure": MEASURE_SYMBOL[e.measure],
                                   "counted": counted, "base loss": e.loss.minimum(), "worst case": e.loss.supremum()}
            if counted != "not counted":
                notions.add(e.neighbours)
                to_rho = (lambda v: v) if e.measure == "rho" else pure_to_zcdp
                base += float(to_rho(row["base loss"]))
                worst += float(to_rho(row["worst case"]))
                add = values if values is not None else float(row["worst case"])
                tot_rho = tot_rho + to_rho(add)
                tot_eps = tot_eps + add if (tot_eps is not None and e.measure == "eps") else None
            mixed = len(notions) > 1
            row["base total (ρ)"] = math.nan if mixed else base
            row["worst-case total (ρ)"] = math.nan if mixed else worst
            if table is not None:
                row["largest record loss"] = float(values.max()) if values is not None and values.size else math.nan
                row["largest record total (ρ)"] = math.nan if mixed or not n else float(tot_rho.max())
                row["largest record total (ε)"] = (math.nan if mixed or not n or tot_eps is None
                                                   else float(tot_eps.max()))
            rows.append(row)
        return pd.DataFrame(rows)

    def to_dict(self) -> dict[str, Any]:
        return {"entries": [e.to_dict() for e in self.entries]}

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> "Ledger":
        return cls([LedgerEntry.from_dict(e) for e in d.get("entries", [])])


# ---------------------------------------------------------------------------
# Per-attribute (granular) accounting — partial DP paper (Ghazi, Kumar, Manurangsi,
# Steinke), §2.2 (Prop. 8, Lemmas 9–10) and §7 ("2020 US Census").
# Neighbours here are *replacements*: one person's record changes, n is fixed.
# ---------------------------------------------------------------------------


def per_attribute_to_record(eps0: float, attributes: int, *,
                            kind: Literal["pure", "cdp"] = "pure") -> float:
    """Loss of a change of ``attributes`` attributes under a per-attribute guarantee (Prop. 8).

    ``eps0`` is the per-attribute parameter ε0: a change of one attribute of one person
    costs ε0 (ε0-∇0DP, pure) or ρ = ½ε0² (ε0-∇0CDP). Group privacy along the Hamming
    path gives, for a change of k attributes:

    * ``kind="pure"`` — ε = k·ε0 (returned in ε);
    * ``kind="cdp"`` — ρ = ½(k·ε0)² (returned in ρ; the "ε" of CDP adds, so ρ is
      quadratic in k).

    With k = d (all attributes) this is the whole-record guarantee.
    """
    e = _check_nonneg("The per-attribute ε0", eps0)
    k = int(attributes)
    if k < 0 or k != attributes:
        raise ParameterError(f"The number of attributes must be a whole number ≥ 0 (got {attributes!r}).")
    if kind == "pure":
        return k * e
    if kind == "cdp":
        return 0.5 * (k * e) ** 2
    raise ParameterError(f"Unknown guarantee kind '{kind}'.", hint="Use 'pure' (∇0DP) or 'cdp' (∇0CDP).")


def disjoint_attribute_releases(losses: Iterable[float], *, measure: Measure = "rho") -> tuple[float, float]:
    """Per-attribute and whole-record loss of releases on disjoint attributes (Lemma 10).

    ``losses[j]`` is the loss of a release that reads only attribute (column) j, in
    ``measure`` (ε for pure DP, ρ for zCDP), against a change of that column's entry.
    Changing one attribute touches one release, so the per-attribute loss is the max;
    changing a whole record touches all of them, so the whole-record loss is the sum
    (ε adds for pure DP, ρ adds for zCDP — in "ε" units, √d·ε for d equal releases).

    Returns ``(per_attribute, whole_record)`` in ``measure``.
    """
    _check_measure(measure)
    v = [_check_nonneg("A release's loss", x) for x in losses]
    if not v:
        return 0.0, 0.0
    return max(v), float(sum(v))


@dataclass(frozen=True)
class AttributeRelease:
    """One release over a subset of attributes, for the attribute-subset accountant.

    ``rho`` is the release's zCDP parameter against replacing a whole record (e.g. a
    histogram or marginal on ``attributes`` with L2 sensitivity √2). A change confined
    to attributes outside ``attributes`` leaves the release unchanged.
    """

    label: str
    attributes: frozenset[str]
    rho: float

    def __post_init__(self) -> None:
        _check_nonneg(f"ρ of '{self.label}'", self.rho)
        if not self.attributes:
            raise ParameterError(f"The release '{self.label}' reads no attribute.",
                                 hint="List the attributes it is computed from.")
        object.__setattr__(self, "attributes", frozenset(self.attributes))


def attribute_subset_rho(releases: Iterable[AttributeRelease], subset: Iterable[str]) -> float:
    """ρ of a change confined to the attributes in ``subset`` (partial CDP, §7 "2020 US Census").

    ρ(S) = Σ_{r : A_r ∩ S ≠ ∅} ρ_r: only releases that read a changed attribute move, and
    each moves by at most its whole-record sensitivity. ρ(S) is monotone and subadditive,
    ρ({j}) is attribute j's budget and ρ(all attributes) = Σ_r ρ_r is the whole record.
    """
    s = frozenset(subset)
    return float(sum(r.rho for r in releases if r.attributes & s))


def attribute_rho_table(releases: Iterable[AttributeRelease], delta: float = 1e-6) -> pd.DataFrame:
    """One row per attribute: its ρ({j}), the releases reading it and (ε, δ) by CKS.

    A final row ``(whole record)`` gives Σ_r ρ_r.
    """
    rel = list(releases)
    attrs = sorted(set().union(*(r.attributes for r in rel))) if rel else []
    rows = []
    for a in attrs:
        rho = attribute_subset_rho(rel, [a])
        rows.append({"attribute": a, "rho": rho, "releases": sum(1 for r in rel if a in r.attributes),
                     "eps_cks": zcdp_to_approx_dp(rho, delta)})
    total = float(sum(r.rho for r in rel))
    rows.append({"attribute": "(whole record)", "rho": total, "releases": len(rel),
                 "eps_cks": zcdp_to_approx_dp(total, delta)})
    return pd.DataFrame(rows)


__all__ = ["AttributeRelease", "DistributionLoss", "FlatLoss", "Ledger", "LedgerEntry", "LossFunction", "ParallelLoss",
           "RecordLoss", "SumLoss", "approx_dp_delta", "as_rho", "attribute_rho_table", "attribute_subset_rho",
           "conversion_table", "disjoint_attribute_releases", "loss_from_dict", "per_attribute_to_record",
           "pure_to_zcdp", "register_loss", "zcdp_to_approx_dp"]
