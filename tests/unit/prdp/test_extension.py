"""The Sec. 5.2 sum extension: per-domain scales and losses."""

from __future__ import annotations

import numpy as np
import pytest

from prdp_core.mechanisms.prdp.budget import inverse, log_budget
from prdp_core.mechanisms.prdp.extension import sum_extension

INV = inverse(1e4, "BALANCE")


def test_sum_extension_scales_and_losses(normal):
    r = sum_extension(normal, INV, beta=0.1, rng=np.random.default_rng(11), reveal=True)
    dp = INV.domains()
    sc = r.extras["scales"]
    np.testing.assert_allclose(sc[1:], 1e4 / dp.lo[1:] ** 2, rtol=1e-9)  # v̄_i / lo_i with v̄_i = α / lo_i
    assert sc[0] == pytest.approx(1e12 / dp.lo[0])
    assert r.check_delivered_within_requested() and r.answers.loc[0, "rel_error"] < 0.01
    idx = dp.index(INV(normal))
    assert np.all(r.loss <= dp.lo[idx - 1] * (1 + 1e-12))
    # a log budget: the extension still honours every record
    lg = log_budget(500, "BALANCE", k=4)
    assert sum_extension(normal, lg, beta=0.1, rng=np.random.default_rng(0)).check_delivered_within_requested()
