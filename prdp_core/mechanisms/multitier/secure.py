"""Secure (publishable) multi-tier release: the central residual chain and the local re-sampling chains, exactly.

Used by :func:`~prdp_core.mechanisms.multitier.central.release_central` and
:func:`~prdp_core.mechanisms.multitier.local.release_local` with ``secure=True`` (see
:mod:`prdp_core.core.secure` for the samplers, the grid and the system random source).

**Central model.** The query is quantised record by record and summed exactly
(:func:`central_units`): the integer grid g = 1 for the geometric families (⌊q + ½⌋ of an
integer sum), the grid g of the sensitivity Δ otherwise, with Δ_u = ⌈Δ/g⌉. Then, in grid units:

* ``geometric`` and ``laplace`` — tier 1 = q + discrete Laplace of scale s_1 = Δ_u/ε_1 (OpenDP;
  TSG(e^{−1/s_1})); each lower tier adds the Eq.-(1) residual between the scales OpenDP used: 0
  with probability w0, else a fresh discrete Laplace of scale s_i. w0 is irrational: it is drawn
  as the nearest multiple of 2^−53 (:meth:`~prdp_core.core.secure.SecureSampler.bernoulli_dyadic`),
  which multiplies the residual's pmf pointwise by a factor within [m, M] of the exact one,
  hence tier i's pmf too: tier i alone is certified at ε_i (OpenDP's map at scale s_i) plus
  Σ ln(M/m) over its steps (:func:`mixture_slack`, about 10^−15). The laplace family is the
  discrete Laplace on its grid (the same residual law, in grid units);
* ``multiscale_geometric`` — Σ ξ·Z_ξ with every Z_ξ a discrete Laplace of scale 1/ε (OpenDP, Δ = 1
  each) and an independent Eq.-(1) residual per ξ (same slack);
* ``gaussian`` — tier 1 = q + discrete Gaussian of σ_1 = Δ_u/√(2ρ_1) (OpenDP; exactly ρ_1-zCDP),
  each lower tier adds a discrete Gaussian of variance σ_i² − σ_{i−1}². A sum of discrete
  Gaussians is not a discrete Gaussian (the paper's Remark 4.1: no exact residual exists), so the
  loss certified for tier i alone is ρ_1 (post-processing of tier 1); its design ρ_i is not
  certified.

Every coalition of tiers is a post-processing of tier 1, so the whole release costs exactly the
top budget, certified by OpenDP's map. The ``independent`` and ``gradual`` baselines draw each
release (or budget piece) at its budget with the same samplers.

**Local model.** The exact simulation of :mod:`.simulation` runs unchanged on a
:class:`SecureGenerator`: uniform draws and fair coins are exact (system random bytes, rejection),
every other coin is an exact Bernoulli of its probability rounded to the nearest multiple of 2^−53.
A coin's probability p is then off by at most 2^−50 (rounding plus float error in computing p),
so each user's report law is within a factor ((1 + r)/(1 − r))^c of the exact mechanism's, r =
2^−50/p_min over the coins flipped and c the coins on one user's path (:func:`coin_slack`; c = m
for GRR, 2dm for BRR, 1 + T² + Td for the Subset chain of T served templates, 1 + d per
independent report). Each tier is certified at its level plus that slack (about 10^−12).
"""

from __future__ import annotations

import math
import os
from dataclasses import dataclass
from typing import Any, Sequence

import numpy as np

from ...core import limits
from ...core.errors import ParameterError
from ...core.secure import BERNOULLI_BITS, SecureSampler, exact_cell_sums, grid_for, to_units, units_ceil
from .noise_families import NoiseFamily, geometric_residual_weights
from .tiers import gradual_pieces, lattice_round

_ONE = 2 ** BERNOULLI_BITS


@dataclass(frozen=True)
class SecureTiers:
    """Secure answers of every tier: ``estimates`` (tiers × queries, value units, on the grid ``grid``),
    the loss OpenDP certifies for each tier alone (``certified``, in the family's unit) and for all
    tiers together (``total``), and what the certification covers (``note``)."""

    estimates: np.ndarray
    grid: float
    certified: np.ndarray
    total: float
    note: str


def central_units(family: NoiseFamily, contributions: Sequence[np.ndarray], bits: int
                  ) -> tuple[np.ndarray, float, int]:
    """(exact query totals in grid units, grid g, Δ_u) of the records' ``contributions`` (one array per
    query): g = 1 and ⌊Σ + ½⌋ of integer contributions for the geometric families, otherwise each
    contribution rounded to the grid of Δ and summed in exact integer arithmetic."""
    d = float(family.sensitivity)
    g = 1.0 if family.lattice else grid_for(d, bits)
    vs = [np.asarray(c, dtype=float).ravel() for c in contributions]
    v = np.concatenate(vs) if vs else np.zeros(0)
    if v.size and float(np.max(np.abs(v))) > d:
        raise ParameterError("A record contributes more than the query's sensitivity Δ.",
                             hint="Clip the values to the declared bound before a secure release.")
    if family.lattice and v.size and not np.all(v == np.rint(v)):
        raise ParameterError("The geometric families need whole-number contributions.",
                             hint="Use integer=True in central_query, or the Laplace family.")
    cells = np.repeat(np.arange(len(vs)), [x.size for x in vs])
    units = exact_cell_sums(cells, to_units(v, g), len(vs))  # one exact integer total per query
    if family.lattice:
        units = lattice_round(units).astype(np.int64)
    return units, g, int(units_ceil(d, g))


def mixture_slack(w0: float, w1: float) -> float:
    """ln(M/m) for a two-point mixture whose weights (w0, w1) are drawn as the nearest multiples of 2^−53:
    each weight is off by at most 2^−54 + 2^−50·w (rounding to the grid, and float error in computing w)."""
    if w0 <= 0.0 or w1 <= 0.0:
        return 0.0
    e0 = 2.0 ** -54 + 2.0 ** -50 * w0
    e1 = 2.0 ** -54 + 2.0 ** -50 * w1
    if e0 >= w0 or e1 >= w1:
        return math.inf
    hi = max(1 + e0 / w0, 1 + e1 / w1)
    lo = min(1 - e0 / w0, 1 - e1 / w1)
    return math.log(hi) - math.log(lo)


def _dyadic(p: float | np.ndarray) -> np.ndarray:
    """The nearest multiple of 2^−53 to each probability, as its numerator k (p·2^53 is exact)."""
    return np.rint(np.asarray(p, dtype=float) * _ONE).astype(np.int64)


class _Central:
    """The central samplers of one family in grid units (Δ_u, the sampler, the number of queries); budgets
    ``b`` in the family's unit (ε, or ρ for the Gaussian)."""

    def __init__(self, family: NoiseFamily, du: int, smp: SecureSampler, size: int) -> None:
        self.family, self.du, self.smp, self.size = family, du, smp, size
        multi = family.name == "multiscale_geometric"
        self.weights = list(range(1, int(family.sensitivity) + 1)) if multi else [1]
        self.sens = 1 if multi else du

    def _dl(self, eps: float) -> tuple[np.ndarray, float, float]:
        na = self.smp.laplace_answers(np.zeros(self.size, dtype=np.int64), 1.0, float(self.sens), eps)
        return na.units, float(na.scale[0]), float(na.loss[0])

    def _dg(self, rho: float) -> tuple[np.ndarray, float, float]:
        na = self.smp.gaussian_answers(np.zeros(self.size, dtype=np.int64), 1.0, float(self.du), rho)
        return na.units, float(na.scale[0]), float(na.loss[0])

    def draw(self, b: float) -> tuple[np.ndarray, list[float], float]:
        """Noise at budget ``b``: (noise units, the scale of each component, certified loss)."""
        if self.family.name == "gaussian":
            z, s, loss = self._dg(b)
            return z, [s], loss
        z = np.zeros(self.size, dtype=np.int64)
        scales, loss = [], 0.0
        for xi in self.weights:  # Σ ξ·Z_ξ for the multi-scale family, one discrete Laplace otherwise
            zz, s, ls = self._dl(b)
            z += xi * zz
            scales.append(s)
            loss = max(loss, ls)
        return z, scales, loss

    def residual(self, prev: list[float], b: float) -> tuple[np.ndarray, list[float], float, float]:
        """Residual noise from the scales ``prev`` to budget ``b``: (units, new scales, slack of the step,
        loss certified for a draw at ``b``)."""
        if self.family.name == "gaussian":
            s_to = float(self.du) / math.sqrt(2.0 * b)
            var = s_to * s_to - prev[0] * prev[0]
            if var <= 0:
                return np.zeros(self.size, dtype=np.int64), prev, 0.0, math.inf
            z, s, _ = self._dg(self.du * self.du / (2.0 * var))
            return z, [math.sqrt(prev[0] ** 2 + s * s)], 0.0, math.inf
        out = np.zeros(self.size, dtype=np.int64)
        new: list[float] = []
        slack = loss = 0.0
        for j, xi in enumerate(self.weights):  # an Eq.-(1) residual per component
            z, s, ls = self._dl(b)
            w0, w1 = geometric_residual_weights(1.0 / prev[j], 1.0 / s)
            keep0 = self.smp.bernoulli_dyadic(np.full(self.size, _dyadic(w0)))
            out += xi * np.where(keep0, 0, z)
            new.append(s)
            slack, loss = max(slack, mixture_slack(w0, w1)), max(loss, ls)
        return out, new, slack, loss


def secure_central(family: NoiseFamily, contributions: Sequence[np.ndarray], eps: Sequence[float], *,
                   strategy: str, smp: SecureSampler) -> SecureTiers:
    """Every tier's secure answer (Algorithm 1, or the ``independent``/``gradual`` baseline) from the records'
    contributions to each query; tier budgets ``eps`` (ε) in decreasing order."""
    units, g, du = central_units(family, contributions, smp.bits)
    c = _Central(family, du, smp, units.size)
    budgets = [family.budget(e) for e in eps]
    m = len(budgets)
    out = np.empty((m, units.size))
    cert = np.empty(m)
    if strategy == "multitier":
        z, scales, top = c.draw(budgets[0])
        r = units + z
        out[0], cert[0] = r, top
        slack = 0.0
        for i in range(1, m):
            if budgets[i] != budgets[i - 1]:
                res, scales, step, loss = c.residual(scales, budgets[i])
                r = r + res
                slack += step
                cert[i] = min(top, loss + slack)
            else:
                cert[i] = cert[i - 1]
            out[i] = r
        total = top
        lower = ("at most ρ_1 (a sum of discrete Gaussians is not a discrete Gaussian)" if family.name == "gaussian"
                 else f"ε_i + at most {slack:.3g} (mixture weights on the 2^−53 grid)")
        note = f"tier 1 exactly (OpenDP's map), every coalition a post-processing of it; a lower tier alone: {lower}"
    elif strategy == "independent":
        for i, b in enumerate(budgets):
            z, _, cert[i] = c.draw(b)
            out[i] = units + z
        total = float(cert.sum())
        note = "each tier's release exactly (OpenDP's map); colluding tiers add up"
    else:
        out, cert, total = _gradual(c, units, family, budgets)
        note = "each budget piece exactly (OpenDP's map); a tier pays the pieces it averages"
    if out.size and np.max(np.abs(out)) >= 2.0 ** 53:
        raise ParameterError("A noisy answer is too large for the secure grid.", hint="Use fewer grid bits.")
    return SecureTiers(out * g, g, cert, float(total), note)


def _gradual(c: _Central, units: np.ndarray, family: NoiseFamily, budgets: Sequence[float]
             ) -> tuple[np.ndarray, np.ndarray, float]:
    """Gradual baseline: a secure release per budget piece, tier j the inverse-variance average of pieces l ≥ j."""
    pieces = gradual_pieces(budgets)
    m = len(budgets)
    piece_out = np.zeros((m, units.size))
    piece_loss = np.zeros(m)
    var = np.full(m, np.inf)
    for l, b in enumerate(pieces):
        if b > 1e-15:
            z, _, piece_loss[l] = c.draw(float(b))
            piece_out[l] = units + z
            var[l] = family.variance_at_budget(float(b))
    w = np.where(np.isfinite(var), 1.0 / var, 0.0)
    out = np.empty((m, units.size))
    cert = np.empty(m)
    for j in range(m):
        ww = w[j:]
        out[j] = (ww[:, None] * piece_out[j:]).sum(axis=0) / ww.sum()
        cert[j] = float(piece_loss[j:].sum())
    return out, cert, float(piece_loss.sum())


# ---------------------------------------------------------------------------
# Local model: the exact simulation driven by exact coins
# ---------------------------------------------------------------------------


def uniform_categories(size: int, d: int) -> np.ndarray:
    """``size`` independent uniform draws on {0, …, d−1}: 32-bit system random words, rejection above the
    largest multiple of d (exact)."""
    lim = (2 ** 32 // d) * d
    out = np.empty(0, dtype=np.int64)
    while out.size < size:
        w = np.frombuffer(os.urandom(4 * (size - out.size)), dtype=np.uint32).astype(np.int64)
        out = np.concatenate((out, w[w < lim] % d))
    return out


class SecureGenerator:
    """The few numpy ``Generator`` methods the local simulation (:mod:`.simulation`) calls, with exact draws
    from the system random source: ``bytes`` (``os.urandom``), ``integers`` (uniform by rejection),
    ``binomial`` (a sum of exact Bernoulli coins of probability p rounded to the nearest multiple of
    2^−53) and ``multinomial`` (exact uniform categories when the probabilities are equal, otherwise
    conditional binomials). Every user's report then follows the simulated mechanism with each coin's
    probability off by at most 2^−50 (rounding, and float error in computing p): :attr:`p_min` is the
    smallest min(p, 1 − p) of any coin flipped, for :func:`coin_slack`."""

    def __init__(self, smp: SecureSampler) -> None:
        self.smp = smp
        self.p_min = 0.5
        self.coins = 0

    def bytes(self, length: int) -> bytes:
        return os.urandom(int(length))

    def integers(self, low: int, high: int, size: int, dtype: Any = np.int64) -> np.ndarray:
        return (int(low) + uniform_categories(int(size), int(high) - int(low))).astype(dtype)

    def binomial(self, n: Any, p: Any) -> Any:
        nn, pp = np.broadcast_arrays(np.asarray(n, dtype=np.int64), np.asarray(p, dtype=float))
        flat_n, flat_p = nn.ravel(), pp.ravel()
        if flat_n.size and (flat_n.min() < 0 or flat_p.min() < 0 or flat_p.max() > 1):
            raise ParameterError("A binomial needs counts ≥ 0 and probabilities in [0, 1].")
        live = (flat_n > 0) & (flat_p > 0) & (flat_p < 1)
        out = np.where(flat_p >= 1, flat_n, 0).astype(np.int64)
        if live.any():
            q = flat_p[live]
            self.p_min = min(self.p_min, float(np.min(np.minimum(q, 1 - q))))
            k = _dyadic(q)
            cnt = flat_n[live]
            total = int(cnt.sum())
            self.coins += total
            limits.check_limit("Coins of one secure local release", self.coins, limits.MAX_SECURE_COINS,
                               "Use fewer users or categories, or run it as a seeded teaching run.")
            hits = self.smp.bernoulli_dyadic(np.repeat(k, cnt))
            starts = np.concatenate(([0], np.cumsum(cnt)[:-1]))
            out[np.flatnonzero(live)] = np.add.reduceat(hits.astype(np.int64), starts)
        res = out.reshape(nn.shape)
        return int(res) if res.ndim == 0 else res

    def multinomial(self, n: Any, pvals: Any) -> np.ndarray:
        pv = np.asarray(pvals, dtype=float)
        nn = np.asarray(n, dtype=np.int64)
        flat = nn.ravel()
        out = np.zeros((flat.size, pv.size), dtype=np.int64)
        if pv.size and np.all(pv == pv[0]):  # uniform: exact categories, no rounded coin
            for i, c in enumerate(flat):
                out[i] = np.bincount(uniform_categories(int(c), pv.size), minlength=pv.size)
        else:
            left = flat.copy()
            rest = 1.0
            for j in range(pv.size - 1):
                cond = min(max(pv[j] / rest, 0.0), 1.0) if rest > 0 else 0.0
                out[:, j] = self.binomial(left, cond)
                left = left - out[:, j]
                rest -= pv[j]
            out[:, -1] = left
        return out.reshape(nn.shape + (pv.size,)) if nn.ndim else out[0]


def coin_slack(p_min: float, coins_per_user: int) -> float:
    """Extra loss of a local report whose ≤ ``coins_per_user`` rounded coins have probabilities off by at most
    2^−50 each: each path's probability is within (1 ± r)^c of the exact one, r = 2^−50/p_min, so
    every likelihood ratio within ((1 + r)/(1 − r))^c."""
    r = 2.0 ** -50 / p_min
    return math.inf if r >= 1 else coins_per_user * (math.log1p(r) - math.log1p(-r))


__all__ = ["SecureGenerator", "SecureTiers", "central_units", "coin_slack", "mixture_slack", "secure_central",
           "uniform_categories"]
