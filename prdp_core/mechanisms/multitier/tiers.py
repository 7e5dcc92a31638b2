"""Tiers of a multi-tier release: the analysts' names and budgets, the limits, the strategies.

A tier is one analyst (or class of analysts) asking the shared query with its own budget ε;
:func:`tiers_from` validates a list (distinct names, budgets in [MIN_EPS, MAX_EPS]) and orders it
from the highest budget down, which every plan of the central and local models assumes.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, ClassVar, Iterable, Literal, Mapping, Sequence

import numpy as np
import pandas as pd

from ...core.errors import ParameterError, PolicyError, PrdpError

#: Largest number of tiers in one plan.
MAX_TIERS = 200
#: Largest budget a tier may have (beyond it every mechanism is practically noise-free).
MAX_EPS = 50.0
#: Smallest budget a tier may have.
MIN_EPS = 1e-4

Strategy = Literal["multitier", "independent", "gradual"]
STRATEGIES: dict[str, str] = {
    "multitier": "Multi-tier (derive lower tiers from higher ones)",
    "independent": "Independent releases (one fresh release per tier)",
    "gradual": "Gradual (split the budget into pieces, average pieces)",
}


# ---------------------------------------------------------------------------
# Tiers
# ---------------------------------------------------------------------------


@dataclass(frozen=True)
class Tier:
    """An analyst (or class of analysts) and its budget ε: its answer alone must be ε-DP."""

    name: str
    eps: float


def tiers_from(spec: Iterable[Tier] | Iterable[tuple[str, float]] | Mapping[str, float] | pd.DataFrame
               ) -> tuple[Tier, ...]:
    """Validate a tier list and sort it by decreasing budget (ties keep their order).

    Accepts Tier objects, (name, ε) pairs, a {name: ε} mapping or a table with columns
    ``name`` and ``eps`` (rows with neither a name nor a budget are ignored — blank editor rows).
    """
    rows: list[tuple[Any, Any]]
    if isinstance(spec, pd.DataFrame):
        missing = {"name", "eps"} - set(spec.columns)
        if missing:
            raise PolicyError(f"The tier table needs columns 'name' and 'eps' (missing: {', '.join(sorted(missing))}).")
        rows = list(zip(spec["name"].tolist(), spec["eps"].tolist()))
    elif isinstance(spec, Mapping):
        rows = list(spec.items())
    else:
        rows = [(t.name, t.eps) if isinstance(t, Tier) else tuple(t) for t in spec]  # type: ignore[misc]  # a tier given as a pair: tuple(t) is (name, eps), which mypy sees as tuple[object, ...]
    tiers: list[Tier] = []
    for i, (name, eps) in enumerate(rows, 1):
        blank_name = name is None or (isinstance(name, float) and math.isnan(name)) or str(name).strip() == ""
        try:
            e = float(eps) if eps is not None else math.nan
        except (TypeError, ValueError):
            raise PolicyError(f"Tier {i} ('{name}'): the budget must be a number (got {eps!r}).") from None
        if blank_name and math.isnan(e):
            continue
        if blank_name:
            raise PolicyError(f"Tier {i} has a budget but no name.", hint="Give every tier a short name.")
        if not math.isfinite(e) or e <= 0:
            raise PolicyError(f"Tier '{str(name).strip()}' needs a positive budget ε (got {eps!r}).",
                              hint="Smaller ε = stronger privacy; workshop values are usually between 0.1 and 10.")
        if e < MIN_EPS or e > MAX_EPS:
            raise PolicyError(f"Tier '{str(name).strip()}': ε = {e:g} is outside the supported range "
                              f"[{MIN_EPS:g}, {MAX_EPS:g}].")
        tiers.append(Tier(str(name).strip(), e))
    if not tiers:
        raise PolicyError("Enter at least one tier (a name and a budget ε).")
    if len(tiers) > MAX_TIERS:
        raise PolicyError(f"{len(tiers)} tiers is more than the limit of {MAX_TIERS}.")
    names = [t.name for t in tiers]
    dup = sorted({n for n in names if names.count(n) > 1})
    if dup:
        raise PolicyError(f"Tier names must be unique; repeated: {', '.join(dup)}.")
    return tuple(sorted(tiers, key=lambda t: -t.eps))


def _names(tiers: Sequence[Tier]) -> list[str]:
    return [t.name for t in tiers]


class TieredPlan:
    """What every multi-tier plan (central, local) reads off its ``tiers``: their names and budgets."""

    tiers: tuple[Tier, ...]
    #: record_loss (:class:`prdp_core.mechanisms.contract.Plan`) is what a seeded release charges each record.
    exact: ClassVar[bool] = True

    @property
    def names(self) -> list[str]:
        return _names(self.tiers)

    @property
    def eps(self) -> np.ndarray:
        return np.array([t.eps for t in self.tiers])


def safe_plan_error(exc: Exception) -> PrdpError:
    """Translate an unexpected numerical failure into an actionable error (for the app)."""
    if isinstance(exc, PrdpError):
        return exc
    return ParameterError(f"These settings could not be evaluated ({type(exc).__name__}).",
                          hint="Try fewer tiers, a smaller domain or budgets between 0.01 and 20.")
def lattice_round(q: np.ndarray | float) -> np.ndarray:
    """The integer a geometric-family release answers for a query value q: ⌊q + ½⌋ (half up).

    Rounding is deterministic and data-independent, and it keeps an integer sensitivity Δ: if
    |a − b| ≤ Δ then |⌊a + ½⌋ − ⌊b + ½⌋| ≤ Δ (⌊x + t⌋ − ⌊x⌋ ≤ ⌈t⌉ for t ≥ 0), so the release of
    the rounded value is ε-DP exactly when that of q would be. (Round-half-to-even would not:
    0.5 → 0 and 1.5 → 2 move by 2 for Δ = 1.) Integer inputs are returned unchanged.
    """
    return np.floor(np.asarray(q, dtype=float) + 0.5)


def gradual_pieces(budgets: Sequence[float] | np.ndarray) -> np.ndarray:
    """Budget splitting ("gradual" baseline, §6): e_m = b_m, e_l = b_l − b_{l+1} (decreasing budgets)."""
    b = np.asarray(budgets, dtype=float)
    return np.append(b[:-1] - b[1:], b[-1])


