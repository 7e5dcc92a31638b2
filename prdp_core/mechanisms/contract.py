"""The mechanism contract: a plan of public parameters, then a release from the plan, the data's statistics and noise.

Every family of mechanisms is used in two steps:

1. **Plan** — public parameters only (thresholds and workload, a budget function, a privacy
   specification, tiers, a per-attribute ε). A plan states its per-record privacy function
   (:meth:`Plan.record_loss`: the loss of each record from the plan and that record's own values) and
   its unit (:attr:`Plan.loss_kind`), so a designer can check what every record will pay before any
   noise is drawn or any aggregate of the data is computed.
2. **Release** — :func:`release` (plan, statistics, noise): the family's release function reads the
   data's statistics (the records, or a dataset whose engine computes them where the data lives) and
   draws its noise from a :class:`~prdp_core.core.noise_source.Noise` (a seeded teaching run, or the exact
   secure samplers). The :class:`~prdp_core.core.release.Release` it returns charges each record the plan's
   loss in its ledger entry (``exact`` plans), or at most it (the PrDP framework's bound E(r)).

:data:`FAMILIES` is the table of families: each with its plan types, what its release reads and its
release function. The plans are the existing objects made to follow :class:`Plan`:
:class:`~prdp_core.core.workload.SplittingPolicy` (unit splitting, ρ),
:class:`~prdp_core.mechanisms.prdp.plans.CountPlan` and
:class:`~prdp_core.mechanisms.prdp.plans.BudgetPlan` (PrDP central and local, ε),
:class:`~prdp_core.mechanisms.personalized.release.PersonalizedPlan` (ε per user),
:class:`~prdp_core.mechanisms.multitier.central.CentralPlan` and
:class:`~prdp_core.mechanisms.multitier.local.LocalPlan` (multi-tier, ε or ρ),
:class:`~prdp_core.mechanisms.granular.histogram.HistogramPlan` (granular, ε per record and per attribute), and
the global-DP baseline :class:`~prdp_core.mechanisms.baselines.ClippedSum` (a flat ε or ρ).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, ClassVar, Literal, Protocol, runtime_checkable

import numpy as np

from ..core.errors import ParameterError
from ..core.noise_source import Noise
from ..core.release import Release
from ..core.workload import SplittingPolicy
from . import granular, prdp, unit_splitting
from . import multitier as mt
from . import personalized as pdp
from .baselines import ClippedSum
from .prdp import local as prldp
from .prdp.plans import BudgetPlan, CountPlan

#: Units of a per-record loss: pure ε, zCDP ρ, or approximate (ε, δ).
LossKind = Literal["eps", "rho", "eps_delta"]
LOSS_KINDS: tuple[str, ...] = ("eps", "rho", "eps_delta")


@runtime_checkable
class Plan(Protocol):
    """The public parameters of a release and its per-record privacy function.

    ``loss_kind`` — the unit of :meth:`record_loss` (one of :data:`LOSS_KINDS`); ``exact`` — True when
    :meth:`record_loss` is what the release's ledger entry charges each record, False when it is an
    upper bound of it (the charge then also depends on a private choice, such as the PrDP framework's
    released domain ℓ). ``record_loss(records)`` — each record's loss, computed from the plan and the
    record's own values only: no aggregate of the data, no noise.
    """

    exact: ClassVar[bool]

    @property
    def loss_kind(self) -> str: ...

    def record_loss(self, records: Any) -> np.ndarray: ...


#: A family's release: (plan, statistics, noise, **options) → Release.
ReleaseFn = Callable[..., Release]


@dataclass(frozen=True)
class Family:
    """One family of mechanisms: its plan types, what its release reads, and its release function."""

    name: str
    plans: tuple[type, ...]
    statistics: str
    run: ReleaseFn


def _unit_splitting(plan: SplittingPolicy, statistics: Any, noise: Noise, **options: Any) -> Release:
    return unit_splitting.release(statistics, plan, noise=noise, **options)


def _prdp(plan: CountPlan | BudgetPlan, statistics: Any, noise: Noise, **options: Any) -> Release:
    local = plan.model == "local"
    if isinstance(plan, CountPlan):
        count = prldp.count if local else prdp.count
        return count(statistics, eps_min=plan.eps_min, eps_max=plan.eps_max, beta=plan.beta, noise=noise,
                     **options)
    E, alg = plan.budget, plan.algorithm
    if alg == "count":
        if local:
            return release(plan.count_plan(), plan.record_loss(statistics), noise, **options)  # E(r) of each party
        return prdp.count_of(statistics, E, beta=plan.beta, noise=noise, **options)
    if alg == "sum_extension":
        return prdp.sum_extension(statistics, E, column=plan.column, beta=plan.beta, noise=noise, **options)
    fn = getattr(prldp if local else prdp, alg)  # framework or naive
    return fn(statistics, E, plan.query, beta=plan.beta, noise=noise, **options)


def _personalized(plan: pdp.PersonalizedPlan, statistics: Any, noise: Noise, **options: Any) -> Release:
    return pdp.release(statistics, plan.spec, plan.query, plan.mechanism, noise=noise, **options)


def _multitier(plan: mt.CentralPlan | mt.LocalPlan, statistics: Any, noise: Noise, **options: Any) -> Release:
    if isinstance(plan, mt.CentralPlan):
        return mt.release_central(plan, statistics, noise=noise, **options)
    return mt.release_local(plan, statistics, noise=noise, **options)


def _baseline(plan: ClippedSum, statistics: Any, noise: Noise, **options: Any) -> Release:
    return plan.release(statistics, noise=noise, **options)


def _granular(plan: granular.HistogramPlan, statistics: Any, noise: Noise, **options: Any) -> Release:
    if statistics.d != plan.d:
        raise ParameterError(f"The plan is for {plan.d} attribute(s); the data has {statistics.d}.",
                             hint="Plan the histogram for the attributes released.")
    if plan.kind == "standard":
        return granular.standard_histogram(statistics, eps=plan.eps, threshold=plan.threshold, noise=noise,
                                           **options)
    if plan.secure != noise.secure:
        raise ParameterError("This heavy-hitter plan was calibrated for "
                             f"{'the secure discrete' if plan.secure else 'seeded'} noise; the noise given is "
                             f"{'secure' if noise.secure else 'seeded'}.",
                             hint="Plan it with secure=True for a secure run (or the other way round).")
    return granular.heavy_hitter_histogram(statistics, eps0=plan.eps, nu=plan.nu, method=plan.method,
                                           noise=noise, **options)


#: The families: plan types, what each release reads (its statistics), and its release function.
FAMILIES: tuple[Family, ...] = (
    Family("unit_splitting", (SplittingPolicy,),
           "the records (a table or prepared dataset, or a dataset whose engine computes the per-cell sums)",
           _unit_splitting),
    Family("prdp", (CountPlan, BudgetPlan),
           "each record's budget E(r) (CountPlan) or the records (BudgetPlan; per-domain statistics computed "
           "by the engine holding them)", _prdp),
    Family("personalized", (pdp.PersonalizedPlan,), "the table of tuples (each with its owner)", _personalized),
    Family("multitier", (mt.CentralPlan, mt.LocalPlan),
           "the true answer(s) with options records=/contributions= (central), or each user's category (local)",
           _multitier),
    Family("granular", (granular.HistogramPlan,), "the attribute data with public domains", _granular),
    Family("baseline", (ClippedSum,), "the table (a global-DP clipped sum or count, for comparison)", _baseline),
)


def family_of(plan: Any) -> Family:
    """The family whose plan ``plan`` is; refuses anything that is not a plan of a family."""
    for fam in FAMILIES:
        if isinstance(plan, fam.plans):
            return fam
    names = ", ".join(t.__name__ for f in FAMILIES for t in f.plans)
    raise ParameterError(f"{type(plan).__name__} is not a mechanism plan.", hint=f"Use one of {names}.")


def release(plan: Plan, statistics: Any, noise: Noise, **options: Any) -> Release:
    """Release ``plan`` on ``statistics`` with ``noise``: the family's release function (see
    :data:`FAMILIES` for what each reads). ``options`` are the release function's other keywords
    (``reveal=True`` attaches the true answers, teaching mode only)."""
    if not isinstance(noise, Noise):
        raise ParameterError("Pass the noise as a Noise value: Noise.teaching(seed) for a seeded teaching run, "
                             "Noise.secure() for a real release.")
    return family_of(plan).run(plan, statistics, noise, **options)


__all__ = ["FAMILIES", "LOSS_KINDS", "Family", "LossKind", "Plan", "family_of", "release"]
