"""Multi-tier release in the central (curator) model: plans, Algorithm 1 and its baselines.

Wang et al., §4. The curator touches the data once, to release r_1 = q(X) + η(ε_1); every lower
tier is derived by adding *residual* noise whose characteristic function is the ratio of the
tiers' noise CFs (Algorithm 1), a data-independent post-processing of r_1: any coalition of tiers
learns no more than its highest-budget member (Thm 4.1), while each r_i is distributed exactly as
the single-tier release at ε_i. :func:`plan_central` gives every tier's MSE under the multi-tier,
independent and gradual strategies and the residual validity of every step before any data is
touched; :func:`release_central` releases one (lattice-rounded for the geometric families).
Budgets are pure ε under add/remove neighbours, except the Gaussian family (ε with a shared δ,
recorded in zCDP units, ρ = Δ²/(2σ²)). Numpy samplers are for teaching and review; a real release
uses ``secure=True`` (exact OpenDP samplers on a grid, :mod:`.secure`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Iterable, Mapping, Sequence

import numpy as np
import pandas as pd

from ...core.accounting import FlatLoss, LedgerEntry
from ...core.errors import ParameterError, PolicyError
from ...core.loss_profile import Measure
from ...core.noise_source import NO_GENERATOR, Noise, resolve
from ...core.release import Release
from ...core.secure import SecureSampler
from .noise_families import RELEASE_FAMILIES, NoiseFamily, noise_family
from .residuals import ResidualCheck, check_residual
from .secure import secure_central
from .tiers import STRATEGIES, Strategy, Tier, TieredPlan, gradual_pieces, lattice_round, tiers_from

# ---------------------------------------------------------------------------
# Central model
# ---------------------------------------------------------------------------


@dataclass(frozen=True)
class CentralPlan(TieredPlan):
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
    def valid(self) -> bool:
        return all(c.exists for c in self.checks)

    @property
    def loss_kind(self) -> str:
        """Unit of the per-record loss (:class:`prdp_core.mechanisms.contract.Plan`): ``"rho"`` (Gaussian tiers, zCDP)
        or ``"eps"`` (pure ε)."""
        return "rho" if self.family.budget_unit == "rho" else "eps"

    def record_loss(self, records: np.ndarray | int, strategy: Strategy = "multitier") -> np.ndarray:
        """Each record's loss if every tier colludes: ``loss_summary()[strategy]`` for a record the query
        reads (``records``: a boolean mask of the input rows, or a count of rows all read), 0 for the others.
        What :func:`release_central` charges, known before any data."""
        if strategy not in STRATEGIES:
            raise ParameterError(f"Unknown strategy '{strategy}'.", hint=f"Use one of {', '.join(STRATEGIES)}.")
        return _record_loss(records, self.loss_summary()[strategy])  # type: ignore[return-value]  # _record_loss returns an array whenever records is given

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
        return gradual_variance(family_piece_variances(self.family, self.eps))

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


def _record_loss(mask_or_n: np.ndarray | int | None, value: float) -> np.ndarray | None:
    if mask_or_n is None:
        return None
    if isinstance(mask_or_n, (int, np.integer)):
        return np.full(int(mask_or_n), float(value))
    m = np.asarray(mask_or_n, dtype=bool)
    return np.where(m, float(value), 0.0)


def release_central(plan: CentralPlan, true_answers: float | Sequence[float] | np.ndarray, *,
                    rng: np.random.Generator | None = None, seed: int | None = None, strategy: Strategy = "multitier",
                    reveal: bool = False, query: str = "query", records: np.ndarray | int | None = None,
                    query_labels: Sequence[str] | None = None, secure: bool = False,
                    sampler: SecureSampler | None = None,
                    contributions: np.ndarray | Sequence[np.ndarray] | None = None,
                    noise: Noise | None = None) -> Release:
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
    ``secure=True`` (or a :class:`~prdp_core.core.secure.SecureSampler`): a real release, unseeded, with exact
    OpenDP samplers (:mod:`.secure`); it reads the records' ``contributions`` (one array per query, e.g.
    :attr:`CentralQuery.contributions`) and quantises them itself, and the loss of every tier is certified
    before the answers are returned (``params["certified"]``). ``rng`` and ``seed`` are then ignored.
    ``noise``: the noise source (:class:`~prdp_core.core.noise_source.Noise`: ``Noise.teaching(seed)`` or
    ``Noise.secure()``); ``rng``/``seed``/``secure``/``sampler`` are its legacy spelling.
    """
    if strategy not in STRATEGIES:
        raise ParameterError(f"Unknown strategy '{strategy}'.", hint=f"Use one of {', '.join(STRATEGIES)}.")
    q = np.atleast_1d(np.asarray(true_answers, dtype=float))
    if q.size == 0 or not np.all(np.isfinite(q)):
        raise ParameterError("The true answers must be finite numbers.")
    if plan.family.lattice:
        q = lattice_round(q)
    fam = plan.family
    nz = resolve(noise, rng=rng, seed=seed, secure=secure, sampler=sampler)
    smp, rng, seed = nz.sampler, nz.rng, nz.seed
    cert = None
    if smp is not None:
        cert = _secure_tiers(plan, q, contributions, strategy, smp)
        out = cert.estimates
    elif rng is None:
        raise ParameterError(NO_GENERATOR)
    elif strategy == "multitier":
        out = sample_multitier(fam, plan.params, q, rng=rng)
    elif strategy == "independent":
        out = sample_independent(fam, plan.params, q, rng=rng)
    else:
        out, _ = sample_gradual(fam, plan.eps, q, rng=rng)
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
    measure: Measure = "rho" if fam.budget_unit == "rho" else "eps"
    total = plan.loss_summary()[strategy]
    base = dict(family=fam.name, sensitivity=fam.sensitivity, delta=fam.delta, strategy=strategy, query=query,
                tiers={t.name: t.eps for t in plan.tiers})
    if smp is not None and cert is not None:
        if cert.total > total * (1 + 1e-9):  # pragma: no cover - each draw is certified within its budget
            raise ParameterError("OpenDP could not certify the multi-tier release's budget.")
        base.update(secure=smp.describe(), grid=cert.grid, certified_note=cert.note,
                    certified={t.name: float(c) for t, c in zip(plan.tiers, cert.certified)})
    tiers_txt = ", ".join(f"{t.name} ε={t.eps:g}" for t in plan.tiers)
    entries: tuple[LedgerEntry, ...]
    if strategy == "multitier":
        entries = (LedgerEntry(f"Multi-tier {query} ({tiers_txt}) — all tiers together",
                               f"multitier.central.{fam.name}", FlatLoss(total, measure), base, seed,
                               secure=smp is not None),)
    elif strategy == "independent":
        entries = tuple(LedgerEntry(f"{query} for {t.name} (independent release)", f"multitier.central.{fam.name}",
                                    FlatLoss(float(b), measure), {**base, "tier": t.name}, seed,
                                    secure=smp is not None)
                        for t, b in zip(plan.tiers, budgets))
    else:
        pieces = gradual_pieces(budgets)
        entries = tuple(LedgerEntry(f"{query}: budget piece {l + 1} (gradual)", f"multitier.central.{fam.name}",
                                    FlatLoss(float(e), measure), {**base, "piece": l + 1}, seed,
                                    secure=smp is not None)
                        for l, e in enumerate(pieces) if e > 1e-15)
    extras = {"plan": plan.table(), "loss_summary": plan.loss_summary(), "unit": plan.unit,
              "checks": [c.sentence() for c in plan.checks]}
    if reveal:
        extras["private_true_answers"] = q
    return Release(mechanism=f"multitier.central.{strategy}", answers=answers, measure=measure,
                   loss=None if records is None else plan.record_loss(records, strategy), entries=entries,
                   params={**base, "params": list(plan.params)}, seed=seed, truth_included=reveal, extras=extras,
                   secure=smp is not None)


def _secure_tiers(plan: CentralPlan, q: np.ndarray, contributions: np.ndarray | Sequence[np.ndarray] | None,
                  strategy: str, smp: SecureSampler) -> Any:
    """The secure answers of every tier (:func:`.secure.secure_central`), from one contribution array per query."""
    if contributions is None:
        raise ParameterError("A secure multi-tier release reads the records' contributions, not a total.",
                             hint="Pass contributions=central_query(...).contributions.")
    if isinstance(contributions, np.ndarray) and contributions.ndim <= 1:
        contribs = [contributions]
    else:
        contribs = [np.asarray(c) for c in contributions]
    if len(contribs) != q.size:
        raise ParameterError(f"Give one contribution array per query ({q.size}), got {len(contribs)}.")
    return secure_central(plan.family, contribs, list(plan.eps), strategy=strategy, smp=smp)


# ---------------------------------------------------------------------------
# Sampling: Algorithm 1, independent releases and the gradual baseline
# ---------------------------------------------------------------------------


def sample_multitier(family: NoiseFamily, params: Sequence[float], true: np.ndarray, *,
                     rng: np.random.Generator) -> np.ndarray:
    """Algorithm 1: r_1 = q + η(param_1); r_{i+1} = r_i + s_i (residual from param_i to param_{i+1}).

    ``params`` are the tiers' parameters in decreasing-budget order; ``true`` the true answers
    (one per query). Equal consecutive budgets give the *same* output (no fresh draw).
    Returns an array (tiers × queries).
    """
    q = np.atleast_1d(np.asarray(true, dtype=float))
    out = np.empty((len(params), q.size))
    r = q + family.sample(params[0], q.size, rng=rng)
    out[0] = r
    for i in range(1, len(params)):
        if params[i] != params[i - 1]:
            r = r + family.residual(params[i - 1], params[i], q.size, rng=rng)
        out[i] = r
    return out


def sample_independent(family: NoiseFamily, params: Sequence[float], true: np.ndarray, *,
                       rng: np.random.Generator) -> np.ndarray:
    """Naive baseline: a fresh release per tier (collusion costs Σ ε)."""
    q = np.atleast_1d(np.asarray(true, dtype=float))
    return np.stack([q + family.sample(p, q.size, rng=rng) for p in params])


def gradual_variance(piece_variances: Sequence[float] | np.ndarray) -> np.ndarray:
    """MSE of tier j under the gradual baseline: 1 / Σ_{l ≥ j} 1/v(e_l) (inverse-variance weights)."""
    v = np.asarray(piece_variances, dtype=float)
    with np.errstate(divide="ignore"):
        inv = np.where(np.isfinite(v), 1.0 / v, 0.0)
    tail = np.cumsum(inv[::-1])[::-1]
    with np.errstate(divide="ignore"):
        return 1.0 / tail


def family_piece_variances(family: NoiseFamily, eps: Sequence[float] | np.ndarray) -> np.ndarray:
    """Variance of each gradual piece (inf for empty pieces of repeated budgets)."""
    budgets = [family.budget(e) for e in eps]
    pieces = gradual_pieces(budgets)
    return np.array([family.variance_at_budget(e) if e > 1e-15 else math.inf for e in pieces])


def sample_gradual(family: NoiseFamily, eps: Sequence[float] | np.ndarray, true: np.ndarray, *,
                   rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """Gradual baseline: one release per budget piece, tier j averages pieces l ≥ j by inverse variance.

    Returns (tier answers, piece answers). Collusion costs the top tier's budget (pieces are
    disjoint budget shares that compose sequentially).
    """
    q = np.atleast_1d(np.asarray(true, dtype=float))
    budgets = [family.budget(e) for e in eps]
    pieces = gradual_pieces(budgets)
    var = family_piece_variances(family, eps)
    piece_out = np.full((len(pieces), q.size), np.nan)
    for l, e in enumerate(pieces):
        if e > 1e-15:
            piece_out[l] = q + family.sample(family.param(e) if family.budget_unit == "eps"
                                             else math.sqrt(family.variance_at_budget(e)), q.size, rng=rng)
    w = np.where(np.isfinite(var), 1.0 / var, 0.0)
    out = np.empty((len(pieces), q.size))
    for j in range(len(pieces)):
        ww = w[j:]
        out[j] = np.nansum(ww[:, None] * np.nan_to_num(piece_out[j:]), axis=0) / ww.sum()
    return out, piece_out
