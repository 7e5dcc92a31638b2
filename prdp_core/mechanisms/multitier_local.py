"""Multi-tier release in the local model: the template-based multi-tier Subset mechanism.

Wang et al., "Multi-tier Differential Private Query Release" (arXiv:2606.15543), §5.
Every user holds a category x ∈ [d] = {0, …, d−1} and reports, for each tier i, a set
r_i ⊆ [d]. Each r_i must satisfy ε_i-LDP, and any coalition of tiers must learn no more
than its highest budget. The base mechanism is the Subset mechanism (§5.2):

    Subset(x, k, ε): a k-subset S with Pr[S | x] ∝ e^ε if x ∈ S, 1 otherwise,

which is optimal for frequency estimation when k = k* ≈ d/(e^ε + 1). Two operators turn
one Subset output into another *without looking at x* (post-processing, hence collusion
resistance):

* **Expansion** (Lemma 5.1): add a uniform element of [d]∖S; Subset(x, k, ln ρ) becomes
  Subset(x, k+1, ln((kρ+1)/(k+1))).
* **Rescale** (Lemma 5.2): keep S with probability β, else output a uniform k-subset of
  [d]; the level becomes ln([dβρ + (1−β)(kρ+d−k)] / [dβ + (1−β)(kρ+d−k)]).
  To reach a level ρ′ < ρ, β = (ρ′−1)(kρ+d−k) / ((ρ−1)(kρ′+d−k)) (= (t′−f′)/(t−f)).
  **The paper prints (ρ′−1)(kρ+d−k)/(d(ρ−ρ′)), which is the odds β/(1−β), not β**: it
  exceeds 1 where it is used and misses the target level otherwise
  (:func:`paper_rescale_parameter` keeps it for the regression test).

A chain of *templates* at reference levels ln(d/k − 1), where size k is exactly optimal,
is generated from {x} (Algorithms 2–3, "Subset₁ᴸ"; Algorithm 5 adds free templates,
"Subset₂ᴸ"). Each tier is served by a template whose level is at most its budget; here the
template with the smallest error among those (the paper takes the highest such level,
Algorithm 4; both are safe because every template is a post-processing of the earlier
ones). A tier's real privacy is its template's level ε_t ≤ ε_i; ε_i − ε_t is left unused.

Error: the debiased estimate x̂_j = (1[j∈S] − f)/(t − f) with t = Pr[x∈S], f = Pr[j∈S],
j ≠ x, has per-user total variance V(ε, k) (closed form below); n users give a count-vector
MSE of n·V. Baselines: GRR (k = 1), BRR (symmetric unary encoding, bits flipped with
probability 1/(1+e^{ε/2}); multi-tier by per-bit re-sampling), the ideal (independent
Subset(x, k*_i, ε_i) per tier, loss Σε) and budget splitting ("gradual").

Simulation of n users is exact: the chain between two served templates collapses to
"keep and expand with probability B = Π β (the rescales in between), else a fresh uniform
set", so every user's reports are prefixes of uniformly random orderings within *epochs*
(runs without a fresh draw). Epoch counts are drawn at the aggregate level; the element
draws within epochs are vectorised over all epochs at once.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from itertools import combinations
from typing import Literal, Sequence

import numpy as np

from ..errors import ParameterError, ResourceLimitError
from ..validate import whole_number

Variant = Literal["subset2", "subset1"]
VARIANTS: dict[str, str] = {
    "subset2": "Subset₂ᴸ — improved templates (Algorithm 5)",
    "subset1": "Subset₁ᴸ — reference templates only (Algorithms 2–3)",
}

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
# Template chain (Algorithms 2, 3, 5) and serving
# ---------------------------------------------------------------------------


@dataclass(frozen=True)
class Template:
    """One template of the chain: exactly Subset(x, k, ln ρ) (Lemmas 5.1, 5.2).

    ``op`` is the operator that produced it from the previous template ("rescale" with keep
    probability ``beta``, or "expansion"); ``reference`` marks the levels ln(d/k − 1) where k
    is exactly optimal; ``step`` the step of Algorithm 2 that made it.
    """

    index: int
    k: int
    rho: float
    eps: float
    op: str
    beta: float
    step: str
    reference: bool = False


def _check_domain(d: int) -> int:
    return whole_number("The domain size d", d, 2, MAX_DOMAIN)


def template_chain(eps: Sequence[float], d: int, variant: Variant = "subset2") -> tuple[Template, ...]:
    """The deterministic template chain of the multi-tier Subset mechanism for budgets ``eps``.

    Depends on the budgets and d only (never on data), so it is public. Steps (Algorithm 2,
    corrected): (1) targets with e^ε + 1 > d by Rescale at k = 1; (2) TemplateGen — Algorithm 3
    (``subset1``: reference levels ln(d/k − 1), k = 1…⌊(d−1)/2⌋) or Algorithm 5 (``subset2``:
    also ln((d+1)/k − 1) and the targets themselves in [ln((d−1)/k − 1), ln ρ), and every
    expansion output); (3) only for even d ≥ 4, expand ⌊(d−1)/2⌋ → d/2 (the paper's pseudocode
    omits the condition); (4) targets below the current level by Rescale. Every operation
    lowers the level, so the chain is in decreasing-level order.
    """
    d = _check_domain(d)
    if variant not in VARIANTS:
        raise ParameterError(f"Unknown variant '{variant}'.", hint="Use 'subset2' or 'subset1'.")
    L = sorted({float(e) for e in eps}, reverse=True)
    K = (d - 1) // 2
    out: list[Template] = []
    k, rho = 1, math.inf

    def rescale(target_eps: float, target_rho: float, step: str, reference: bool = False) -> None:
        # the level is stored as given (a target ε, or ln of a reference ratio) so that a
        # template made for a budget compares equal to it
        nonlocal rho
        if target_rho == rho and out and target_eps < out[-1].eps:
            # two levels a rounding apart (e^ε equal in floating point): the same distribution,
            # labelled with the lower level so that the lower budget has a template (identity step)
            out.append(Template(len(out), k, rho, target_eps, "rescale", 1.0, step, reference))
            return
        if not target_rho < rho:
            return
        beta = rescale_keep_probability(rho, target_rho, k, d)
        rho = target_rho
        out.append(Template(len(out), k, rho, target_eps, "rescale", beta, step, reference))

    def expand(step: str, record: bool) -> None:
        nonlocal rho, k
        rho = expansion_level(rho, k)
        k += 1
        # Algorithm 3 does not keep expansion outputs as templates: they stay in the chain as links
        out.append(Template(len(out), k, rho, math.log(rho), "expansion", 1.0,
                            step if record else step + " (link)", False))

    # Step 1: low-privacy targets (k* = 1)
    for e in L:
        r = math.exp(e)
        if r + 1 > d:
            rescale(e, r, "1")
    # Step 2: TemplateGen
    if variant == "subset1":
        for kk in range(1, K + 1):
            if kk > k:
                expand("2", record=False)
            rescale(math.log(d / kk - 1), d / kk - 1, "2", reference=True)
    else:
        levels: dict[float, tuple[float, bool]] = {}
        for kk in range(1, K + 1):
            levels.setdefault(math.log((d + 1) / kk - 1), ((d + 1) / kk - 1, False))
        for kk in range(1, K + 1):
            levels[math.log(d / kk - 1)] = (d / kk - 1, True)
        for e in L:
            levels.setdefault(e, (math.exp(e), False))
        Lp = sorted(levels, reverse=True)
        for kk in range(1, K + 1):
            if kk > k:
                expand("2", record=True)
            lo = math.log((d - 1) / kk - 1) if (d - 1) / kk - 1 > 0 else -math.inf
            for e in Lp:
                if lo <= e < math.log(rho) and (kk != K or e >= math.log(d / K - 1)):
                    r, ref = levels[e]
                    rescale(e, r, "2", reference=ref)
    # Step 3: even d — one more expansion to d/2
    if d % 2 == 0 and d >= 4:
        expand("3", record=True)
    # Step 4: high-privacy targets at the final size
    for e in L:
        r = math.exp(e)
        if r <= rho:
            rescale(e, r, "4")
    return tuple(out)


def serve(templates: Sequence[Template], eps: Sequence[float], d: int, *, rule: str = "best") -> np.ndarray:
    """Index of the template serving each budget: level ≤ ε_i (never above), and then

    * ``best`` — the smallest variance V(ε_t, k_t) among those (default), or
    * ``closest`` — the highest such level (the paper's TemplateMatch, Algorithm 4).

    Unserved "link" templates (Algorithm 3's expansion outputs) are never chosen.
    """
    lv = np.array([t.eps for t in templates])
    ks = np.array([t.k for t in templates])
    ok_t = np.array(["link" not in t.step for t in templates])
    var = subset_variance(lv, ks, d)
    out = np.empty(len(eps), dtype=int)
    for i, e in enumerate(eps):
        cand = np.flatnonzero(ok_t & (lv <= float(e)))
        if cand.size == 0:
            raise ParameterError(f"No template at or below ε = {e:g} (this should not happen).")
        if rule == "closest":
            out[i] = cand[np.argmax(lv[cand])]
        else:
            out[i] = cand[np.argmin(var[cand])]
    return out


def composite_keep(templates: Sequence[Template], served: Sequence[int]) -> np.ndarray:
    """Keep probability B between consecutive *distinct* served templates (and from {x} to the first).

    The chain between them collapses to: with probability B = Π β over the rescales in between,
    the earlier set expanded by uniform new elements; otherwise a fresh uniform set.
    """
    betas = np.array([t.beta if t.op == "rescale" else 1.0 for t in templates])
    out = []
    prev = -1
    for s in served:
        out.append(float(np.prod(betas[prev + 1:s + 1])))
        prev = s
    return np.array(out)


def gradual_local_variance(eps: Sequence[float], d: int) -> np.ndarray:
    """Gradual baseline (§6): pieces e_l = ε_l − ε_{l+1} each with an optimal Subset; tier j averages
    pieces l ≥ j with inverse-variance weights: 1 / Σ_{l≥j} 1/V(e_l, k*(e_l))."""
    e = np.asarray(eps, dtype=float)
    pieces = np.append(e[:-1] - e[1:], e[-1])
    v = np.full(pieces.size, np.inf)
    pos = pieces > 1e-15
    if pos.any():
        v[pos] = subset_variance(pieces[pos], optimal_k(pieces[pos], d), d)
    inv = np.where(np.isfinite(v), 1.0 / v, 0.0)
    tail = np.cumsum(inv[::-1])[::-1]
    with np.errstate(divide="ignore"):
        return 1.0 / tail


def utility_bounds(eps: float | np.ndarray, d: int) -> tuple[np.ndarray, np.ndarray]:
    """Theorem 5.3 (Subset₁ᴸ) and Theorem 5.4 (Subset₂ᴸ) bounds on the MSE ratio to the ideal.

    k̄ = max{2, ⌈d/(e^ε+1)⌉} (Thm 5.4's definition; Thm 5.3 leaves it undefined). Only the
    middle regime uses the first term; ratio 1 where the mechanism is exact (ε > ln(d−1)).
    """
    eps = np.atleast_1d(np.asarray(eps, dtype=float))
    kb = np.maximum(2, np.ceil(d / (np.exp(eps) + 1))).astype(float)
    kb = np.minimum(kb, max((d - 1) // 2, 2))
    h = d // 2
    h1 = (d - 1) // 2
    with np.errstate(divide="ignore", invalid="ignore"):
        case3 = (subset_variance(math.log((d + 2) / h - 1), h, d) / subset_variance(math.log(d / h1 - 1), h1, d)
                 if d >= 4 and h1 >= 1 and (d + 2) / h - 1 > 1 else 1.0)
        t53 = subset_variance(np.log(d / kb - 1), kb, d) / subset_variance(np.log(d / (kb - 1) - 1), kb - 1, d)
        t54 = (subset_variance(np.log((d + 1) / kb - 1), kb, d)
               / subset_variance(np.log((d - 1) / (kb - 1) - 1), kb - 1, d))
    low = np.exp(eps) + 1 > d
    b53 = np.where(low, 1.0, np.maximum(np.nan_to_num(t53, nan=1.0), case3 if d % 2 == 0 else 1.0))
    b54 = np.where(low, 1.0, np.maximum(np.nan_to_num(t54, nan=1.0), case3 if d % 2 == 0 else 1.0))
    return b53, b54


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


# ---------------------------------------------------------------------------
# Exact simulation of n users: epochs, nested uniform prefixes, aggregate counts
# ---------------------------------------------------------------------------


def epoch_counts(keep: Sequence[float], x_counts: np.ndarray, *, rng: np.random.Generator
                 ) -> tuple[np.ndarray, np.ndarray]:
    """Sample how many users live each *epoch* of the served chain, exactly, at the aggregate level.

    ``keep[τ]`` is the composite keep probability into served template τ (τ = 0 from {x}).
    A user's first epoch starts at τ = 0 and contains x if it was kept at τ = 0; an epoch ends
    just before the next fresh draw (probability 1 − keep[τ] at each τ, independently).
    Returns (first[x, e]: users with value x whose x-epoch spans templates 0..e;
    fresh[s, e]: x-independent epochs spanning s..e).
    """
    B = np.asarray(keep, dtype=float)
    T = B.size
    x_counts = np.asarray(x_counts, dtype=np.int64)
    d = x_counts.size
    # P(epoch started at s ends at e) = Π_{s<τ≤e} B_τ · (1 − B_{e+1}) (the last one ends at T−1)
    end_p = np.zeros((T, T))
    for s in range(T):
        surv = 1.0
        for e in range(s, T):
            if e > s:
                surv *= B[e]
            end_p[s, e] = surv * ((1 - B[e + 1]) if e + 1 < T else 1.0)
        end_p[s] = np.clip(end_p[s], 0, None)
        end_p[s] /= end_p[s].sum()
    fresh = np.zeros((T, T), dtype=np.int64)
    kept0 = rng.binomial(x_counts, B[0])
    first = rng.multinomial(kept0, end_p[0]).reshape(d, T).astype(np.int64)
    starts = np.zeros(T + 1, dtype=np.int64)
    starts[0] = int((x_counts - kept0).sum())          # reset at τ = 0: a fresh epoch from the start
    starts[1:] += first.sum(axis=0)                    # a first epoch ending at e is followed by one at e+1
    for s in range(T):
        if starts[s]:
            fresh[s] = rng.multinomial(starts[s], end_p[s])
            starts[s + 1:T + 1] += fresh[s, s:T]
    return first, fresh


def _draw_values(size: int, d: int, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """Uniform draws on [0, d) from random bytes/words, with a validity flag (exact rejection)."""
    if d <= 256:
        v = np.frombuffer(rng.bytes(size), dtype=np.uint8)
        if d & (d - 1) == 0:
            return v & np.uint8(d - 1), np.ones(size, dtype=bool)
        lim = (256 // d) * d
        return v % np.uint8(d), v < lim
    v = rng.integers(0, d, size=size, dtype=np.int32)
    return v, np.ones(size, dtype=bool)


def nested_prefix_counts(start: np.ndarray, end: np.ndarray, exclude: np.ndarray, sizes: np.ndarray, d: int, *,
                         rng: np.random.Generator) -> np.ndarray:
    """Aggregate reports of independent *epochs*, exactly (vectorised over all epochs).

    Epoch e spans served templates start[e]..end[e]; its set at template τ is the prefix of
    length sizes[τ] of a uniformly random ordering of [d] — or, when exclude[e] ≥ 0, of
    {x} followed by a uniform ordering of [d]∖{x} with x = exclude[e]. Returns the counts
    C[τ, j] = number of epochs whose set at τ contains j, for τ = 0…T−1.

    Implementation: position by position (rank p = 0, 1, …), every epoch still growing draws
    its next element uniformly among the elements it does not hold yet (uniform draws,
    redrawn on a repeat — exact rejection), which builds a uniformly random ordering. An
    element at rank p counts for the templates τ in [max(start, τ(p)), end], τ(p) being the
    first template whose size exceeds p (sizes are non-decreasing); these intervals are
    accumulated in a difference array. Epochs are sorted by final size, so the epochs still
    growing at rank p are a prefix of the arrays.
    """
    sizes = np.asarray(sizes, dtype=np.int64)
    T = sizes.size
    first_gt = np.searchsorted(sizes, np.arange(sizes.max() + 2), side="right")
    nbins = (T + 1) * d
    D = np.zeros(nbins, dtype=np.int64)
    if start.size == 0:
        return np.zeros((T, d), dtype=np.int64)
    W = (d + 63) // 64
    one = np.uint64(1)
    zero = np.uint64(0)
    # independent epochs: process them in chunks that keep the seen-sets under ~200 MB
    chunk = max(1, int(2e8 // (8 * W)))
    if start.size > chunk:
        out = np.zeros((T, d), dtype=np.int64)
        for c0 in range(0, start.size, chunk):
            out += nested_prefix_counts(start[c0:c0 + chunk], end[c0:c0 + chunk], exclude[c0:c0 + chunk], sizes,
                                        d, rng=rng)
        return out
    st0 = np.asarray(start, dtype=np.int64)
    en0 = np.asarray(end, dtype=np.int64)
    K = sizes[en0]
    # sort by final size (descending), then by (start, end): the epochs still growing at rank p are
    # a prefix, and epochs with the same (start, end) — a "run" — share their template interval
    order = np.lexsort((en0, st0, -K))
    K, s, e, x = K[order], st0[order], en0[order], np.asarray(exclude, dtype=np.int64)[order]
    n = s.size
    seen = np.zeros((W, n), dtype=np.uint64)
    hasx = np.flatnonzero(x >= 0)
    if hasx.size:
        xi = x[hasx]
        seen[xi >> 6, hasx] = np.left_shift(one, (xi & 63).astype(np.uint64))
        D += np.bincount(s[hasx] * d + xi, minlength=nbins)  # x has rank 0: in every set of its epoch
        D -= np.bincount((e[hasx] + 1) * d + xi, minlength=nbins)
    brk = np.flatnonzero((np.diff(s) != 0) | (np.diff(e) != 0)) + 1
    run_start = np.concatenate(([0], brk))
    run_s, run_e1 = s[run_start], e[run_start] + 1
    run_id = np.repeat(np.arange(run_start.size), np.diff(np.append(run_start, n)))
    run_off = run_id * d
    R = run_start.size
    grow = np.searchsorted(-K, -np.arange(int(K.max()) + 1), side="right")  # grow[p] = #epochs with K > p
    D2 = D.reshape(T + 1, d)
    for p in range(int(K.max())):
        A = int(grow[p])
        if A == 0:
            break
        if p == 0 and hasx.size:
            rows: np.ndarray | slice = np.flatnonzero(x[:A] < 0)  # x already holds rank 0
            m = rows.size
        else:
            rows = slice(0, A)  # the epochs still growing are a prefix: contiguous arrays
            m = A
        if m == 0:
            continue
        v, ok = _draw_values(m, d, rng)
        sh = (v & 63).astype(np.uint64)
        b = np.left_shift(one, sh)
        if W == 1:
            word = seen[0, rows]
        elif W == 2:
            hi = v >= 64
            word = np.where(hi, seen[1, rows], seen[0, rows])
        else:
            word = seen[(v >> 6).astype(np.int64), np.arange(n)[rows]]
        bad = (word & b) != zero
        if d & (d - 1):  # d not a power of two: some raw draws were rejected
            bad |= ~ok
        pend = np.flatnonzero(bad)
        idx = np.arange(n)[rows] if pend.size else None
        while pend.size:  # a repeat (or a rejected raw draw): draw again, exactly uniform on the rest
            v2, ok2 = _draw_values(pend.size, d, rng)
            r2 = idx[pend]
            b2 = np.left_shift(one, (v2 & 63).astype(np.uint64))
            word2 = seen[0, r2] if W == 1 else seen[(v2 >> 6).astype(np.int64), r2]
            again = ((word2 & b2) != zero) | ~ok2
            v[pend] = v2
            b[pend] = b2
            if W == 2:
                hi[pend] = v2 >= 64
            pend = pend[again]
        if W == 1:
            seen[0, rows] |= b
        elif W == 2:
            seen[1, rows] |= np.where(hi, b, zero)
            seen[0, rows] |= np.where(hi, zero, b)
        else:
            seen[(v >> 6).astype(np.int64), np.arange(n)[rows]] |= b
        # counts per (run, element), then each run's template interval [max(s, τ(p)), e]
        cnt = np.bincount(run_off[rows] + v, minlength=R * d).reshape(R, d)
        live = np.flatnonzero(cnt.any(axis=1))
        np.add.at(D2, np.maximum(run_s[live], first_gt[p]), cnt[live])
        np.add.at(D2, run_e1[live], -cnt[live])
    return np.cumsum(D.reshape(T + 1, d), axis=0)[:T]


def iid_subset_counts(n: int | np.ndarray, k: int | np.ndarray, d: int, *, rng: np.random.Generator) -> np.ndarray:
    """Column counts of n i.i.d. uniform k-subsets of [d], exactly, without simulating users.

    Column-sequential sampling: a user with r elements still to place among the R remaining
    columns takes the next column with probability r/R; users with the same r are
    exchangeable, so only the number of users per r is tracked (binomial splits, O(d·k) work
    for any n). Vectorised over groups: ``n`` and ``k`` may be arrays (one group each), then
    the result has one row per group.
    """
    ns = np.atleast_1d(np.asarray(n, dtype=np.int64))
    ks = np.broadcast_to(np.atleast_1d(np.asarray(k, dtype=np.int64)), ns.shape)
    out = np.zeros((ns.size, d), dtype=np.int64)
    live = np.flatnonzero((ns > 0) & (ks > 0))
    if live.size:
        kmax = int(ks[live].max())
        hist = np.zeros((live.size, kmax + 1), dtype=np.int64)
        hist[np.arange(live.size), ks[live]] = ns[live]
        r = np.arange(kmax + 1, dtype=float)
        for j in range(d):
            take = rng.binomial(hist, np.minimum(r / (d - j), 1.0))
            out[live, j] = take.sum(axis=1)
            hist -= take
            hist[:, :-1] += take[:, 1:]
    return out if np.ndim(n) else out[0]


def _insert_excluded(counts: np.ndarray, xs: np.ndarray, d: int) -> np.ndarray:
    """Map rows of counts over [d]∖{x} (d−1 columns, in order) to [d], with 0 at column x."""
    full = np.zeros((counts.shape[0], d), dtype=counts.dtype)
    cols = np.arange(d - 1)
    idx = cols[None, :] + (cols[None, :] >= np.asarray(xs)[:, None])
    np.put_along_axis(full, idx, counts, axis=1)
    return full


def subset_counts(x_counts: np.ndarray, k: int, rho: float, *, rng: np.random.Generator) -> np.ndarray:
    """Column counts of independent Subset(x, k, ln ρ) reports of users with values ``x_counts``, exactly.

    Users of value x include x with probability t; their other elements are uniform subsets of
    [d]∖{x} (k−1 or k of them), aggregated with :func:`iid_subset_counts`.
    """
    x_counts = np.asarray(x_counts, dtype=np.int64)
    d = x_counts.size
    t, _ = subset_signal(rho, k, d)
    inc = rng.binomial(x_counts, float(t))
    out = inc.astype(np.int64)
    xs = np.flatnonzero(x_counts)
    other = (iid_subset_counts(inc[xs], k - 1, d - 1, rng=rng)
             + iid_subset_counts(x_counts[xs] - inc[xs], k, d - 1, rng=rng))
    out += _insert_excluded(other, xs, d).sum(axis=0)
    return out


def multitier_subset_counts(sizes: Sequence[int], keep: Sequence[float], x_counts: np.ndarray, *,
                            rng: np.random.Generator) -> np.ndarray:
    """Aggregate reports (T × d column counts) of n users under the multi-tier Subset chain, exactly.

    ``sizes``/``keep`` describe the distinct served templates in chain order (size k_τ and the
    composite keep probability into τ). Epoch counts are drawn at the aggregate level
    (:func:`epoch_counts`); every epoch's elements by :func:`nested_prefix_counts`.
    """
    x_counts = np.asarray(x_counts, dtype=np.int64)
    d = x_counts.size
    sizes = np.asarray(sizes, dtype=np.int64)
    T = sizes.size
    first, fresh = epoch_counts(keep, x_counts, rng=rng)
    C = np.zeros((T + 1, d), dtype=np.int64)  # difference array over templates
    # epochs whose templates all have the same size: one uniform set each, aggregated exactly
    # by the column-sequential sampler (no per-user work)
    ss, se = np.nonzero(fresh)
    one_band = sizes[ss] == sizes[se]
    if one_band.any():
        g_s, g_e = ss[one_band], se[one_band]
        cnt = iid_subset_counts(fresh[g_s, g_e], sizes[g_s], d, rng=rng)
        np.add.at(C, g_s, cnt)
        np.add.at(C, g_e + 1, -cnt)
    fx, fe = np.nonzero(first)
    f_one = sizes[fe] == sizes[0]
    if f_one.any():
        gx, ge = fx[f_one], fe[f_one]
        nn = first[gx, ge]
        other = _insert_excluded(iid_subset_counts(nn, sizes[0] - 1, d - 1, rng=rng), gx, d)
        other[np.arange(gx.size), gx] += nn
        C[0] += other.sum(axis=0)
        np.add.at(C, ge + 1, -other)
    # the other epochs: element-wise stream
    fx, fe = fx[~f_one], fe[~f_one]
    fn = first[fx, fe]
    ss, se = ss[~one_band], se[~one_band]
    sn = fresh[ss, se]
    start = np.concatenate((np.zeros(fn.sum(), dtype=np.int64), np.repeat(ss, sn)))
    end = np.concatenate((np.repeat(fe, fn), np.repeat(se, sn)))
    excl = np.concatenate((np.repeat(fx, fn), np.full(sn.sum(), -1, dtype=np.int64)))
    return np.cumsum(C, axis=0)[:T] + nested_prefix_counts(start, end, excl, sizes, d, rng=rng)


def grr_chain_counts(eps: Sequence[float], x_counts: np.ndarray, *, rng: np.random.Generator) -> np.ndarray:
    """Multi-tier GRR (k = 1 Rescale chain, Xiao et al.'s re-sampling), aggregate counts (m × d), exactly.

    With one element per report the aggregate is a Markov chain: each report is kept with
    probability β, the others are redrawn uniformly (a multinomial over [d]).
    """
    x_counts = np.asarray(x_counts, dtype=np.int64)
    d = x_counts.size
    rho_prev = math.inf
    cur = x_counts.copy()
    out = []
    for e in eps:
        rho = math.exp(e)
        beta = rescale_keep_probability(rho_prev, rho, 1, d)
        kept = rng.binomial(cur, beta)
        redraw = int(cur.sum() - kept.sum())
        cur = kept + rng.multinomial(redraw, np.full(d, 1.0 / d))
        out.append(cur.copy())
        rho_prev = min(rho_prev, rho)
    return np.array(out)


def brr_flip_probability(eps: float) -> float:
    """BRR bit-flip probability q = 1/(1 + e^{ε/2}) (ε-LDP: two bits differ between neighbours)."""
    return 1.0 / (1.0 + math.exp(float(eps) / 2))


def brr_chain_counts(eps: Sequence[float], x_counts: np.ndarray, *, rng: np.random.Generator) -> np.ndarray:
    """Multi-tier BRR (per-bit re-sampling), aggregate bit counts (m × d), exactly.

    Bits are independent, so per column the number of ones is a sum of independent two-state
    chains: keep each bit with probability β = (1/2 − q′)/(1/2 − q), else a fresh fair bit.
    """
    x_counts = np.asarray(x_counts, dtype=np.int64)
    n = int(x_counts.sum())
    q_prev = 0.0
    ones_x = x_counts.copy()            # users with value j whose bit j is 1
    ones_o = np.zeros_like(x_counts)    # users with value ≠ j whose bit j is 1
    others = n - x_counts
    out = []
    for e in eps:
        q = brr_flip_probability(e)
        beta = (0.5 - q) / (0.5 - q_prev) if q > q_prev else 1.0
        for arr, tot in ((ones_x, x_counts), (ones_o, others)):
            k1 = rng.binomial(arr, beta)
            k0 = rng.binomial(tot - arr, beta)
            fresh = tot - k1 - k0
            arr[:] = k1 + rng.binomial(fresh, 0.5)
        out.append(ones_x + ones_o)
        q_prev = max(q_prev, q)
    return np.array(out)


def debias_subset(counts: np.ndarray, n: int, k: int, rho: float, d: int) -> np.ndarray:
    """Unbiased count estimates n·x̂ from Subset column counts: (c − n f)/(t − f)."""
    t, f = subset_signal(rho, k, d)
    return (np.asarray(counts, dtype=float) - n * f) / (t - f)


def debias_brr(counts: np.ndarray, n: int, eps: float) -> np.ndarray:
    """Unbiased count estimates from BRR bit counts: (c − n q)/(1 − 2q)."""
    q = brr_flip_probability(eps)
    return (np.asarray(counts, dtype=float) - n * q) / (1 - 2 * q)
