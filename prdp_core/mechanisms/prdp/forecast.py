"""The general PrDP framework's failure predicted before a run (Algorithms 2 and 5), from a public
assumption about the measure and a public or noisy number of records — never from the records.

Why. Algorithm 2 (Sec. 6) selects a domain ℓ with a noisy threshold test (Part 1) and runs a
standard mechanism M at (1 − s)·ε_τ on the records of domains ≥ ℓ. With few records for the
budgets, either step can make the answer collapse to a relative error near 100%: Part 1 stops
at a domain holding no records (or none passes, ℓ = L) and M sees almost nothing, or M's budget
ε_M is so small that the sum's private clipping threshold falls to the smallest candidates
(Normal(50k, 50k) balances, β = 0.1: median error 100% at n = 10⁴ with the log and sqrt
budgets of Sec. 8.1, and for all three at n = 10³). This module says so before the run
(:func:`forecast`; the remedies and the recommendation are in :mod:`.outlook`).

The model (closed form; :func:`forecast`)
-----------------------------------------
* **Records**: n independent draws from an :class:`AssumedData` — the designer's public
  assumption about the measure v (Normal with negative draws redrawn, as the paper's synthetic
  data; log-normal; or a table of public quantiles; :mod:`.assumed`), capped at U. It is represented by about
  4,100 quantile points with their probability masses (dense in both tails), on which E is
  evaluated: the share p_i of records in each domain i and M's expected per-domain statistics
  (counts and sums per power-of-two bin), times n. Budgets must depend on the measure alone (or
  be constant).
* **Part 1** (Algorithm 1 on E' = s·E with β₁): domain i's count c_i ~ Binomial(n, p_i) plus
  Laplace(b_i), b_i = 1/(s·2^{i−1}ε̌), reaches T_i = b_i·ln(L/β₁) with probability
  π_i = E[S_b(T_i − c_i)] (S_b the Laplace survival function, summed exactly over c_i's pmf).
  Treating domains as independent (the multinomial's weak negative correlation is neglected),
  the first domain passing has the product-rule law P(ℓ = i) = π_i·∏_{k<i}(1 − π_k) for i < L,
  and P(ℓ = L) = ∏_{k<L}(1 − π_k), which includes "no domain passes" (ℓ = L, the paper's
  initialisation).
* **Given ℓ**: the dropped domains k < ℓ hold E[c_k | failed] records, domain ℓ holds
  E[c_ℓ | passed], later ones their mean; M runs at ε_M = (1 − s)·2^{ℓ−1}ε̌ on D_ℓ:
  count — error −dropped + Laplace(1/ε_M); sum (:class:`~prdp_core.mechanisms.prdp.answers.AdaptiveClippedSum`)
  — τ = 2^j with the exponential mechanism's probabilities on the expected counts above each
  candidate, error Σ_{D_ℓ} min(v, τ) − total + Laplace(τ/ε_sum). The relative error
  |error|/total is then a mixture over (ℓ, j) of folded shifted Laplace laws
  (:class:`~.error_law.ErrorLaw`), whose CDF, quantiles and mean are closed forms.
* **Failure** is P(relative error ≥ ``level``) (50% by default: the answer misses at least half
  of the total — a collapse misses nearly all of it).

Comparison mechanisms (the remedies) use the same record model: the Sec. 5.2 sum extension and
Algorithm 1 (retained sums of noisy per-domain answers: their noise is a sum of independent
Laplace variables with distinct scales, a signed mixture of Laplace laws by partial fractions;
the chosen domain's noise, conditioned on passing, is replaced by its conditional mean plus an
unconditioned Laplace — an approximation), the naive ε̌ baseline, and the local model
(Algorithm 5, PrLDP): every total there carries the sum of n Laplace variables, taken as normal
(its excess kurtosis is 3/n), with the thresholds of Algorithm 4.

The remedies (:func:`~.outlook.outlook`) evaluate the forecast for the design and for each remedy that keeps the
policy (another split of E and β between Part 1 and M, the sum extension, Algorithm 1, the
naive baseline, the tighter PrLDP thresholds, fewer domains through a smaller ε̂) and for the
policy changes that might be needed (a smaller declared bound U, i.e. a larger ε̌ = E(U); every
budget raised), and recommends one. Everything here uses public parameters, the assumed
distribution and n only: it can be shown in review mode. ``benchmarks/repro_prdp_forecast.py``
checks it against simulation (docs/reproductions/prdp-general-framework.md).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Literal

import numpy as np
from scipy import special, stats

from ...core.errors import ParameterError
from ...core.validate import positive
from ...engines import memory as memory_engine
from .answers import AdaptiveClippedSum
from .assumed import AssumedData, RecordModel, _binomial_pass, _first_passing, _normal_pass
from .budget import BudgetFunction
from .central import PAPER_SHARE, Split, check_share
from .error_law import FAILURE_LEVEL, ErrorLaw
from .local import ThresholdRule, local_thresholds
from .selection import _check_beta

Model = Literal["central", "local"]
ForecastQuery = Literal["count", "sum"]

#: Failure probability from which the forecast warns before a run.
WARN_AT = 0.1


# ---------------------------------------------------------------------------
# The forecast of one mechanism
# ---------------------------------------------------------------------------


@dataclass(frozen=True)
class Forecast:
    """A mechanism's predicted behaviour at n records of the assumed distribution.

    ``ell_probability[i−1]``: P(the selection settles on domain i) (empty for the naive
    baseline); ``no_pass``: P(no domain reaches its threshold, ℓ = L); ``failure``: P(relative
    error ≥ ``level``); ``median_re``, ``p90_re``, ``expected_re``: the relative error's median,
    90th percentile and mean; ``cause``: where most of the failure comes from (``dropped`` —
    the selection settles too late and drops records, ``clipped`` — the sum's clipping
    threshold falls far below the values, ``noise`` — the noise at the selected budget, or ``""``).
    """

    mechanism: str
    label: str
    query: str
    n: int
    level: float
    failure: float
    median_re: float
    p90_re: float
    expected_re: float
    ell_probability: np.ndarray
    no_pass: float
    cause: str
    law: ErrorLaw = field(repr=False)
    options: dict[str, Any] = field(default_factory=dict)

    @property
    def likely_to_fail(self) -> bool:
        return self.failure >= WARN_AT

    def summary(self) -> dict[str, Any]:
        return {"mechanism": self.label, "P(fail)": self.failure, "median RE": self.median_re,
                "90th pct RE": self.p90_re, "expected RE": self.expected_re}


def _finish(mechanism: str, label: str, query: str, rm: RecordModel, level: float, law: ErrorLaw,
            ell_p: np.ndarray, no_pass: float, causes: dict[str, np.ndarray], options: dict[str, Any]) -> Forecast:
    fail_c = 1.0 - law.within(level)[:, 0]
    total = float(np.dot(law.weight, fail_c))
    cause = ""
    if total > 1e-9:
        by = {k: float(np.dot(law.weight * fail_c, m)) for k, m in causes.items()}
        cause = max(by, key=lambda k: by[k])
    return Forecast(mechanism, label, query, rm.n, level, float(1.0 - law.cdf(level)[0]), law.quantile(0.5),
                    law.quantile(0.9), law.mean(), ell_p, no_pass, cause, law, options)


def _selection(rm: RecordModel, part1: np.ndarray, thresholds: np.ndarray
               ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, float]:
    """Part 1 of Algorithm 2 (Algorithm 1 on counts): per-domain pass probabilities, conditional
    counts given passed / failed, P(ℓ = i) and P(no pass)."""
    p = rm.shares()
    b = 1.0 / part1
    # exact sums over the binomial's pmf; beyond a standard deviation of 1,000 records, its normal law
    pi, e_pass, e_fail = _normal_pass(rm.n * p, rm.n * p * (1 - p), thresholds, b)
    for i in np.flatnonzero(rm.n * p * (1 - p) <= 1e6):
        pi[i], e_pass[i], e_fail[i] = _binomial_pass(rm.n, float(p[i]), float(thresholds[i]), float(b[i]))
    ell_p, no_pass = _first_passing(pi)
    return pi, e_pass, e_fail, ell_p, no_pass


def _scaling(rm: RecordModel, e_pass: np.ndarray, e_fail: np.ndarray, ell: int) -> np.ndarray:
    """Per-domain factors on the expected statistics given ℓ: failed before ℓ, passed at ℓ < L."""
    mean = rm.n * rm.shares()
    with np.errstate(divide="ignore", invalid="ignore"):
        g = np.ones(rm.L)
        g[: ell - 1] = np.where(mean[: ell - 1] > 0, e_fail[: ell - 1] / np.where(mean[: ell - 1] > 0,
                                                                                   mean[: ell - 1], 1), 1.0)
        if ell < rm.L and mean[ell - 1] > 0:
            g[ell - 1] = e_pass[ell - 1] / mean[ell - 1]
    return g


def _m_components(rm: RecordModel, query: ForecastQuery, mech: AdaptiveClippedSum, g: np.ndarray, ell: int, eps_m: float
                  ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, dict[str, np.ndarray]]:
    """M on D_ℓ (domains ≥ ℓ, statistics scaled by g) at ε_M: (probabilities, shifts, truth, scales, causes)."""
    w_pt = rm.mass * g[rm.domain - 1] * rm.n           # records each point stands for, given ℓ
    kept = rm.domain >= ell
    if query == "count":
        truth = float(w_pt.sum())
        dropped = float(w_pt[~kept].sum())
        one = np.ones(1)
        return one, np.array([-dropped]), np.array([truth]), np.array([1.0 / eps_m]), \
            {"dropped": one * (dropped >= 0.5 * truth), "clipped": one * 0.0, "noise": one * (dropped < 0.5 * truth)}
    b = AdaptiveClippedSum.bins(rm.budget.U)
    key = memory_engine.value_bins(rm.values, b)
    cnt = np.bincount(key[kept], weights=w_pt[kept], minlength=b.size)
    sm = np.bincount(key[kept], weights=(w_pt * rm.values)[kept], minlength=b.size)
    taus, above, clipped = AdaptiveClippedSum.candidates(cnt, sm, b.j0, b.J)
    e_sel = mech.split * eps_m
    lg = mech.logits(above, np.array([e_sel]))[0]
    prob = np.exp(lg - lg.max())
    prob /= prob.sum()
    truth = float(np.dot(w_pt, rm.values))
    kept_sum = float(sm.sum())
    dropped = truth - kept_sum
    drop_m = np.full(taus.size, float(dropped >= 0.5 * truth))
    clip_m = (1 - drop_m) * ((kept_sum - clipped) >= 0.5 * truth)
    return prob, clipped - truth, np.full(taus.size, truth), taus / (eps_m - e_sel), \
        {"dropped": drop_m, "clipped": clip_m, "noise": (1 - drop_m) * (1 - clip_m)}


def _framework(rm: RecordModel, query: ForecastQuery, beta: float, level: float, eps_share: float,
               beta_share: float, mech: AdaptiveClippedSum) -> Forecast:
    sp = Split(rm.budget.domains(), beta, eps_share, beta_share)
    _, e_pass, e_fail, ell_p, no_pass = _selection(rm, sp.part1, sp.thresholds())
    parts: list[tuple[np.ndarray, ...]] = []
    causes: dict[str, list[np.ndarray]] = {"dropped": [], "clipped": [], "noise": []}
    for ell in np.flatnonzero(ell_p > 1e-12) + 1:
        g = _scaling(rm, e_pass, e_fail, int(ell))
        eps_m = float(sp.eps_m(np.array([ell]))[0])
        pr, sh, tr, sc, cs = _m_components(rm, query, mech, g, int(ell), eps_m)
        parts.append((ell_p[ell - 1] * pr, sh, tr, sc))
        for k in causes:
            causes[k].append(cs[k])
    law = ErrorLaw.laplace(*(np.concatenate([p[i] for p in parts]) for i in range(4)))
    paper = eps_share == PAPER_SHARE and beta_share == PAPER_SHARE
    label = "PrDP framework (Alg. 2)" if paper else \
        f"PrDP framework (Alg. 2), Part 1 spends {eps_share:.3g} of E and {beta_share:.3g} of β"
    return _finish("framework", label, query, rm, level, law, ell_p, no_pass,
                   {k: np.concatenate(v) for k, v in causes.items()},
                   {"eps_share": eps_share, "beta_share": beta_share})


def _naive(rm: RecordModel, query: ForecastQuery, level: float, mech: AdaptiveClippedSum) -> Forecast:
    pr, sh, tr, sc, cs = _m_components(rm, query, mech, np.ones(rm.L), 1, rm.budget.eps_min)
    law = ErrorLaw.laplace(pr, sh, tr, sc)
    return _finish("naive", "naive ε̌ (M at ε̌ for everyone)", query, rm, level, law, np.zeros(0), 0.0, cs, {})


def _retained(rm: RecordModel, query: ForecastQuery, beta: float, level: float) -> Forecast:
    """Algorithm 1 (count) or its Sec. 5.2 extension (sum): retained sums of noisy per-domain answers."""
    dp = rm.budget.domains()
    lo = dp.lo
    if query == "count":
        x = np.ones(rm.values.size)
        scales = 1.0 / lo
        thresholds = dp.thresholds(beta)
        name, label = "count", "PrDP count (Alg. 1)"
    else:
        v_bar = rm.budget.upper_values(lo)
        v_bar[0] = rm.budget.U
        v_bar = np.clip(v_bar, 0.0, rm.budget.U)
        x = np.minimum(rm.values, v_bar[rm.domain - 1])
        scales = v_bar / lo
        with np.errstate(invalid="ignore"):
            thresholds = np.where(scales > 0, scales * math.log(dp.L / beta), np.inf)
        name, label = "extension", "PrDP sum extension (Sec. 5.2)"
    mean, var = rm.per_domain(x)
    truth_pt = rm.values if query == "sum" else np.ones(rm.values.size)
    t_mean, _ = rm.per_domain(truth_pt)
    pi, e_pass, e_fail = _normal_pass(mean, var, thresholds, scales)
    ell_p, no_pass = _first_passing(pi)
    with np.errstate(divide="ignore", invalid="ignore"):
        fail_f = np.where(mean > 0, e_fail / np.where(mean > 0, mean, 1), 1.0)
    ws, shs, trs, scs = [], [], [], []
    drop_c: list[float] = []
    for ell in np.flatnonzero(ell_p > 1e-12) + 1:
        t_dom = t_mean.copy()
        t_dom[: ell - 1] *= fail_f[: ell - 1]          # dropped domains: their totals given they failed
        truth = float(t_dom.sum())
        base = float(mean[ell - 1:].sum()) - truth      # −dropped (and any clipping), before the noise
        later = np.zeros(dp.L)
        later[: dp.L - ell] = scales[ell:]              # the later domains' noise stays unconditioned
        # the chosen domain's noise, conditioned on its test: passed (≥ t), or — ℓ = L — nothing passed (< t)
        cases = [(ell_p[ell - 1] - (no_pass if ell == dp.L else 0.0), True)]
        if ell == dp.L:
            cases.append((no_pass, False))
        t = float(thresholds[ell - 1] - mean[ell - 1])
        for w, passed in cases:
            if w <= 0:
                continue
            x = _truncated_laplace_quantiles(t, float(scales[ell - 1]), passed)
            ws.append(np.full(x.size, w / x.size))
            shs.append(base + x)
            trs.append(np.full(x.size, truth))
            scs.append(np.repeat(later[None, :], x.size, axis=0))
            drop_c += [float(truth - float(t_dom[ell - 1:].sum()) >= 0.5 * truth)] * x.size
    law = ErrorLaw.laplace(np.concatenate(ws), np.concatenate(shs), np.concatenate(trs), np.concatenate(scs))
    dc = np.array(drop_c)
    return _finish(name, label, query, rm, level, law, ell_p, no_pass, {"dropped": dc, "noise": 1 - dc}, {})


#: Quantile points of the chosen domain's conditioned noise in the retained-sum forecasts.
_TRUNCATED_POINTS = 48


def _truncated_laplace_quantiles(t: float, b: float, above: bool) -> np.ndarray:
    """Mid-quantiles of Laplace(b) conditioned on ≥ t (``above``) or < t; exact, memoryless tails
    (b = 0 or t infinite: no noise)."""
    u = (np.arange(_TRUNCATED_POINTS) + 0.5) / _TRUNCATED_POINTS
    if not (b > 0) or not math.isfinite(t):
        return np.zeros(1)
    if above and t >= 0:
        return t - b * np.log1p(-u)
    if not above and t <= 0:
        return t + b * np.log(u)
    f_t = 0.5 * math.exp(t / b) if t < 0 else 1.0 - 0.5 * math.exp(-t / b)
    p = f_t + u * (1.0 - f_t) if above else u * f_t
    return np.where(p < 0.5, b * np.log(2 * p), -b * np.log(2 * (1 - p)))


def _local(rm: RecordModel, query: ForecastQuery, beta: float, level: float, threshold: ThresholdRule,
           naive: bool = False) -> Forecast:
    """Algorithm 5 (PrLDP framework) or the local naive baseline: every total carries n Laplace
    variables, taken as normal."""
    dp = rm.budget.domains()
    n = rm.n
    pts_truth = rm.values if query == "sum" else np.ones(rm.values.size)
    if naive:
        U = rm.budget.U
        tau = U if query == "sum" else 1.0
        truth = float(rm.n * np.dot(rm.mass, pts_truth))
        clipped = float(rm.n * np.dot(rm.mass, np.minimum(pts_truth, tau)))
        law = ErrorLaw.normal([1.0], [clipped - truth], [truth], [math.sqrt(2 * n) * tau / dp.eps_min])
        return _finish("local naive", "naive ε̌ (local)", query, rm, level, law, np.zeros(0), 0.0,
                       {"noise": np.ones(1)}, {})
    part1 = dp.lo / 2.0
    th = local_thresholds(n, part1, beta / 2.0, threshold)
    p = rm.shares()
    m, vc = n * p, n * p * (1 - p)
    vs = 2.0 * n / part1 ** 2
    tot = np.sqrt(vc + vs)
    a = (th - m) / tot
    pi = special.ndtr(-a)
    with np.errstate(divide="ignore", invalid="ignore"):
        e_pass = m + vc / tot * np.where(pi > 0, stats.norm.pdf(a) / np.maximum(pi, 1e-300), 0.0)
        e_fail = m - vc / tot * np.where(pi < 1, stats.norm.pdf(a) / np.maximum(1 - pi, 1e-300), 0.0)
    ell_p, no_pass = _first_passing(pi)
    ws, shs, trs, sds, drop_c = [], [], [], [], []
    for ell in np.flatnonzero(ell_p > 1e-12) + 1:
        g = _scaling(rm, e_pass, e_fail, int(ell))
        w_pt = rm.mass * g[rm.domain - 1] * n
        eps_tau = float(dp.lo[ell - 1])
        tau = 1.0
        if query == "sum":
            up = float(rm.budget.upper_values(np.array([eps_tau * (1 - 1e-12)]))[0])
            tau = rm.budget.U if not math.isfinite(up) or up <= 0 else min(up, rm.budget.U)
        kept = rm.domain >= ell
        truth = float(np.dot(w_pt, pts_truth))
        kept_sum = float(np.dot(w_pt[kept], np.minimum(pts_truth[kept], tau)))
        ws.append(ell_p[ell - 1])
        shs.append(kept_sum - truth)
        trs.append(truth)
        sds.append(math.sqrt(2 * n) * 2.0 * tau / eps_tau)
        drop_c.append(float(truth - float(np.dot(w_pt[kept], pts_truth[kept])) >= 0.5 * truth))
    law = ErrorLaw.normal(ws, shs, trs, sds)
    dc = np.array(drop_c)
    return _finish("local framework", "PrLDP framework (Alg. 5)" + ("" if threshold == "paper" else
                                                                     ", tighter thresholds"),
                   query, rm, level, law, ell_p, no_pass, {"dropped": dc, "noise": 1 - dc}, {"threshold": threshold})


def forecast(budget: BudgetFunction, assumed: AssumedData, n: Any, query: ForecastQuery = "sum", *,
             beta: float = 0.1, model: Model = "central", method: str = "framework",
             threshold: ThresholdRule = "paper", level: float = FAILURE_LEVEL, eps_share: float = PAPER_SHARE,
             beta_share: float = PAPER_SHARE, mechanism: AdaptiveClippedSum | None = None) -> Forecast:
    """Predict a PrDP mechanism's error before running it, without reading any record.

    Parameters
    ----------
    budget: the budget function E (public; one measure or constant).
    assumed: the assumed distribution of the measure (public; :class:`AssumedData`).
    n: the number of records — public, or a noisy count released beforehand.
    query: ``count`` or ``sum`` (of the budget's measure).
    beta: the failure rate β of the design.
    model: ``central`` (PrDP) or ``local`` (PrLDP).
    method: central — ``framework`` (Algorithm 2), ``count`` (Algorithm 1, count queries),
        ``extension`` (Sec. 5.2, sums), ``naive`` (M at ε̌); local — ``framework`` (Algorithm 5)
        or ``naive``.
    threshold: the PrLDP thresholds (``paper`` or ``bernstein``).
    level: a relative error from this level on counts as a failure (default 50%).
    eps_share, beta_share: Algorithm 2's split between Part 1 and M (the paper's ½ each).
    mechanism: the sum's M (default :class:`AdaptiveClippedSum` with its defaults).

    Returns a :class:`Forecast` (see the module docstring for the model and its approximations).
    """
    b = _check_beta(beta)
    lv = positive("The failure level", level)
    if query not in ("count", "sum"):
        raise ParameterError(f"The forecast covers count and sum queries (not '{query}').",
                             hint="The maximum and distinct count have no closed-form forecast.")
    rm = RecordModel.of(budget, assumed, n)
    mech = mechanism if mechanism is not None else AdaptiveClippedSum()
    if model == "local":
        if method not in ("framework", "naive"):
            raise ParameterError(f"Unknown local method '{method}'.", hint="Use framework or naive.")
        return _local(rm, query, b, lv, threshold, naive=method == "naive")
    if model != "central":
        raise ParameterError(f"Unknown model '{model}'.", hint="Use central or local.")
    if method == "framework":
        return _framework(rm, query, b, lv, check_share("Part 1's share of the budget", eps_share),
                          check_share("Part 1's share of β", beta_share), mech)
    if method == "naive":
        return _naive(rm, query, lv, mech)
    if method in ("count", "extension"):
        if (method == "count") != (query == "count"):
            raise ParameterError("Algorithm 1 answers counts and the Sec. 5.2 extension sums.")
        return _retained(rm, query, b, lv)
    raise ParameterError(f"Unknown method '{method}'.", hint="Use framework, count, extension or naive.")
