"""The template chain of local multi-tier release (Algorithms 2, 3, 5) and which template serves a tier.

A chain of *templates* at reference levels ln(d/k − 1), where size k is exactly optimal, is
generated from {x} (Algorithms 2–3, "Subset₁ᴸ"; Algorithm 5 adds free templates, "Subset₂ᴸ").
Each tier is served by a template whose level is at most its budget; here the template with the
smallest error among those (the paper takes the highest such level, Algorithm 4; both are safe
because every template is a post-processing of the earlier ones). Also the utility bounds of
Thms 5.3–5.4 and the gradual baseline's variance.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Literal, Sequence

import numpy as np

from ...core.errors import ParameterError
from ...core.validate import whole_number
from .subset import MAX_DOMAIN, expansion_level, optimal_k, rescale_keep_probability, subset_variance

Variant = Literal["subset2", "subset1"]
VARIANTS: dict[str, str] = {
    "subset2": "Subset₂ᴸ — improved templates (Algorithm 5)",
    "subset1": "Subset₁ᴸ — reference templates only (Algorithms 2–3)",
}


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


def gradual_local_variance(eps: Sequence[float] | np.ndarray, d: int) -> np.ndarray:
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
