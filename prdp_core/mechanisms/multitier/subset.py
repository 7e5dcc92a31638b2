"""The Subset mechanism of local multi-tier release: its variance, its operators, exact enumeration.

Subset(x, k, ε) outputs a k-subset S with Pr[S | x] ∝ e^ε if x ∈ S, 1 otherwise, optimal for
frequency estimation when k = k* ≈ d/(e^ε + 1). Two operators turn one Subset output into
another *without looking at x* (post-processing, hence collusion resistance):

* **Expansion** (Lemma 5.1): add a uniform element of [d]∖S; Subset(x, k, ln ρ) becomes
  Subset(x, k+1, ln((kρ+1)/(k+1))).
* **Rescale** (Lemma 5.2): keep S with probability β, else output a uniform k-subset of
  [d]; the level becomes ln([dβρ + (1−β)(kρ+d−k)] / [dβ + (1−β)(kρ+d−k)]).
  To reach a level ρ′ < ρ, β = (ρ′−1)(kρ+d−k) / ((ρ−1)(kρ′+d−k)) (= (t′−f′)/(t−f)).
  **The paper prints (ρ′−1)(kρ+d−k)/(d(ρ−ρ′)), which is the odds β/(1−β), not β**: it
  exceeds 1 where it is used and misses the target level otherwise
  (:func:`paper_rescale_parameter` keeps it for the regression test).

Error: the debiased estimate x̂_j = (1[j∈S] − f)/(t − f) with t = Pr[x∈S], f = Pr[j∈S],
j ≠ x, has per-user total variance V(ε, k); n users give a count-vector MSE of n·V. Baselines:
GRR (k = 1) and BRR (symmetric unary encoding). For small d, the exact distributions of
templates and coalitions are enumerated (the privacy loss *computed*, not assumed).
"""

from __future__ import annotations

import math
from itertools import combinations
from typing import TYPE_CHECKING, Sequence

import numpy as np

from ...core.errors import ParameterError, ResourceLimitError

if TYPE_CHECKING:
    from .templates import Template

#: Largest domain the local engine accepts.
MAX_DOMAIN = 4096
#: Largest domain for which exact enumeration of all subsets is offered.
MAX_EXACT_DOMAIN = 12


# ---------------------------------------------------------------------------
# Subset mechanism: signal, variance, optimal size (§5.2, App. D)
# ---------------------------------------------------------------------------


def _rho(eps: float | np.ndarray) -> np.ndarray:
    with np.errstate(over="ignore"):
        return np.exp(np.asarray(eps, dtype=float))


def subset_signal(rho: float | np.ndarray, k: int | np.ndarray, d: int) -> tuple[np.ndarray, np.ndarray]:
    """(t, f): Pr[x ∈ S] and Pr[j ∈ S] for j ≠ x under Subset(x, k, ln ρ); ρ may be +inf."""
    rho = np.asarray(rho, dtype=float)
    k = np.asarray(k, dtype=float)
    with np.errstate(invalid="ignore", divide="ignore", over="ignore"):
        t = np.where(np.isinf(rho), 1.0, k * rho / (k * rho + d - k))
        f = np.where(np.isinf(rho), (k - 1) / (d - 1),
                     (k * rho * (k - 1) + (d - k) * k) / ((k * rho + d - k) * (d - 1)))
    return t, f


def subset_gap(rho: float | np.ndarray, k: int | np.ndarray, d: int) -> np.ndarray:
    """t − f = k(d−k)(ρ−1) / ((kρ+d−k)(d−1)) (1 − (k−1)/(d−1) at ρ = ∞): the signal the estimator divides by."""
    rho = np.asarray(rho, dtype=float)
    k = np.asarray(k, dtype=float)
    with np.errstate(invalid="ignore", over="ignore"):
        finite = k * (d - k) * (rho - 1) / ((k * rho + d - k) * (d - 1))
        return np.where(np.isinf(rho), (d - k) / (d - 1), finite)


def subset_variance(eps: float | np.ndarray, k: int | np.ndarray, d: int) -> np.ndarray:
    """V(ε, k): per-user E‖x̂ − x‖² of the debiased Subset estimate (the paper's closed form, §5.2).

    V = (d−1)(k − d + (d−k)² + 2e^ε(d−k)k + e^{2ε}(k−1)k) / ((e^ε−1)²(d−k)k); written in e^{−ε}
    so large ε does not overflow. n users give a count-vector MSE of n·V.
    """
    eps = np.asarray(eps, dtype=float)
    k = np.asarray(k, dtype=float)
    if np.any(k < 1) or np.any(k > d - 1):
        raise ParameterError(f"The subset size k must be between 1 and d − 1 = {d - 1}.")
    u = np.exp(-eps)  # 1/ρ
    num = (k - d + (d - k) ** 2) * u * u + 2 * (d - k) * k * u + (k - 1) * k
    den = (1 - u) ** 2 * (d - k) * k
    with np.errstate(divide="ignore", invalid="ignore"):
        return (d - 1) * num / den


def subset_variance_tf(eps: float | np.ndarray, k: int | np.ndarray, d: int) -> np.ndarray:
    """V(ε, k) from its definition [t(1−t) + (d−1) f(1−f)] / (t−f)² (for tests)."""
    t, f = subset_signal(_rho(eps), k, d)
    return (t * (1 - t) + (d - 1) * f * (1 - f)) / (t - f) ** 2


def optimal_k(eps: float | np.ndarray, d: int) -> np.ndarray:
    """k* = argmin_{1 ≤ k ≤ ⌊d/2⌋} V(ε, k) (it is ⌊d/(e^ε+1)⌋ or ⌈d/(e^ε+1)⌉, at least 1)."""
    eps = np.atleast_1d(np.asarray(eps, dtype=float))
    with np.errstate(over="ignore"):
        c = d / (np.exp(eps) + 1)
    cand = np.stack([np.clip(np.floor(c), 1, max(d // 2, 1)), np.clip(np.ceil(c), 1, max(d // 2, 1))])
    v = subset_variance(eps[None, :], cand, d)
    return cand[np.argmin(v, axis=0), np.arange(eps.size)].astype(int)


def grr_variance(eps: float | np.ndarray, d: int) -> np.ndarray:
    """Generalised randomized response: V(ε, 1) = (d−1)(d−2+2e^ε)/(e^ε−1)²."""
    return subset_variance(eps, 1, d)


def brr_variance(eps: float | np.ndarray, d: int) -> np.ndarray:
    """Binary randomized response (symmetric unary encoding, flip prob. 1/(1+e^{ε/2})): d·e^{ε/2}/(e^{ε/2}−1)²."""
    # e^{ε/2}/(e^{ε/2}−1)² = 1/(4 sinh²(ε/4)), stable for small and large ε
    return d / (4 * np.sinh(np.asarray(eps, dtype=float) / 4) ** 2)


# ---------------------------------------------------------------------------
# Operators (Lemmas 5.1, 5.2) and the corrected Rescale parameter
# ---------------------------------------------------------------------------


def expansion_level(rho: float, k: int) -> float:
    """Lemma 5.1: Expansion turns Subset(x, k, ln ρ) into Subset(x, k+1, ln((kρ+1)/(k+1)))."""
    return math.inf if math.isinf(rho) else (k * rho + 1) / (k + 1)


def rescale_level(beta: float, rho: float, k: int, d: int) -> float:
    """Lemma 5.2: the ratio e^{ε′} of Rescale(Subset(x, k, ln ρ), β)."""
    if math.isinf(rho):
        return (d * beta + (1 - beta) * k) / ((1 - beta) * k) if beta < 1 else math.inf
    a = (1 - beta) * (k * rho + d - k)
    return (d * beta * rho + a) / (d * beta + a)


def rescale_keep_probability(rho_from: float, rho_to: float, k: int, d: int) -> float:
    """Corrected Rescale parameter β taking Subset(x, k, ln ρ) to level ρ′ (0 ≤ β ≤ 1).

    β = (ρ′−1)(kρ+d−k) / ((ρ−1)(kρ′+d−k)) = (t′−f′)/(t−f): rescaling shrinks the signal
    gap linearly. At ρ = ∞ (starting from the true value, k = 1) β = (ρ′−1)/(ρ′+d−1).
    """
    if not rho_to >= 1:
        raise ParameterError("A Rescale target must have e^ε ≥ 1.")
    if rho_to >= rho_from:
        return 1.0
    return float(subset_gap(rho_to, k, d) / subset_gap(rho_from, k, d))


def paper_rescale_parameter(rho_from: float, rho_to: float, k: int, d: int) -> float:
    """The Rescale parameter *as printed* in §5.2 / Algorithms 2, 3 and 5 — WRONG, kept for tests.

    (ρ′−1)(kρ+d−k) / (d(ρ−ρ′)) is the odds β/(1−β) of the correct β: e.g. 15.0 for k = 1,
    ρ = 9 → 8, d = 7. Not used by any mechanism.
    """
    return (rho_to - 1) * (k * rho_from + d - k) / (d * (rho_from - rho_to))


# ---------------------------------------------------------------------------
# Exact enumeration (small d): distributions, operators, privacy loss
# ---------------------------------------------------------------------------


def subsets_of_size(d: int, k: int) -> np.ndarray:
    """All k-subsets of [d] as a boolean matrix (C(d, k) × d), in lexicographic order."""
    if d > MAX_EXACT_DOMAIN + 4:
        raise ResourceLimitError(f"Exact enumeration is limited to d ≤ {MAX_EXACT_DOMAIN + 4}.")
    rows = list(combinations(range(d), k))
    m = np.zeros((len(rows), d), dtype=bool)
    for i, r in enumerate(rows):
        m[i, list(r)] = True
    return m


def subset_pmf_exact(k: int, rho: float, d: int) -> np.ndarray:
    """Exact output distribution of Subset(x, k, ln ρ): matrix (d inputs × C(d, k) outputs)."""
    sets = subsets_of_size(d, k)
    if math.isinf(rho):
        w = sets.T.astype(float)  # only sets containing x
    else:
        w = np.where(sets.T, rho, 1.0)
    return w / w.sum(axis=1, keepdims=True)


def rescale_matrix(k: int, beta: float, d: int) -> np.ndarray:
    """Markov matrix of Rescale(·, β) on k-subsets: β·I + (1−β)·uniform."""
    n = math.comb(d, k)
    return beta * np.eye(n) + (1 - beta) / n


def expansion_matrix(k: int, d: int) -> np.ndarray:
    """Markov matrix of Expansion from k-subsets to (k+1)-subsets (a uniform new element)."""
    a, b = subsets_of_size(d, k), subsets_of_size(d, k + 1)
    contains = (a.astype(int) @ b.T.astype(int)) == k  # a ⊂ b
    return contains / (d - k)


def max_log_ratio(P: np.ndarray) -> float:
    """max over input pairs and outputs of |log P[x, y] / P[x′, y]| (rows are input distributions)."""
    with np.errstate(divide="ignore"):
        lp = np.log(P)
    if np.any(np.isinf(lp) & ~np.isinf(lp).all(axis=0, keepdims=True)):
        return math.inf
    col = np.where(np.isinf(lp).all(axis=0), 0.0, lp.max(axis=0) - np.where(np.isinf(lp), 0, lp).min(axis=0))
    return float(col.max())


def chain_marginals_exact(templates: Sequence[Template], d: int) -> list[np.ndarray]:
    """Exact output distribution (d × C(d, k_t)) of every template, by composing operator matrices."""
    cur = subset_pmf_exact(1, math.inf, d)
    k = 1
    out = []
    for t in templates:
        if t.op == "expansion":
            cur = cur @ expansion_matrix(k, d)
            k += 1
        else:
            cur = cur @ rescale_matrix(k, t.beta, d)
        out.append(cur)
    return out


def joint_exact(templates: Sequence[Template], members: Sequence[int], d: int) -> np.ndarray:
    """Exact joint distribution of a coalition's reports, for every input: array (d, |Y_1|, …, |Y_j|).

    ``members`` are template indices in chain order. The chain between members is composed
    from the operator matrices; the first member's marginal comes from {x}.
    """
    members = sorted(members)
    mats: list[np.ndarray] = []
    k = 1
    cur = subset_pmf_exact(1, math.inf, d)
    step = np.eye(math.comb(d, 1))
    for t in templates[:members[-1] + 1]:
        if t.op == "expansion":
            m = expansion_matrix(k, d)
            k += 1
        else:
            m = rescale_matrix(k, t.beta, d)
        step = step @ m
        if t.index in members:
            mats.append(step)
            step = np.eye(math.comb(d, k))
    joint = cur @ mats[0]  # (d, |Y1|)
    for m in mats[1:]:
        joint = joint[..., None] * m.reshape((1,) * (joint.ndim - 1) + m.shape)
    return joint
