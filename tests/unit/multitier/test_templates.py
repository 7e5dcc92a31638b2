"""The template chain of local multi-tier release: safe, deterministic plans; a template for every budget."""

from __future__ import annotations

import numpy as np
import pytest

from prdp_core.mechanisms.multitier.subset import optimal_k, subset_variance
from prdp_core.mechanisms.multitier.templates import gradual_local_variance, serve, template_chain, utility_bounds


@pytest.mark.parametrize("d", [5, 7, 8, 16])
def test_utility_ratios_within_the_theorem_bounds(d):
    eps = np.arange(0.05, 8, 0.1)
    b53, b54 = utility_bounds(eps, d)
    for variant, bound in (("subset1", b53), ("subset2", b54)):
        r = []
        for e in eps:
            chain = template_chain([e], d, variant)
            t = chain[serve(chain, [e], d)[0]]
            r.append(subset_variance(t.eps, t.k, d) / subset_variance(e, optimal_k(e, d)[0], d))
        r = np.array(r)
        assert np.all(r <= bound * (1 + 1e-9)), variant
        if variant == "subset1":
            assert r.max() <= 171 / 11 + 1e-9


def test_gradual_local_formula():
    v = gradual_local_variance([2.0, 1.0], 10)
    v1 = subset_variance(1.0, optimal_k(1.0, 10), 10)[0]
    assert v[1] == pytest.approx(v1)
    assert v[0] == pytest.approx(1 / (2 / v1))
