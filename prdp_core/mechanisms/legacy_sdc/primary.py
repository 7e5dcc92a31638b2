"""Primary suppression: which cells of a magnitude table the classical sensitivity rules refuse to publish.

Each rule reads a cell's contributions per owner, largest first: x₁ ≥ x₂ ≥ … (total X), and names the
*protection level* a sensitive cell needs — how far above (and below) its value the published table must leave
the cell's possible values, so that the rule's intruder cannot narrow the largest contribution down.

* **p% rule** (``p``): the second-largest contributor knows its own x₂ and can bound x₁ by X − x₂. The cell is
  sensitive when the others' remainder is too small, X − x₁ − x₂ < p/100 · x₁; its protection level is
  p/100 · x₁ − (X − x₁ − x₂). A single-owner cell is always sensitive (X > 0).
* **(n, k)-dominance rule** (``n``, ``k``): sensitive when the n largest contributors hold more than k% of the
  cell, x₁ + … + xₙ > k/100 · X; protection level 100/k · (x₁ + … + xₙ) − X.
* **minimum frequency** (``min_frequency``): a cell with at least one and fewer than this many contributors is
  sensitive (the threshold rule); its protection level is p/100 · X (10% of X when the p% rule is off).

Ties and zero contributions follow the formulas (two equal largest contributors are x₁ and x₂); an empty or
zero cell is never sensitive under the p% and dominance rules. The rules' parameters are the agency's choice and
usually confidential: the defaults (p = 10, n = 2, k = 85, minimum frequency 3) are illustrative values of the
kind used in the disclosure-control literature, not any agency's.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from ...core.errors import ParameterError
from .cells import CellTable

#: The protection level (in % of the cell) a minimum-frequency cell needs when the p% rule is off.
FREQUENCY_PROTECTION_PCT = 10.0


@dataclass(frozen=True)
class Rules:
    """The sensitivity rules of primary suppression; a rule set to None (or ``min_frequency`` 0) is off.

    ``p`` — the p% rule's percentage (0 < p < 100): how closely the second-largest contributor may estimate the
    largest; ``n`` and ``k`` — the dominance rule (n ≥ 1 contributors holding more than k% of the cell,
    0 < k ≤ 100); ``min_frequency`` — cells with fewer contributors than this are suppressed (0: off)."""

    p: float | None = 10.0
    n: int = 2
    k: float | None = 85.0
    min_frequency: int = 3

    def __post_init__(self) -> None:
        if self.p is not None and not (0 < float(self.p) < 100):
            raise ParameterError(f"p = {self.p} is not a percentage between 0 and 100.", hint="Use e.g. p = 10.")
        if self.k is not None and not (0 < float(self.k) <= 100):
            raise ParameterError(f"k = {self.k} is not a percentage in (0, 100].", hint="Use e.g. k = 85.")
        if int(self.n) != self.n or self.n < 1 or self.n > 100:
            raise ParameterError(f"n = {self.n} must be a whole number of contributors from 1 to 100.",
                                 hint="Use e.g. n = 2.")
        if int(self.min_frequency) != self.min_frequency or not 0 <= self.min_frequency <= 1000:
            raise ParameterError(f"min_frequency = {self.min_frequency} must be a whole number from 0 to 1000.",
                                 hint="Use e.g. 3 (0 turns the rule off).")

    def describe(self) -> str:
        parts = []
        if self.p is not None:
            parts.append(f"p% rule with p = {self.p:g}")
        if self.k is not None:
            parts.append(f"({self.n}, {self.k:g})-dominance")
        if self.min_frequency:
            parts.append(f"at least {self.min_frequency} contributors")
        return ", ".join(parts) or "no rule"


def primary_suppression(table: CellTable, rules: Rules) -> pd.DataFrame:
    """Each cell's verdict under ``rules`` (aligned with ``table.cells``): ``p_rule``, ``dominance`` and
    ``frequency`` (bool: the rule finds the cell sensitive), ``sensitive`` (any of them), ``protection`` (the
    largest protection level the rules ask of the cell; 0 when it is not sensitive) and ``reason`` (the rules
    that fired, as text)."""
    X = table.cells["value"].to_numpy(dtype=float)
    owners = table.cells["owners"].to_numpy()
    x1, x2 = table.largest(0), table.largest(1)
    zeros = np.zeros(len(X), dtype=bool)
    p_hit, nk_hit, f_hit = zeros.copy(), zeros.copy(), zeros.copy()
    prot = np.zeros(len(X))
    if rules.p is not None:
        need = rules.p / 100.0 * x1 - (X - x1 - x2)
        p_hit = (X > 0) & (need > 1e-9 * np.maximum(X, 1.0))
        prot = np.where(p_hit, np.maximum(prot, need), prot)
    if rules.k is not None:
        top = table.top(int(rules.n))
        need = 100.0 / rules.k * top - X
        nk_hit = (X > 0) & (top > rules.k / 100.0 * X * (1 + 1e-12))
        prot = np.where(nk_hit, np.maximum(prot, need), prot)
    if rules.min_frequency:
        f_hit = (owners > 0) & (owners < rules.min_frequency)
        pct = rules.p if rules.p is not None else FREQUENCY_PROTECTION_PCT
        prot = np.where(f_hit, np.maximum(prot, pct / 100.0 * X), prot)
    sensitive = p_hit | nk_hit | f_hit
    names = np.array(["p% rule", "dominance", "frequency"], dtype=object)
    hits = np.stack([p_hit, nk_hit, f_hit], axis=1)
    reason = [", ".join(names[h]) for h in hits]
    return pd.DataFrame({"p_rule": p_hit, "dominance": nk_hit, "frequency": f_hit, "sensitive": sensitive,
                         "protection": np.where(sensitive, prot, 0.0), "reason": reason})
