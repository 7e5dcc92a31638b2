"""Multi-tier release in the local model: plans and releases of the multi-tier Subset mechanism.

Wang et al., §5. Every user holds a category x ∈ [d] and reports, for each tier i, a set r_i
satisfying ε_i-LDP; every lower tier's report is a post-processing of a higher one's, so any
coalition learns no more than its highest budget. :func:`plan_local` gives the template chain,
the template serving each tier (its real privacy ε_t ≤ ε_i; ε_i − ε_t left unused) and the
per-tier MSE against the ideal, GRR, BRR and gradual; :func:`release_local` simulates the n
users exactly and debiases each tier's counts.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, ClassVar, Iterable, Literal, Mapping, Sequence, cast

import numpy as np
import pandas as pd

from ...core.accounting import FlatLoss, LedgerEntry
from ...core.errors import ParameterError
from ...core.noise_source import NO_GENERATOR, Noise, resolve
from ...core.release import Release
from ...core.secure import SecureSampler
from .simulation import (
    brr_chain_counts,
    debias_brr,
    debias_subset,
    grr_chain_counts,
    multitier_subset_counts,
    subset_counts,
)
from .subset import brr_variance, grr_variance, optimal_k, subset_variance
from .templates import Template, _check_domain, composite_keep, gradual_local_variance, serve, template_chain
from .tiers import Tier, TieredPlan, tiers_from

# ---------------------------------------------------------------------------
# Local model
# ---------------------------------------------------------------------------


@dataclass(frozen=True)
class LocalPlan(TieredPlan):
    """The multi-tier Subset plan for a tier list and a domain of d categories (public, data-free).

    ``templates`` is the chain (Algorithms 2–5) and ``served[i]`` the template answering tier i
    (level ≤ ε_i; the smallest error among those with rule ``best``).
    """

    tiers: tuple[Tier, ...]
    d: int
    variant: str
    templates: tuple[Template, ...]
    served: tuple[int, ...]
    rule: str = "best"

    loss_kind: ClassVar[str] = "eps"

    @property
    def served_eps(self) -> np.ndarray:
        """Each tier's real (tight) privacy level ε_t ≤ ε_i."""
        return np.array([self.templates[i].eps for i in self.served])

    @property
    def served_k(self) -> np.ndarray:
        return np.array([self.templates[i].k for i in self.served])

    def chain(self) -> tuple[list[int], np.ndarray, np.ndarray]:
        """Distinct served templates in chain order, their sizes and composite keep probabilities."""
        uniq = sorted(set(self.served))
        keep = composite_keep(self.templates, uniq)
        return uniq, np.array([self.templates[i].k for i in uniq]), keep

    def mechanism_loss(self, mechanism: str = "subset") -> float:
        """A user's loss if every tier colludes: the top served level (Subset templates), the top tier's ε
        (GRR, BRR re-sampling) or Σ ε_i (independent reports)."""
        if mechanism not in LOCAL_MECHANISMS:
            raise ParameterError(f"Unknown local mechanism '{mechanism}'.",
                                 hint=f"Use one of {', '.join(LOCAL_MECHANISMS)}.")
        if mechanism == "subset":
            return self.loss_summary()["multitier"]
        return float(self.eps.sum() if mechanism == "independent" else self.eps.max())

    def record_loss(self, values: np.ndarray | int, mechanism: str = "subset") -> np.ndarray:
        """Each user's loss (``values``: one category per user, or the number of users): what
        :func:`release_local` charges a seeded run, known before any report (a secure run adds the exact
        coins' certified slack, ``params["certified_slack"]``)."""
        n = int(values) if isinstance(values, (int, np.integer)) else int(np.asarray(values).size)
        return np.full(n, self.mechanism_loss(mechanism))

    def variances(self) -> np.ndarray:
        """Per-user V(ε_t, k_t) of each tier (n users: count-vector MSE n·V)."""
        return subset_variance(self.served_eps, self.served_k, self.d)

    def table(self) -> pd.DataFrame:
        e = self.eps
        kstar = optimal_k(e, self.d)
        v = self.variances()
        ideal = subset_variance(e, kstar, self.d)
        return pd.DataFrame({
            "tier": self.names, "eps": e, "template": list(self.served), "eps_template": self.served_eps,
            "k": self.served_k, "unused_eps": e - self.served_eps, "var_multitier": v, "k_ideal": kstar,
            "var_ideal": ideal, "ratio_multitier": v / ideal, "var_grr": grr_variance(e, self.d),
            "var_brr": brr_variance(e, self.d), "var_gradual": gradual_local_variance(e, self.d),
        })

    def template_table(self) -> pd.DataFrame:
        serves: dict[int, list[str]] = {}
        for name, i in zip(self.names, self.served):
            serves.setdefault(int(i), []).append(name)
        return pd.DataFrame([{
            "template": t.index, "step": t.step, "operator": t.op, "k": t.k, "eps": t.eps,
            "keep_probability": t.beta if t.op == "rescale" else None, "reference": t.reference,
            "serves": ", ".join(serves.get(t.index, [])),
        } for t in self.templates])

    def loss_summary(self) -> dict[str, float]:
        """Loss if every tier colludes: multi-tier — the top served level (≤ ε_1); independent — Σ ε_i."""
        return {"multitier": float(self.served_eps.max()), "independent": float(self.eps.sum()),
                "gradual": float(self.eps.max())}


def plan_local(tiers: Iterable[Tier] | Mapping[str, float] | pd.DataFrame, d: int, *,
               variant: str = "subset2", rule: str = "best") -> LocalPlan:
    """Plan the multi-tier Subset mechanism for d categories (§5): template chain and serving.

    ``variant``: ``subset2`` (Algorithm 5, default) or ``subset1`` (Algorithms 2–3).
    ``rule``: ``best`` (smallest error among templates at or below the budget) or
    ``closest`` (the paper's Algorithm 4: the highest such level).
    """
    ts = tiers_from(tiers)
    if rule not in ("best", "closest"):
        raise ParameterError(f"Unknown serving rule '{rule}'.", hint="Use 'best' or 'closest'.")
    d = _check_domain(d)
    eps = [t.eps for t in ts]
    templates = template_chain(eps, d, variant)  # type: ignore[arg-type]  # template_chain refuses a variant other than subset1 or subset2
    served = tuple(int(i) for i in serve(templates, eps, d, rule=rule))
    return LocalPlan(ts, d, variant, templates, served, rule)


LocalMechanism = Literal["subset", "grr", "brr", "independent"]
LOCAL_MECHANISMS: dict[str, str] = {
    "subset": "Multi-tier Subset (template chain)",
    "grr": "Multi-tier GRR (re-sampling)",
    "brr": "Multi-tier BRR (per-bit re-sampling)",
    "independent": "Ideal: an independent optimal Subset report per tier (loss Σ ε)",
}


def release_local(plan: LocalPlan, values: np.ndarray | Sequence[int], *, rng: np.random.Generator | None = None,
                  seed: int | None = None, mechanism: LocalMechanism = "subset", reveal: bool = False,
                  labels: Sequence[str] | None = None, secure: bool = False,
                  sampler: SecureSampler | None = None, noise: Noise | None = None) -> Release:
    """Simulate n users' reports for every tier and release each tier's estimated counts.

    ``values``: each user's category in 0…d−1 (one user per input row; every user of the roster,
    each category a function of that user's own record only — :func:`local_categories` builds
    them from public edges, with the public category "not matching" for a filter). n is the
    roster size: every tier's estimates sum to it. Every user's reports
    follow the chosen multi-tier mechanism exactly (epochs of the template chain; see
    :mod:`.simulation`); each tier's collector debiases the column counts of its
    reports into count estimates. The answers table has one row per (tier, category); truth
    columns only with ``reveal``. Per-record loss: the total over all tiers (the top served
    level for the multi-tier mechanisms, Σ ε_i for independent reports).
    ``secure=True`` (or a :class:`~prdp_core.core.secure.SecureSampler`): a real release, unseeded, the same
    simulation driven by exact coins from the system random source (:class:`.secure.SecureGenerator`);
    every tier's loss is certified as its level plus the coins' slack (``params["certified"]``).
    ``noise``: the noise source (:class:`~prdp_core.core.noise_source.Noise`: ``Noise.teaching(seed)`` or
    ``Noise.secure()``); ``rng``/``seed``/``secure``/``sampler`` are its legacy spelling.
    """
    if mechanism not in LOCAL_MECHANISMS:
        raise ParameterError(f"Unknown local mechanism '{mechanism}'.",
                             hint=f"Use one of {', '.join(LOCAL_MECHANISMS)}.")
    x = np.asarray(values)
    if x.ndim != 1 or x.size == 0:
        raise ParameterError("Give one category per user (a non-empty list of integers).")
    if not np.issubdtype(x.dtype, np.integer):
        if not np.all(np.isfinite(x.astype(float))) or not np.allclose(x, np.round(x)):
            raise ParameterError("Categories must be integers between 0 and d − 1.")
        x = np.round(x).astype(np.int64)
    d = plan.d
    if x.min() < 0 or x.max() >= d:
        raise ParameterError(f"Categories must be between 0 and d − 1 = {d - 1}.")
    n = int(x.size)
    xc = np.bincount(x, minlength=d).astype(np.int64)
    nz = resolve(noise, rng=rng, seed=seed, secure=secure, sampler=sampler)
    smp, rng, seed = nz.sampler, nz.rng, nz.seed
    if smp is not None:
        from .secure import SecureGenerator  # the secure module builds on the central one, which imports this

        # duck-typed: the Generator methods the chains call, drawn by the exact sampler
        rng, seed = cast(np.random.Generator, SecureGenerator(smp)), None
    elif rng is None:
        raise ParameterError(NO_GENERATOR)
    eps = plan.eps
    rows: list[dict[str, Any]] = []
    lab = list(labels) if labels is not None else [str(j) for j in range(d)]
    if len(lab) != d:
        raise ParameterError(f"Expected {d} category labels (got {len(lab)}).")
    if mechanism == "subset":
        uniq, sizes, keep = plan.chain()
        counts = multitier_subset_counts(sizes, keep, xc, rng=rng)
        pos = {t: j for j, t in enumerate(uniq)}
        est = []
        for i in range(len(plan.tiers)):
            tp = plan.templates[plan.served[i]]
            est.append((debias_subset(counts[pos[plan.served[i]]], n, tp.k, tp.rho, d), tp.eps, tp.k))
    elif mechanism == "grr":
        counts = grr_chain_counts(eps, xc, rng=rng)
        est = [(debias_subset(counts[i], n, 1, math.exp(e), d), e, 1) for i, e in enumerate(eps)]
    elif mechanism == "brr":
        counts = brr_chain_counts(eps, xc, rng=rng)
        est = [(debias_brr(counts[i], n, e), e, 0) for i, e in enumerate(eps)]
    else:
        kstar = optimal_k(eps, d)
        est = []
        for e, k in zip(eps, kstar):
            c = subset_counts(xc, int(k), math.exp(e), rng=rng)
            est.append((debias_subset(c, n, int(k), math.exp(e), d), e, int(k)))
    total = plan.mechanism_loss(mechanism)  # every user's loss if all tiers collude, known before any report
    for i, t in enumerate(plan.tiers):
        e_hat, lvl, k = est[i]
        if mechanism == "brr":
            var = float(brr_variance(lvl, d))
        else:
            var = float(subset_variance(lvl, k, d))
        sd_cat = math.sqrt(n * var / d)  # average per-category standard deviation
        for j in range(d):
            row = {"tier": t.name, "eps": t.eps, "eps_used": float(lvl), "k": int(k), "category": lab[j],
                   "estimate": float(e_hat[j]), "sd": sd_cat}
            if reveal:
                row.update(true=float(xc[j]), error=float(e_hat[j] - xc[j]), abs_error=float(abs(e_hat[j] - xc[j])))
            rows.append(row)
    answers = pd.DataFrame(rows)
    base: dict[str, Any] = dict(model="local", d=d, mechanism=mechanism, variant=plan.variant, rule=plan.rule, n=n,
                tiers={t.name: t.eps for t in plan.tiers})
    tier_loss = {t.name: float(t.eps) for t in plan.tiers}
    if smp is not None:  # the ledger records the certified losses (each level plus the coins' slack)
        base.update(secure=smp.describe(), **_certified(plan, mechanism, [float(e[1]) for e in est], rng))
        slack = float(base["certified_slack"])
        tier_loss = {k: v + slack for k, v in tier_loss.items()}
        total = total + slack * (len(plan.tiers) if mechanism == "independent" else 1)
    tiers_txt = ", ".join(f"{t.name} ε={t.eps:g}" for t in plan.tiers)
    if mechanism == "independent":
        entries = tuple(LedgerEntry(f"Local counts for {t.name} (independent reports)", "multitier.local.independent",
                                    FlatLoss(tier_loss[t.name], "eps"), {**base, "tier": t.name}, seed,
                                    secure=smp is not None) for t in plan.tiers)
    else:
        short = {"subset": "Subset templates", "grr": "GRR re-sampling", "brr": "BRR re-sampling"}[mechanism]
        entries = (LedgerEntry(f"Multi-tier local counts, {short} ({tiers_txt}) — all tiers together",
                               f"multitier.local.{mechanism}", FlatLoss(total, "eps"), base, seed,
                               secure=smp is not None),)
    extras: dict[str, Any] = {"plan": plan.table(), "loss_summary": {**plan.loss_summary(),
                                                                     "multitier": total}}
    if reveal:
        extras["private_true_counts"] = xc
    return Release(mechanism=f"multitier.local.{mechanism}", answers=answers, measure="eps",
                   loss=np.full(n, total), entries=entries, params=base, seed=seed, truth_included=reveal,
                   extras=extras, secure=smp is not None)


def _certified(plan: LocalPlan, mechanism: str, levels: list[float], gen: Any) -> dict[str, Any]:
    """What a secure local release certifies per tier: its level plus the slack of the rounded coins."""
    from .secure import coin_slack

    d, m = plan.d, len(plan.tiers)
    T = len(set(plan.served))
    coins = {"grr": m, "brr": 2 * d * m, "subset": 1 + T * T + T * d, "independent": 1 + d}[mechanism]
    slack = coin_slack(gen.p_min, coins)
    return {"certified": {t.name: lvl + slack for t, lvl in zip(plan.tiers, levels)}, "certified_slack": slack,
            "certified_note": f"each tier's level + at most {slack:.3g} (coins rounded to the 2^−53 grid, "
                              f"at most {coins} on one user's path)"}
