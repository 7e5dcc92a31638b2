"""Plans of the PrDP family: the public parameters of a release and each record's ε, known before any data.

A :class:`CountPlan` (Algorithm 1, central, and Algorithms 3–4, local) charges a record whose budget
E(r) falls in domain i exactly 2^{i−1}ε̌ ≤ E(r): its per-record loss is a function of E(r) and of the
public ε̌, ε̂ alone, so :meth:`CountPlan.record_loss` is what the release charges, computed before it
runs. A :class:`BudgetPlan` (any algorithm of the framework, central or local) promises at most E(r)
to every record; its :meth:`BudgetPlan.record_loss` is that bound (the framework's delivered loss also
depends on the released domain ℓ, never above it). Both follow :class:`prdp_core.mechanisms.contract.Plan`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar, Literal

import numpy as np

from ...core.domains import DomainPartition
from ...core.errors import ParameterError
from .budget import BudgetFunction
from .selection import _check_beta, _eps_array, _table_of

#: The algorithms of the framework a :class:`BudgetPlan` can release with.
ALGORITHMS = ("count", "framework", "sum_extension", "naive")

Model = Literal["central", "local"]


@dataclass(frozen=True)
class CountPlan:
    """Algorithm 1 (central) or Algorithms 3–4 (local, ``model="local"``): the public ε̌, ε̂ and β.

    ``eps_min``, ``eps_max`` — ε̌ and ε̂, which fix the L domains (a record asking more than ε̂ is
    charged as if it asked ε̂); ``beta`` — the failure rate of the domain selection.
    """

    eps_min: float
    eps_max: float
    beta: float
    model: Model = "central"

    loss_kind: ClassVar[str] = "eps"
    #: record_loss is what every record is charged (not only a bound).
    exact: ClassVar[bool] = True

    def __post_init__(self) -> None:
        object.__setattr__(self, "eps_min", float(self.eps_min))
        object.__setattr__(self, "eps_max", float(self.eps_max))
        object.__setattr__(self, "beta", _check_beta(self.beta))
        if self.model not in ("central", "local"):
            raise ParameterError(f"Unknown PrDP model '{self.model}'.", hint="Use 'central' or 'local'.")
        DomainPartition(self.eps_min, self.eps_max)  # checks ε̌ ≤ ε̂, both positive

    @property
    def domains(self) -> DomainPartition:
        return DomainPartition(self.eps_min, self.eps_max)

    def domain_index(self, values_eps: Any) -> np.ndarray:
        """The domain (1…L) of each record's budget E(r) (budgets checked against ε̌ and capped at ε̂)."""
        dp = self.domains
        return dp.index(_eps_array(values_eps, dp.eps_min, dp.eps_max))

    def domain_loss(self, index: np.ndarray) -> np.ndarray:
        """The ε charged to records of domains ``index`` (1…L): 2^{i−1}ε̌."""
        return self.domains.lo[np.asarray(index) - 1]

    def record_loss(self, values_eps: Any) -> np.ndarray:
        """The ε each record pays: 2^{i−1}ε̌ for a record of domain i (≤ E(r)); ``values_eps`` its E(r)."""
        return self.domain_loss(self.domain_index(values_eps))


@dataclass(frozen=True)
class BudgetPlan:
    """A release of ``query`` under E-PrDP (``model="central"``) or E-PrLDP (``"local"``) by ``algorithm``.

    ``budget`` — the budget function E (public: a formula of a record's own values, with its ε̌ and ε̂);
    ``query`` — what is released (``"count"``, ``"sum:COL"``, …); ``beta`` — the failure rate;
    ``algorithm`` — one of :data:`ALGORITHMS` (``sum_extension``: central only, on the budget's
    measure or ``column``). Every record pays at most E(r); the naive baseline pays exactly ε̌.
    """

    budget: BudgetFunction
    query: Any = "count"
    beta: float = 0.1
    algorithm: str = "framework"
    model: Model = "central"
    column: str | None = None

    loss_kind: ClassVar[str] = "eps"
    #: record_loss is the bound E(r): the delivered loss of the framework depends on the released ℓ.
    exact: ClassVar[bool] = False

    def __post_init__(self) -> None:
        object.__setattr__(self, "beta", _check_beta(self.beta))
        if self.algorithm not in ALGORITHMS:
            raise ParameterError(f"Unknown PrDP algorithm '{self.algorithm}'.",
                                 hint=f"Use one of {', '.join(ALGORITHMS)}.")
        if self.model not in ("central", "local"):
            raise ParameterError(f"Unknown PrDP model '{self.model}'.", hint="Use 'central' or 'local'.")
        if self.model == "local" and self.algorithm == "sum_extension":
            raise ParameterError("The Sec. 5.2 sum extension is a central mechanism.",
                                 hint="Use the framework in the local model.")

    def count_plan(self) -> CountPlan:
        """The plan of Algorithm 1 (or 3–4) with this budget's ε̌, ε̂ and β."""
        return CountPlan(self.budget.eps_min, self.budget.eps_max, self.beta, self.model)

    def record_loss(self, records: Any) -> np.ndarray:
        """Each record's requested ε = E(r), the bound every algorithm keeps (the count charges
        2^{i−1}ε̌ ≤ E(r), the naive baseline ε̌)."""
        return np.asarray(self.budget(_table_of(records)), dtype=float).ravel()


__all__ = ["ALGORITHMS", "BudgetPlan", "CountPlan"]
