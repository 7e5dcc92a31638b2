"""Multiplicative noise infusion at the owner level (Evans, Zayatz and Slanta, "Using noise for disclosure
limitation of establishment tabular data", Journal of Official Statistics 14(4), 1998), as County Business
Patterns has published since 2007.

Every owner (company) draws one multiplier, applied to all its records in every cell: 1 + s·u, with a random
direction s = ±1 (probability ½ each) and a magnitude u between ``low`` and ``high`` — never closer to 1 than
``low``, so no company's contribution is published near its true value, and at most ``high`` away. A cell's
published value is Σ multiplier × the owner's contribution; large cells, with many owners moved in both
directions, change little; a cell dominated by one company moves by about that company's multiplier.

Each published cell carries a flag of the share of noise in it, |noisy − true| / true, as CBP publishes it:
**G** below 2%, **H** from 2% to below 5%, **J** 5% or more (CBP withholds such cells; they count as not
published here). The Census Bureau keeps its parameters confidential; the defaults ``low`` = 0.10 and
``high`` = 0.15 (a uniform magnitude in between) are illustrative values of this tool, not the Bureau's.

The multipliers are noise drawn on the records: the study runner and the app call :func:`infuse` inside a
declared teaching simulation (:func:`prdp_core.core.recorder.simulation`), never in review mode.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from ...core.errors import ParameterError
from .cells import CellTable

#: The noise flags: (flag, lower bound of the share of noise, description), in order.
FLAGS = (("G", 0.0, "low noise (below 2%)"), ("H", 0.02, "moderate noise (2% to below 5%)"),
         ("J", 0.05, "high noise (5% or more): withheld"))


@dataclass(frozen=True)
class NoiseInfusion:
    """The multipliers' parameters: each owner's value moves by at least ``low`` and at most ``high`` (fractions,
    0 ≤ low ≤ high < 1), up or down with probability ½."""

    low: float = 0.10
    high: float = 0.15

    def __post_init__(self) -> None:
        if not (0 <= float(self.low) <= float(self.high) < 1):
            raise ParameterError(f"Noise between {self.low} and {self.high} is not 0 ≤ low ≤ high < 1.",
                                 hint="Use fractions, e.g. low 0.10 and high 0.15.")

    def describe(self) -> str:
        return f"multipliers 1 ± u, u uniform in [{self.low:g}, {self.high:g}] per owner"

    def multipliers(self, n: int, rng: np.random.Generator) -> np.ndarray:
        """``n`` owners' multipliers."""
        sign = np.where(rng.random(n) < 0.5, -1.0, 1.0)
        return 1.0 + sign * rng.uniform(self.low, self.high, n)


def infuse(table: CellTable, noise: NoiseInfusion, rng: np.random.Generator) -> pd.DataFrame:
    """The noise-infused table (aligned with ``table.cells``): ``noisy`` value, ``share`` of noise and ``flag``
    (:data:`FLAGS`). One multiplier per owner: an owner's contributions in a cell and in its margins move
    together, so the published margins stay the sums of the owners' noisy values."""
    c = table.contributions
    owner_ids = c["owner"].to_numpy() if "owner" in c.columns else None
    if owner_ids is None:
        raise ParameterError("The table carries no owner ids.", hint="Build it with cell_table(...).")
    codes = np.asarray(owner_ids, dtype=np.int64)
    mult = noise.multipliers(int(codes.max()) + 1 if len(codes) else 0, rng)
    noisy = np.bincount(c["cell"].to_numpy(), weights=c["x"].to_numpy() * mult[codes], minlength=len(table.cells))
    true = table.cells["value"].to_numpy(dtype=float)
    share = np.divide(np.abs(noisy - true), true, out=np.zeros_like(true), where=true > 0)
    flag = np.full(len(true), "G", dtype=object)
    for name, lo, _ in FLAGS[1:]:
        flag[share >= lo] = name
    return pd.DataFrame({"noisy": noisy, "share": share, "flag": flag})
