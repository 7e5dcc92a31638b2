"""Privacy-specified domains (Sec. 5.1): partition invariants, the exact ceil(log2), Example 5.2."""

from __future__ import annotations

import math

import numpy as np
import pytest

from prdp_core.core.domains import DomainPartition, ceil_log2
from prdp_core.core.errors import ParameterError
from prdp_core.mechanisms.prdp.budget import inverse


def test_domain_partition_and_index_invariants():
    dp = DomainPartition(1e-8, 100.0)
    assert dp.L == 34
    np.testing.assert_allclose(dp.lo, 1e-8 * 2.0 ** np.arange(34))
    assert dp.hi[-1] == 100.0 and dp.hi[0] == pytest.approx(2e-8)
    rng = np.random.default_rng(0)
    e = np.exp(rng.uniform(math.log(1e-8), math.log(100), 100_000))
    e = np.concatenate((e, dp.lo, dp.hi, np.nextafter(dp.lo, np.inf), [1e-8, 100.0]))
    e = np.clip(e, 1e-8, 100.0)
    i = dp.index(e)
    assert i.min() >= 1 and i.max() <= 34
    assert np.all(dp.lo[i - 1] <= e)  # charged budget never exceeds the requirement
    assert np.all(e <= dp.hi[i - 1] * (1 + 1e-12))
    # interval ends: (2^{i−1}ε̌, 2^iε̌], the first closed
    assert dp.index(np.array([1e-8, 2e-8, np.nextafter(2e-8, 1)])).tolist() == [1, 1, 2]
    assert DomainPartition(1.0, 1.0).L == 1 and DomainPartition(1.0, 2.0).L == 1
    assert DomainPartition(1.0, 2.0000001).L == 2
    with pytest.raises(ParameterError):
        DomainPartition(1.0, 0.5)
    with pytest.raises(ParameterError):
        dp.thresholds(1.5)


def test_ceil_log2_is_exact():
    p = np.exp2(np.arange(-60, 61, dtype=float))
    x = np.concatenate((p, np.nextafter(p, np.inf), np.nextafter(p, 0),
                        np.random.default_rng(1).uniform(1e-9, 1e9, 1000)))
    k = ceil_log2(x)
    assert np.all(np.ldexp(1.0, k) >= x) and np.all(np.ldexp(1.0, k - 1) < x)


# Example 5.2 / Fig. 1: E(r) = α / v_Bal with α = 1e4, U = 1.28e9, ε̂ = 4.096.
EX52 = inverse(1e4, "BALANCE", eps_max=4.096, U=1.28e9)


#: T_12 = 437.69 ⟺ ln(L/β) = 437.69 · 2^11 ε̌ = 7.0030 ⟺ L/β = 1100, i.e. β = 19/1100 ≈ 0.017273
#: with L = 19 (no round β reproduces it; β = 0.01 would need 11 in place of L = 19).
BETA_EX52 = 19 * math.exp(-437.69 * 0.016)


def test_example_5_2_domains_values_and_threshold():
    assert EX52.eps_min == pytest.approx(7.8125e-6, rel=1e-12)
    dp = EX52.domains()
    assert dp.L == 19
    t = EX52.domain_table(beta=BETA_EX52)
    d12 = t.iloc[11]
    assert d12.eps_low == pytest.approx(0.016) and d12.eps_high == pytest.approx(0.032)
    assert d12.value_from == pytest.approx(312_500) and d12.value_to == pytest.approx(625_000)
    assert round(d12.threshold, 2) == 437.69
    assert BETA_EX52 == pytest.approx(19 / 1100, rel=1e-4)  # T is printed to 2 decimals
    assert round(math.log(11 / 0.01) / 0.016, 2) == 437.69  # the alternative reading
    # the last domain holds the capped records (v below α/ε̂ ≈ 2441 get ε̂) and the first reaches U
    assert t.iloc[-1].value_from == 0 and t.iloc[0].value_to == 1.28e9
    assert t.iloc[0].value_from == pytest.approx(6.4e8)
    # ε_τ of the first passing domain X_12, and the sum of Fig. 1's noisy counts X_12..X_19
    assert dp.lo[11] == pytest.approx(0.016)
    noisy = [1729.38, 4042.73, 2384.80, 1042.90, 484.86, 199.22, 92.26, -0.14]
    assert round(sum(noisy), 2) == 9976.01 and noisy[0] > 437.69
