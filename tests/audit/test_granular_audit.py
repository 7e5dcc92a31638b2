"""Privacy audit of the granular-DP mechanisms (partial DP paper).

* PrivHeavyHitter (Algorithm 2) has a discrete output: the lists L_I of every node. On
  tiny domains we enumerate **every** possible output, compute its exact probability on
  neighbouring datasets (one attribute of one record changed) as a product of Laplace tail
  probabilities, and compare the largest log-ratio with the accountant
  (``hh_epsilon_exact``) — which must bound it and be reached on the adversarial profile.
  The same enumeration, with the exact sup of the Laplace density ratio of the second
  stage added, audits the whole Theorem 15 histogram (``histogram_epsilon_exact``).
* It also shows where the paper's printed calibration (λ = 3/ε, Lap(2/ε)) fails: the list
  stage is ≈0.92ε instead of 0.5ε and the whole histogram ≈1.58ε instead of ε.
* Gaussian workloads (Thm 11) and the attribute-subset accountant (§7): exact Rényi
  divergences between the Gaussian output distributions on every neighbouring pair.
"""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from scipy import integrate

from prdp_core.core.accounting import AttributeRelease, attribute_subset_rho
from prdp_core.mechanisms.granular.accounting import calibrate_workload, workload_ratio, workload_sensitivity
from prdp_core.mechanisms.granular.calibration import (
    calibrate_heavy_hitter_histogram,
    hh_epsilon_exact,
    hh_epsilon_lemma28,
)
from prdp_core.mechanisms.granular.data import AttributeData
from prdp_core.mechanisms.granular.heavy_hitters import priv_heavy_hitters

EPS = 1.0
NU = 0.01


# ---------------------------------------------------------------------------
# Exact output distributions of PrivHeavyHitter on tiny domains
# ---------------------------------------------------------------------------


def log_tail(t, lam):
    """log P[Lap(λ) > t] (independent re-implementation)."""
    t = np.asarray(t, dtype=float)
    return np.where(t >= 0, np.log(0.5) - np.abs(t) / lam, np.log1p(-0.5 * np.exp(-np.abs(t) / lam)))


def log_keep(count, thr, lam, mu):
    """log P[kept] and log P[dropped] of a candidate: max(count, thr−µ) + Lap(λ) > thr."""
    capped = np.maximum(np.asarray(count, dtype=float), thr - mu)
    lin = log_tail(thr - capped, lam)
    lout = np.log(-np.expm1(lin))
    return lin, lout


_BITS: dict[int, np.ndarray] = {}


def subset_bits(m):
    """All 2^m subsets of m candidates as a 0/1 matrix (row = subset)."""
    if m not in _BITS:
        _BITS[m] = ((np.arange(2**m)[:, None] >> np.arange(m)[None, :]) & 1).astype(float)
    return _BITS[m]


def transcripts_d4(hist, lam, mu, tau):
    """Every output of PrivHeavyHitter on 4 binary attributes with its exact log-probability.

    ``hist`` — counts of the 16 cells (cell = 8·b0 + 4·b1 + 2·b2 + b3). Returns a list of
    blocks (A, B, bits, logp, cells): level-1 lists A (node {0,1}) and B (node {2,3}) as
    tuples of 2-bit strings, the root subsets ``bits`` over the candidates ``cells`` (A×B)
    and their log-probabilities.
    """
    hist = np.asarray(hist, dtype=float).reshape(4, 4)  # [first two bits, last two bits]
    f1, f2 = hist.sum(axis=1), hist.sum(axis=0)
    t1, t2 = tau, tau + mu
    in1, out1 = log_keep(f1, t1, lam, mu)
    in2, out2 = log_keep(f2, t1, lam, mu)
    blocks = []
    for a_mask in range(16):
        A = [s for s in range(4) if a_mask >> s & 1]
        lpa = sum(in1[s] if s in A else out1[s] for s in range(4))
        for b_mask in range(16):
            B = [s for s in range(4) if b_mask >> s & 1]
            lpb = sum(in2[s] if s in B else out2[s] for s in range(4))
            cells = [4 * a + b for a in A for b in B]
            cin, cout = log_keep(hist.ravel()[cells], t2, lam, mu)
            bits = subset_bits(len(cells))
            logp = lpa + lpb + bits @ (cin - cout) + cout.sum()
            blocks.append((tuple(A), tuple(B), bits, logp, cells))
    return blocks


def max_log_ratio_d4(hist_x, hist_y, lam, mu, tau, count_scale=None, changed=()):
    """max over all outputs of |log P_x(out) − log P_y(out)|; with ``count_scale`` b the
    second-stage Laplace counts on the final list add their exact sup, (#changed listed)/b."""
    bx = transcripts_d4(hist_x, lam, mu, tau)
    by = transcripts_d4(hist_y, lam, mu, tau)
    worst, total = 0.0, []
    for (_a, _b, bits, lx, cells), (_, _, _, ly, _) in zip(bx, by):
        r = np.abs(lx - ly)
        if count_scale is not None and cells:
            listed = sum(bits[:, cells.index(c)] for c in changed if c in cells)
            r = r + np.asarray(listed) / count_scale
        worst = max(worst, float(np.max(r)))
        total.append(lx)
    tot = np.concatenate(total)
    assert abs(np.exp(tot - tot.max()).sum() * np.exp(tot.max()) - 1.0) < 1e-9  # a distribution
    return worst


def cell(bits):
    return int("".join(map(str, bits)), 2)


def adversarial_d4(c, extra, tau_offset=0.0, new_count=None):
    """x: c records at 0000 (the only ones with prefix 00), ``extra`` records at 1011;
    the neighbour y moves one record of 0000 to 1000 (attribute 0 changes)."""
    hx = np.zeros(16)
    hx[cell([0, 0, 0, 0])] = c
    hx[cell([1, 0, 1, 1])] = extra
    if new_count is not None:
        hx[cell([1, 0, 0, 0])] = new_count
    hy = hx.copy()
    hy[cell([0, 0, 0, 0])] -= 1
    hy[cell([1, 0, 0, 0])] += 1
    return hx, hy


def worst_over_tau(lam, mu, c, count_scale=None, new_count=None):
    """Scan the base threshold τ (public) near the adversarial margins; worst log-ratio."""
    best = 0.0
    for m1 in np.linspace(-1.0, 1.0, 5):
        tau = c - 1 - m1
        hx, hy = adversarial_d4(c, int(tau) + 3, new_count=new_count)
        best = max(best, max_log_ratio_d4(hx, hy, lam, mu, tau, count_scale,
                                          changed=(cell([0, 0, 0, 0]), cell([1, 0, 0, 0]))))
    return best


def test_enumeration_is_a_distribution_and_symmetric():
    rng = np.random.default_rng(0)
    hist = rng.integers(0, 30, 16)
    lam, mu = 2.0, 5.0
    blocks = transcripts_d4(hist, lam, mu, tau=20.0)
    assert sum(len(b[3]) for b in blocks) == 113_855  # every possible output
    # swapping the two datasets gives the same worst case
    y = hist.copy()
    y[0] += 1
    y[8] -= 1 if y[8] > 0 else -1
    a = max_log_ratio_d4(hist, y, lam, mu, 20.0)
    b = max_log_ratio_d4(y, hist, lam, mu, 20.0)
    assert a == pytest.approx(b, rel=1e-12)


@pytest.mark.parametrize("lam", [3.0 / EPS, 5.701582965 / EPS, 8.0 / EPS])
def test_accountant_bounds_every_output_on_random_data(lam):
    """Random histograms, random τ, random one-attribute moves: never above the accountant."""
    mu = lam * math.log(16 / NU)
    bound = hh_epsilon_exact(lam, mu, 2)
    assert worst_on_random_neighbours(lam, mu, np.random.default_rng(int(lam * 1000)), 6) <= bound + 1e-9


def worst_on_random_neighbours(lam, mu, rng, runs):
    """Worst log-ratio over ``runs`` random histograms, τ and one-attribute moves (4 binary attributes)."""
    worst = 0.0
    for _ in range(runs):
        tau = float(rng.uniform(0, 40))
        hist = rng.integers(0, 60, 16).astype(float)
        src = int(rng.choice(np.flatnonzero(hist > 0)))
        j = int(rng.integers(0, 4))
        dst = src ^ (1 << (3 - j))
        hy = hist.copy()
        hy[src] -= 1
        hy[dst] += 1
        worst = max(worst, max_log_ratio_d4(hist, hy, lam, mu, tau))
    return worst


def test_accountant_is_reached_on_the_adversarial_profile():
    """The exact accountant is tight: its calibration is exactly what the algorithm needs."""
    cal = calibrate_heavy_hitter_histogram(EPS, NU, 4, method="exact")
    assert cal.eps_heavy_hitters == pytest.approx(0.5 * EPS, abs=1e-9)
    worst = worst_over_tau(cal.lam, cal.mu, c=60)
    assert worst <= 0.5 * EPS + 1e-9
    assert worst >= 0.5 * EPS - 1e-6


def test_lemma28_calibration_is_private_but_loose():
    cal = calibrate_heavy_hitter_histogram(EPS, NU, 4, method="lemma28")
    assert cal.lam == pytest.approx(8.0 / EPS, rel=1e-3)
    worst = worst_over_tau(cal.lam, cal.mu, c=60)
    assert worst <= 0.5 * EPS
    assert worst == pytest.approx(cal.eps_heavy_hitters, abs=1e-6)
    assert worst < 0.38 * EPS  # about 1.4× below the budget it was calibrated for


def test_paper_calibration_fails_for_the_list_stage():
    """Thm 15's proof: λ = 3/ε is claimed 0.5ε; the exact worst output is ≈0.916ε (notes I1)."""
    lam = 3.0 / EPS
    mu = lam * math.log(16 / NU)
    worst = worst_over_tau(lam, mu, c=60)
    assert worst == pytest.approx(hh_epsilon_exact(lam, mu, 2), abs=1e-6)
    assert worst == pytest.approx(0.9163, abs=5e-4)
    assert worst > 0.5 * EPS * 1.8
    assert hh_epsilon_lemma28(lam, mu) == pytest.approx(1.334, abs=1e-3)  # Lemma 28 certifies even less


def test_whole_histogram_exact_and_paper_failure():
    """Lists + Laplace counts: exact joint worst case, corrected (≤ ε) and as printed (> ε)."""
    for method, expect_ok in (("exact", True), ("paper", False)):
        cal = calibrate_heavy_hitter_histogram(EPS, NU, 4, method=method)
        # u′ kept everywhere with a huge count (its kept factors → 0) vs dropped at level 1
        big = worst_over_tau(cal.lam, cal.mu, c=60, count_scale=cal.count_scale, new_count=210)
        small = worst_over_tau(cal.lam, cal.mu, c=60, count_scale=cal.count_scale)
        worst = max(big, small)
        assert worst <= cal.eps_joint + 1e-9
        assert worst >= cal.eps_joint - 1e-6
        assert worst <= cal.eps_composed + 1e-9
        assert (worst <= EPS + 1e-9) is expect_ok
    paper = calibrate_heavy_hitter_histogram(EPS, NU, 4, method="paper")
    assert paper.eps_joint == pytest.approx(1.583, abs=1e-3)
    assert paper.eps_composed == pytest.approx(1.916, abs=1e-3)


def test_second_stage_sensitivity_is_two():
    """Brute force over {0,1}^4: a one-attribute change moves one record between two cells, so
    the listed count vector has L1 sensitivity 2 — Lap(2/ε) is ε, not 0.5ε (notes I2)."""
    sens = 0
    for u in range(16):
        for j in range(4):
            v = u ^ (1 << j)
            fx, fy = np.zeros(16), np.zeros(16)
            fx[u] += 1
            fy[v] += 1
            sens = max(sens, np.abs(fx - fy).sum())
    assert sens == 2
    # Laplace density ratio of a 2-sensitive vector at scale b: exactly 2/b at worst
    b = 2.0 / EPS
    z = np.linspace(-20, 20, 4001)
    ratio = (np.abs(z - 1) - np.abs(z)) / b * 2  # two coordinates, each moving by 1
    assert ratio.max() == pytest.approx(2 / b) and 2 / b == pytest.approx(EPS)


def test_categorical_leaves_single_level():
    """Two categorical attributes (3 × 2 values), one noisy level: every output enumerated."""
    lam, mu, tau = 1.5, 4.0, 6.0
    rng = np.random.default_rng(5)
    bound = hh_epsilon_exact(lam, mu, 1)
    assert bound == pytest.approx(2 / lam)
    worst = 0.0
    for _ in range(20):
        h = rng.integers(0, 12, 6).astype(float)
        src = int(rng.choice(np.flatnonzero(h > 0)))
        a, b = divmod(src, 2)
        dst = ((a + int(rng.integers(1, 3))) % 3) * 2 + b if rng.random() < 0.5 else a * 2 + (1 - b)
        hy = h.copy()
        hy[src] -= 1
        hy[dst] += 1
        lin_x, lout_x = log_keep(h, tau, lam, mu)
        lin_y, lout_y = log_keep(hy, tau, lam, mu)
        bits = subset_bits(6)
        lx = bits @ (lin_x - lout_x) + lout_x.sum()
        ly = bits @ (lin_y - lout_y) + lout_y.sum()
        worst = max(worst, float(np.max(np.abs(lx - ly))))
    assert worst <= bound + 1e-9


# ---------------------------------------------------------------------------
# Eight attributes: exact likelihood of engine outputs and of the worst output
# ---------------------------------------------------------------------------


def transcript_loglik(codes, lists, lam, mu, tau):
    """Exact log-probability of a full output {node: set of strings} on data ``codes`` (n × 8)."""
    d = codes.shape[1]
    L = int(math.log2(d))
    total = 0.0
    for level in range(1, L + 1):
        width = 2**level
        thr = tau + (level - 1) * mu
        for index in range(d // width):
            lo = index * width
            left = lists[(level - 1, 2 * index)]
            right = lists[(level - 1, 2 * index + 1)]
            cands = [a + b for a in left for b in right]
            block = [tuple(r) for r in codes[:, lo:lo + width]]
            counts = {}
            for r in block:
                counts[r] = counts.get(r, 0) + 1
            cnt = np.array([counts.get(c, 0) for c in cands], dtype=float)
            lin, lout = log_keep(cnt, thr, lam, mu)
            kept = np.array([c in lists[(level, index)] for c in cands])
            total += float(np.sum(np.where(kept, lin, lout)))
    return total


def leaf_lists(d):
    return {(0, j): [(0,), (1,)] for j in range(d)}


def test_engine_outputs_d8_within_accountant():
    cal = calibrate_heavy_hitter_histogram(EPS, NU, 8, method="exact")
    lam, mu, tau = cal.lam, cal.mu, 20.0
    rng = np.random.default_rng(8)
    base = rng.integers(0, 2, size=(6, 8))
    codes = np.repeat(base, [60, 40, 30, 25, 12, 3], axis=0).astype(np.uint8)
    data = AttributeData(np.asfortranarray(codes), tuple(f"a{j}" for j in range(8)), tuple((0, 1) for _ in range(8)))
    neigh = codes.copy()
    neigh[0, 3] ^= 1
    worst = 0.0
    for s in range(25):
        run = priv_heavy_hitters(data, lam=lam, mu=mu, tau=tau, rng=np.random.default_rng(s))
        lists = leaf_lists(8)
        for level in range(1, 4):
            for index in range(8 // 2**level):
                lists[(level, index)] = {tuple(int(v) for v in r) for r in run.node_strings(level, index)}
        lx = transcript_loglik(codes, lists, lam, mu, tau)
        ly = transcript_loglik(neigh, lists, lam, mu, tau)
        assert np.isfinite(lx)
        worst = max(worst, abs(lx - ly))
    assert worst <= cal.eps_heavy_hitters + 1e-9


def test_worst_output_d8_reaches_accountant():
    """Three levels: the hand-built worst output (old string kept everywhere, new one dropped at
    the first level) on the adversarial profile reaches hh_epsilon_exact(λ, µ, 3)."""
    lam = 3.0 / EPS
    mu = lam * math.log(16 / NU)
    c = 200
    u = (0,) * 8
    u_new = (1,) + (0,) * 7
    lists = leaf_lists(8)
    for level in range(1, 4):
        w = 2**level
        for index in range(8 // w):
            lists[(level, index)] = {u[index * w:(index + 1) * w]}
    best = -1.0
    # constant count c: margins c−1−τ−(ℓ−1)µ; the worst puts level 3 at −µ, level 2 at 0, level 1 at µ
    for m1 in mu + np.linspace(-1.0, 1.0, 41):
        tau = c - 1 - m1
        extra = int(tau) + 3
        rows = [u] * c + [(1, 0, 1, 1, 1, 1, 1, 1)] * extra
        x = np.array(rows, dtype=np.uint8)
        y = x.copy()
        y[0] = u_new
        best = max(best, transcript_loglik(x, lists, lam, mu, tau) - transcript_loglik(y, lists, lam, mu, tau))
    exact = hh_epsilon_exact(lam, mu, 3)
    assert best <= exact + 1e-9
    assert best >= exact - 1e-6
    assert exact == pytest.approx(0.9163, abs=5e-4)


# ---------------------------------------------------------------------------
# Gaussian workloads (Thm 11) and the attribute-subset accountant (§7)
# ---------------------------------------------------------------------------


def workload_matrix(kind, d, k):
    """Q(u) for every u ∈ {0,1}^d (rows), brute force."""
    us = np.array(list(itertools.product((0, 1), repeat=d)))
    cols = []
    for T in itertools.combinations(range(d), k):
        sub = us[:, T]
        if kind == "conjunctions":
            cols.append(sub.prod(axis=1)[:, None])
        elif kind == "parities":
            cols.append((sub.sum(axis=1) % 2)[:, None])
        else:
            idx = sub @ (2 ** np.arange(k)[::-1])
            cols.append(np.eye(2**k)[idx])
    return us, np.hstack(cols).astype(float)


def renyi_gaussian_numeric(shift, sigma, alpha):
    """D_α(N(shift, σ²) ‖ N(0, σ²)) by numerical integration (1-D: the Gaussians differ along one line)."""
    if shift == 0:
        return 0.0
    def integrand(z: float) -> float:
        log_p = -((z - shift) ** 2) / (2 * sigma**2)
        log_q = -(z**2) / (2 * sigma**2)
        return math.exp(alpha * log_p + (1 - alpha) * log_q)

    centre = alpha * shift  # the integrand is a Gaussian bump centred here
    val, _ = integrate.quad(integrand, centre - 40 * sigma, centre + 40 * sigma, limit=200)
    return math.log(val / (math.sqrt(2 * math.pi) * sigma)) / (alpha - 1)


@pytest.mark.parametrize("kind,d,k", [("conjunctions", 5, 2), ("conjunctions", 6, 3), ("marginals", 5, 2),
                                      ("marginals", 4, 3), ("parities", 5, 2), ("parities", 5, 3)])
def test_workload_sensitivities_and_divergences(kind, d, k):
    us, Q = workload_matrix(kind, d, k)
    ham = (us[:, None, :] != us[None, :, :]).sum(axis=2)
    sq = ((Q[:, None, :] - Q[None, :, :]) ** 2).sum(axis=2)
    for s in range(1, d + 1):
        brute = math.sqrt(sq[(ham >= 1) & (ham <= s)].max())
        assert workload_sensitivity(kind, d, k, s) == pytest.approx(brute, abs=1e-12), s
    if kind != "parities" or k % 2:
        assert workload_ratio(kind, d, k) == pytest.approx(math.sqrt(d / k))
    # calibrated to ε0 per attribute: the exact Rényi divergence of every one-attribute pair is ≤ α·ε0²/2
    n, eps0 = 50, 0.7
    cal = calibrate_workload(kind, d, k, eps0, n)
    pairs = np.argwhere(ham == 1)
    worst = max(math.sqrt(sq[i, j]) for i, j in pairs) / n  # normalised answers move by Δ/n
    for alpha in (1.5, 4.0):
        div = renyi_gaussian_numeric(worst, cal.sigma, alpha)
        assert div == pytest.approx(alpha * eps0**2 / 2, rel=1e-6)
    whole = math.sqrt(sq.max()) / n
    assert renyi_gaussian_numeric(whole, cal.sigma, 2.0) / 2.0 == pytest.approx(cal.rho_record, rel=1e-6)


def test_even_k_parities_fall_short_of_sqrt_m():
    """Notes I10: Δ = √m holds for conjunctions and odd k, not for even-k 0/1 parities."""
    for d in (4, 5, 6):
        us, Q = workload_matrix("parities", d, 2)
        brute = math.sqrt(((Q[:, None, :] - Q[None, :, :]) ** 2).sum(axis=2).max())
        assert brute < math.sqrt(math.comb(d, 2))
        assert brute**2 == pytest.approx((d // 2) * (d - d // 2))


def test_attribute_subset_accountant_matches_gaussian_histograms():
    """Releases = Gaussian histograms on attribute sets A_r (σ_r, whole-record ρ_r = 1/σ_r²);
    the exact zCDP of a change confined to S (max over record pairs differing within S) is
    Σ_{A_r ∩ S ≠ ∅} ρ_r."""
    attrs = ["a", "b", "c", "d"]
    spec = [({"a"}, 0.8), ({"a", "b"}, 1.3), ({"b", "c"}, 0.6), ({"d"}, 2.0), ({"a", "c", "d"}, 1.1)]
    releases = [AttributeRelease(f"r{i}", frozenset(A), 1.0 / s**2) for i, (A, s) in enumerate(spec)]
    us = list(itertools.product((0, 1), repeat=4))
    for size in range(1, 5):
        for S in itertools.combinations(attrs, size):
            worst = 0.0
            for u in us:
                for v in us:
                    diff = {attrs[i] for i in range(4) if u[i] != v[i]}
                    if not diff or not diff <= set(S):
                        continue
                    rho = 0.0
                    for (A, sigma) in spec:
                        idx = [attrs.index(a) for a in sorted(A)]
                        moved = any(u[i] != v[i] for i in idx)
                        rho += (2.0 if moved else 0.0) / (2 * sigma**2)  # one-hot cells: ‖Δ‖² = 2
                    worst = max(worst, rho)
            assert attribute_subset_rho(releases, S) == pytest.approx(worst, rel=1e-12), S
