"""Design defaults of a personalized query: how each starting value is set from the value column, and the
words that say where it comes from.

One :class:`DesignDefault` per parameter holds both the rule that computes the value and the description of
that rule, so what a page, a release's params and the ledger say about a default cannot drift from what the
code did: the upper bound ``hi`` is the column's 99th percentile rounded up to 1, 2 or 5 × 10^k; the count
``cutoff`` is a fixed constant, :data:`CUTOFF_DEFAULT`, or :data:`CUTOFF_SMALL` for a column whose 99th
percentile is at most :data:`CUTOFF_DEFAULT` — which of the two is taken is the one thing it reads from the data.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Callable

#: The count cut-off's default: a fixed constant ...
CUTOFF_DEFAULT = 10.0
#: ... or this one for a column whose 99th percentile is at most :data:`CUTOFF_DEFAULT`.
CUTOFF_SMALL = 1.0


def nice_ceil(x: float) -> float:
    """The next 1–2–5 × 10^k at or above x (1 for anything that is not a positive number)."""
    if not math.isfinite(x) or x <= 0:
        return 1.0
    k = math.floor(math.log10(x))
    for m in (1, 2, 5, 10):
        if m * 10**k >= x:
            return float(m * 10**k)
    return float(10 ** (k + 1))


def _cutoff(p99: float) -> float:
    return CUTOFF_DEFAULT if p99 > CUTOFF_DEFAULT else CUTOFF_SMALL


@dataclass(frozen=True)
class DesignDefault:
    """How one query parameter's design default is computed from the value column's 99th percentile
    (``rule``), and where it comes from in words: ``origin`` (short, completing "… is …") and ``detail``;
    ``label`` names the parameter with its value (a format with one ``{}``)."""

    name: str
    label: str
    rule: Callable[[float], float]
    origin: str
    detail: str

    def value(self, p99: float) -> float:
        """The default for a column whose 99th percentile is ``p99``."""
        return float(self.rule(p99))

    def describe(self) -> str:
        """Where the default comes from, in full: ``origin (detail)``."""
        return f"{self.origin} ({self.detail})"

    def note(self) -> str:
        """What a release records about the parameter left at this default (its ``<name>_source``; the text
        before the parenthesis is the short form :func:`prdp_core.core.provenance.data_derived` lists)."""
        return (f"data: {self.origin} ({self.detail}; a design default, not a public value — a real release must "
                "set it from public knowledge)")


#: The query parameters whose design default depends on the data, by name.
DESIGN_DEFAULTS: dict[str, DesignDefault] = {
    "hi": DesignDefault("hi", "the upper bound hi = {:g}", nice_ceil, "the column's 99th percentile",
                        "rounded up to 1, 2 or 5 × 10^k; computed from the confidential data"),
    "cutoff": DesignDefault("cutoff", "the count cut-off {:g}", _cutoff,
                            f"a fixed {CUTOFF_DEFAULT:g} or {CUTOFF_SMALL:g}, chosen by the column's 99th percentile",
                            f"{CUTOFF_DEFAULT:g} when the percentile is above {CUTOFF_DEFAULT:g}, else "
                            f"{CUTOFF_SMALL:g}: the constants are fixed, the choice reads the confidential data"),
}


__all__ = ["CUTOFF_DEFAULT", "CUTOFF_SMALL", "DESIGN_DEFAULTS", "DesignDefault", "nice_ceil"]
