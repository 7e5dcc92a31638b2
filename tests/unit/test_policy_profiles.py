"""Loss-profile helpers agree with brute force; owner losses follow Lemmas 4 and 5."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from prdp_core.core.errors import ParameterError
from prdp_core.core.loss_profile import LossProfile, ecdf, owner_losses

losses = st.lists(st.sampled_from([0.5, 1.0, 2.0, 4.5, 8.0, 12.5, 50.0]), min_size=1, max_size=200).map(np.array)


@given(losses)
def test_ecdf_matches_brute_force(v):
    x, y = ecdf(v)
    for xi, yi in zip(x, y):
        assert yi == pytest.approx(np.mean(v <= xi))
    assert y[-1] == pytest.approx(1.0)


@given(st.lists(st.floats(0, 1e6), min_size=1, max_size=500).map(np.array))
def test_ecdf_thinning_passes_through_exact_points(v):
    x, y = ecdf(v, max_points=10)
    for xi, yi in zip(x, y):
        assert yi == pytest.approx(np.mean(v <= xi))
    assert x[-1] == v.max()


@given(losses, st.floats(0, 60))
def test_share_above_and_top_k(v, level):
    p = LossProfile(v)
    assert p.share_above(level) == pytest.approx(np.mean(v > level * (1 + 1e-12)))
    idx, top = p.top_k(3)
    assert np.allclose(top, np.sort(v)[::-1][: len(top)])
    assert np.allclose(v[idx], top)


def test_by_group_summary():
    p = LossProfile(np.array([1.0, 4.0, 1.0, 9.0]))
    t = p.by_group(np.array(["a", "a", "b", "b"]))
    assert t["max"].tolist() == [4.0, 9.0]
    assert t["share_above_base"].tolist() == [0.5, 0.5]


def test_owner_losses_lemma4_and_pure():
    v = np.array([1.0, 4.0, 9.0, 2.0])
    own = np.array(["f1", "f1", "f1", "f2"])
    lem4 = owner_losses(v, own)
    assert lem4["f1"] == 3 * 14.0 and lem4["f2"] == 2.0
    pure = owner_losses(v, own, measure="eps")
    assert pure["f1"] == 14.0


def test_lemma5_two_records_closed_form():
    # J = 2: inf_k is P1 + P2 + 2·sqrt(P1·P2) (proof of Lemma 5)
    for p1, p2 in [(9.0, 1.0), (4.0, 4.0), (100.0, 1.0)]:
        got = owner_losses(np.array([p2, p1]), np.array(["f", "f"]), method="lemma5", k_grid=4000)["f"]
        exact = p1 + p2 + 2 * np.sqrt(p1 * p2)
        assert exact <= got <= exact * 1.001
        assert got <= owner_losses(np.array([p2, p1]), np.array(["f", "f"]))["f"] + 1e-9


@given(st.lists(st.floats(0.1, 50), min_size=1, max_size=6))
def test_lemma5_matches_brute_force_and_never_exceeds_lemma4(v):
    v = np.array(v)
    got = owner_losses(v, np.zeros(v.size, dtype=int), method="lemma5", k_grid=1000)[0]
    s = np.sort(v)[::-1]
    ks = 1 + np.logspace(-4, 3, 3000)
    J = v.size

    def chain(k):  # the proof of Lemma 5: last step has coefficient k^(J-1)
        c = k ** np.arange(1, J + 1) / (k - 1)
        c[-1] = k ** (J - 1)
        return float(np.sum(c * s))

    brute = min(min(chain(k) for k in ks), J * v.sum())
    assert got == pytest.approx(brute, rel=5e-3)
    assert got <= J * v.sum() + 1e-9


def test_profile_validation():
    with pytest.raises(ParameterError):
        LossProfile(np.array([1.0, -1.0]))
    with pytest.raises(ParameterError):
        LossProfile(np.array([1.0]), measure="delta")  # type: ignore[arg-type]
    with pytest.raises(ParameterError):
        owner_losses(np.array([1.0]), np.array(["a", "b"]))


def test_plain_language():
    p = LossProfile(np.array([1.0] * 99 + [4.0]))
    assert p.plain_language(1.0) == "1 in 100 records pays more than 1ρ; the largest loss is 4ρ."
    assert LossProfile(np.array([1.0, 2.0e5]), "eps").plain_language(1.0, noun="firms") == \
        "1 in 2 firms pays more than 1ε; the largest loss is 200,000ε."
    assert LossProfile(np.array([1.0, 2.0, 3.0, 2.0e5]), "eps").plain_language(1.0, noun="firms") == \
        "75% of firms pay more than 1ε; the largest loss is 200,000ε."


@given(st.lists(st.tuples(st.integers(0, 40), st.floats(0, 50)), min_size=1, max_size=60))
def test_owner_losses_of_integer_ids_match_the_general_path(rows):
    """Integer owner ids (the dense-counting path) give the same owners, order and losses as labels."""
    import pandas as pd

    ids = np.array([r[0] for r in rows])
    p = np.array([r[1] for r in rows])
    for method in ("lemma4", "lemma5"):
        a = owner_losses(p, ids, method=method)
        b = owner_losses(p, pd.Series([f"{i:03d}" for i in ids], dtype=object), method=method)
        assert list(a.index) == [int(x) for x in b.index]
        np.testing.assert_allclose(a.to_numpy(), b.to_numpy())


def test_preview_group_summary_matches_the_profile_and_drops_missing_labels():
    import pandas as pd

    from prdp_core.core.splitting import as_thresholds
    from prdp_core.core.workload import SplittingPolicy, default_workload
    from prdp_core.data import samples
    from prdp_core.mechanisms.preview import preview_policy

    ds = samples.load_dataset("cbp_like", n=3000, seed=1)
    ds.table.loc[ds.table.index[:7], "STATE"] = None
    pol = SplittingPolicy(as_thresholds({m: 5.0 for m in ds.schema.measures}),
                          default_workload(ds.schema.measures, ("COUNTY",), rho_count=0.5, rho_sum=0.25))
    prev = preview_policy(ds, pol)
    got = prev.by_group("STATE")
    want = prev.records.by_group(ds.table["STATE"].to_numpy(), name="STATE")
    pd.testing.assert_frame_equal(got, want, check_dtype=False)
    assert got["records"].sum() == 3000 - 7
    with pytest.raises(Exception, match="not in the dataset"):
        prev.by_group("NOPE")
