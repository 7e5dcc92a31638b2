"""Audit of the discrete accountant of PrivHeavyHitter (secure mode): exact enumeration of every output.

The enumeration of tests/audit/test_granular_audit.py is reused with the tail of the discrete
Laplace, P[K > x] for K ~ DLap(λ) — the law OpenDP samples in secure mode — in place of the
continuous one: on 4 binary attributes (2 noisy levels) every output's log-likelihood ratio between
neighbours stays within :func:`hh_epsilon_discrete`, which the adversarial profile reaches; the
continuous accountant is *not* a bound for the discrete mechanism (the reason it has its own).
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from prdp_core.mechanisms.granular.calibration import hh_epsilon_exact
from prdp_core.mechanisms.granular.discrete import calibrate_discrete, hh_epsilon_discrete, log_tail_discrete

from . import test_granular_audit as enum

NU = 0.01


@pytest.fixture
def discrete_tail(monkeypatch):
    monkeypatch.setattr(enum, "log_tail", lambda t, lam: log_tail_discrete(t, lam))


def test_discrete_tail_is_the_law_opendp_samples():
    lam = 2.5
    k = np.arange(-200, 201)
    p = np.exp(-np.abs(k) / lam)
    p /= p.sum()
    for x in (-3.7, -1.0, 0.0, 0.2, 1.0, 4.5):
        assert math.exp(float(log_tail_discrete(x, lam))) == pytest.approx(p[k > x].sum(), rel=1e-9)


@pytest.mark.parametrize("lam", [2.0, 5.0])
def test_discrete_accountant_bounds_every_output_and_is_reached(discrete_tail, lam):
    mu = lam * math.log(16 / NU)
    bound = hh_epsilon_discrete(lam, mu, 2)
    worst = enum.worst_on_random_neighbours(lam, mu, np.random.default_rng(int(lam * 100)), 5)
    adversarial = enum.worst_over_tau(lam, mu, c=60)
    assert worst <= bound + 1e-9 and adversarial <= bound + 1e-9
    # the adversarial profile reaches it (3/λ: a full step of the integer noise at each of two levels),
    # beyond the continuous accountant — which therefore does not cover the discrete mechanism
    assert adversarial >= bound - 1e-6
    assert adversarial > hh_epsilon_exact(lam, mu, 2) + 1e-3


def test_secure_calibration_meets_the_target():
    for eps0 in (0.5, 1.0, 3.0):
        cal = calibrate_discrete(eps0, NU, 16)
        assert cal.eps_heavy_hitters <= 0.5 * eps0 * (1 + 1e-9)
        assert cal.eps_heavy_hitters >= 0.5 * eps0 * 0.999  # not needlessly noisy
        assert cal.delivered <= eps0 * (1 + 1e-9) and cal.meets_target
