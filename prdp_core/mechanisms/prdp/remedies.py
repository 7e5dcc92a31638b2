"""Remedies for a forecast failure of the PrDP framework, and the recommendation (public inputs only).

:func:`outlook` evaluates the forecast for the design and for each remedy that keeps the
policy (another split of E and β between Part 1 and M, the sum extension, Algorithm 1, the
naive baseline, the tighter PrLDP thresholds, fewer domains through a smaller ε̂) and for the
policy changes that might be needed (a smaller declared bound U, i.e. a larger ε̌ = E(U); every
budget raised), and recommends one. It uses public parameters, the assumed distribution and n
only: it can be shown in review mode.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from ...core.errors import PolicyError
from .assumed import AssumedData
from .budget import BudgetFunction
from .forecast import FAILURE_LEVEL, WARN_AT, Forecast, ForecastQuery, Model, forecast
from .local import ThresholdRule

#: Splits of (E, β) between Part 1 and M tried as a remedy (Part 1's shares).
SPLITS: tuple[tuple[float, float], ...] = tuple((s, b) for s in (1 / 3, 0.25, 1 / 6, 0.1) for b in (0.5, 0.1, 0.9))
#: Caps ε̂/2^k tried for fewer domains.
CAP_HALVINGS = (1, 2, 4, 8, 16)
#: Factors tried when every budget is raised (a weaker policy: only when nothing else works).
BUDGET_FACTORS = (2.0, 4.0, 8.0, 16.0, 32.0, 64.0, 128.0, 256.0, 512.0, 1024.0)


# ---------------------------------------------------------------------------
# Remedies and the recommendation
# ---------------------------------------------------------------------------

CAUSES = {
    "dropped": "domain selection is likely to settle on a late domain (or find none above its threshold) and drop "
               "most of the records",
    "clipped": "the budget of M at the level selected is so small that the sum's private clipping threshold falls to "
               "the smallest candidates: the clipped sum misses most of the total",
    "noise": "the noise at the budget level selected is larger than half the answer",
}


@dataclass(frozen=True)
class Remedy:
    """A change to the design and its forecast.

    ``keeps_policy``: True when every record keeps at least the protection E promises (another
    mechanism or split, a smaller ε̂); False for a change of the policy itself (a smaller declared
    bound U refuses records above it; raised budgets protect everyone less). ``change``: the
    parameters to apply (``method``, ``eps_share``/``beta_share``, ``threshold``, ``eps_max``,
    ``U``, ``budget_factor``).
    """

    label: str
    forecast: Forecast
    keeps_policy: bool
    change: dict[str, Any]
    note: str = ""

    @property
    def works(self) -> bool:
        return self.forecast.failure < WARN_AT


@dataclass(frozen=True)
class Outlook:
    """The design's forecast, the remedies evaluated and the recommendation (None: keep the design
    when it is not likely to fail, or nothing evaluated works)."""

    forecast: Forecast
    remedies: tuple[Remedy, ...]
    recommended: Remedy | None
    assumed: AssumedData
    beta: float

    @property
    def likely_to_fail(self) -> bool:
        return self.forecast.likely_to_fail

    def warning(self) -> str | None:
        """A plain warning when failure is likely (None otherwise)."""
        f = self.forecast
        if not f.likely_to_fail:
            return None
        msg = (f"{f.label} is likely to fail at n = {f.n:,}: the relative error reaches {f.level:.0%} or more with "
               f"probability {f.failure:.0%} (median {_pct(f.median_re)})")
        if f.cause:
            msg += f" — {CAUSES[f.cause]}"
        msg += "."
        if self.recommended is not None:
            r = self.recommended
            msg += (f" Recommended: {r.label} (predicted failure {r.forecast.failure:.0%}, median error "
                    f"{_pct(r.forecast.median_re)}).")
            better = [x for x in self.remedies if x.works and not x.keeps_policy
                      and x.forecast.median_re < 0.5 * r.forecast.median_re]
            if r.keeps_policy and r.forecast.median_re >= 0.1 and better:
                msg += (f" With a change of the policy, {better[0].label}: median error "
                        f"{_pct(better[0].forecast.median_re)} ({better[0].note}).")
        else:
            msg += " None of the remedies evaluated works at this n: more records (or a weaker policy) are needed."
        return msg

    def table(self) -> pd.DataFrame:
        """One row for the design and one per remedy: failure probability, median, 90th percentile and
        mean relative error, whether the policy's promises are kept."""
        rows = [{"option": "as designed: " + self.forecast.label, **_cols(self.forecast), "keeps the policy": True,
                 "works": not self.forecast.likely_to_fail}]
        rows += [{"option": r.label, **_cols(r.forecast), "keeps the policy": r.keeps_policy, "works": r.works}
                 for r in self.remedies]
        return pd.DataFrame(rows)


def _cols(f: Forecast) -> dict[str, float]:
    return {"P(RE ≥ %g%%)" % (100 * f.level): f.failure, "median RE": f.median_re, "90th pct RE": f.p90_re,
            "mean RE": f.expected_re}


def _pct(x: float) -> str:
    return "∞" if not math.isfinite(x) else f"{100 * x:.3g}%"


def _rank(f: Forecast) -> tuple[float, float]:
    """Order of preference: the smaller median error, then the smaller failure probability."""
    return (f.median_re, f.failure)


def outlook(budget: BudgetFunction, assumed: AssumedData, n: Any, query: ForecastQuery = "sum", *,
            beta: float = 0.1, model: Model = "central", threshold: ThresholdRule = "paper",
            level: float = FAILURE_LEVEL, always: bool = False) -> Outlook:
    """The framework's forecast and, when failure is likely (or ``always``), the remedies with their
    forecasts and a recommendation.

    Remedies that keep the policy (every record still gets at most E(r)): another split of E and
    β between Part 1 and M (central, the best of :data:`SPLITS`), Algorithm 1 (count) or the
    Sec. 5.2 extension (sum), the naive ε̌ baseline, the tighter PrLDP thresholds (local), fewer
    domains through a smaller ε̂ (records asking more get ε̂: more protection). Changes of the
    policy, recommended only when nothing else works: a smaller declared bound U — ε̌ = E(U)
    rises, and records above U would be refused — and every budget raised ×c (less protection
    for everyone; the smallest factor of :data:`BUDGET_FACTORS` that works).
    """
    base = forecast(budget, assumed, n, query, beta=beta, model=model, threshold=threshold, level=level)
    if not (always or base.likely_to_fail):
        return Outlook(base, (), None, assumed, float(beta))
    kw: dict[str, Any] = {"beta": beta, "model": model, "threshold": threshold, "level": level}
    out: list[Remedy] = []
    if model == "central":
        splits = [forecast(budget, assumed, n, query, beta=beta, level=level, eps_share=s, beta_share=b)
                  for s, b in SPLITS]
        best = min(splits, key=_rank)
        s, b = best.options["eps_share"], best.options["beta_share"]
        out.append(Remedy(f"give M more of the budget: Part 1 spends {s:.3g} of E and {b:.3g} of β", best, True,
                          {"eps_share": s, "beta_share": b},
                          f"every record still pays at most E(r): {s:.3g}·2^(i−1)·ε̌ + {1 - s:.3g}·ε_τ"))
        alt = "count" if query == "count" else "extension"
        f_alt = forecast(budget, assumed, n, query, beta=beta, method=alt, level=level)
        out.append(Remedy(f_alt.label, f_alt, True, {"method": alt}))
        f_nv = forecast(budget, assumed, n, query, method="naive", level=level)
        out.append(Remedy(f_nv.label, f_nv, True, {"method": "naive"}))
    else:
        if threshold == "paper":
            f_b = forecast(budget, assumed, n, query, **{**kw, "threshold": "bernstein"})
            out.append(Remedy("tighter thresholds of Algorithm 4 (√(8n·ln(2L/β)))", f_b, True,
                              {"threshold": "bernstein"}))
        f_nv = forecast(budget, assumed, n, query, beta=beta, model="local", method="naive", level=level)
        out.append(Remedy(f_nv.label, f_nv, True, {"method": "naive"}))
    fewer = _fewer_domains(budget, assumed, n, query, kw)
    if fewer is not None:
        out.append(fewer)
    smaller_u = _smaller_bound(budget, assumed, n, query, kw)
    if smaller_u is not None:
        out.append(smaller_u)
    raised = _raised_budgets(budget, assumed, n, query, kw)
    if raised is not None:
        out.append(raised)
    rec = None
    if base.likely_to_fail:
        keep = [r for r in out if r.works and r.keeps_policy]
        change = [r for r in out if r.works and not r.keeps_policy]
        if keep:
            rec = min(keep, key=lambda r: _rank(r.forecast))
        elif change:
            rec = change[0]  # the smaller bound first (no record loses protection), then raised budgets
    return Outlook(base, tuple(out), rec, assumed, float(beta))


def _fewer_domains(budget: BudgetFunction, assumed: AssumedData, n: Any, query: ForecastQuery,
                   kw: dict[str, Any]) -> Remedy | None:
    """The best smaller cap ε̂/2^k (fewer domains, lower thresholds); None when L = 1."""
    best: tuple[Forecast, float] | None = None
    for k in CAP_HALVINGS:
        if budget.domains().L <= 1 or budget.eps_max / 2 ** k < budget.eps_min:
            break
        b2 = budget.with_bounds(eps_min=budget.eps_min, eps_max=budget.eps_max / 2 ** k)
        f = forecast(b2, assumed, n, query, **kw)
        if best is None or _rank(f) < _rank(best[0]):
            best = (f, b2.eps_max)
    if best is None:
        return None
    return Remedy(f"fewer domains: cap the budgets at ε̂ = {best[1]:.4g}", best[0], True, {"eps_max": best[1]},
                  "records asking for more than ε̂ get ε̂: more protection, never less")


def _smaller_bound(budget: BudgetFunction, assumed: AssumedData, n: Any, query: ForecastQuery,
                   kw: dict[str, Any]) -> Remedy | None:
    """Declare a smaller bound U' (the assumed distribution's 1 − 10⁻⁹ quantile, rounded up to a power of
    ten): ε̌ = E(U') rises. None when E does not depend on the measure or U' ≥ U."""
    if budget.value_column is None or not budget.decreasing():
        return None
    top = float(assumed.quantile(np.array([1 - 1e-9]))[0])
    if not (top > 0):
        return None
    u2 = 10.0 ** math.ceil(math.log10(top))
    if u2 >= budget.U:
        return None
    try:
        b2 = budget.with_bounds(eps_max=budget.eps_max, U=u2)
    except PolicyError:
        return None
    f = forecast(b2, assumed, n, query, **kw)
    return Remedy(f"declare a smaller bound U = {u2:.4g} (ε̌ = E(U) = {b2.eps_min:.4g})", f, False, {"U": u2},
                  "a public fact about the measure: records above U would be refused")


def _raised_budgets(budget: BudgetFunction, assumed: AssumedData, n: Any, query: ForecastQuery,
                    kw: dict[str, Any]) -> Remedy | None:
    """The smallest factor c of :data:`BUDGET_FACTORS` for which c·E works (None if none does)."""
    for c in BUDGET_FACTORS:
        f = forecast(budget.scaled(c), assumed, n, query, **kw)
        if f.failure < WARN_AT:
            return Remedy(f"raise every budget ×{c:g} (E' = {c:g}·E)", f, False, {"budget_factor": c},
                          "weaker protection for every record")
    return None
