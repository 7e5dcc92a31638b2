"""Registries of kinds: registration, lookup, and the message for a kind no class registered."""

from __future__ import annotations

import pytest

from prdp_core.core.accounting import LOSS_KINDS, loss_from_dict
from prdp_core.core.errors import ConfigError
from prdp_core.core.registry import Registry
from prdp_core.core.shapes import _shape_from_dict


def test_register_and_get():
    reg: Registry[type] = Registry("widget")

    @reg.register
    class Knob:
        kind = "knob"

    assert reg.get("knob") is Knob and "knob" in reg and list(reg) == ["knob"] and len(reg) == 1


@pytest.mark.parametrize("kind", ["lever", None, 3, ["knob"]])
def test_unknown_kind_is_a_config_error_naming_the_known_ones(kind):
    reg: Registry[type] = Registry("widget")
    reg.register(type("Knob", (), {"kind": "knob"}))
    with pytest.raises(ConfigError, match="Unknown widget kind") as err:
        reg.get(kind)
    assert err.value.hint == "Known kinds: knob."


def test_loss_kinds_are_registered_by_their_modules():
    import prdp_core.core.splitting  # noqa: F401  (registers the splitting policy's loss)
    import prdp_core.core.workload  # noqa: F401

    assert {"record", "split", "splitting_policy", "sum"} <= set(LOSS_KINDS)
    with pytest.raises(ConfigError, match="Unknown loss-function kind 'nope'"):
        loss_from_dict({"kind": "nope"})


def test_unknown_budget_shape_is_a_config_error():
    with pytest.raises(ConfigError, match="Unknown budget-function kind 'nope'"):
        _shape_from_dict({"kind": "nope"})
