"""Secure paths of the PrDP sum extension, the naive baselines and PrLDP (Algorithms 3–5).

Each release is checked for its mode (secure, unseeded, in the ledger), its grid and its per-record
losses; the noise each path adds is checked against the exact pmf of the discrete Laplace it claims,
with power to reject a 10% error in the scale, and a deliberately miscalibrated sampler is rejected.
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import yaml

import prdp_core
from prdp_core.commands.cli import main as cli_main
from prdp_core.core.accounting import Ledger
from prdp_core.core.secure import SECURE_LABEL, SecureSampler, grid_for
from prdp_core.mechanisms import prdp
from prdp_core.mechanisms.prdp import local as prldp
from prdp_core.mechanisms.prdp.budget import inverse
from prdp_core.mechanisms.prdp.extension import extension_stats, secure_extension_selection

from .secure_laws import BatchSampler, BrokenBatchSampler, SkewedSampler, chi2_dlap_p

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


def _bank(n: int = 4_000) -> pd.DataFrame:
    return prdp_core.data.samples.load("bank_normal_50k", n=n, seed=1)


BUD = inverse(1e4, "BALANCE", eps_max=100.0, U=1e6)


def _secure_entry(rel) -> None:
    assert rel.secure and rel.seed is None and rel.entries[0].secure and rel.entries[0].seed is None
    assert "secure" in rel.params
    row = Ledger().extend(rel.entries).summary().iloc[0]
    assert row["mode"] == SECURE_LABEL and bool(row["secure"]) and row["seed"] is None
    assert rel.check_delivered_within_requested()


# ---------------------------------------------------------------------------
# central: the Sec. 5.2 sum extension and the naive baseline
# ---------------------------------------------------------------------------


def test_secure_sum_extension_release_is_on_the_grids_and_within_budget():
    df = _bank()
    rel = prdp.sum_extension(df, BUD, beta=0.1, secure=True, reveal=True)
    _secure_entry(rel)
    ex = rel.extras
    live = ex["value_bounds"] > 0
    assert np.all(np.mod(ex["noisy_sums"][live], ex["grids"][live]) == 0)
    assert np.all(ex["noisy_sums"][~live] == 0)
    # each record pays u(v)/t_i ≤ 2^(i−1)ε̌, the bound of its domain
    dp_ = BUD.domains()
    idx = dp_.index(BUD(df))
    assert np.all(rel.loss <= dp_.lo[idx - 1] * (1 + 1e-12)) and rel.loss.max() > 0
    # effective scales: at least the continuous b_i, at most 2^-10 above
    st = extension_stats(df, BUD)
    sc = ex["scales"][live]
    assert np.all(sc >= st.scales[live] * (1 - 1e-12)) and np.all(sc <= st.scales[live] * (1 + 2.0**-10) * (1 + 1e-9))
    assert abs(rel.answers["rel_error"].iloc[0]) < 0.2


def test_secure_sum_extension_noise_has_the_claimed_law_and_a_broken_sampler_fails():
    """One domain (ε̌ = ε̂), bits = 0: the noise on the domain's sum is DLap(⌈v̄/g⌉/ε̌) in grid units."""
    df = pd.DataFrame({"v": np.full(200, 3.0)})
    bud = inverse(2.0, "v", eps_max=0.5, U=4.0)  # E = 2/v ≥ 0.5 on [0, 4]: a single domain
    st = extension_stats(df, bud)
    dp_ = bud.domains()
    assert dp_.L == 1
    g = grid_for(float(st.v_bar[0]), 0)
    scale = math.ceil(st.v_bar[0] / g) / dp_.lo[0]  # grid units
    good, bad = BatchSampler(bits=0), BrokenBatchSampler(1.1, bits=0)
    sel, _, grids, _ = secure_extension_selection(st, dp_, 0.1, good)
    assert grids[0] == g and sel.noisy[0, 0] % g == 0
    secure_extension_selection(st, dp_, 0.1, bad)
    assert len(good.batches) == 1 and chi2_dlap_p(good.batches[0], scale) > 1e-6
    assert chi2_dlap_p(bad.batches[0], scale) < 1e-4


@pytest.mark.parametrize("query", ["count", "sum", "max"])
def test_secure_naive_baseline(query):
    df = _bank(3_000)
    rel = prdp.naive(df, BUD, query, beta=0.1, secure=True, reveal=True)
    _secure_entry(rel)
    np.testing.assert_allclose(rel.loss, BUD.eps_min)
    est = float(rel.answers["estimate"].iloc[0])
    if query == "count":
        assert est == round(est)
    elif query == "sum":
        assert est % grid_for(rel.extras["tau"]) == 0


# ---------------------------------------------------------------------------
# local: Algorithms 3–5 and the local naive baseline
# ---------------------------------------------------------------------------


def test_secure_randomiser_reports_have_the_claimed_law_per_domain():
    """Algorithm 3's secure reports: coordinate i is 1[r ∈ X_i] + DLap(1/2^(i−1)ε̌) (χ² per domain
    over 30,000 parties), and a 10% miscalibration is rejected."""
    eps = np.full(30_000, 0.3)
    rep = prldp.secure_randomise(eps, eps_min=0.3, eps_max=0.6, sampler=SecureSampler())
    assert rep.shape == (30_000, 1) and rep.dtype == np.int64
    noise_ = rep[:, 0] - 1
    assert chi2_dlap_p(noise_, 1 / 0.3) > 1e-6
    bad = prldp.secure_randomise(eps, eps_min=0.3, eps_max=0.6, sampler=SkewedSampler(1.1))[:, 0] - 1
    assert chi2_dlap_p(bad, 1 / 0.3) < 1e-4
    # two domains: the second coordinate of a domain-1 party is pure DLap(1/0.6)
    rep2 = prldp.secure_randomise(np.full(30_000, 0.5), eps_min=0.3, eps_max=1.2, sampler=SecureSampler())
    assert rep2.shape[1] == 2 and chi2_dlap_p(rep2[:, 1], 1 / 0.6) > 1e-6 and chi2_dlap_p(rep2[:, 1], 1.1 / 0.6) < 1e-4


def test_secure_round_two_sum_reports_have_the_claimed_law():
    """Round II of Algorithm 5 (sum): every ⊥ party sends DLap(⌈τ/g⌉/(ε_τ/2)) grid units; the total of
    n such reports is exact in integers; each party's report passes a χ² against that pmf (bits = 0 grid),
    a 10% miscalibration does not."""
    df = pd.DataFrame({"v": np.full(30_000, 8.0)})
    bud = inverse(1.0, "v", eps_max=8.0, U=16.0)  # every party has E = 1/8
    d = prldp._LocalData(df, bud, "sum:v")
    eps_tau = 4 / 3  # above every party's budget: no party is kept, every report is noise only
    tau = d.clip_bound(eps_tau)
    g = grid_for(tau, 0)
    scale = math.ceil(tau / g) / (eps_tau / 2)
    assert tau == pytest.approx(0.75) and g == 0.5 and scale == pytest.approx(3.0)

    class Capture(SecureSampler):
        def laplace_answers(self, units, grid, sensitivity, eps):  # type: ignore[override]
            a = super().laplace_answers(units, grid, sensitivity, eps)
            self.units = a.units
            return a

    for smp, ok in ((Capture(bits=0), True), (type("B", (Capture, SkewedSampler), {})(1.1, bits=0), False)):
        total, _ = d.secure_round_two(eps_tau, smp)
        assert total % g == 0 and total == float(smp.units.sum()) * g
        p = chi2_dlap_p(smp.units, scale)
        assert p > 1e-6 if ok else p < 1e-4


@pytest.mark.parametrize("query", ["count", "sum"])
def test_secure_prldp_framework_and_naive(query):
    df = _bank(3_000)
    rel = prldp.framework(df, BUD, query, beta=0.1, secure=True, reveal=True, threshold="bernstein")
    _secure_entry(rel)
    assert rel.entries[0].neighbours == prldp.LOCAL_NEIGHBOURS
    est = float(rel.answers["estimate"].iloc[0])
    tau = rel.extras["tau"]
    assert est == round(est) if query == "count" else est % grid_for(tau) == 0
    # same loss formula as a seeded run: 2^(i−2)ε̌ + ε_τ/2 for kept parties
    dp_ = BUD.domains()
    e = BUD(df)
    kept = e >= rel.extras["eps_tau"] * (1 - 1e-12)
    np.testing.assert_allclose(rel.loss, dp_.lo[dp_.index(e) - 1] / 2 + np.where(kept, rel.extras["eps_tau"] / 2, 0))
    nv = prldp.naive(df, BUD, query, beta=0.1, secure=True, reveal=True)
    _secure_entry(nv)
    np.testing.assert_allclose(nv.loss, BUD.eps_min)


def test_secure_prldp_count():
    df = _bank(3_000)
    e = BUD(df)
    rel = prldp.count(e, eps_min=BUD.eps_min, eps_max=BUD.eps_max, beta=0.1, secure=True, reveal=True)
    _secure_entry(rel)
    assert np.all(rel.extras["noisy_counts"] == np.rint(rel.extras["noisy_counts"]))
    dp_ = BUD.domains()
    np.testing.assert_allclose(rel.loss, dp_.lo[dp_.index(e) - 1])
    with pytest.raises(prdp_core.core.errors.ParameterError):
        prldp.count(e, eps_min=BUD.eps_min, eps_max=BUD.eps_max, beta=0.1)  # neither rng nor secure


# ---------------------------------------------------------------------------
# prdp run: examples/bank_prdp.yaml with secure: true on every mechanism
# ---------------------------------------------------------------------------


def test_bank_prdp_example_runs_secure_on_every_mechanism(tmp_path, capsys):
    cfg = yaml.safe_load((EXAMPLES / "bank_prdp.yaml").read_text())
    for m in cfg["mechanisms"]:
        m["secure"] = True
    cfg["mechanisms"].append({"kind": "prdp", "model": "local", "query": "sum", "column": "BALANCE",
                              "beta": 0.1, "secure": True})  # the local framework and naive sums too
    path = tmp_path / "bank_secure.yaml"
    path.write_text(yaml.safe_dump(cfg, allow_unicode=True))
    code = cli_main(["run", str(path), "--out", str(tmp_path / "o"), "-q"])
    assert code == 0, capsys.readouterr().err
    import json

    ledger = json.loads((tmp_path / "o" / "ledger.json").read_text())
    entries = ledger["entries"] if isinstance(ledger, dict) else ledger
    mechs = {e["mechanism"] for e in entries}
    assert {"prdp.framework.sum", "prdp.sum_extension", "prdp.naive.sum", "prldp.count", "prldp.framework.count",
            "prldp.naive.count", "prldp.framework.sum", "prldp.naive.sum"} <= mechs
    assert all(e["secure"] is True and e["seed"] is None for e in entries)
    code_text = (tmp_path / "o" / "reproduce.py").read_text()
    assert "noise = Noise.secure()" in code_text and "Noise.teaching" not in code_text
