"""An empirical neighbouring-dataset check in the style of StatDP (Ding et al., CCS 2018).

Given a mechanism run on two neighbouring datasets D and D′ and its promise — pure ε, or a
curve δ(ε) for approximate / concentrated guarantees — :func:`search` looks for an output
event S that violates P[M(D) ∈ S] ≤ e^ε·P[M(D′) ∈ S] + δ(ε) in either direction:

1. *Search*: draw ``n_search`` outputs from each dataset; candidate events are one-sided and
   two-sided intervals of each scalar projection of the output (cut at pooled quantiles; the
   NaN outcome is an event of its own); each (event, direction, ε) is scored by the z-statistic
   of p̂₁ − e^ε·p̂₂ − δ(ε).
2. *Test*: on ``n_test`` fresh draws, the best candidate is tested exactly: the mechanism is
   flagged when the Clopper–Pearson lower bound of p₁ exceeds e^ε times the upper bound of p₂
   plus δ(ε) (each bound at level α/2, so a correct mechanism is flagged with probability ≤ α).

Fresh draws for the test make the search's many comparisons harmless. Samplers are functions
``(n, rng) -> array`` of shape (n,) or (n, k) (k projections of the output).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Callable, Sequence

import numpy as np
from scipy import stats

Sampler = Callable[[int, np.random.Generator], np.ndarray]


@dataclass(frozen=True)
class Finding:
    """The most suspicious event and the test's verdict."""

    column: int
    kind: str            # "le", "ge", "bin" or "nan"
    lo: float
    hi: float
    reverse: bool        # True: the event was tested as P[M(D′)∈S] vs P[M(D)∈S]
    eps: float
    delta: float
    p1: float            # on the test draws
    p2: float
    lower_p1: float
    upper_p2: float
    violated: bool

    def __str__(self) -> str:
        side = "D′ vs D" if self.reverse else "D vs D′"
        return (f"column {self.column}, {self.kind} [{self.lo:.4g}, {self.hi:.4g}] ({side}), ε = {self.eps:.4g}, "
                f"δ = {self.delta:.3g}: p1 = {self.p1:.5f}, p2 = {self.p2:.5f}, "
                f"LCB(p1) = {self.lower_p1:.5f} vs e^ε·UCB(p2) + δ = "
                f"{math.exp(self.eps) * self.upper_p2 + self.delta:.5f} → "
                f"{'VIOLATION' if self.violated else 'consistent'}")


def gaussian_delta(mu: float) -> Callable[[float], float]:
    """Exact (ε, δ(ε)) curve of the Gaussian mechanism with Δ/σ = µ (Balle and Wang 2018);
    a ρ-zCDP Gaussian release has µ = √(2ρ)."""
    def delta(eps: float) -> float:
        if mu <= 0:
            return 0.0
        return float(stats.norm.cdf(-eps / mu + mu / 2) - math.exp(eps) * stats.norm.cdf(-eps / mu - mu / 2))
    return delta


def _as2d(x: np.ndarray) -> np.ndarray:
    a = np.asarray(x, dtype=float)
    return a[:, None] if a.ndim == 1 else a


def _draw(sampler: Sampler, n: int, rng: np.random.Generator) -> np.ndarray:
    return _as2d(sampler(n, rng))


def _events(x1: np.ndarray, x2: np.ndarray, n_cuts: int) -> list[tuple[str, float, float]]:
    pooled = np.concatenate((x1, x2))
    out: list[tuple[str, float, float]] = []
    if np.isnan(pooled).any():
        out.append(("nan", math.nan, math.nan))
    fin = pooled[np.isfinite(pooled)]
    if fin.size == 0:
        return out
    cuts = np.unique(np.quantile(fin, np.linspace(0.002, 0.998, n_cuts)))
    for c in cuts:
        out.append(("le", -math.inf, float(c)))
        out.append(("ge", float(c), math.inf))
    for a, b in zip(cuts[:-1], cuts[1:]):
        out.append(("bin", float(a), float(b)))
    return out


def _indicator(x: np.ndarray, ev: tuple[str, float, float]) -> np.ndarray:
    kind, lo, hi = ev
    if kind == "nan":
        return np.isnan(x)
    if kind == "le":
        return x <= hi
    if kind == "ge":
        return x >= lo
    return (x > lo) & (x <= hi)


def _cp_lower(k: int, n: int, a: float) -> float:
    return 0.0 if k == 0 else float(stats.beta.ppf(a, k, n - k + 1))


def _cp_upper(k: int, n: int, a: float) -> float:
    return 1.0 if k == n else float(stats.beta.ppf(1 - a, k + 1, n - k))


def _zero(e: float) -> float:
    return 0.0


def search(sample_d: Sampler, sample_dp: Sampler, *, eps: float | Sequence[float] | None = None,
           delta: Callable[[float], float] | None = None, eps_grid: tuple[float, ...] | None = None,
           n_search: int = 20_000, n_test: int = 100_000, alpha: float = 1e-6, n_cuts: int = 40,
           seed: int = 0) -> Finding:
    """Search for an event violating the promise; see the module docstring.

    ``eps``: a pure ε promise (δ = 0), or one per output column (each projection with its own
    promise). ``delta`` + ``eps_grid``: an (ε, δ(ε)) promise checked at each ε of the grid
    (e.g. :func:`gaussian_delta`), for every column.
    """
    if delta is None and eps is None:
        raise ValueError("Give a pure ε or a δ(ε) curve with an ε grid.")
    rng = np.random.default_rng(seed)
    a1, a2 = _draw(sample_d, n_search, rng), _draw(sample_dp, n_search, rng)

    def promise(col: int) -> tuple[tuple[float, ...], Callable[[float], float]]:
        if delta is not None:
            return tuple(float(e) for e in (eps_grid or (eps,))), delta  # type: ignore[arg-type]
        e = eps[col] if isinstance(eps, (list, tuple, np.ndarray)) else eps
        return (float(e),), _zero  # type: ignore[arg-type]

    best: tuple[float, int, tuple[str, float, float], bool, float] | None = None
    for col in range(a1.shape[1]):
        grid, dfn = promise(col)
        x1, x2 = a1[:, col], a2[:, col]
        for ev in _events(x1, x2, n_cuts):
            p = float(np.mean(_indicator(x1, ev)))
            q = float(np.mean(_indicator(x2, ev)))
            for reverse, (u, v) in ((False, (p, q)), (True, (q, p))):
                for e in grid:
                    d = dfn(e)
                    se = math.sqrt((u * (1 - u) + math.exp(2 * e) * v * (1 - v)) / n_search) + 1e-12
                    z = (u - math.exp(e) * v - d) / se
                    if best is None or z > best[0]:
                        best = (z, col, ev, reverse, e)
    assert best is not None, "no candidate event"
    _, col, ev, reverse, e = best
    dfn = promise(col)[1]
    b1, b2 = _draw(sample_d, n_test, rng)[:, col], _draw(sample_dp, n_test, rng)[:, col]
    k1, k2 = int(_indicator(b1, ev).sum()), int(_indicator(b2, ev).sum())
    if reverse:
        k1, k2 = k2, k1
    d = dfn(e)
    lo1, up2 = _cp_lower(k1, n_test, alpha / 2), _cp_upper(k2, n_test, alpha / 2)
    return Finding(col, ev[0], ev[1], ev[2], reverse, e, d, k1 / n_test, k2 / n_test, lo1, up2,
                   lo1 > math.exp(e) * up2 + d)


def in_batches(draw_once: Callable[[np.random.Generator], np.ndarray], per_call: int) -> Sampler:
    """A sampler from a function that returns ``per_call`` independent outputs per call
    (e.g. one release whose many cells are independent copies of the same experiment)."""
    def sample(n: int, rng: np.random.Generator) -> np.ndarray:
        parts, got = [], 0
        while got < n:
            x = _as2d(draw_once(rng))
            parts.append(x)
            got += x.shape[0]
        return np.concatenate(parts)[:n]
    assert per_call > 0
    return sample
