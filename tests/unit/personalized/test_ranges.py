"""Output ranges of median and min: only the query's public declaration chooses them, never the values."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from prdp_core.core.errors import ParameterError
from prdp_core.mechanisms.personalized.blackbox import em_pieces
from prdp_core.mechanisms.personalized.mechanisms import PE, Minimum, Sample, Threshold
from prdp_core.mechanisms.personalized.pe import pe_distribution
from prdp_core.mechanisms.personalized.query import PersonalizedQuery
from prdp_core.mechanisms.personalized.spec import spec_from_values


def _integer_share(m, table, spec, q, runs, seed):
    rng = np.random.default_rng(seed)
    out = np.array([m.release(table, spec, q, rng=rng).answers["estimate"].iloc[0] for _ in range(runs)])
    return float(np.mean(out == np.round(out)))


@pytest.mark.parametrize("name", ["M", "T", "S", "PE"])
def test_output_range_does_not_depend_on_the_values(name):
    """Substitution 4 → 4.5 used to switch every answer from integers to non-integers (disjoint
    supports, unbounded loss): the range must come from the query's declared value type."""
    m = {"M": Minimum(), "T": Threshold("max"), "S": Sample("max"), "PE": PE()}[name]
    spec = spec_from_values([0.5] * 4)
    D = pd.DataFrame({"x": [1.0, 2, 3, 4]})
    Dp = pd.DataFrame({"x": [1.0, 2, 3, 4.5]})
    for kind in ("median", "min"):
        cont = PersonalizedQuery(kind, "x", lo=0, hi=10)
        assert _integer_share(m, D, spec, cont, 150, 1) == _integer_share(m, Dp, spec, cont, 150, 2) == 0.0
        ints = PersonalizedQuery(kind, "x", lo=0, hi=10, integer=True)
        assert _integer_share(m, D, spec, ints, 150, 3) == _integer_share(m, Dp, spec, ints, 150, 4) == 1.0
    # add/remove: one more tuple with a non-integer value does not flip the range either
    spec5 = spec_from_values([0.5] * 5)
    Da = pd.DataFrame({"x": [1.0, 2, 3, 4, 4]})
    Db = pd.DataFrame({"x": [1.0, 2, 3, 4, 4.5]})
    q = PersonalizedQuery("median", "x", lo=0, hi=10)
    assert _integer_share(m, Da, spec5, q, 150, 5) == _integer_share(m, Db, spec5, q, 150, 6) == 0.0


def test_declared_integers_round_values_onto_the_grid():
    q = PersonalizedQuery("median", "x", lo=0, hi=10, integer=True)
    np.testing.assert_array_equal(q.prepare(np.array([4.4, 4.6, -3.0, 12.7])), [4, 5, 0, 10])
    assert "integers" in q.describe()
    with pytest.raises(ParameterError, match="whole-number bounds"):
        PersonalizedQuery("median", "x", lo=0.5, hi=10, integer=True)
    with pytest.raises(ParameterError):
        em_pieces("median", np.array([1.0]), 1.0, 0, 9.5, integer=True)
    # the low-level samplers never infer the range from the values
    pcs, _ = em_pieces("median", np.array([1.0, 2.0, 3.0]), 1.0, 0, 10)
    assert not pcs.integer
    pcs, _, _ = pe_distribution("min", np.array([1.0, 2.0]), np.ones(2), lo=0, hi=10)
    assert not pcs.integer
    # a sum of declared integers is not rounded (the grid only concerns median and min outputs)
    np.testing.assert_array_equal(PersonalizedQuery("sum", "x", hi=10, integer=True).prepare(np.array([1.5])), [1.5])
