"""Exact simulation of n users of local multi-tier release: epochs, nested prefixes, counts.

The chain between two served templates collapses to "keep and expand with probability B = Π β
(the rescales in between), else a fresh uniform set", so every user's reports are prefixes of
uniformly random orderings within *epochs* (runs without a fresh draw). Epoch counts are drawn
at the aggregate level; the element draws within epochs are vectorised over all epochs at once.
Also the GRR and BRR chains and the debiasing of counts.
"""

from __future__ import annotations

import math
from typing import Sequence

import numpy as np

from .subset import rescale_keep_probability, subset_signal

# ---------------------------------------------------------------------------
# Exact simulation of n users: epochs, nested uniform prefixes, aggregate counts
# ---------------------------------------------------------------------------


def epoch_counts(keep: Sequence[float] | np.ndarray, x_counts: np.ndarray, *, rng: np.random.Generator
                 ) -> tuple[np.ndarray, np.ndarray]:
    """Sample how many users live each *epoch* of the served chain, exactly, at the aggregate level.

    ``keep[τ]`` is the composite keep probability into served template τ (τ = 0 from {x}).
    A user's first epoch starts at τ = 0 and contains x if it was kept at τ = 0; an epoch ends
    just before the next fresh draw (probability 1 − keep[τ] at each τ, independently).
    Returns (first[x, e]: users with value x whose x-epoch spans templates 0..e;
    fresh[s, e]: x-independent epochs spanning s..e).
    """
    B = np.asarray(keep, dtype=float)
    T = B.size
    x_counts = np.asarray(x_counts, dtype=np.int64)
    d = x_counts.size
    # P(epoch started at s ends at e) = Π_{s<τ≤e} B_τ · (1 − B_{e+1}) (the last one ends at T−1)
    end_p = np.zeros((T, T))
    for s in range(T):
        surv = 1.0
        for e in range(s, T):
            if e > s:
                surv *= B[e]
            end_p[s, e] = surv * ((1 - B[e + 1]) if e + 1 < T else 1.0)
        end_p[s] = np.clip(end_p[s], 0, None)
        end_p[s] /= end_p[s].sum()
    fresh = np.zeros((T, T), dtype=np.int64)
    kept0 = rng.binomial(x_counts, B[0])
    first = rng.multinomial(kept0, end_p[0]).reshape(d, T).astype(np.int64)
    starts = np.zeros(T + 1, dtype=np.int64)
    starts[0] = int((x_counts - kept0).sum())          # reset at τ = 0: a fresh epoch from the start
    starts[1:] += first.sum(axis=0)                    # a first epoch ending at e is followed by one at e+1
    for s in range(T):
        if starts[s]:
            fresh[s] = rng.multinomial(starts[s], end_p[s])
            starts[s + 1:T + 1] += fresh[s, s:T]
    return first, fresh


def _draw_values(size: int, d: int, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """Uniform draws on [0, d) from random bytes/words, with a validity flag (exact rejection)."""
    if d <= 256:
        v = np.frombuffer(rng.bytes(size), dtype=np.uint8)
        if d & (d - 1) == 0:
            return v & np.uint8(d - 1), np.ones(size, dtype=bool)
        lim = (256 // d) * d
        return v % np.uint8(d), v < lim
    v = rng.integers(0, d, size=size, dtype=np.int32)
    return v, np.ones(size, dtype=bool)


def nested_prefix_counts(start: np.ndarray, end: np.ndarray, exclude: np.ndarray, sizes: np.ndarray, d: int, *,
                         rng: np.random.Generator) -> np.ndarray:
    """Aggregate reports of independent *epochs*, exactly (vectorised over all epochs).

    Epoch e spans served templates start[e]..end[e]; its set at template τ is the prefix of
    length sizes[τ] of a uniformly random ordering of [d] — or, when exclude[e] ≥ 0, of
    {x} followed by a uniform ordering of [d]∖{x} with x = exclude[e]. Returns the counts
    C[τ, j] = number of epochs whose set at τ contains j, for τ = 0…T−1.

    Implementation: position by position (rank p = 0, 1, …), every epoch still growing draws
    its next element uniformly among the elements it does not hold yet (uniform draws,
    redrawn on a repeat — exact rejection), which builds a uniformly random ordering. An
    element at rank p counts for the templates τ in [max(start, τ(p)), end], τ(p) being the
    first template whose size exceeds p (sizes are non-decreasing); these intervals are
    accumulated in a difference array. Epochs are sorted by final size, so the epochs still
    growing at rank p are a prefix of the arrays.
    """
    sizes = np.asarray(sizes, dtype=np.int64)
    T = sizes.size
    first_gt = np.searchsorted(sizes, np.arange(sizes.max() + 2), side="right")
    nbins = (T + 1) * d
    D = np.zeros(nbins, dtype=np.int64)
    if start.size == 0:
        return np.zeros((T, d), dtype=np.int64)
    W = (d + 63) // 64
    one = np.uint64(1)
    zero = np.uint64(0)
    # independent epochs: process them in chunks that keep the seen-sets under ~200 MB
    chunk = max(1, int(2e8 // (8 * W)))
    if start.size > chunk:
        out = np.zeros((T, d), dtype=np.int64)
        for c0 in range(0, start.size, chunk):
            out += nested_prefix_counts(start[c0:c0 + chunk], end[c0:c0 + chunk], exclude[c0:c0 + chunk], sizes,
                                        d, rng=rng)
        return out
    st0 = np.asarray(start, dtype=np.int64)
    en0 = np.asarray(end, dtype=np.int64)
    K = sizes[en0]
    # sort by final size (descending), then by (start, end): the epochs still growing at rank p are
    # a prefix, and epochs with the same (start, end) — a "run" — share their template interval
    order = np.lexsort((en0, st0, -K))
    K, s, e, x = K[order], st0[order], en0[order], np.asarray(exclude, dtype=np.int64)[order]
    n = s.size
    seen = np.zeros((W, n), dtype=np.uint64)
    hasx = np.flatnonzero(x >= 0)
    if hasx.size:
        xi = x[hasx]
        seen[xi >> 6, hasx] = np.left_shift(one, (xi & 63).astype(np.uint64))
        D += np.bincount(s[hasx] * d + xi, minlength=nbins)  # x has rank 0: in every set of its epoch
        D -= np.bincount((e[hasx] + 1) * d + xi, minlength=nbins)
    brk = np.flatnonzero((np.diff(s) != 0) | (np.diff(e) != 0)) + 1
    run_start = np.concatenate(([0], brk))
    run_s, run_e1 = s[run_start], e[run_start] + 1
    run_id = np.repeat(np.arange(run_start.size), np.diff(np.append(run_start, n)))
    run_off = run_id * d
    R = run_start.size
    grow = np.searchsorted(-K, -np.arange(int(K.max()) + 1), side="right")  # grow[p] = #epochs with K > p
    D2 = D.reshape(T + 1, d)
    for p in range(int(K.max())):
        A = int(grow[p])
        if A == 0:
            break
        if p == 0 and hasx.size:
            fresh_rows = np.flatnonzero(x[:A] < 0)  # x already holds rank 0
            rows: np.ndarray | slice = fresh_rows
            m = fresh_rows.size
        else:
            rows = slice(0, A)  # the epochs still growing are a prefix: contiguous arrays
            m = A
        if m == 0:
            continue
        v, ok = _draw_values(m, d, rng)
        sh = (v & 63).astype(np.uint64)
        b = np.left_shift(one, sh)
        if W == 1:
            word = seen[0, rows]
        elif W == 2:
            hi = v >= 64
            word = np.where(hi, seen[1, rows], seen[0, rows])
        else:
            word = seen[(v >> 6).astype(np.int64), np.arange(n)[rows]]
        bad = (word & b) != zero
        if d & (d - 1):  # d not a power of two: some raw draws were rejected
            bad |= ~ok
        pend = np.flatnonzero(bad)
        idx = np.arange(n)[rows] if pend.size else np.zeros(0, dtype=np.int64)
        while pend.size:  # a repeat (or a rejected raw draw): draw again, exactly uniform on the rest
            v2, ok2 = _draw_values(pend.size, d, rng)
            r2 = idx[pend]
            b2 = np.left_shift(one, (v2 & 63).astype(np.uint64))
            word2 = seen[0, r2] if W == 1 else seen[(v2 >> 6).astype(np.int64), r2]
            again = ((word2 & b2) != zero) | ~ok2
            v[pend] = v2
            b[pend] = b2
            if W == 2:
                hi[pend] = v2 >= 64
            pend = pend[again]
        if W == 1:
            seen[0, rows] |= b
        elif W == 2:
            seen[1, rows] |= np.where(hi, b, zero)
            seen[0, rows] |= np.where(hi, zero, b)
        else:
            seen[(v >> 6).astype(np.int64), np.arange(n)[rows]] |= b
        # counts per (run, element), then each run's template interval [max(s, τ(p)), e]
        cnt = np.bincount(run_off[rows] + v, minlength=R * d).reshape(R, d)
        live = np.flatnonzero(cnt.any(axis=1))
        np.add.at(D2, np.maximum(run_s[live], first_gt[p]), cnt[live])
        np.add.at(D2, run_e1[live], -cnt[live])
    return np.cumsum(D.reshape(T + 1, d), axis=0)[:T]


def iid_subset_counts(n: int | np.ndarray, k: int | np.ndarray, d: int, *, rng: np.random.Generator) -> np.ndarray:
    """Column counts of n i.i.d. uniform k-subsets of [d], exactly, without simulating users.

    Column-sequential sampling: a user with r elements still to place among the R remaining
    columns takes the next column with probability r/R; users with the same r are
    exchangeable, so only the number of users per r is tracked (binomial splits, O(d·k) work
    for any n). Vectorised over groups: ``n`` and ``k`` may be arrays (one group each), then
    the result has one row per group.
    """
    ns = np.atleast_1d(np.asarray(n, dtype=np.int64))
    ks = np.broadcast_to(np.atleast_1d(np.asarray(k, dtype=np.int64)), ns.shape)
    out = np.zeros((ns.size, d), dtype=np.int64)
    live = np.flatnonzero((ns > 0) & (ks > 0))
    if live.size:
        kmax = int(ks[live].max())
        hist = np.zeros((live.size, kmax + 1), dtype=np.int64)
        hist[np.arange(live.size), ks[live]] = ns[live]
        r = np.arange(kmax + 1, dtype=float)
        for j in range(d):
            take = rng.binomial(hist, np.minimum(r / (d - j), 1.0))
            out[live, j] = take.sum(axis=1)
            hist -= take
            hist[:, :-1] += take[:, 1:]
    return out if np.ndim(n) else out[0]


def _insert_excluded(counts: np.ndarray, xs: np.ndarray, d: int) -> np.ndarray:
    """Map rows of counts over [d]∖{x} (d−1 columns, in order) to [d], with 0 at column x."""
    full = np.zeros((counts.shape[0], d), dtype=counts.dtype)
    cols = np.arange(d - 1)
    idx = cols[None, :] + (cols[None, :] >= np.asarray(xs)[:, None])
    np.put_along_axis(full, idx, counts, axis=1)
    return full


def subset_counts(x_counts: np.ndarray, k: int, rho: float, *, rng: np.random.Generator) -> np.ndarray:
    """Column counts of independent Subset(x, k, ln ρ) reports of users with values ``x_counts``, exactly.

    Users of value x include x with probability t; their other elements are uniform subsets of
    [d]∖{x} (k−1 or k of them), aggregated with :func:`iid_subset_counts`.
    """
    x_counts = np.asarray(x_counts, dtype=np.int64)
    d = x_counts.size
    t, _ = subset_signal(rho, k, d)
    inc = rng.binomial(x_counts, float(t))
    out = inc.astype(np.int64)
    xs = np.flatnonzero(x_counts)
    other = (iid_subset_counts(inc[xs], k - 1, d - 1, rng=rng)
             + iid_subset_counts(x_counts[xs] - inc[xs], k, d - 1, rng=rng))
    out += _insert_excluded(other, xs, d).sum(axis=0)
    return out


def multitier_subset_counts(sizes: Sequence[int] | np.ndarray, keep: Sequence[float] | np.ndarray,
                            x_counts: np.ndarray, *,
                            rng: np.random.Generator) -> np.ndarray:
    """Aggregate reports (T × d column counts) of n users under the multi-tier Subset chain, exactly.

    ``sizes``/``keep`` describe the distinct served templates in chain order (size k_τ and the
    composite keep probability into τ). Epoch counts are drawn at the aggregate level
    (:func:`epoch_counts`); every epoch's elements by :func:`nested_prefix_counts`.
    """
    x_counts = np.asarray(x_counts, dtype=np.int64)
    d = x_counts.size
    sizes = np.asarray(sizes, dtype=np.int64)
    T = sizes.size
    first, fresh = epoch_counts(keep, x_counts, rng=rng)
    C = np.zeros((T + 1, d), dtype=np.int64)  # difference array over templates
    # epochs whose templates all have the same size: one uniform set each, aggregated exactly
    # by the column-sequential sampler (no per-user work)
    ss, se = np.nonzero(fresh)
    one_band = sizes[ss] == sizes[se]
    if one_band.any():
        g_s, g_e = ss[one_band], se[one_band]
        cnt = iid_subset_counts(fresh[g_s, g_e], sizes[g_s], d, rng=rng)
        np.add.at(C, g_s, cnt)
        np.add.at(C, g_e + 1, -cnt)
    fx, fe = np.nonzero(first)
    f_one = sizes[fe] == sizes[0]
    if f_one.any():
        gx, ge = fx[f_one], fe[f_one]
        nn = first[gx, ge]
        other = _insert_excluded(iid_subset_counts(nn, sizes[0] - 1, d - 1, rng=rng), gx, d)
        other[np.arange(gx.size), gx] += nn
        C[0] += other.sum(axis=0)
        np.add.at(C, ge + 1, -other)
    # the other epochs: element-wise stream
    fx, fe = fx[~f_one], fe[~f_one]
    fn = first[fx, fe]
    ss, se = ss[~one_band], se[~one_band]
    sn = fresh[ss, se]
    start = np.concatenate((np.zeros(fn.sum(), dtype=np.int64), np.repeat(ss, sn)))
    end = np.concatenate((np.repeat(fe, fn), np.repeat(se, sn)))
    excl = np.concatenate((np.repeat(fx, fn), np.full(sn.sum(), -1, dtype=np.int64)))
    return np.cumsum(C, axis=0)[:T] + nested_prefix_counts(start, end, excl, sizes, d, rng=rng)


def grr_chain_counts(eps: Sequence[float] | np.ndarray, x_counts: np.ndarray, *,
                     rng: np.random.Generator) -> np.ndarray:
    """Multi-tier GRR (k = 1 Rescale chain, Xiao et al.'s re-sampling), aggregate counts (m × d), exactly.

    With one element per report the aggregate is a Markov chain: each report is kept with
    probability β, the others are redrawn uniformly (a multinomial over [d]).
    """
    x_counts = np.asarray(x_counts, dtype=np.int64)
    d = x_counts.size
    rho_prev = math.inf
    cur = x_counts.copy()
    out = []
    for e in eps:
        rho = math.exp(e)
        beta = rescale_keep_probability(rho_prev, rho, 1, d)
        kept = rng.binomial(cur, beta)
        redraw = int(cur.sum() - kept.sum())
        cur = kept + rng.multinomial(redraw, np.full(d, 1.0 / d))
        out.append(cur.copy())
        rho_prev = min(rho_prev, rho)
    return np.array(out)


def brr_flip_probability(eps: float) -> float:
    """BRR bit-flip probability q = 1/(1 + e^{ε/2}) (ε-LDP: two bits differ between neighbours)."""
    return 1.0 / (1.0 + math.exp(float(eps) / 2))


def brr_chain_counts(eps: Sequence[float] | np.ndarray, x_counts: np.ndarray, *,
                     rng: np.random.Generator) -> np.ndarray:
    """Multi-tier BRR (per-bit re-sampling), aggregate bit counts (m × d), exactly.

    Bits are independent, so per column the number of ones is a sum of independent two-state
    chains: keep each bit with probability β = (1/2 − q′)/(1/2 − q), else a fresh fair bit.
    """
    x_counts = np.asarray(x_counts, dtype=np.int64)
    n = int(x_counts.sum())
    q_prev = 0.0
    ones_x = x_counts.copy()            # users with value j whose bit j is 1
    ones_o = np.zeros_like(x_counts)    # users with value ≠ j whose bit j is 1
    others = n - x_counts
    out = []
    for e in eps:
        q = brr_flip_probability(e)
        beta = (0.5 - q) / (0.5 - q_prev) if q > q_prev else 1.0
        for arr, tot in ((ones_x, x_counts), (ones_o, others)):
            k1 = rng.binomial(arr, beta)
            k0 = rng.binomial(tot - arr, beta)
            fresh = tot - k1 - k0
            arr[:] = k1 + rng.binomial(fresh, 0.5)
        out.append(ones_x + ones_o)
        q_prev = max(q_prev, q)
    return np.array(out)


def debias_subset(counts: np.ndarray, n: int, k: int, rho: float, d: int) -> np.ndarray:
    """Unbiased count estimates n·x̂ from Subset column counts: (c − n f)/(t − f)."""
    t, f = subset_signal(rho, k, d)
    return (np.asarray(counts, dtype=float) - n * f) / (t - f)


def debias_brr(counts: np.ndarray, n: int, eps: float) -> np.ndarray:
    """Unbiased count estimates from BRR bit counts: (c − n q)/(1 − 2q)."""
    q = brr_flip_probability(eps)
    return (np.asarray(counts, dtype=float) - n * q) / (1 - 2 * q)
