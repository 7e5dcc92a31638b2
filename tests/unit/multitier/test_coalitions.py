"""Computed privacy loss of colluding tiers: exact joint losses of the geometric families, chained residuals."""

from __future__ import annotations

import numpy as np
import pytest

from prdp_core.mechanisms.multitier.central import plan_central
from prdp_core.mechanisms.multitier.coalitions import _residual_pmf_window, coalition_loss, geometric_coalition_loss


def test_chained_residuals_equal_the_direct_residual():
    """Composing Eq.-(1) residuals ε 3 → 2 → 1 → 0.5 gives the single residual (p_1, p_4)."""
    half = 60
    comp = np.zeros(2 * half + 1)
    comp[half] = 1.0
    steps = [3.0, 2.0, 1.0, 0.5]
    for a, b in zip(steps, steps[1:]):
        comp = np.convolve(comp, _residual_pmf_window(a, b, half), mode="same")
    direct = _residual_pmf_window(3.0, 0.5, half)
    assert np.max(np.abs(comp[half - 20:half + 21] - direct[half - 20:half + 21])) < 1e-12


def test_exact_joint_loss_two_tiers_matches_the_notes():
    assert geometric_coalition_loss([1.5, 0.5]) == pytest.approx(1.5, abs=1e-9)
    assert geometric_coalition_loss([1.5, 0.5], strategy="independent") == pytest.approx(2.0, abs=1e-9)


def test_full_coalition_loss_equals_the_top_budget():
    plan = plan_central([("a", 3.0), ("b", 2.0), ("c", 1.0), ("d", 0.4)], "geometric")
    cl = coalition_loss(plan)
    assert "exact joint pmf" in cl.method
    assert cl.multitier == pytest.approx(3.0, abs=1e-9)
    assert cl.independent == pytest.approx(6.4, abs=1e-9)
    assert cl.gradual == pytest.approx(3.0) and cl.naive == pytest.approx(6.4)
    # a coalition without the top tier pays its own top budget, with the chain of residuals in between
    assert coalition_loss(plan, ["b", "d"]).multitier == pytest.approx(2.0, abs=1e-9)


def test_coalition_sensitivity_two():
    plan = plan_central([("a", 3.0), ("b", 1.0)], "geometric", sensitivity=2)
    cl = coalition_loss(plan)
    assert cl.multitier == pytest.approx(3.0, abs=1e-9) and cl.independent == pytest.approx(4.0, abs=1e-9)


def test_gaussian_coalition_in_rho_and_eps():
    plan = plan_central([("a", 2.0), ("b", 1.0)], "gaussian", delta=1e-6)
    cl = coalition_loss(plan)
    assert cl.unit == "ρ"
    assert cl.multitier == pytest.approx(plan.budgets()[0]) and cl.independent == pytest.approx(plan.budgets().sum())
    assert cl.eps_at_delta["multitier"] == pytest.approx(2.0, abs=1e-6)
    assert 2.0 < cl.eps_at_delta["independent"] < 3.0  # far less than the 3.0 of basic composition
