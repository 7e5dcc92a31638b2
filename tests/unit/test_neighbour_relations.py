"""Neighbour relations as frozen classes: names parse to them and back, unknown names are refused, ledgers
store names and read relations, and totals refuse to mix relations."""

from __future__ import annotations

import dataclasses

import numpy as np
import pandas as pd
import pytest

from prdp_core.core.accounting import FlatLoss, Ledger, LedgerEntry
from prdp_core.core.errors import ConfigError, ParameterError, PolicyError
from prdp_core.core.neighbours import RELATIONS, AddRemove, LocalDummy, NeighbourRelation, Substitution, as_neighbours
from prdp_core.mechanisms.personalized import NEIGHBOUR_TEXT
from prdp_core.mechanisms.personalized.mechanisms import PE, Minimum
from prdp_core.mechanisms.personalized.spec import spec_from_values
from prdp_core.mechanisms.prdp.local import LOCAL_NEIGHBOURS
from prdp_core.mechanisms.prdp.selection import _entry


@pytest.mark.parametrize("relation", [AddRemove(), Substitution(), LocalDummy()])
def test_name_round_trip(relation):
    assert as_neighbours(relation.name) == relation
    assert as_neighbours(f"  {relation.name} ") == relation
    assert as_neighbours(relation) is relation
    assert str(relation) == relation.name and relation.text and type(relation).__doc__
    assert RELATIONS[relation.name] == relation


def test_relations_are_frozen_values_distinct_by_class():
    assert AddRemove() == AddRemove() and Substitution() != AddRemove() != LocalDummy()
    assert len({AddRemove(), AddRemove(), Substitution()}) == 2
    assert len({r.name for r in RELATIONS.values()}) == 3
    with pytest.raises(dataclasses.FrozenInstanceError):
        AddRemove().extra = 1  # type: ignore[attr-defined]
    assert LOCAL_NEIGHBOURS == LocalDummy()
    assert NEIGHBOUR_TEXT == {"add/remove": AddRemove.text, "substitution": Substitution.text}


@pytest.mark.parametrize("bad", ["replace", "Add/Remove", "", None, 3, NeighbourRelation()])
def test_unknown_relation_is_refused_with_a_clear_message(bad):
    with pytest.raises(ParameterError, match="Unknown neighbour relation") as err:
        as_neighbours(bad)
    assert "add/remove" in (err.value.hint or "") and "substitution" in (err.value.hint or "")


def test_ledger_entry_parses_names_and_stores_them():
    e = LedgerEntry("a", "m", FlatLoss(1.0, "eps"), neighbours="substitution")
    assert e.neighbours == Substitution()
    assert LedgerEntry("b", "m", FlatLoss(1.0, "eps")).neighbours == AddRemove()
    d = e.to_dict()
    assert d["neighbours"] == "substitution"
    assert LedgerEntry.from_dict(d).neighbours == Substitution()
    assert LedgerEntry.from_dict({k: v for k, v in d.items() if k != "neighbours"}).neighbours == AddRemove()
    with pytest.raises(ParameterError, match="Unknown neighbour relation"):
        LedgerEntry("c", "m", FlatLoss(1.0, "eps"), neighbours="swap")  # type: ignore[arg-type]
    with pytest.raises((ParameterError, ConfigError)):
        LedgerEntry.from_dict({**d, "neighbours": "swap"})
    # the selection helpers of the PrDP framework accept a name or a relation
    entry = _entry("x", "m", np.array([0.5]), "note", 0.5, {}, None, neighbours=LOCAL_NEIGHBOURS.name)
    assert entry.neighbours == LocalDummy()


def test_ledger_totals_refuse_mixed_relations_and_summaries_show_names():
    table = pd.DataFrame({"x": [1.0, 2.0]})
    led = Ledger([LedgerEntry("a", "m", FlatLoss(1.0, "eps")),
                  LedgerEntry("b", "m", FlatLoss(1.0, "eps"), neighbours=Substitution())])
    assert list(led.summary()["neighbours"]) == ["add/remove", "substitution"]
    with pytest.raises(PolicyError, match="add/remove, substitution"):
        led.total(table)
    running = led.running_totals(table)
    assert not np.isnan(running["base total (ρ)"].iloc[0]) and np.isnan(running["base total (ρ)"].iloc[1])
    same = Ledger([LedgerEntry("a", "m", FlatLoss(1.0, "eps"), neighbours="substitution"),
                   LedgerEntry("b", "m", FlatLoss(1.0, "eps"), neighbours=Substitution())])
    np.testing.assert_allclose(same.total(table, "eps"), [2.0, 2.0])


def test_mechanisms_state_their_relation_as_a_class():
    assert isinstance(Minimum.neighbours, AddRemove) and isinstance(PE.neighbours, Substitution)
    spec = spec_from_values([1.0, 2.0])
    assert Minimum().neighbours_for(spec) == AddRemove() and "(add/remove)" in Minimum().promise(spec)
    assert Minimum().neighbours_for(spec_from_values([1.0, 2.0], roster="table")) == Substitution()
