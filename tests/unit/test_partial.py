"""Granular (per-attribute) DP: accounting, workloads, the heavy-hitter accountant and histograms."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
from hypothesis import given
from hypothesis import strategies as st
from scipy import stats

from prdp_core import accounting as A
from prdp_core.errors import ParameterError, ResourceLimitError
from prdp_core.mechanisms import partial as P

# ---------------------------------------------------------------------------
# Per-attribute vs whole-record accounting (Prop. 8, Lemma 10)
# ---------------------------------------------------------------------------


def test_prop8_group_privacy():
    assert A.per_attribute_to_record(0.1, 10) == pytest.approx(1.0)
    assert A.per_attribute_to_record(0.1, 10, kind="cdp") == pytest.approx(0.5)  # ½(dε0)²
    assert A.per_attribute_to_record(1.0, 0) == 0
    with pytest.raises(ParameterError):
        A.per_attribute_to_record(-1, 3)
    with pytest.raises(ParameterError):
        A.per_attribute_to_record(1, 2.5)
    with pytest.raises(ParameterError):
        A.per_attribute_to_record(1, 2, kind="approx")


def test_prop8_delta_formula_is_the_textbook_conversion():
    """Prop. 8: δ̃ = exp(−(ε̃ − ½d²ε0²)²/(2d²ε0²)) is ε̃ = ρ + 2√(ρ ln 1/δ̃), ρ = ½d²ε0²."""
    for d, e0 in ((10, 0.1), (5, 0.7), (64, 0.05)):
        rho = A.per_attribute_to_record(e0, d, kind="cdp")
        for delta in (1e-3, 1e-6, 1e-10):
            eps = A.zcdp_to_approx_dp(rho, delta, method="textbook")
            assert math.exp(-((eps - 0.5 * d * d * e0 * e0) ** 2) / (2 * d * d * e0 * e0)) == pytest.approx(delta)


def test_lemma10_disjoint_releases():
    per, whole = A.disjoint_attribute_releases([0.02] * 20, measure="rho")
    assert per == 0.02 and whole == pytest.approx(0.4)  # "ε" √d·ε0 for the whole record
    assert math.sqrt(2 * whole) == pytest.approx(math.sqrt(20) * math.sqrt(2 * 0.02))
    assert A.disjoint_attribute_releases([0.1, 0.3], measure="eps") == (0.3, pytest.approx(0.4))
    assert A.disjoint_attribute_releases([], measure="eps") == (0.0, 0.0)


def test_census_preset_reproduces_the_paper():
    rel = P.census_2020_illustrative()
    whole = A.attribute_subset_rho(rel, {a for r in rel for a in r.attributes})
    assert whole == pytest.approx(2.63)
    assert A.zcdp_to_approx_dp(whole, 1e-6) == pytest.approx(13.79, abs=0.01)
    race = A.attribute_subset_rho(rel, ["race", "ethnicity"])
    assert race == pytest.approx(1.02)
    assert A.zcdp_to_approx_dp(race, 1e-6) == pytest.approx(7.856, abs=0.005)
    table = A.attribute_rho_table(rel, 1e-6)
    assert table["attribute"].iloc[-1] == "(whole record)" and table["rho"].iloc[-1] == pytest.approx(2.63)
    assert table.set_index("attribute").loc["geography", "rho"] == pytest.approx(2.63)
    curve = P.subset_curve(rel, ["race", "ethnicity", "voting age"])
    assert list(curve["rho"]) == pytest.approx([1.02, 1.02, 1.64])


releases_st = st.lists(st.tuples(st.sets(st.sampled_from("abcdef"), min_size=1, max_size=4),
                                 st.floats(0, 5, allow_nan=False)), min_size=1, max_size=8)


@given(releases_st, st.sets(st.sampled_from("abcdef")), st.sets(st.sampled_from("abcdef")))
def test_subset_accountant_monotone_subadditive(spec, s, t):
    rel = [A.AttributeRelease(f"r{i}", frozenset(a), r) for i, (a, r) in enumerate(spec)]
    rs, rt, rst = (A.attribute_subset_rho(rel, x) for x in (s, t, s | t))
    assert rst <= rs + rt + 1e-9
    assert rst >= max(rs, rt) - 1e-12
    assert A.attribute_subset_rho(rel, "abcdef") == pytest.approx(sum(r for _, r in spec))


def test_release_table_round_trip_and_errors():
    rel = P.census_2020_illustrative()
    back = P.releases_from_table(P.releases_table(rel))
    assert [(r.label, r.attributes, r.rho) for r in back] == [(r.label, r.attributes, r.rho) for r in rel]
    blank = pd.DataFrame({"release": ["x", None], "attributes": ["a, b", None], "rho": [0.5, None]})
    assert len(P.releases_from_table(blank)) == 1
    with pytest.raises(ParameterError, match="no ρ"):
        P.releases_from_table(pd.DataFrame({"release": ["x"], "attributes": ["a"], "rho": [None]}))
    with pytest.raises(ParameterError, match="number"):
        P.releases_from_table(pd.DataFrame({"release": ["x"], "attributes": ["a"], "rho": ["lots"]}))
    with pytest.raises(ParameterError, match="reads no attribute"):
        P.releases_from_table(pd.DataFrame({"release": ["x"], "attributes": [" , "], "rho": [1.0]}))
    with pytest.raises(ParameterError, match="columns"):
        P.releases_from_table(pd.DataFrame({"name": ["x"]}))


# ---------------------------------------------------------------------------
# Gaussian workloads (Thm 11)
# ---------------------------------------------------------------------------


def test_workload_ratios_of_the_notes():
    assert P.workload_ratio("conjunctions", 10, 2) == pytest.approx(2.236, abs=1e-3)
    assert P.workload_ratio("conjunctions", 12, 3) == pytest.approx(2.0)
    assert P.workload_ratio("conjunctions", 14, 2) == pytest.approx(2.646, abs=1e-3)
    assert P.workload_ratio("marginals", 30, 3) == pytest.approx(math.sqrt(10))
    full = P.workload_sensitivity("conjunctions", 10, 2, 10)
    sub = [P.workload_sensitivity("conjunctions", 10, 2, s) / full for s in (1, 2, 3, 5, 10)]
    assert sub == pytest.approx([0.447, 0.615, 0.730, 0.882, 1.0], abs=1e-3)
    assert P.workload_sensitivity("parities", 6, 2, 6) ** 2 == 9  # ⌊d²/4⌋ < C(6,2) = 15
    assert P.workload_size("marginals", 5, 2) == 40 and P.workload_size("parities", 5, 2) == 10


def test_workload_calibration():
    cal = P.calibrate_workload("marginals", 20, 2, 0.2, n=1000)
    assert cal.sigma == pytest.approx(P.workload_sensitivity("marginals", 20, 2, 1) / (0.2 * 1000))
    assert cal.eps_record == pytest.approx(0.2 * math.sqrt(10))
    assert cal.rho_record == pytest.approx(0.5 * 0.04 * 10)
    assert cal.eps_subset(20) == pytest.approx(cal.eps_record) and cal.eps_subset(1) == pytest.approx(0.2)
    with pytest.raises(ParameterError):
        P.workload_sensitivity("cubes", 5, 2, 1)
    with pytest.raises(ParameterError):
        P.workload_sensitivity("marginals", 5, 6, 1)


def test_granularity_and_record_cost_tables():
    g = P.granularity_table(10, 0.1, k=2, kind="cdp")
    assert list(g.columns) == ["attributes", "group", "disjoint", "workload"]
    assert g["group"].iloc[-1] == pytest.approx(1.0) and g["disjoint"].iloc[-1] == pytest.approx(0.1 * math.sqrt(10))
    assert g["workload"].iloc[-1] == pytest.approx(0.1 * math.sqrt(5))
    assert (g["workload"] <= g["group"] + 1e-12).all()
    gp = P.granularity_table(10, 0.1, kind="pure")
    assert "workload" not in gp and gp["disjoint"].iloc[-1] == pytest.approx(1.0)
    c = P.record_cost_table(20, 0.2, k=2, delta=1e-6).set_index("statement")
    whole = c.iloc[2]
    assert whole["pure"] == pytest.approx(4.0) and whole["rho"] == pytest.approx(8.0)
    assert whole["eps_cks"] == pytest.approx(A.zcdp_to_approx_dp(8.0, 1e-6))
    assert c.iloc[3]["rho"] == pytest.approx(0.4) and c.iloc[4]["rho"] == pytest.approx(0.2)
    r = P.record_ratio_table(50, k=2)
    assert r["workload"].iloc[-1] == pytest.approx(5.0) and math.isnan(r["workload"].iloc[0])


# ---------------------------------------------------------------------------
# The heavy-hitter accountant (Algorithm 2)
# ---------------------------------------------------------------------------


def test_exact_accountant_values_of_the_notes():
    for lam, target in ((1, 2.49), (3, 2.75), (8, 2.89), (20, 2.95)):
        assert lam * P.hh_epsilon_exact(lam, lam * math.log(1600), 6) == pytest.approx(target, abs=5e-3)
    assert P.hh_epsilon_exact(3.0, 3 * math.log(1600), 6) == pytest.approx(0.9162, abs=5e-4)
    for lam in (0.7, 2.0, 9.0):
        assert P.hh_epsilon_exact(lam, 10 * lam, 1) == pytest.approx(2 / lam)
        assert P.hh_epsilon_exact(lam, 10 * lam, 2) == pytest.approx(2 / lam + math.log(2 - math.exp(-1 / lam)),
                                                                       rel=1e-9)


def test_exact_accountant_below_lemma28_on_a_grid():
    for lam in (0.5, 1, 3, 10, 50):
        for ratio in (1.0, 2.0, 5.0, 10.0):
            mu = max(lam * ratio, 1.0)
            for L in (1, 2, 3, 6, 12):
                ex = P.hh_epsilon_exact(lam, mu, L)
                assert ex <= P.hh_epsilon_lemma28(lam, mu) + 1e-12
                assert ex >= 2 / lam - 1e-12
    # non-decreasing in the number of levels
    vals = [P.hh_epsilon_exact(2.0, 6.0, L) for L in range(1, 9)]
    assert all(b >= a - 1e-12 for a, b in zip(vals, vals[1:]))


@given(st.floats(0.5, 20), st.floats(1.0, 10.0), st.lists(st.floats(0, 30), min_size=1, max_size=6),
       st.floats(-40, 10))
def test_uneven_margins_never_beat_the_accountant(lam, ratio, extra_gaps, start):
    """Counts shrink along the tree, so margins fall by ≥ µ per level; the accountant takes the
    supremum over evenly spaced margins — any larger gaps must not give more."""
    mu = max(ratio * lam, 1.0)
    margins = start + np.cumsum([0.0] + [mu + g for g in extra_gaps])
    total = float(np.sum(P._h(margins, lam, mu)))
    assert 1 / lam + total <= P.hh_epsilon_exact(lam, mu, len(margins)) + 1e-9


def test_accountant_rejects_small_mu():
    with pytest.raises(ParameterError, match="µ"):
        P.hh_epsilon_exact(1.0, 0.5, 3)
    assert P.hh_levels(1) == 0 and P.hh_levels(2) == 1 and P.hh_levels(5) == 3 and P.hh_levels(256) == 8


def test_calibrations():
    ex = P.calibrate_heavy_hitter_histogram(1.0, 0.01, 64, method="exact")
    assert ex.lam == pytest.approx(5.70, abs=0.01)
    assert ex.mu == pytest.approx(ex.lam * math.log(1600))
    assert ex.count_scale == pytest.approx(4.0)
    assert ex.eps_heavy_hitters <= 0.5 and ex.eps_heavy_hitters == pytest.approx(0.5, abs=1e-8)
    assert ex.eps_counts == pytest.approx(0.5) and ex.eps_composed <= 1.0 + 1e-9
    assert ex.eps_joint == pytest.approx(0.8246, abs=1e-4) and ex.meets_target
    assert ex.whole_record(64) == pytest.approx(64 * ex.eps_heavy_hitters + 0.5)
    l28 = P.calibrate_heavy_hitter_histogram(1.0, 0.01, 64, method="lemma28")
    assert l28.lam == pytest.approx(8.0, abs=0.01) and l28.eps_heavy_hitters_lemma28 <= 0.5 + 1e-12
    assert l28.eps_heavy_hitters < 0.5 and l28.meets_target
    paper = P.calibrate_heavy_hitter_histogram(1.0, 0.01, 64, method="paper")
    assert paper.lam == 3.0 and paper.count_scale == 2.0
    assert paper.eps_heavy_hitters == pytest.approx(0.916, abs=1e-3)
    assert paper.eps_heavy_hitters_lemma28 == pytest.approx(1.334, abs=1e-3)
    assert paper.eps_joint == pytest.approx(1.583, abs=1e-3) and not paper.meets_target
    one = P.calibrate_heavy_hitter_histogram(2.0, 0.01, 1)
    assert one.levels == 0 and one.count_scale == pytest.approx(1.0) and one.delivered == 2.0
    for eps in (0.1, 0.5, 3.0, 10.0):
        c = P.calibrate_heavy_hitter_histogram(eps, 0.02, 16)
        assert c.eps_heavy_hitters <= 0.5 * eps * (1 + 1e-9) and c.meets_target
    t = P.calibration_table(1.0, 0.01, 64)
    assert list(t["meets_claim"]) == [False, True, True]
    with pytest.raises(ParameterError):
        P.calibrate_heavy_hitter_histogram(1.0, 0.01, 8, method="guess")
    with pytest.raises(ParameterError):
        P.calibrate_heavy_hitter_histogram(0, 0.01, 8)
    with pytest.raises(ParameterError):
        P.calibrate_heavy_hitter_histogram(1.0, 0.9, 8)


# ---------------------------------------------------------------------------
# Data and the algorithms
# ---------------------------------------------------------------------------


def test_encode_attributes():
    df = pd.DataFrame({"state": ["A", "B", None, "C"], "emp": [0.0, 5.0, 250.0, 2e10], "x": [1, 2, 3, 4],
                       "flag": [True, False, True, True]})
    data = P.encode_attributes(df, ["state", "emp"], {"state": ["A", "B"], "unused": ["z"]})
    assert data.names == ("state", "emp") and data.n == 4 and data.public_domains
    assert data.domains[0] == ("A", "B", "(other)")  # missing and undeclared values: "(other)"
    assert [data.domains[0][c] for c in data.codes[:, 0]] == ["A", "B", "(other)", "(other)"]
    assert [data.domains[1][c] for c in data.codes[:, 1]] == ["<1", "1–9", "100–999", "≥1B"]
    assert data.cells == 3 * 11
    assert data.notes[0] == "state: 2 declared public categories + (other)"
    # text declarations, numbers declared as categories, booleans, "(missing)" declared
    d2 = P.encode_attributes(df, ["x", "state", "flag"], {"x": "1, 2,\n3", "state": ["A", "(missing)"]})
    assert d2.domains == (("1", "2", "3", "(other)"), ("A", "(missing)", "(other)"), ("False", "True", "(other)"))
    assert d2.codes[:, 0].tolist() == [0, 1, 2, 3] and d2.codes[:, 1].tolist() == [0, 2, 1, 2]
    assert d2.codes[:, 2].tolist() == [1, 0, 1, 1]
    # an undeclared text column is refused; from the data only for exploration
    with pytest.raises(ParameterError, match="Declare the public categories of 'state'"):
        P.encode_attributes(df, ["state"])
    ex = P.encode_attributes(df, ["state"], from_data=True)
    assert ex.domains[0] == ("(missing)", "A", "B", "C") and not ex.public_domains
    assert "teaching only" in ex.notes[0] and "teaching only" in ex.domain_source
    with pytest.raises(ParameterError, match="at least one category"):
        P.encode_attributes(df, ["state"], {"state": " , "})
    with pytest.raises(ParameterError, match="No column"):
        P.encode_attributes(df, ["nope"])
    with pytest.raises(ParameterError, match="at least one"):
        P.encode_attributes(df, [])
    big = pd.DataFrame({"id": [f"r{i}" for i in range(P.MAX_DOMAIN + 1)]})
    with pytest.raises(ResourceLimitError):
        P.encode_attributes(big, ["id"], from_data=True)
    with pytest.raises(ResourceLimitError):
        P.encode_attributes(big, ["id"], {"id": big["id"].tolist()})


def test_sample_domains_cover_the_samples():
    """The documented domains hold every value the registered samples produce (nothing falls in "(other)")."""
    from prdp_core import samples

    for name, doms in P.SAMPLE_DOMAINS.items():
        if name not in samples.names():
            continue
        n = 5 if name == "table2_example" else None if samples.info(name).kind == "real" else 20_000
        table = samples.load(name, n=n, seed=1)
        data = P.encode_attributes(table, list(doms), P.sample_domains(name))
        for j, c in enumerate(doms):
            assert data.domains[j][-1] == "(other)"
            assert not (data.codes[:, j] == len(data.domains[j]) - 1).any(), (name, c)
    assert P.sample_domains("nope") == {}


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
        data = P.encode_attributes(t, ["g", "h"], dom)
        std = P.standard_histogram(data, eps=1.0, rng=np.random.default_rng(1))
        hh = P.heavy_hitter_histogram(P.encode_attributes(t, ["g"], dom), eps0=1.0, rng=np.random.default_rng(1))
        out.append((data.domains, data.cells, std.params["cells_log10"], std.params["threshold"],
                    std.params["domains"], sorted(hh.answers["g"])))
    assert out[0] == out[1]
    assert out[0][5] == ["(other)", "A", "B"]  # the whole public domain, never "Z"
    assert out[0][2] == pytest.approx(math.log10(9)) and out[0][3] == pytest.approx(P.standard_threshold(1.0, 9))
    # the exploration mode is the old behaviour and says so
    ex = [P.standard_histogram(P.encode_attributes(t, ["g", "h"], from_data=True), eps=1.0,
                               rng=np.random.default_rng(1)) for t in (a, b)]
    assert ex[0].params["cells_log10"] != ex[1].params["cells_log10"]
    assert all("TEACHING ONLY" in r.entries[0].label and r.extras["teaching_only"] for r in ex)


def test_one_attribute_heavy_hitter_output_distribution_on_neighbours():
    """d = 1: the released cells are the declared domain and the counts Lap(b); the exact log-density
    ratio of the released vector on neighbours is ≤ ε0 (a record moves between two cells)."""
    a, b = _neighbours_one_attribute_changed()
    dom = {"g": ["A", "B"]}
    rels = [P.heavy_hitter_histogram(P.encode_attributes(t, ["g"], dom), eps0=1.0, rng=np.random.default_rng(5),
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


def test_synthetic_data():
    data = P.synthetic_attribute_data(10_000, 40, patterns=5, heavy_share=0.6, rng=np.random.default_rng(0))
    assert data.codes.shape == (10_000, 40) and data.codes.flags.f_contiguous
    truth = P.true_histogram(data)
    assert truth.counts.max() > 0.6 * 10_000 / 5  # the top Zipf pattern
    assert (truth.counts == 1).sum() > 3_000  # the sparse tail
    with pytest.raises(ResourceLimitError):
        P.synthetic_attribute_data(10**7, 1000, rng=np.random.default_rng(0))


def test_heavy_hitters_find_every_heavy_pattern():
    nu = 0.01
    data = P.synthetic_attribute_data(60_000, 64, patterns=15, heavy_share=0.6, rng=np.random.default_rng(2))
    rel = P.heavy_hitter_histogram(data, eps0=1.0, nu=nu, rng=np.random.default_rng(3), seed=3, reveal=True)
    acc = P.histogram_accuracy(data, rel, nu)
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
    data = P.synthetic_attribute_data(5_000, 6, patterns=3, heavy_share=0.9, rng=np.random.default_rng(4))
    run = P.priv_heavy_hitters(data, lam=2.0, mu=8.0, tau=100.0, rng=np.random.default_rng(5))
    assert run.levels == 3 and run.codes.shape[1] == 6
    root = run.node_strings(3, 0)
    assert np.array_equal(root[:, :6], run.codes) and (root[:, 6:] == 0).all()  # padded attributes are constant
    for level in (1, 2, 3):
        for index in range(8 // 2**level):
            lst = run.node_strings(level, index)
            half = lst.shape[1] // 2
            left = {tuple(r) for r in run.node_strings(level - 1, 2 * index)}
            assert all(tuple(r[:half]) in left for r in lst)
    truth = P.true_histogram(data)
    keys = P._row_keys(run.codes, data.domain_sizes)
    pos = np.searchsorted(truth.keys, keys)
    assert np.array_equal(truth.counts[pos], run.counts)


def test_heavy_hitter_on_categorical_columns_and_one_attribute():
    rng = np.random.default_rng(6)
    df = pd.DataFrame({"a": rng.choice(list("xyz"), 3000, p=[0.7, 0.2, 0.1]),
                       "b": rng.choice(list("pq"), 3000), "c": rng.integers(0, 50, 3000).astype(float)})
    dom = {"a": list("xyz"), "b": list("pq")}
    data = P.encode_attributes(df, ["a", "b", "c"], dom)
    rel = P.heavy_hitter_histogram(data, eps0=2.0, nu=0.05, rng=rng, reveal=True)
    assert set(rel.answers.columns) >= {"a", "b", "c"}
    assert rel.params["cal_levels"] == 2 and rel.params["domains"] == P.DOMAIN_PUBLIC
    one = P.heavy_hitter_histogram(P.encode_attributes(df, ["a"], dom), eps0=1.0, rng=rng, reveal=True)
    assert len(one.answers) == 4 and (one.answers["scale"] == 2.0).all()  # x, y, z and (other)
    assert one.extras["whole_record"] == pytest.approx(1.0)


def test_candidate_limit_is_a_resource_error():
    df = pd.DataFrame({"a": [str(i) for i in range(3000)], "b": [str(i % 2000) for i in range(3000)]})
    data = P.encode_attributes(df, ["a", "b"], from_data=True)
    with pytest.raises(ResourceLimitError, match="combinations"):
        P.priv_heavy_hitters(data, lam=1.0, mu=5.0, tau=10.0, rng=np.random.default_rng(0), max_candidates=10**6)


def test_standard_histogram_threshold_and_guarantee():
    data = P.synthetic_attribute_data(20_000, 30, patterns=5, heavy_share=0.5, rng=np.random.default_rng(7))
    rel = P.standard_histogram(data, eps=1.0, rng=np.random.default_rng(8), reveal=True)
    t = rel.extras["threshold"]
    assert t == pytest.approx(P.standard_threshold(1.0, 2**30)) == pytest.approx(2 * 29 * math.log(2))
    assert (rel.answers["estimate"] > t).all() and rel.extras["scale"] == 2.0
    assert rel.entries[0].loss.value == 1.0
    acc = P.histogram_accuracy(data, rel, 0.01)
    assert acc["heavy_found"] == acc["heavy"] == 5
    small = P.encode_attributes(pd.DataFrame({"g": list("aab"), "h": [1.0, 50.0, 50.0]}), ["g", "h"],
                                {"g": ["a", "b"]})
    full = P.standard_histogram(small, eps=1.0, threshold=-math.inf, rng=np.random.default_rng(0), reveal=True)
    assert len(full.answers) == 3 * 11  # every cell of a small domain when asked
    # the published labels and cells match the true counts (dense path)
    truth = P._true_counts_of(small, full.extras["cells"], P.true_histogram(small))
    assert np.array_equal(truth, full.answers["true"].to_numpy())
    assert full.answers.set_index(["g", "h"]).loc[("b", "10–99"), "true"] == 1
    with pytest.raises(ParameterError):
        P.standard_histogram(data, eps=1.0, threshold=-1.0, rng=np.random.default_rng(0))
    with pytest.raises(ResourceLimitError):
        P.standard_histogram(data, eps=1.0, threshold=0.0, rng=np.random.default_rng(0))


def test_compare_cells():
    data = P.synthetic_attribute_data(5_000, 12, patterns=4, heavy_share=0.8, rng=np.random.default_rng(9))
    h = P.heavy_hitter_histogram(data, eps0=1.0, nu=0.02, rng=np.random.default_rng(1), reveal=True)
    s = P.standard_histogram(data, eps=1.0, rng=np.random.default_rng(2), reveal=True)
    c = P.compare_cells(data, {"hh": h, "std": s}, top=5, truth=True)
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
    data = P.encode_attributes(df, ["a", "b"], {"a": [str(i) for i in range(150)], "b": [str(i) for i in range(140)]})
    rel = P.heavy_hitter_histogram(data, eps0=1.0, nu=0.01, tau=-1e6, rng=rng, reveal=True)
    resid = rel.answers["error"].to_numpy()
    assert len(resid) == 151 * 141
    ok, lo, hi = _ks_both_ways(resid, stats.laplace, 4.0)
    assert ok > 0.01 and lo < 1e-3 and hi < 1e-3


def test_standard_histogram_noise_dense():
    data = P.synthetic_attribute_data(5_000, 14, patterns=3, heavy_share=0.5, rng=np.random.default_rng(12))
    resid = np.concatenate([
        P.standard_histogram(data, eps=0.5, threshold=-math.inf, rng=np.random.default_rng(s), reveal=True)
        .answers["error"].to_numpy() for s in range(2)])
    assert len(resid) == 2 * 2**14
    ok, lo, hi = _ks_both_ways(resid, stats.laplace, 4.0)
    assert ok > 0.01 and lo < 1e-3 and hi < 1e-3


def test_standard_histogram_lazy_matches_dense():
    """Above the dense limit empty cells are drawn lazily: their number is Binomial(K_empty, ½e^{−t/b})
    and their values t + Exp(b) — the same distribution as drawing every cell."""
    data = P.synthetic_attribute_data(3_000, 16, patterns=2, heavy_share=0.3, rng=np.random.default_rng(13))
    K_empty = 2**16 - P.true_histogram(data).counts.size
    t, b = 3.0, 2.0
    p = 0.5 * math.exp(-t / b)
    vals, counts = [], []
    for s in range(3):
        rel = P.standard_histogram(data, eps=1.0, threshold=t, dense_limit=0, rng=np.random.default_rng(s),
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
    dense = P.standard_histogram(data, eps=1.0, threshold=t, rng=np.random.default_rng(9), reveal=True)
    n_dense = int((dense.answers["true"] == 0).sum())
    assert abs(n_dense - K_empty * p) < 5 * math.sqrt(K_empty * p)
