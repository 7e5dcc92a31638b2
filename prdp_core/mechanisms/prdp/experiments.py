"""Experiments of the PrDP framework: errors over repeated runs (Table 3) and the scaling study (Figs. 3–5).

:func:`simulate` repeats a mechanism with vectorised trials and reports relative errors (trimmed
mean as in Sec. 8.1); :func:`scaling_study` varies n, U or the skew of Normal balances with the
paper's budgets. Synthetic data only: nothing here is a release.
"""

from __future__ import annotations

import math
from typing import Any, Literal

import numpy as np
import pandas as pd

from ...core.errors import ParameterError
from ...core.validate import whole_number
from .answers import RankMax
from .budget import BudgetFunction, preset
from .central import framework_trials, naive_trials
from .extension import extension_stats, extension_trials
from .queries import FrameworkQuery, as_query, prepare
from .selection import _check_beta, _check_rng, select_domain

# ---------------------------------------------------------------------------
# Simulation: errors of every mechanism over repeated runs (Table 3, Figs. 3–5)
# ---------------------------------------------------------------------------

Method = Literal["count", "extension", "framework", "naive"]


def trimmed_mean(x: np.ndarray, drop: float = 0.2) -> float:
    """Mean after dropping the top and bottom ``drop`` share (the paper's protocol, Sec. 8.1)."""
    a = np.sort(np.asarray(x, dtype=float))
    k = int(math.floor(drop * a.size))
    core = a[k: a.size - k] if a.size - 2 * k > 0 else a
    return float(np.mean(core))


def simulate(table: Any, budget: BudgetFunction, query: "str | FrameworkQuery", method: Method, *, beta: float,
             trials: int, rng: np.random.Generator, absolute: bool = False) -> np.ndarray:
    """Relative errors of ``trials`` runs: |estimate − truth| / |truth|; for max, the rank error / n
    (records above the answer) and the relative overshoot above Max(D) (:meth:`RankMax.relative_error`).

    ``method``: ``count`` (Algorithm 1, count queries only), ``extension`` (Sec. 5.2, sum only),
    ``framework`` (Algorithm 2) or ``naive`` (M at ε̌). Vectorised over trials. ``absolute``:
    return |estimate − truth| instead (the max keeps its rank-based error).
    """
    rng = _check_rng(rng)
    b = _check_beta(beta)
    q = as_query(query)
    if method == "extension":
        if q.kind != "sum":
            raise ParameterError("The Sec. 5.2 extension answers sums only.")
        st = extension_stats(table, budget, q.column)
        est, _ = extension_trials(st, budget.domains(), beta=b, rng=rng, trials=trials)
        if absolute or st.truth == 0:
            return np.abs(est - st.truth)
        return np.abs(est - st.truth) / abs(st.truth)
    p = prepare(table, budget, q)
    if method == "count":
        if p.query.kind != "count":
            raise ParameterError("Algorithm 1 answers counts only.")
        dp = p.domains
        sel = select_domain(p.counts, 1.0 / dp.lo, dp.thresholds(b), rng=rng, trials=trials)
        est = sel.retained_sum()
    elif method == "framework":
        est = framework_trials(p, beta=b, rng=rng, trials=trials)[0]
    elif method == "naive":
        est = naive_trials(p, beta=b, rng=rng, trials=trials)[0]
    else:
        raise ParameterError(f"Unknown method '{method}'.", hint="Use count, extension, framework or naive.")
    if p.query.kind == "max":
        return RankMax.relative_error(p.stats, est)
    truth = p.truth()
    if absolute or truth == 0:
        return np.abs(est - truth)
    return np.abs(est - truth) / abs(truth)


# ---------------------------------------------------------------------------
# Scaling study: sum error vs n, U and skew (Figs. 3–5)
# ---------------------------------------------------------------------------

#: The budget functions of Sec. 8.1 (preset name, parameters).
PAPER_BUDGETS: dict[str, tuple[str, dict[str, float]]] = {
    "inverse": ("inverse", {"alpha": 1e4}), "log": ("log", {"alpha": 500.0, "k": 4.0}),
    "sqrt": ("sqrt", {"alpha": 8.0}),
}
SCALING_DEFAULTS: dict[str, list[float]] = {
    "n": [1e4, 3e4, 1e5, 3e5, 1e6], "U": [1e4, 1e6, 1e8, 1e10, 1e12, 1e14, 1e16],
    "sigma": [1e2, 1e3, 1e4, 3e4, 1e5],
}


def normal_balances(n: int, mu: float, sigma: float, *, rng: np.random.Generator) -> np.ndarray:
    """n integer balances from Normal(μ, σ²) with negative draws redrawn (Sec. 8.1's synthetic data)."""
    out = np.empty(0)
    while out.size < n:
        d = np.rint(rng.normal(mu, sigma, int((n - out.size) * 1.3) + 16))
        out = np.concatenate((out, d[d >= 0]))
    return out[:n]


def scaling_study(vary: Literal["n", "U", "sigma"], values: Any = None, *,
                  budgets: tuple[str, ...] = ("inverse", "log", "sqrt"),
                  methods: tuple[Method, ...] = ("extension", "framework", "naive"), n: int = 200_000,
                  U: float = 1e12, mu: float = 5e4, sigma: float = 5e4, trials: int = 20, beta: float = 0.1,
                  seed: int = 0) -> pd.DataFrame:
    """Error of private sums as n, U or σ varies (the paper's Figs. 3, 4, 5), by simulation.

    For each value of the varied parameter a Normal(μ, σ) data set is drawn (values capped at U:
    records live in [U]); each budget function of Sec. 8.1 is built with that U (ε̌ = E(U),
    ε̂ = 100) and each method runs ``trials`` times (vectorised). Returns one row per (value,
    budget, method) with the trimmed-mean absolute and relative errors (top/bottom 20% dropped).
    """
    if vary not in SCALING_DEFAULTS:
        raise ParameterError(f"Cannot vary '{vary}'.", hint="Vary n, U or sigma.")
    trials = whole_number("Runs per point", trials, 1, 100_000)
    vals = list(SCALING_DEFAULTS[vary] if values is None else values)
    if not vals:
        raise ParameterError("Give at least one value to vary.")
    if vary == "n" and max(vals) > 2e7:
        raise ParameterError("Simulated data sets are limited to 20,000,000 records.")
    rows = []
    for k, x in enumerate(vals):
        nn, uu, ss = n, U, sigma
        if vary == "n":
            nn = int(x)
        elif vary == "U":
            uu = float(x)
        else:
            ss = float(x)
        data = pd.DataFrame({"v": np.minimum(normal_balances(nn, mu, ss, rng=np.random.default_rng([seed, k])), uu)})
        truth = float(data["v"].sum())
        for j, name in enumerate(budgets):
            kind, params = PAPER_BUDGETS[name]
            bud = preset(kind, "v", U=uu, eps_max=100.0, **params)
            for m, method in enumerate(methods):
                err = simulate(data, bud, "sum", method, beta=beta, trials=trials, absolute=True,
                               rng=np.random.default_rng([seed, k, j, m, 1]))
                rows.append({"vary": vary, "value": float(x), "budget": name, "method": method,
                             "abs_error": trimmed_mean(err),
                             "rel_error": trimmed_mean(err) / truth if truth else math.nan,
                             "n": nn, "U": uu, "sigma": ss})
    return pd.DataFrame(rows)
