"""Multi-tier release: one query, several analysts with different budgets, bounded total loss.

Wang et al., "Multi-tier Differential Private Query Release" (arXiv:2606.15543). Analysts
("tiers") ask the *same* query with budgets ε_1 > ε_2 > … > ε_m (the public ε = 0.5,
trusted researchers ε = 2, the agency ε = 8). Releasing independently costs Σ ε_i if they
collude; splitting the budget ("gradual") keeps the total at ε_1 but wastes accuracy. The
multi-tier mechanisms give every tier (nearly) the accuracy of a single release at its
budget while any coalition of tiers learns no more than its highest budget (Def. 3.1/3.2,
Thm 4.1): every lower tier is a data-independent post-processing of a higher one.

Public entry points (this module; the engines are :mod:`.multitier_central` and
:mod:`.multitier_local`):

* :func:`tiers_from` — validate a tier list (name, ε);
* central model (§4): :func:`plan_central` → :class:`CentralPlan` (per-tier MSE of the
  multi-tier, independent and gradual releases, residual validity of every step) and
  :func:`release_central` (Algorithm 1, or a baseline) → :class:`~prdp_core.release.Release`;
* local model (§5): :func:`plan_local` → :class:`LocalPlan` (template chain, the template
  serving each tier, unused budget, per-tier MSE against the ideal, GRR, BRR and gradual)
  and :func:`release_local` → Release;
* :func:`coalition_loss` — the privacy loss of any set of colluding tiers, *computed* (exact
  joint distributions where they fit in memory, otherwise the Markov-chain factorisation of
  the construction), next to the independent and gradual baselines;
* :func:`check_residual` (re-exported) — does a residual distribution exist (Table 1, App. F);
* query helpers for tables: :class:`RecordFilter`, :func:`central_query`; for the local model
  :func:`local_categories` (every user reports; public bin edges from :func:`bin_edges` or a
  declared list; records outside the filter report the public category :data:`NOT_MATCHING`).

Budgets are pure ε (ε-DP under add/remove neighbours in the central model; ε-LDP in the
local model), except the Gaussian family: ε with a shared δ, recorded in the ledger in
zCDP units (ρ = Δ²/(2σ²), exact for Gaussian noise).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Iterable, Literal, Mapping, Sequence

import numpy as np
import pandas as pd

from ..accounting import FlatLoss, LedgerEntry
from ..errors import ParameterError, PolicyError, PrdpError
from ..release import Release
from . import multitier_central as mc
from . import multitier_local as ml
from .multitier_central import (CHECK_FAMILIES, FAMILY_LABELS, RELEASE_FAMILIES, NoiseFamily, ResidualCheck,
                                bochner_min_eigenvalue, check_residual, noise_family,
                                residual_ratio)
from .multitier_local import VARIANTS, Template, paper_rescale_parameter, rescale_keep_probability

__all__ = [
    "CHECK_FAMILIES", "FAMILY_LABELS", "RELEASE_FAMILIES", "VARIANTS", "CentralPlan", "CoalitionLoss", "LocalPlan",
    "NoiseFamily", "RecordFilter", "ResidualCheck", "Template", "Tier", "bin_edges", "bin_labels", "bin_measure",
    "bochner_min_eigenvalue", "central_query", "check_residual", "coalition_loss", "coalition_table",
    "lattice_round", "local_categories", "noise_family", "paper_rescale_parameter",
    "plan_central", "plan_local", "release_central", "release_local", "rescale_keep_probability", "residual_ratio",
    "tiers_from",
]

#: Largest number of tiers in one plan.
MAX_TIERS = 200
#: Largest budget a tier may have (beyond it every mechanism is practically noise-free).
MAX_EPS = 50.0
#: Smallest budget a tier may have.
MIN_EPS = 1e-4

Strategy = Literal["multitier", "independent", "gradual"]
STRATEGIES: dict[str, str] = {
    "multitier": "Multi-tier (derive lower tiers from higher ones)",
    "independent": "Independent releases (one fresh release per tier)",
    "gradual": "Gradual (split the budget into pieces, average pieces)",
}


# ---------------------------------------------------------------------------
# Tiers
# ---------------------------------------------------------------------------


@dataclass(frozen=True)
class Tier:
    """An analyst (or class of analysts) and its budget ε: its answer alone must be ε-DP."""

    name: str
    eps: float


def tiers_from(spec: Iterable[Tier] | Iterable[tuple[str, float]] | Mapping[str, float] | pd.DataFrame
               ) -> tuple[Tier, ...]:
    """Validate a tier list and sort it by decreasing budget (ties keep their order).

    Accepts Tier objects, (name, ε) pairs, a {name: ε} mapping or a table with columns
    ``name`` and ``eps`` (rows with neither a name nor a budget are ignored — blank editor rows).
    """
    rows: list[tuple[Any, Any]]
    if isinstance(spec, pd.DataFrame):
        missing = {"name", "eps"} - set(spec.columns)
        if missing:
            raise PolicyError(f"The tier table needs columns 'name' and 'eps' (missing: {', '.join(sorted(missing))}).")
        rows = list(zip(spec["name"].tolist(), spec["eps"].tolist()))
    elif isinstance(spec, Mapping):
        rows = list(spec.items())
    else:
        rows = [(t.name, t.eps) if isinstance(t, Tier) else tuple(t) for t in spec]  # type: ignore[misc]
    tiers: list[Tier] = []
    for i, (name, eps) in enumerate(rows, 1):
        blank_name = name is None or (isinstance(name, float) and math.isnan(name)) or str(name).strip() == ""
        try:
            e = float(eps) if eps is not None else math.nan
        except (TypeError, ValueError):
            raise PolicyError(f"Tier {i} ('{name}'): the budget must be a number (got {eps!r}).") from None
        if blank_name and math.isnan(e):
            continue
        if blank_name:
            raise PolicyError(f"Tier {i} has a budget but no name.", hint="Give every tier a short name.")
        if not math.isfinite(e) or e <= 0:
            raise PolicyError(f"Tier '{str(name).strip()}' needs a positive budget ε (got {eps!r}).",
                              hint="Smaller ε = stronger privacy; workshop values are usually between 0.1 and 10.")
        if e < MIN_EPS or e > MAX_EPS:
            raise PolicyError(f"Tier '{str(name).strip()}': ε = {e:g} is outside the supported range "
                              f"[{MIN_EPS:g}, {MAX_EPS:g}].")
        tiers.append(Tier(str(name).strip(), e))
    if not tiers:
        raise PolicyError("Enter at least one tier (a name and a budget ε).")
    if len(tiers) > MAX_TIERS:
        raise PolicyError(f"{len(tiers)} tiers is more than the limit of {MAX_TIERS}.")
    names = [t.name for t in tiers]
    dup = sorted({n for n in names if names.count(n) > 1})
    if dup:
        raise PolicyError(f"Tier names must be unique; repeated: {', '.join(dup)}.")
    return tuple(sorted(tiers, key=lambda t: -t.eps))


def _names(tiers: Sequence[Tier]) -> list[str]:
    return [t.name for t in tiers]


# ---------------------------------------------------------------------------
# Queries on a table
# ---------------------------------------------------------------------------

_OPS = {"==": "equals", "!=": "differs from", ">=": "at least", "<=": "at most", ">": "above", "<": "below"}


@dataclass(frozen=True)
class RecordFilter:
    """Keep records whose ``column`` compares to ``value`` with ``op`` (==, !=, >=, <=, >, <)."""

    column: str
    op: str = "=="
    value: Any = None

    def mask(self, table: pd.DataFrame) -> np.ndarray:
        if self.column not in table.columns:
            raise ParameterError(f"The filter column '{self.column}' is not in the table.")
        if self.op not in _OPS:
            raise ParameterError(f"Unknown comparison '{self.op}'.", hint=f"Use one of {', '.join(_OPS)}.")
        col = table[self.column]
        if self.op in ("==", "!="):
            m = col.astype(str) == str(self.value)
            return (m if self.op == "==" else ~m).to_numpy()
        try:
            v = float(self.value)
        except (TypeError, ValueError):
            raise ParameterError(f"'{self.value}' is not a number to compare '{self.column}' with.") from None
        x = pd.to_numeric(col, errors="coerce").to_numpy(dtype=float)
        with np.errstate(invalid="ignore"):
            out = {">=": x >= v, "<=": x <= v, ">": x > v, "<": x < v}[self.op]
        return np.nan_to_num(out, nan=False).astype(bool)

    def describe(self) -> str:
        return f"{self.column} {_OPS[self.op]} {self.value}"


@dataclass(frozen=True)
class CentralQuery:
    """A count or clipped sum on a table: its true value, sensitivity and which records it reads."""

    kind: str
    value: float
    sensitivity: float
    mask: np.ndarray = field(repr=False)
    label: str
    integer: bool

    @property
    def n_matching(self) -> int:
        return int(self.mask.sum())


def central_query(table: pd.DataFrame, kind: str = "count", *, measure: str | None = None,
                  clip: float | None = None, filter: RecordFilter | None = None,
                  integer: bool = False) -> CentralQuery:
    """Evaluate a count or a clipped sum on ``table`` (add/remove neighbours).

    * ``count`` — number of (filtered) records; sensitivity 1.
    * ``sum`` — Σ min(max(v, 0), U) of ``measure`` over (filtered) records, U = ``clip``;
      sensitivity U. With ``integer`` the clipped values are rounded to integers first and
      U must be an integer (needed by the geometric families).

    The result's ``mask`` marks the records the query reads: only they incur privacy loss.
    """
    mask = np.ones(len(table), dtype=bool) if filter is None else filter.mask(table)
    where = "" if filter is None else f" where {filter.describe()}"
    if kind == "count":
        return CentralQuery("count", float(mask.sum()), 1.0, mask, f"count of records{where}", True)
    if kind != "sum":
        raise ParameterError(f"Unknown query '{kind}'.", hint="Use 'count' or 'sum'.")
    if measure is None or measure not in table.columns:
        raise ParameterError(f"Choose a measure column for the sum (got {measure!r}).")
    if clip is None:
        raise ParameterError("A sum needs a clipping bound U (the largest value one record may contribute).")
    U = float(clip)
    if not math.isfinite(U) or U <= 0:
        raise ParameterError(f"The clipping bound U must be a positive number (got {clip!r}).")
    if integer and U != int(U):
        raise ParameterError(f"Integer noise needs an integer clipping bound (got U = {clip!r}).",
                             hint="Round U, or use the Laplace or Gaussian family.")
    v = pd.to_numeric(table[measure], errors="coerce").to_numpy(dtype=float)
    v = np.clip(np.nan_to_num(v, nan=0.0), 0.0, U)
    if integer:
        v = np.round(v)
    total = float(v[mask].sum())
    return CentralQuery("sum", total, U, mask, f"sum of {measure} clipped to [0, {U:g}]{where}", integer)


#: Default public top U of a measure's range for the local model's categories: a round number declared
#: in advance, never read from the data (declare your own with ``top=`` or explicit ``edges=``).
DEFAULT_TOP = 1_000_000.0
#: Label of the public category reported by users whose record does not match the filter (local model).
NOT_MATCHING = "(not matching the filter)"
BIN_SCALES: dict[str, str] = {"log": "equal width on log(1+v) from 0 to the public top U",
                              "linear": "equal width from 0 to the public top U"}


def bin_edges(d: int, *, scale: str = "log", top: float = DEFAULT_TOP) -> np.ndarray:
    """The d − 1 public cut points of d categories of a non-negative measure (local model).

    ``log``: equal-width bins of log(1 + v) on [0, log(1 + U)]; ``linear``: equal-width bins of v
    on [0, U]. U = ``top`` is the public top of the range, declared without looking at the data;
    values at or above the last cut point (including those above U) fall in the top category.
    The cut points depend on (d, scale, U) only — never on the data — so one user's value moves
    no other user's category (§5: each user's report must be a function of that user alone).
    """
    d = int(d)
    if d < 2 or d > ml.MAX_DOMAIN:
        raise ParameterError(f"The number of categories d must be between 2 and {ml.MAX_DOMAIN}.")
    if scale not in BIN_SCALES:
        raise ParameterError(f"Unknown bin scale '{scale}'.", hint=f"Use one of {', '.join(BIN_SCALES)}.")
    try:
        U = float(top)
    except (TypeError, ValueError):
        raise ParameterError(f"The top of the range U must be a number (got {top!r}).") from None
    if not math.isfinite(U) or U <= 0 or U > 1e300:
        raise ParameterError(f"The top of the range U must be a positive number (got {top!r}).",
                             hint="Declare it from public knowledge (e.g. a legal or survey limit), not from the data.")
    if scale == "log":
        cuts = np.expm1(np.linspace(0.0, math.log1p(U), d + 1)[1:-1])
    else:
        cuts = np.linspace(0.0, U, d + 1)[1:-1]
    if not np.all(np.diff(cuts) > 0) or cuts[0] <= 0:
        raise ParameterError(f"{d} categories up to U = {U:g} are too narrow to tell apart.",
                             hint="Use fewer categories or a larger top U.")
    return cuts


def _check_edges(edges: Sequence[float] | np.ndarray) -> np.ndarray:
    try:
        cuts = np.asarray(edges, dtype=float).ravel()
    except (TypeError, ValueError):
        raise ParameterError("The bin edges must be numbers.") from None
    if cuts.size < 1 or cuts.size + 1 > ml.MAX_DOMAIN:
        raise ParameterError(f"Give between 1 and {ml.MAX_DOMAIN - 1} cut points (d − 1 for d categories).")
    if not np.all(np.isfinite(cuts)) or not np.all(np.diff(cuts) > 0):
        raise ParameterError("The bin edges must be finite and strictly increasing.")
    return cuts


def bin_labels(cuts: Sequence[float] | np.ndarray) -> list[str]:
    """Readable labels of the categories cut at the public points ``cuts`` ("a–b", top "≥ c")."""
    c = np.asarray(cuts, dtype=float)
    for digits in range(3, 18):
        lo = ["< " + f"{c[0]:.{digits}g}"] + [f"{c[i]:.{digits}g}–{c[i + 1]:.{digits}g}" for i in range(c.size - 1)]
        labels = lo + ["≥ " + f"{c[-1]:.{digits}g}"]
        if len(set(labels)) == len(labels):
            return labels
    return labels


def bin_measure(values: np.ndarray | pd.Series, d: int | None = None, *, scale: str = "log",
                top: float | None = None, edges: Sequence[float] | None = None) -> tuple[np.ndarray, list[str]]:
    """Categories 0…d−1 of a measure for the local model (one category per user), from public edges.

    The cut points are public: explicit ``edges`` (d − 1 increasing cut points, declared in
    advance), or :func:`bin_edges` from (d, ``scale``, ``top`` — the public top U of the range,
    :data:`DEFAULT_TOP` if not given). They never depend on the data, so a user's category is a
    function of that user's own value only and the labels publish nothing about other users.
    Missing and negative values fall in the first category. Returns the codes and the labels.
    """
    if edges is not None:
        cuts = _check_edges(edges)
        if d is not None and int(d) != cuts.size + 1:
            raise ParameterError(f"{cuts.size} cut points make {cuts.size + 1} categories, not d = {d}.")
    else:
        if d is None:
            raise ParameterError("Give the number of categories d or the public bin edges.")
        cuts = bin_edges(int(d), scale=scale, top=DEFAULT_TOP if top is None else top)
    v = np.nan_to_num(pd.to_numeric(pd.Series(values), errors="coerce").to_numpy(dtype=float), nan=-np.inf)
    codes = np.searchsorted(cuts, v, side="right")
    return codes.astype(np.int64), bin_labels(cuts)


def local_categories(table: pd.DataFrame, measure: str, d: int | None = 16, *, scale: str = "log",
                     top: float | None = None, edges: Sequence[float] | None = None,
                     filter: RecordFilter | None = None) -> tuple[np.ndarray, list[str]]:
    """Every record's category for the local model: its measure's public bin, or "not matching".

    Every record's owner reports (the roster size n is public in the local model). Without a
    filter there are d categories (:func:`bin_measure`). With a ``filter`` the domain gets one
    more public category, :data:`NOT_MATCHING`, reported by the owners of records that do not
    match: dropping them instead would make who reports — and, through the estimates summing
    to n, the exact number of matching records — depend on the data. Build the plan with
    ``d = len(labels)``.
    """
    if measure not in table.columns:
        raise ParameterError(f"The measure '{measure}' is not a column of the table.")
    codes, labels = bin_measure(table[measure].to_numpy(), d, scale=scale, top=top, edges=edges)
    if filter is not None:
        if len(labels) + 1 > ml.MAX_DOMAIN:
            raise ParameterError(f"With a filter the domain has d + 1 categories; d must be below {ml.MAX_DOMAIN}.")
        codes = np.where(filter.mask(table), codes, len(labels)).astype(np.int64)
        labels = labels + [NOT_MATCHING]
    return codes, labels


# ---------------------------------------------------------------------------
# Central model
# ---------------------------------------------------------------------------


@dataclass(frozen=True)
class CentralPlan:
    """Everything about a central multi-tier release that can be known before touching data.

    ``params[i]`` is tier i's noise parameter (``family.param_name()``); ``checks`` decides the
    residual of every step between distinct consecutive budgets (Algorithm 1 fails if one
    does not exist — decided here, never on data).
    """

    tiers: tuple[Tier, ...]
    family: NoiseFamily
    params: tuple[float, ...]
    checks: tuple[ResidualCheck, ...]

    @property
    def names(self) -> list[str]:
        return _names(self.tiers)

    @property
    def eps(self) -> np.ndarray:
        return np.array([t.eps for t in self.tiers])

    @property
    def valid(self) -> bool:
        return all(c.exists for c in self.checks)

    @property
    def unit(self) -> str:
        return "ρ" if self.family.budget_unit == "rho" else "ε"

    def budgets(self) -> np.ndarray:
        """Each tier's budget in the ledger's unit (ε, or ρ for the Gaussian family)."""
        return np.array([self.family.budget(t.eps) for t in self.tiers])

    def variances(self) -> np.ndarray:
        """MSE of each tier's answer under the multi-tier release (= the single release at ε_i)."""
        return np.array([self.family.variance(p) for p in self.params])

    def gradual_variances(self) -> np.ndarray:
        return mc.gradual_variance(mc.family_piece_variances(self.family, self.eps))

    def table(self) -> pd.DataFrame:
        """One row per tier: budget, noise parameter, MSE of each strategy and ratios to the ideal."""
        v = self.variances()
        g = self.gradual_variances()
        hw = [self.family.halfwidth(p) for p in self.params]
        return pd.DataFrame({
            "tier": self.names, "eps": self.eps, self.family.param_name(): list(self.params),
            "mse_multitier": v, "mse_ideal": v, "mse_independent": v, "mse_gradual": g,
            "ratio_multitier": v / v, "ratio_gradual": g / v, "halfwidth_95": hw,
        })

    def loss_summary(self) -> dict[str, float]:
        """Total loss if every tier colludes: multi-tier and gradual pay the top budget, independent the sum."""
        b = self.budgets()
        return {"multitier": float(b.max()), "independent": float(b.sum()), "gradual": float(b.max())}


def plan_central(tiers: Iterable[Tier] | Mapping[str, float] | pd.DataFrame, family: str = "geometric", *,
                 sensitivity: float = 1.0, delta: float | None = None) -> CentralPlan:
    """Plan a central multi-tier release (§4): noise parameters, residual checks, per-tier errors.

    ``family`` is one of :data:`RELEASE_FAMILIES`; ``sensitivity`` Δ the query's largest change
    when one record is added or removed (1 for counts, the clipping bound for sums); ``delta``
    the δ of every Gaussian tier. Fails (PolicyError) if some step has no valid residual.
    """
    ts = tiers_from(tiers)
    if family not in RELEASE_FAMILIES:
        raise ParameterError(f"'{family}' cannot be used for a release.",
                             hint=f"Choose one of {', '.join(RELEASE_FAMILIES)}.")
    fam = noise_family(family, sensitivity=sensitivity, delta=delta)
    params = tuple(fam.param(t.eps) for t in ts)
    checks = tuple(check_residual(fam, ts[i - 1].eps, ts[i].eps) for i in range(1, len(ts))
                   if ts[i].eps != ts[i - 1].eps)
    bad = [c for c in checks if c.exists is not True]
    if bad:
        raise PolicyError(f"No multi-tier version: {bad[0].sentence()}")
    return CentralPlan(ts, fam, params, checks)


def lattice_round(q: np.ndarray | float) -> np.ndarray:
    """The integer a geometric-family release answers for a query value q: ⌊q + ½⌋ (half up).

    Rounding is deterministic and data-independent, and it keeps an integer sensitivity Δ: if
    |a − b| ≤ Δ then |⌊a + ½⌋ − ⌊b + ½⌋| ≤ Δ (⌊x + t⌋ − ⌊x⌋ ≤ ⌈t⌉ for t ≥ 0), so the release of
    the rounded value is ε-DP exactly when that of q would be. (Round-half-to-even would not:
    0.5 → 0 and 1.5 → 2 move by 2 for Δ = 1.) Integer inputs are returned unchanged.
    """
    return np.floor(np.asarray(q, dtype=float) + 0.5)


def _record_loss(mask_or_n: np.ndarray | int | None, value: float) -> np.ndarray | None:
    if mask_or_n is None:
        return None
    if isinstance(mask_or_n, (int, np.integer)):
        return np.full(int(mask_or_n), float(value))
    m = np.asarray(mask_or_n, dtype=bool)
    return np.where(m, float(value), 0.0)


def release_central(plan: CentralPlan, true_answers: float | Sequence[float] | np.ndarray, *,
                    rng: np.random.Generator, seed: int | None = None, strategy: Strategy = "multitier",
                    reveal: bool = False, query: str = "query", records: np.ndarray | int | None = None,
                    query_labels: Sequence[str] | None = None) -> Release:
    """Release every tier's answer to the same query(ies) (Algorithm 1 or a baseline).

    ``true_answers``: the exact query value(s). The geometric families release the integer
    answer ⌊q + ½⌋ (:func:`lattice_round`), always — never an abort that depends on whether the
    data happened to sum to an integer; :func:`central_query` with ``integer=True`` already rounds
    each record's contribution, so its sums are integers and unchanged.
    ``strategy``: ``multitier`` (Algorithm 1: one data access, residuals for lower tiers; any
    coalition costs its top budget), ``independent`` (fresh noise per tier; costs Σ ε) or
    ``gradual`` (one release per budget piece; tier j averages pieces l ≥ j).
    ``records``: the input rows (a boolean mask of the records the query reads, or a count):
    the per-record loss is the total over all tiers for those records, 0 for the others.
    The answers table has one row per (tier, query); truth columns only with ``reveal``.
    """
    if strategy not in STRATEGIES:
        raise ParameterError(f"Unknown strategy '{strategy}'.", hint=f"Use one of {', '.join(STRATEGIES)}.")
    q = np.atleast_1d(np.asarray(true_answers, dtype=float))
    if q.size == 0 or not np.all(np.isfinite(q)):
        raise ParameterError("The true answers must be finite numbers.")
    if plan.family.lattice:
        q = lattice_round(q)
    fam = plan.family
    if strategy == "multitier":
        out = mc.sample_multitier(fam, plan.params, q, rng=rng)
    elif strategy == "independent":
        out = mc.sample_independent(fam, plan.params, q, rng=rng)
    else:
        out, _ = mc.sample_gradual(fam, plan.eps, q, rng=rng)
    var = plan.variances() if strategy != "gradual" else plan.gradual_variances()
    labels = list(query_labels) if query_labels is not None else ([query] if q.size == 1 else
                                                                   [f"{query} [{j}]" for j in range(q.size)])
    rows = []
    for i, t in enumerate(plan.tiers):
        hw = fam.halfwidth(plan.params[i]) if strategy != "gradual" else float(1.959963984540054 * math.sqrt(var[i]))
        for j in range(q.size):
            row = {"tier": t.name, "eps": t.eps, "query": labels[j], "estimate": float(out[i, j]),
                   "sd": float(math.sqrt(var[i])), "ci_low": float(out[i, j] - hw), "ci_high": float(out[i, j] + hw)}
            if reveal:
                row.update(true=float(q[j]), error=float(out[i, j] - q[j]), abs_error=float(abs(out[i, j] - q[j])))
            rows.append(row)
    answers = pd.DataFrame(rows)
    budgets = plan.budgets()
    measure = "rho" if fam.budget_unit == "rho" else "eps"
    total = plan.loss_summary()[strategy]
    base = dict(family=fam.name, sensitivity=fam.sensitivity, delta=fam.delta, strategy=strategy, query=query,
                tiers={t.name: t.eps for t in plan.tiers})
    tiers_txt = ", ".join(f"{t.name} ε={t.eps:g}" for t in plan.tiers)
    if strategy == "multitier":
        entries = (LedgerEntry(f"Multi-tier {query} ({tiers_txt}) — all tiers together", f"multitier.central.{fam.name}",
                               FlatLoss(total, measure), base, seed),)
    elif strategy == "independent":
        entries = tuple(LedgerEntry(f"{query} for {t.name} (independent release)", f"multitier.central.{fam.name}",
                                    FlatLoss(float(b), measure), {**base, "tier": t.name}, seed)
                        for t, b in zip(plan.tiers, budgets))
    else:
        pieces = mc.gradual_pieces(budgets)
        entries = tuple(LedgerEntry(f"{query}: budget piece {l + 1} (gradual)", f"multitier.central.{fam.name}",
                                    FlatLoss(float(e), measure), {**base, "piece": l + 1}, seed)
                        for l, e in enumerate(pieces) if e > 1e-15)
    extras = {"plan": plan.table(), "loss_summary": plan.loss_summary(), "unit": plan.unit,
              "checks": [c.sentence() for c in plan.checks]}
    if reveal:
        extras["private_true_answers"] = q
    return Release(mechanism=f"multitier.central.{strategy}", answers=answers, measure=measure,
                   loss=_record_loss(records, total), entries=entries,
                   params={**base, "params": list(plan.params)}, seed=seed, truth_included=reveal, extras=extras)


# ---------------------------------------------------------------------------
# Local model
# ---------------------------------------------------------------------------


@dataclass(frozen=True)
class LocalPlan:
    """The multi-tier Subset plan for a tier list and a domain of d categories (public, data-free).

    ``templates`` is the chain (Algorithms 2–5) and ``served[i]`` the template answering tier i
    (level ≤ ε_i; the smallest error among those with rule ``best``).
    """

    tiers: tuple[Tier, ...]
    d: int
    variant: str
    templates: tuple[Template, ...]
    served: tuple[int, ...]
    rule: str = "best"

    @property
    def names(self) -> list[str]:
        return _names(self.tiers)

    @property
    def eps(self) -> np.ndarray:
        return np.array([t.eps for t in self.tiers])

    @property
    def served_eps(self) -> np.ndarray:
        """Each tier's real (tight) privacy level ε_t ≤ ε_i."""
        return np.array([self.templates[i].eps for i in self.served])

    @property
    def served_k(self) -> np.ndarray:
        return np.array([self.templates[i].k for i in self.served])

    def chain(self) -> tuple[list[int], np.ndarray, np.ndarray]:
        """Distinct served templates in chain order, their sizes and composite keep probabilities."""
        uniq = sorted(set(self.served))
        keep = ml.composite_keep(self.templates, uniq)
        return uniq, np.array([self.templates[i].k for i in uniq]), keep

    def variances(self) -> np.ndarray:
        """Per-user V(ε_t, k_t) of each tier (n users: count-vector MSE n·V)."""
        return ml.subset_variance(self.served_eps, self.served_k, self.d)

    def table(self) -> pd.DataFrame:
        e = self.eps
        kstar = ml.optimal_k(e, self.d)
        v = self.variances()
        ideal = ml.subset_variance(e, kstar, self.d)
        return pd.DataFrame({
            "tier": self.names, "eps": e, "template": list(self.served), "eps_template": self.served_eps,
            "k": self.served_k, "unused_eps": e - self.served_eps, "var_multitier": v, "k_ideal": kstar,
            "var_ideal": ideal, "ratio_multitier": v / ideal, "var_grr": ml.grr_variance(e, self.d),
            "var_brr": ml.brr_variance(e, self.d), "var_gradual": ml.gradual_local_variance(e, self.d),
        })

    def template_table(self) -> pd.DataFrame:
        serves: dict[int, list[str]] = {}
        for name, i in zip(self.names, self.served):
            serves.setdefault(int(i), []).append(name)
        return pd.DataFrame([{
            "template": t.index, "step": t.step, "operator": t.op, "k": t.k, "eps": t.eps,
            "keep_probability": t.beta if t.op == "rescale" else None, "reference": t.reference,
            "serves": ", ".join(serves.get(t.index, [])),
        } for t in self.templates])

    def loss_summary(self) -> dict[str, float]:
        """Loss if every tier colludes: multi-tier — the top served level (≤ ε_1); independent — Σ ε_i."""
        return {"multitier": float(self.served_eps.max()), "independent": float(self.eps.sum()),
                "gradual": float(self.eps.max())}


def plan_local(tiers: Iterable[Tier] | Mapping[str, float] | pd.DataFrame, d: int, *,
               variant: str = "subset2", rule: str = "best") -> LocalPlan:
    """Plan the multi-tier Subset mechanism for d categories (§5): template chain and serving.

    ``variant``: ``subset2`` (Algorithm 5, default) or ``subset1`` (Algorithms 2–3).
    ``rule``: ``best`` (smallest error among templates at or below the budget) or
    ``closest`` (the paper's Algorithm 4: the highest such level).
    """
    ts = tiers_from(tiers)
    if rule not in ("best", "closest"):
        raise ParameterError(f"Unknown serving rule '{rule}'.", hint="Use 'best' or 'closest'.")
    d = ml._check_domain(d)
    eps = [t.eps for t in ts]
    templates = ml.template_chain(eps, d, variant)  # type: ignore[arg-type]
    served = tuple(int(i) for i in ml.serve(templates, eps, d, rule=rule))
    return LocalPlan(ts, d, variant, templates, served, rule)


LocalMechanism = Literal["subset", "grr", "brr", "independent"]
LOCAL_MECHANISMS: dict[str, str] = {
    "subset": "Multi-tier Subset (template chain)",
    "grr": "Multi-tier GRR (re-sampling)",
    "brr": "Multi-tier BRR (per-bit re-sampling)",
    "independent": "Ideal: an independent optimal Subset report per tier (loss Σ ε)",
}


def release_local(plan: LocalPlan, values: np.ndarray | Sequence[int], *, rng: np.random.Generator,
                  seed: int | None = None, mechanism: LocalMechanism = "subset", reveal: bool = False,
                  labels: Sequence[str] | None = None) -> Release:
    """Simulate n users' reports for every tier and release each tier's estimated counts.

    ``values``: each user's category in 0…d−1 (one user per input row; every user of the roster,
    each category a function of that user's own record only — :func:`local_categories` builds
    them from public edges, with the public category "not matching" for a filter). n is the
    roster size: every tier's estimates sum to it. Every user's reports
    follow the chosen multi-tier mechanism exactly (epochs of the template chain; see
    :mod:`.multitier_local`); each tier's collector debiases the column counts of its
    reports into count estimates. The answers table has one row per (tier, category); truth
    columns only with ``reveal``. Per-record loss: the total over all tiers (the top served
    level for the multi-tier mechanisms, Σ ε_i for independent reports).
    """
    if mechanism not in LOCAL_MECHANISMS:
        raise ParameterError(f"Unknown local mechanism '{mechanism}'.",
                             hint=f"Use one of {', '.join(LOCAL_MECHANISMS)}.")
    x = np.asarray(values)
    if x.ndim != 1 or x.size == 0:
        raise ParameterError("Give one category per user (a non-empty list of integers).")
    if not np.issubdtype(x.dtype, np.integer):
        if not np.all(np.isfinite(x.astype(float))) or not np.allclose(x, np.round(x)):
            raise ParameterError("Categories must be integers between 0 and d − 1.")
        x = np.round(x).astype(np.int64)
    d = plan.d
    if x.min() < 0 or x.max() >= d:
        raise ParameterError(f"Categories must be between 0 and d − 1 = {d - 1}.")
    n = int(x.size)
    xc = np.bincount(x, minlength=d).astype(np.int64)
    eps = plan.eps
    rows: list[dict[str, Any]] = []
    lab = list(labels) if labels is not None else [str(j) for j in range(d)]
    if len(lab) != d:
        raise ParameterError(f"Expected {d} category labels (got {len(lab)}).")
    if mechanism == "subset":
        uniq, sizes, keep = plan.chain()
        counts = ml.multitier_subset_counts(sizes, keep, xc, rng=rng)
        pos = {t: j for j, t in enumerate(uniq)}
        est = []
        for i in range(len(plan.tiers)):
            tp = plan.templates[plan.served[i]]
            est.append((ml.debias_subset(counts[pos[plan.served[i]]], n, tp.k, tp.rho, d), tp.eps, tp.k))
        total = plan.loss_summary()["multitier"]
    elif mechanism == "grr":
        counts = ml.grr_chain_counts(eps, xc, rng=rng)
        est = [(ml.debias_subset(counts[i], n, 1, math.exp(e), d), e, 1) for i, e in enumerate(eps)]
        total = float(eps.max())
    elif mechanism == "brr":
        counts = ml.brr_chain_counts(eps, xc, rng=rng)
        est = [(ml.debias_brr(counts[i], n, e), e, 0) for i, e in enumerate(eps)]
        total = float(eps.max())
    else:
        kstar = ml.optimal_k(eps, d)
        est = []
        for e, k in zip(eps, kstar):
            c = ml.subset_counts(xc, int(k), math.exp(e), rng=rng)
            est.append((ml.debias_subset(c, n, int(k), math.exp(e), d), e, int(k)))
        total = float(eps.sum())
    for i, t in enumerate(plan.tiers):
        e_hat, lvl, k = est[i]
        if mechanism == "brr":
            var = float(ml.brr_variance(lvl, d))
        else:
            var = float(ml.subset_variance(lvl, k, d))
        sd_cat = math.sqrt(n * var / d)  # average per-category standard deviation
        for j in range(d):
            row = {"tier": t.name, "eps": t.eps, "eps_used": float(lvl), "k": int(k), "category": lab[j],
                   "estimate": float(e_hat[j]), "sd": sd_cat}
            if reveal:
                row.update(true=float(xc[j]), error=float(e_hat[j] - xc[j]), abs_error=float(abs(e_hat[j] - xc[j])))
            rows.append(row)
    answers = pd.DataFrame(rows)
    base = dict(model="local", d=d, mechanism=mechanism, variant=plan.variant, rule=plan.rule, n=n,
                tiers={t.name: t.eps for t in plan.tiers})
    tiers_txt = ", ".join(f"{t.name} ε={t.eps:g}" for t in plan.tiers)
    if mechanism == "independent":
        entries = tuple(LedgerEntry(f"Local counts for {t.name} (independent reports)", "multitier.local.independent",
                                    FlatLoss(float(t.eps), "eps"), {**base, "tier": t.name}, seed) for t in plan.tiers)
    else:
        short = {"subset": "Subset templates", "grr": "GRR re-sampling", "brr": "BRR re-sampling"}[mechanism]
        entries = (LedgerEntry(f"Multi-tier local counts, {short} ({tiers_txt}) — all tiers together",
                               f"multitier.local.{mechanism}", FlatLoss(total, "eps"), base, seed),)
    extras: dict[str, Any] = {"plan": plan.table(), "loss_summary": {**plan.loss_summary(),
                                                                     "multitier": total}}
    if reveal:
        extras["private_true_counts"] = xc
    return Release(mechanism=f"multitier.local.{mechanism}", answers=answers, measure="eps",
                   loss=np.full(n, total), entries=entries, params=base, seed=seed, truth_included=reveal,
                   extras=extras)


# ---------------------------------------------------------------------------
# Coalitions: computed privacy loss of colluding tiers
# ---------------------------------------------------------------------------


@dataclass(frozen=True)
class CoalitionLoss:
    """Privacy loss of a set of colluding tiers (what they learn together about one record/user).

    ``multitier`` is computed for the multi-tier mechanism, ``independent`` and ``gradual`` for
    the baselines; ``bound`` = max budget (the paper's guarantee), ``naive`` = Σ budgets.
    ``method`` says how ``multitier`` was computed. Units: ``unit`` (ε; ρ for Gaussian tiers,
    with ``eps_at_delta`` the (ε, δ) values of the joint Gaussian outputs).
    """

    members: tuple[str, ...]
    multitier: float
    independent: float
    gradual: float
    bound: float
    naive: float
    method: str
    unit: str = "ε"
    eps_at_delta: dict[str, float] = field(default_factory=dict)


def _members(plan: CentralPlan | LocalPlan, members: Sequence[str] | None) -> list[int]:
    names = plan.names
    if members is None:
        return list(range(len(names)))
    idx = []
    for m in members:
        if m not in names:
            raise ParameterError(f"'{m}' is not one of the tiers ({', '.join(names)}).")
        idx.append(names.index(m))
    if not idx:
        raise ParameterError("Choose at least one tier for the coalition.")
    return sorted(set(idx))


def coalition_loss(plan: CentralPlan | LocalPlan, members: Sequence[str] | None = None) -> CoalitionLoss:
    """Privacy loss of the joint output of the tiers ``members`` (all tiers by default), computed.

    Central, geometric family: the exact joint pmf of up to 4 members' outputs on a window of
    integers, for neighbouring true answers q and q + Δ (the composed residuals obtained by
    convolving the per-step residual pmfs), and the largest log-ratio. Local, d ≤ 8 and up to 3
    members: the exact joint distribution of the members' reports for every pair of inputs.
    Otherwise: the construction is a Markov chain whose kernels do not depend on the data,
    so the joint likelihood ratio equals the top member's; that member's loss is computed from
    its exact output distribution. Independent releases: members' losses add (computed from the
    product distribution when it is enumerated). Gradual: the pieces used by the top member.
    """
    idx = _members(plan, members)
    names = tuple(plan.names[i] for i in idx)
    eps = plan.eps[idx]
    if isinstance(plan, LocalPlan):
        top = idx[0]
        tpl = [plan.served[i] for i in idx]
        uniq = sorted(set(tpl))
        method = "top member's template (Markov chain factorisation)"
        if plan.d <= 8 and len(uniq) <= 3:
            J = ml.joint_exact(plan.templates, uniq, plan.d)
            mt = ml.max_log_ratio(J.reshape(plan.d, -1))
            method = "exact joint distribution of the members' reports (all inputs)"
        else:
            mt = ml.max_log_ratio(ml.subset_pmf_exact(plan.templates[tpl[0]].k, plan.templates[tpl[0]].rho,
                                                      plan.d)) if plan.d <= 10 else plan.templates[tpl[0]].eps
            if plan.d > 10:
                method = "top member's template level ln ρ (Markov chain factorisation)"
        return CoalitionLoss(names, float(mt), float(eps.sum()), float(plan.eps[top]), float(eps.max()),
                             float(eps.sum()), method)
    fam = plan.family
    params = [plan.params[i] for i in idx]
    budgets = plan.budgets()[idx]
    unit = plan.unit
    if fam.name == "geometric":
        chain = list(plan.params[idx[0]:idx[-1] + 1])
        sh = int(fam.sensitivity)
        half = max(12, 2 * sh)
        if (2 * half + 1) ** len(idx) <= 2_000_000:
            mt = mc.geometric_coalition_loss(params, strategy="multitier", shift=sh, chain=chain, half=half)
            ind = mc.geometric_coalition_loss(params, strategy="independent", shift=sh, half=half)
            method = "exact joint pmf of the members' outputs on a window (neighbours q, q + Δ)"
        else:
            mt = mc.geometric_coalition_loss([params[0]], shift=sh, half=half)
            ind = sum(mc.geometric_coalition_loss([p], shift=sh, half=half) for p in params)
            method = "top member's exact pmf (Markov chain factorisation)"
        return CoalitionLoss(names, float(mt), float(ind), float(budgets[0]), float(budgets.max()),
                             float(budgets.sum()), method, unit)
    if fam.name == "gaussian":
        delta = float(fam.delta)
        sig = np.array(params)
        sig_eff = 1.0 / math.sqrt(float((1.0 / sig ** 2).sum()))
        e_mt = mc.gaussian_eps_for(sig[0], delta, fam.sensitivity)
        e_ind = mc.gaussian_eps_for(sig_eff, delta, fam.sensitivity)
        return CoalitionLoss(names, float(fam.rho(sig[0])), float(fam.rho(sig_eff)), float(budgets[0]),
                             float(budgets.max()), float(budgets.sum()),
                             "joint Gaussian outputs: post-processing of the top member (multi-tier); "
                             "independent Gaussians combine into one with 1/σ² = Σ 1/σ_i²", "ρ",
                             {"multitier": e_mt, "independent": e_ind, "delta": delta})
    if fam.name == "multiscale_geometric":
        # log f(y)/f(y − s) of Σ ξ·Z_ξ only approaches ε in the tails, so a window gives a lower
        # bound; the construction absorbs any shift s ≤ Δ by a unit shift of Z_s (loss ≤ ε, tight)
        return CoalitionLoss(names, float(budgets[0]), float(budgets.sum()), float(budgets[0]),
                             float(budgets.max()), float(budgets.sum()),
                             "top member's budget (Markov chain factorisation; the multi-scale noise's loss is "
                             "approached in its tails)", unit)
    # laplace: the top member's loss from its exact density, independent = sum
    def marginal_loss(p: float) -> float:
        y = np.linspace(-60 * p, 60 * p, 24001)
        return float(np.max(np.abs(np.abs(y - fam.sensitivity) - np.abs(y)) / p))

    losses = [marginal_loss(p) for p in params]
    return CoalitionLoss(names, losses[0], float(sum(losses)), float(budgets[0]), float(budgets.max()),
                         float(budgets.sum()), "top member's exact density (Markov chain factorisation)", unit)


def coalition_table(plan: CentralPlan | LocalPlan, coalitions: Sequence[Sequence[str]] | None = None) -> pd.DataFrame:
    """Coalition losses for several coalitions (default: every tier alone, then the growing
    coalitions from the top tier down, ending with all tiers)."""
    if coalitions is None:
        names = plan.names
        coalitions = [[n] for n in names] + [names[:j] for j in range(2, len(names) + 1)]
    rows = []
    for c in coalitions:
        cl = coalition_loss(plan, c)
        rows.append({"coalition": " + ".join(cl.members), "size": len(cl.members), "multitier": cl.multitier,
                     "independent": cl.independent, "gradual": cl.gradual, "guarantee (max)": cl.bound,
                     "sum of budgets": cl.naive, "method": cl.method})
    return pd.DataFrame(rows)


def safe_plan_error(exc: Exception) -> PrdpError:
    """Translate an unexpected numerical failure into an actionable error (for the app)."""
    if isinstance(exc, PrdpError):
        return exc
    return ParameterError(f"These settings could not be evaluated ({type(exc).__name__}).",
                          hint="Try fewer tiers, a smaller domain or budgets between 0.01 and 20.")
