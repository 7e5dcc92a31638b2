"""Computed privacy loss of colluding tiers of a multi-tier release, next to the baselines.

:func:`coalition_loss` computes the loss of any set of tiers: exact joint distributions where
they fit in memory (the geometric families on a finite window, :func:`geometric_coalition_loss`;
the local templates by enumeration), otherwise the Markov-chain factorisation of the
construction; the independent (Σ ε) and gradual baselines beside it.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Sequence

import numpy as np
import pandas as pd

from ...core.errors import ParameterError
from .central import CentralPlan
from .local import LocalPlan
from .noise_families import GaussianNoise, gaussian_eps_for, geometric_residual_weights, tsg_pmf
from .subset import joint_exact, max_log_ratio, subset_pmf_exact

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
            J = joint_exact(plan.templates, uniq, plan.d)
            mt = max_log_ratio(J.reshape(plan.d, -1))
            method = "exact joint distribution of the members' reports (all inputs)"
        else:
            mt = max_log_ratio(subset_pmf_exact(plan.templates[tpl[0]].k, plan.templates[tpl[0]].rho,
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
            mt = geometric_coalition_loss(params, strategy="multitier", shift=sh, chain=chain, half=half)
            ind = geometric_coalition_loss(params, strategy="independent", shift=sh, half=half)
            method = "exact joint pmf of the members' outputs on a window (neighbours q, q + Δ)"
        else:
            mt = geometric_coalition_loss([params[0]], shift=sh, half=half)
            ind = sum(geometric_coalition_loss([p], shift=sh, half=half) for p in params)
            method = "top member's exact pmf (Markov chain factorisation)"
        return CoalitionLoss(names, float(mt), float(ind), float(budgets[0]), float(budgets.max()),
                             float(budgets.sum()), method, unit)
    if isinstance(fam, GaussianNoise):
        delta = float(fam.delta)
        sig = np.array(params)
        sig_eff = 1.0 / math.sqrt(float((1.0 / sig ** 2).sum()))
        e_mt = gaussian_eps_for(sig[0], delta, fam.sensitivity)
        e_ind = gaussian_eps_for(sig_eff, delta, fam.sensitivity)
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


# ---------------------------------------------------------------------------
# Exact joint privacy loss of a coalition (geometric families, finite window)
# ---------------------------------------------------------------------------


def _residual_pmf_window(a_from: float, a_to: float, half: int) -> np.ndarray:
    """pmf of the Eq.-(1) residual on [−half, half]."""
    k = np.arange(-half, half + 1)
    w0, w1 = geometric_residual_weights(a_from, a_to)
    out = w1 * tsg_pmf(k, a_to)
    out[half] += w0
    return out


def geometric_coalition_loss(params: Sequence[float], *, strategy: str = "multitier", shift: int = 1,
                             half: int = 12, chain: Sequence[float] | None = None) -> float:
    """Exact max |log P_q(y)/P_{q+shift}(y)| of the joint output of a coalition, on a finite window.

    ``params`` are the members' a = ε/Δ in decreasing order (two-sided geometric, Δ-sensitive
    query, neighbours q and q + shift). ``chain`` lists every tier's a between the top member
    and the last one (the residuals actually applied); by default the members themselves.
    For ``multitier`` the joint pmf is r_top = q + η and r_next = r_prev + (composed residuals),
    the composed residual pmf being computed by convolving the per-step residual pmfs; for
    ``independent`` the members' outputs are independent. The pmf is evaluated exactly at every
    point of the window [−half, half]^j (j members, j ≤ 4) and the largest log-ratio returned.
    """
    a = [float(x) for x in params]
    j = len(a)
    if not 1 <= j <= 4:
        raise ParameterError("The exact window computation handles coalitions of 1 to 4 tiers.")
    grid = np.arange(-half, half + 1)
    wide = 4 * half
    if strategy == "independent":
        logp0 = sum(np.log(tsg_pmf(grid, ai)).reshape((1,) * i + (-1,) + (1,) * (j - i - 1)) for i, ai in enumerate(a))
        logp1 = sum(np.log(tsg_pmf(grid - shift, ai)).reshape((1,) * i + (-1,) + (1,) * (j - i - 1))
                    for i, ai in enumerate(a))
        return float(np.max(np.abs(logp0 - logp1)))
    if strategy != "multitier":
        raise ParameterError(f"Unknown strategy '{strategy}'.")
    steps = [float(x) for x in (chain if chain is not None else a)]
    # positions of the members in the chain of applied residuals
    idx, pos = [], 0
    for am in a:
        while pos < len(steps) and steps[pos] != am:
            pos += 1
        if pos == len(steps):
            raise ParameterError("The chain of tiers does not contain every coalition member in order.")
        idx.append(pos)
    # composed residual pmf between consecutive members, by convolution of the step residuals
    kernels = []
    for m in range(1, j):
        comp = np.zeros(2 * wide + 1)
        comp[wide] = 1.0
        for s_ in range(idx[m - 1], idx[m]):
            if steps[s_ + 1] != steps[s_]:
                comp = np.convolve(comp, _residual_pmf_window(steps[s_], steps[s_ + 1], wide), mode="same")
        kernels.append(comp)
    # joint pmf on the window: f(a1 − q) Π K(a_{l+1} − a_l)
    def joint(q: int) -> np.ndarray:
        lp = np.log(np.maximum(tsg_pmf(grid - q, a[0]), 1e-320)).reshape((-1,) + (1,) * (j - 1))
        for m in range(1, j):
            diff = np.subtract.outer(grid, grid)  # a_{m} − a_{m−1}: rows a_{m−1}, cols a_m
            k = kernels[m - 1][np.clip(-diff + wide, 0, 2 * wide)]  # kernel at (a_m − a_{m−1})
            shape = [1] * j
            shape[m - 1], shape[m] = grid.size, grid.size
            lp = lp + np.log(np.maximum(k, 1e-320)).reshape(shape)
        return lp

    l0, l1 = joint(0), joint(shift)
    return float(np.max(np.abs(l0 - l1)))
