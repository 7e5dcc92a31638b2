"""Granular DP histograms as releases: Theorem 15's heavy-hitter histogram and the standard histogram."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from prdp_core.core.errors import ParameterError, ResourceLimitError
from prdp_core.mechanisms.granular.data import encode_attributes, synthetic_attribute_data, true_histogram
from prdp_core.mechanisms.granular.histogram import (
    _true_counts_of,
    compare_cells,
    heavy_hitter_histogram,
    histogram_accuracy,
    standard_histogram,
    standard_threshold,
)


def _neighbours_one_attribute_changed():
    """D and D': one record's attribute value replaced by a value no other record has."""
    a = pd.DataFrame({"g": ["A", "B", "A", "B"], "h": ["x", "y", "y", "x"]})
    b = a.copy()
    b.loc[3, "g"] = "Z"
    return a, b


def test_neighbouring_tables_have_the_same_domain_threshold_and_published_cells():
    """One attribute of one record changed to a new value: everything public stays the same.

    Before declared domains the cells, threshold and cells_log10 moved (0.6021 → 0.7782,
    1.386 → 2.197) and the one-attribute heavy-hitter histogram listed "Z" — an unbounded loss."""
    a, b = _neighbours_one_attribute_changed()
    dom = {"g": ["A", "B"], "h": ["x", "y"]}
    out = []
    for t in (a, b):
        data = encode_attributes(t, ["g", "h"], dom)
        std = standard_histogram(data, eps=1.0, rng=np.random.default_rng(1))
        hh = heavy_hitter_histogram(encode_attributes(t, ["g"], dom), eps0=1.0, rng=np.random.default_rng(1))
        out.append((data.domains, data.cells, std.params["cells_log10"], std.params["threshold"],
                    std.params["domains"], sorted(hh.answers["g"])))
    assert out[0] == out[1]
    assert out[0][5] == ["(other)", "A", "B"]  # the whole public domain, never "Z"
    assert out[0][2] == pytest.approx(math.log10(9)) and out[0][3] == pytest.approx(standard_threshold(1.0, 9))
    # the exploration mode is the old behaviour and says so
    ex = [standard_histogram(encode_attributes(t, ["g", "h"], from_data=True), eps=1.0,
                               rng=np.random.default_rng(1)) for t in (a, b)]
    assert ex[0].params["cells_log10"] != ex[1].params["cells_log10"]
    assert all("TEACHING ONLY" in r.entries[0].label and r.extras["teaching_only"] for r in ex)


def test_one_attribute_heavy_hitter_output_distribution_on_neighbours():
    """d = 1: the released cells are the declared domain and the counts Lap(b); the exact log-density
    ratio of the released vector on neighbours is ≤ ε0 (a record moves between two cells)."""
    a, b = _neighbours_one_attribute_changed()
    dom = {"g": ["A", "B"]}
    rels = [heavy_hitter_histogram(encode_attributes(t, ["g"], dom), eps0=1.0, rng=np.random.default_rng(5),
                                     reveal=True) for t in (a, b)]
    cells = [r.answers["g"].tolist() for r in rels]
    assert sorted(cells[0]) == sorted(cells[1])
    scale = rels[0].extras["calibration"].count_scale
    ta = rels[0].answers.set_index("g")["true"]
    tb = rels[1].answers.set_index("g")["true"]
    assert (ta - tb).abs().sum() == 2  # B → (other)
    # log p_D(y)/p_D'(y) = Σ_cells (|y_c − b_c| − |y_c − a_c|)/scale: its sup is the sum of the cells' sups
    y = np.linspace(-40, 40, 8001)[:, None]
    tb = tb.reindex(ta.index)
    worst = float(np.max(np.abs(np.abs(y - tb.to_numpy()) - np.abs(y - ta.to_numpy())), axis=0).sum() / scale)
    assert worst == pytest.approx(rels[0].extras["eps0_delivered"]) and worst <= 1.0 + 1e-9


def test_standard_histogram_threshold_and_guarantee():
    data = synthetic_attribute_data(20_000, 30, patterns=5, heavy_share=0.5, rng=np.random.default_rng(7))
    rel = standard_histogram(data, eps=1.0, rng=np.random.default_rng(8), reveal=True)
    t = rel.extras["threshold"]
    assert t == pytest.approx(standard_threshold(1.0, 2**30)) == pytest.approx(2 * 29 * math.log(2))
    assert (rel.answers["estimate"] > t).all() and rel.extras["scale"] == 2.0
    assert rel.entries[0].loss.value == 1.0
    acc = histogram_accuracy(data, rel, 0.01)
    assert acc["heavy_found"] == acc["heavy"] == 5
    small = encode_attributes(pd.DataFrame({"g": list("aab"), "h": [1.0, 50.0, 50.0]}), ["g", "h"],
                                {"g": ["a", "b"]})
    full = standard_histogram(small, eps=1.0, threshold=-math.inf, rng=np.random.default_rng(0), reveal=True)
    assert len(full.answers) == 3 * 11  # every cell of a small domain when asked
    # the published labels and cells match the true counts (dense path)
    truth = _true_counts_of(small, full.extras["cells"], true_histogram(small))
    assert np.array_equal(truth, full.answers["true"].to_numpy())
    assert full.answers.set_index(["g", "h"]).loc[("b", "10–99"), "true"] == 1
    with pytest.raises(ParameterError):
        standard_histogram(data, eps=1.0, threshold=-1.0, rng=np.random.default_rng(0))
    with pytest.raises(ResourceLimitError):
        standard_histogram(data, eps=1.0, threshold=0.0, rng=np.random.default_rng(0))


def test_compare_cells():
    data = synthetic_attribute_data(5_000, 12, patterns=4, heavy_share=0.8, rng=np.random.default_rng(9))
    h = heavy_hitter_histogram(data, eps0=1.0, nu=0.02, rng=np.random.default_rng(1), reveal=True)
    s = standard_histogram(data, eps=1.0, rng=np.random.default_rng(2), reveal=True)
    c = compare_cells(data, {"hh": h, "std": s}, top=5, truth=True)
    assert list(c.columns) == ["cell", "hh", "std", "true"] and len(c) == 5
    assert all(len(x) == 12 and set(x) <= {"0", "1"} for x in c["cell"])
    top = h.answers.iloc[0]
    assert top["estimate"] in set(c["hh"])
    assert (c["true"] >= 0).all()


# ---------------------------------------------------------------------------
# Noise at the claimed scale, with power against ±10% (KS)
# ---------------------------------------------------------------------------


def _ks_both_ways(sample, dist, scale):
    ok = stats.kstest(sample, dist(scale=scale).cdf).pvalue
    lo = stats.kstest(sample, dist(scale=0.9 * scale).cdf).pvalue
    hi = stats.kstest(sample, dist(scale=1.1 * scale).cdf).pvalue
    return ok, lo, hi


def test_heavy_hitter_counts_are_laplace_4_over_eps():
    """Second stage: Lap(4/ε0) on the final list (τ very low, so every candidate is listed)."""
    rng = np.random.default_rng(11)
    df = pd.DataFrame({"a": rng.integers(0, 150, 30_000).astype(str), "b": rng.integers(0, 140, 30_000).astype(str)})
    data = encode_attributes(df, ["a", "b"], {"a": [str(i) for i in range(150)], "b": [str(i) for i in range(140)]})
    rel = heavy_hitter_histogram(data, eps0=1.0, nu=0.01, tau=-1e6, rng=rng, reveal=True)
    resid = rel.answers["error"].to_numpy()
    assert len(resid) == 151 * 141
    ok, lo, hi = _ks_both_ways(resid, stats.laplace, 4.0)
    assert ok > 0.01 and lo < 1e-3 and hi < 1e-3


def test_standard_histogram_noise_dense():
    data = synthetic_attribute_data(5_000, 14, patterns=3, heavy_share=0.5, rng=np.random.default_rng(12))
    resid = np.concatenate([
        standard_histogram(data, eps=0.5, threshold=-math.inf, rng=np.random.default_rng(s), reveal=True)
        .answers["error"].to_numpy() for s in range(2)])
    assert len(resid) == 2 * 2**14
    ok, lo, hi = _ks_both_ways(resid, stats.laplace, 4.0)
    assert ok > 0.01 and lo < 1e-3 and hi < 1e-3


def test_standard_histogram_lazy_matches_dense():
    """Above the dense limit empty cells are drawn lazily: their number is Binomial(K_empty, ½e^{−t/b})
    and their values t + Exp(b) — the same distribution as drawing every cell."""
    data = synthetic_attribute_data(3_000, 16, patterns=2, heavy_share=0.3, rng=np.random.default_rng(13))
    K_empty = 2**16 - true_histogram(data).counts.size
    t, b = 3.0, 2.0
    p = 0.5 * math.exp(-t / b)
    vals, counts = [], []
    for s in range(3):
        rel = standard_histogram(data, eps=1.0, threshold=t, dense_limit=0, rng=np.random.default_rng(s),
                                   reveal=True)
        empty = rel.answers[rel.answers["true"] == 0]
        counts.append(len(empty))
        vals.append(empty["estimate"].to_numpy() - t)
        assert rel.extras["private_empty_released"] == len(empty)
        assert not rel.answers.duplicated(subset=list(data.names)).any()
    z = (sum(counts) - 3 * K_empty * p) / math.sqrt(3 * K_empty * p * (1 - p))
    assert abs(z) < 4
    ok, lo, hi = _ks_both_ways(np.concatenate(vals), stats.expon, b)
    assert ok > 0.01 and lo < 1e-3 and hi < 1e-3
    dense = standard_histogram(data, eps=1.0, threshold=t, rng=np.random.default_rng(9), reveal=True)
    n_dense = int((dense.answers["true"] == 0).sum())
    assert abs(n_dense - K_empty * p) < 5 * math.sqrt(K_empty * p)
