"""Neighbour relations: which pairs of datasets a stated per-record loss protects.

A release's loss (ε or ρ for each record) bounds how far its output law moves between two
*neighbouring* datasets; the relation says which datasets are neighbours, and so what an adversary
cannot learn. Losses stated under different relations are not in one unit and do not add up as they
are (a substitution is a removal plus an addition: a substitution-ε is roughly twice as weak as an
add/remove-ε), so every ledger entry records its relation (``LedgerEntry.neighbours``) and totals
refuse to mix them.

Each relation is a frozen class whose ``name`` is what configs, params and ledgers store;
:func:`as_neighbours` parses a name (or passes a relation through) and refuses an unknown one.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from .errors import ParameterError


@dataclass(frozen=True)
class NeighbourRelation:
    """A neighbour relation (the base of the concrete ones below; instances of one class are equal)."""

    #: Name stored in params, configs and ledgers (parsed back by :func:`as_neighbours`).
    name: ClassVar[str] = ""
    #: Plain-language statement of the relation, for notes and the UI.
    text: ClassVar[str] = ""

    def __str__(self) -> str:
        return self.name


@dataclass(frozen=True)
class AddRemove(NeighbourRelation):
    """Add/remove neighbours: D′ is D with one record added or removed (n itself is protected).

    The default of every central release (unit splitting, the PrDP framework, Minimum, Threshold,
    Sample and Stretching with a public roster, multi-tier and granular releases)."""

    name: ClassVar[str] = "add/remove"
    text: ClassVar[str] = "add/remove neighbours (datasets differ by one tuple being present or absent)"


@dataclass(frozen=True)
class Substitution(NeighbourRelation):
    """Substitution neighbours: D′ is D with one record's value changed; n (and a roster read from
    the table) is public. Weaker than add/remove: a substitution is a removal plus an addition.

    PE's relation, and that of every personalized release whose roster was read from the table."""

    name: ClassVar[str] = "substitution"
    text: ClassVar[str] = ("substitution neighbours (datasets differ in the value of one tuple; the number of "
                           "tuples n is public)")


@dataclass(frozen=True)
class LocalDummy(NeighbourRelation):
    """Local neighbours of PrLDP (Def. 7.2): one party's report against the report of the dummy
    record ⊥; every party randomises its own record, and the loss holds against the curator too."""

    name: ClassVar[str] = "local: a party's report vs the dummy ⊥ (PrLDP, Def. 7.2)"
    text: ClassVar[str] = "local neighbours (one party's report against the dummy record ⊥; PrLDP, Def. 7.2)"


#: Every known relation by its stored name.
RELATIONS: dict[str, NeighbourRelation] = {r.name: r for r in (AddRemove(), Substitution(), LocalDummy())}


def as_neighbours(value: NeighbourRelation | str) -> NeighbourRelation:
    """The relation ``value`` names (a relation is returned as it is); an unknown name is refused."""
    if isinstance(value, NeighbourRelation) and value.name in RELATIONS:
        return value
    if isinstance(value, str) and value.strip() in RELATIONS:
        return RELATIONS[value.strip()]
    raise ParameterError(f"Unknown neighbour relation {value!r}.",
                         hint="Known relations: " + "; ".join(repr(n) for n in RELATIONS) + ".")
