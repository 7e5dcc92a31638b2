"""Queries on a table for multi-tier release: central counts and sums, public bins, filters in the local model."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from prdp_core.core.errors import ParameterError
from prdp_core.mechanisms.multitier.queries import NOT_MATCHING, RecordFilter, bin_measure, central_query


def test_central_query_count_and_sum():
    df = pd.DataFrame({"emp": [1.0, 5.0, 100.0, 7.0], "county": ["A", "B", "A", "A"]})
    q = central_query(df, "count", filter=RecordFilter("county", "==", "A"))
    assert q.value == 3 and q.sensitivity == 1 and list(q.mask) == [True, False, True, True]
    s = central_query(df, "sum", measure="emp", clip=10, integer=True)
    assert s.value == 1 + 5 + 10 + 7 and s.sensitivity == 10
    assert central_query(df, "sum", measure="emp", clip=10,
                            filter=RecordFilter("emp", ">=", 6)).value == 17
    with pytest.raises(ParameterError):
        central_query(df, "sum", measure="emp", clip=2.5, integer=True)


def test_bin_measure_codes_and_labels():
    codes, labels = bin_measure(np.array([0.0, 1.0, 10.0, 1000.0, 5e6, -3.0, np.nan]), 4)
    assert codes.tolist() == [0, 0, 0, 2, 3, 0, 0] and len(labels) == 4
    assert labels == ["< 30.6", "30.6–999", "999–3.16e+04", "≥ 3.16e+04"]  # from d and U = 10^6 only
    codes, _ = bin_measure(np.array([0.0, 0.0]), 3)
    assert np.all(codes == 0)
    codes, labels = bin_measure(np.array([5.0, 10.0, 250.0]), scale="linear", d=4, top=400)
    assert codes.tolist() == [0, 0, 2] and labels == ["< 100", "100–200", "200–300", "≥ 300"]
    codes, labels = bin_measure(np.array([0.5, 1, 10, 99, 1e9]), edges=[1, 10, 100])
    assert codes.tolist() == [0, 1, 2, 2, 3] and labels == ["< 1", "1–10", "10–100", "≥ 100"]
    assert len(set(bin_measure(np.zeros(1), 256, scale="linear")[1])) == 256  # labels stay distinct
    for bad in (dict(d=1), dict(d=4, top=-1), dict(d=4, top=math.inf), dict(d=4, scale="cubic"),
                dict(edges=[3, 2]), dict(edges=[1, 2], d=5), dict()):
        with pytest.raises(ParameterError):
            bin_measure(np.ones(3), **bad)


@pytest.mark.parametrize("scale", ["log", "linear"])
def test_one_users_value_moves_no_other_users_category_or_the_labels(scale):
    """Before the fix the edges came from max(v): the top label printed max(v) ("…–2.35e+06" vs
    "…–9.88e+06") and one large value moved everybody else's category."""
    rng = np.random.default_rng(0)
    v = np.round(rng.lognormal(6, 2, 400))
    for new in (0.0, 2_345_678.0, 9_876_543.0, 1e12, np.nan, -5.0):
        w = v.copy()
        w[-1] = new
        c1, l1 = bin_measure(v, 8, scale=scale)
        c2, l2 = bin_measure(w, 8, scale=scale)
        assert l1 == l2
        assert np.array_equal(c1[:-1], c2[:-1])
    # and the category of a user is the same whatever the others' values are (one user alone)
    alone = np.array([bin_measure(np.array([x]), 8, scale=scale)[0][0] for x in v[:50]])
    assert np.array_equal(alone, bin_measure(v, 8, scale=scale)[0][:50])


def test_study_runner_local_model_with_a_filter_reports_every_record():
    """The study path (report.run_study) uses the same public categories and full roster."""
    from prdp_core.review.report import run_study
    from prdp_core.study.config import parse_config

    study = parse_config({"version": 1, "seed": 3, "data": {"sample": "table2_example"},
                          "policy": {"tiers": {"a": 2.0, "b": 0.5}},
                          "mechanisms": [{"kind": "multitier", "model": "local", "measure": "Payroll", "d": 4,
                                          "top": 2e7, "filter": {"column": "Industry", "op": "==",
                                                                 "value": "Mining"}}]})
    run = run_study(study)
    rel = run.releases[0][2]
    assert rel.params["n"] == 5 and rel.params["d"] == 5
    assert NOT_MATCHING in set(rel.answers["category"])
    assert np.allclose(rel.answers.groupby("tier")["estimate"].sum(), 5)
