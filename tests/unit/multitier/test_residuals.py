"""Validity of residuals (Table 1, App. F): the discrete Gaussian and staircase counterexamples, lattice inversion."""

from __future__ import annotations

import math

import numpy as np
import pytest

from prdp_core.mechanisms.multitier.coalitions import _residual_pmf_window
from prdp_core.mechanisms.multitier.noise_families import noise_family
from prdp_core.mechanisms.multitier.residuals import check_residual, lattice_residual_pmf


def test_discrete_gaussian_counterexample():
    """Remark 4.1: DG(1²) → DG(1.1²) has no residual (Bochner eigenvalue −0.1886953)."""
    chk = check_residual("discrete_gaussian", 1.0, 1.0, params=(1.0, 1.1))
    assert chk.exists is False
    assert chk.min_eigenvalue == pytest.approx(-0.1886953, abs=1e-6)
    fam = noise_family("discrete_gaussian")
    row = [fam.cf(np.array([t]), 1.1)[0] / fam.cf(np.array([t]), 1.0)[0] for t in (0, math.pi / 2, math.pi)]
    assert row == pytest.approx([1.0, 0.771729, 0.354762], abs=1e-6)
    assert chk.min_mass == pytest.approx(-0.02141, abs=1e-5)  # negative 'probability' at k = ±2
    assert abs(chk.witness["k"]) == 2


def test_staircase_counterexample():
    """App. F: staircase ε 2.8 → 1 has no residual; R(5π) = −1.43887, eigenvalue −0.43887."""
    fam = noise_family("staircase")
    t = np.array([5 * math.pi])
    assert (fam.cf(t, 1.0) / fam.cf(t, 2.8))[0] == pytest.approx(-1.43887, abs=1e-5)
    chk = check_residual("staircase", 2.8, 1.0, points=(0.0, 5 * math.pi))
    assert chk.exists is False
    assert chk.min_eigenvalue == pytest.approx(-0.43887, abs=1e-5)
    assert check_residual("staircase", 2.8, 1.0).exists is False  # found by the grid scan too


@pytest.mark.parametrize("family", ["geometric", "laplace", "gaussian", "skellam", "multiscale_geometric"])
def test_families_with_residuals_are_accepted_and_reversals_refused(family):
    sens = 2 if family == "multiscale_geometric" else 1
    assert check_residual(family, 2.0, 0.7, sensitivity=sens).exists is True
    assert check_residual(family, 0.7, 2.0, sensitivity=sens).exists is False
    assert check_residual(family, 1.0, 1.0, sensitivity=sens).exists is True


def test_lattice_inversion_agrees_with_eq1():
    fam = noise_family("geometric")
    pmf = lattice_residual_pmf(lambda t: fam.cf(t, 0.8) / fam.cf(t, 1.6))
    half = pmf.size // 2
    assert np.max(np.abs(pmf[half - 30:half + 31] - _residual_pmf_window(1.6, 0.8, 30))) < 1e-12
