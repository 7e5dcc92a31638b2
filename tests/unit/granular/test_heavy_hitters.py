"""PrivHeavyHitter (Algorithm 2): heavy patterns found, node lists nested, candidate limit."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from prdp_core.core import accounting as A
from prdp_core.core.errors import ResourceLimitError
from prdp_core.mechanisms.granular.data import _row_keys, encode_attributes, synthetic_attribute_data, true_histogram
from prdp_core.mechanisms.granular.domains import DOMAIN_PUBLIC
from prdp_core.mechanisms.granular.heavy_hitters import priv_heavy_hitters
from prdp_core.mechanisms.granular.histogram import heavy_hitter_histogram, histogram_accuracy


def test_heavy_hitters_find_every_heavy_pattern():
    nu = 0.01
    data = synthetic_attribute_data(60_000, 64, patterns=15, heavy_share=0.6, rng=np.random.default_rng(2))
    rel = heavy_hitter_histogram(data, eps0=1.0, nu=nu, rng=np.random.default_rng(3), seed=3, reveal=True)
    acc = histogram_accuracy(data, rel, nu)
    assert acc["heavy"] >= 10 and acc["heavy_found"] == acc["heavy"]
    assert acc["linf_error"] <= nu * data.n
    assert acc["released_small"] == 0  # never publishes cells of one or two records
    assert rel.extras["level_sizes"][0] == 2 * 64
    assert len(rel.extras["level_sizes"]) == 7
    # answers, truth and the ledger entry
    ans = rel.answers
    assert {"a01", "estimate", "scale", "ci_low", "ci_high", "true", "error"} <= set(ans.columns)
    assert (ans["scale"] == 4.0).all() and ans["estimate"].is_monotonic_decreasing
    assert rel.loss.shape == (data.n,) and rel.measure == "eps"
    e = rel.entries[0]
    assert isinstance(e.loss, A.FlatLoss) and e.loss.value == pytest.approx(rel.extras["whole_record"])
    review = rel.for_review()
    assert "true" not in review.answers and review.loss is None


def test_root_list_decodes_and_node_lists_nest():
    data = synthetic_attribute_data(5_000, 6, patterns=3, heavy_share=0.9, rng=np.random.default_rng(4))
    run = priv_heavy_hitters(data, lam=2.0, mu=8.0, tau=100.0, rng=np.random.default_rng(5))
    assert run.levels == 3 and run.codes.shape[1] == 6
    root = run.node_strings(3, 0)
    assert np.array_equal(root[:, :6], run.codes) and (root[:, 6:] == 0).all()  # padded attributes are constant
    for level in (1, 2, 3):
        for index in range(8 // 2**level):
            lst = run.node_strings(level, index)
            half = lst.shape[1] // 2
            left = {tuple(r) for r in run.node_strings(level - 1, 2 * index)}
            assert all(tuple(r[:half]) in left for r in lst)
    truth = true_histogram(data)
    keys = _row_keys(run.codes, data.domain_sizes)
    pos = np.searchsorted(truth.keys, keys)
    assert np.array_equal(truth.counts[pos], run.counts)


def test_heavy_hitter_on_categorical_columns_and_one_attribute():
    rng = np.random.default_rng(6)
    df = pd.DataFrame({"a": rng.choice(list("xyz"), 3000, p=[0.7, 0.2, 0.1]),
                       "b": rng.choice(list("pq"), 3000), "c": rng.integers(0, 50, 3000).astype(float)})
    dom = {"a": list("xyz"), "b": list("pq")}
    data = encode_attributes(df, ["a", "b", "c"], dom)
    rel = heavy_hitter_histogram(data, eps0=2.0, nu=0.05, rng=rng, reveal=True)
    assert set(rel.answers.columns) >= {"a", "b", "c"}
    assert rel.params["cal_levels"] == 2 and rel.params["domains"] == DOMAIN_PUBLIC
    one = heavy_hitter_histogram(encode_attributes(df, ["a"], dom), eps0=1.0, rng=rng, reveal=True)
    assert len(one.answers) == 4 and (one.answers["scale"] == 2.0).all()  # x, y, z and (other)
    assert one.extras["whole_record"] == pytest.approx(1.0)


def test_candidate_limit_is_a_resource_error():
    df = pd.DataFrame({"a": [str(i) for i in range(3000)], "b": [str(i % 2000) for i in range(3000)]})
    data = encode_attributes(df, ["a", "b"], from_data=True)
    with pytest.raises(ResourceLimitError, match="combinations"):
        priv_heavy_hitters(data, lam=1.0, mu=5.0, tau=10.0, rng=np.random.default_rng(0), max_candidates=10**6)
