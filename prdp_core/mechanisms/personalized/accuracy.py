"""Accuracy of the personalized DP mechanisms: closed forms, exact pmfs, simulations and design tables.

Errors computed on the data (:func:`compare`, :func:`threshold_curve`) use the confidential
values and are for design and teaching only; :func:`count_mse_proxy` and :func:`sum_mse_proxy`
work from the public specification and assumed data.
"""

from __future__ import annotations

import math
from typing import Any, Literal, Sequence

import numpy as np
import pandas as pd

from ...core import noise as _noise
from ...core.errors import ParameterError
from .blackbox import CountNoise, dp_answer, em_pieces, noise_variance
from .mechanisms import PE, Minimum, PDPMechanism, Sample, Stretching, Threshold, paper_mechanisms
from .neighbours import noise_calibration
from .pe import pe_distribution
from .query import PersonalizedQuery
from .ranges import _pieces_mse, expand_pieces
from .sample import sample_probability
from .spec import PrivacySpec, _check_eps


def example1_errors(n: int = 200, density: float = 0.1, share_conservative: float = 0.65, eps_c: float = 0.1,
                    t: float = 1.0) -> dict[str, float]:
    """Example 1 (Sec. IV-B): squared error of Sample's count split into sampling and Laplace parts.

    k = n·share·density conservative 1-tuples are each kept with π_C; sampling MSE =
    k·π_C(1 − π_C) + (k(1 − π_C))², Laplace variance 2/t². The paper's figures:
    t = 1 → ≈ 150 + 2 = 152; t = 0.2 → ≈ 50 + 50 = 100.
    """
    pi = float(sample_probability(eps_c, t))
    k = n * share_conservative * density
    sampling = k * pi * (1 - pi) + (k * (pi - 1)) ** 2
    lap = noise_variance(t)
    return {"pi_c": pi, "k": k, "sampling_mse": sampling, "laplace_var": lap, "total": sampling + lap}


def linear_moments(mechanism: PDPMechanism, values: np.ndarray, phi: np.ndarray, query: PersonalizedQuery,
                   spec: PrivacySpec) -> tuple[float, float]:
    """Exact mean and variance of a count or sum answer on fixed data (closed forms).

    Sample: Σ v·π and Σ v²·π(1 − π) + noise variance; Threshold: Σ_{Φ≥t} v and the noise;
    Minimum: Σ v and the noise at α; Stretching: Σ v·Φ/ε_ref and 2(Δ/ε_ref)². The noise is at
    ε/c (:func:`noise_calibration`), as in the releases.
    """
    if query.black_box is not None:
        raise ParameterError(f"No closed form for the black box '{query.black_box.name}'.",
                             hint="Its error is simulated (simulate_answers, evaluate).")
    v = np.asarray(values, dtype=float)
    ph = np.asarray(phi, dtype=float)
    nz: CountNoise = getattr(mechanism, "noise", "laplace") if query.kind == "count" else "laplace"
    cal = noise_calibration(query, spec)
    if isinstance(mechanism, Minimum):
        a = spec.min_eps
        return float(v.sum()), noise_variance(a / cal, query.bound, nz)
    if isinstance(mechanism, Threshold):
        t = spec.threshold(mechanism.t)
        return float(v[ph >= t].sum()), noise_variance(t / cal, query.bound, nz)
    if isinstance(mechanism, Sample):
        t = spec.threshold(mechanism.t)
        pi = sample_probability(ph, t)
        mean = float(np.sum(v * pi))
        var = float(np.sum(v * v * pi * (1 - pi))) + noise_variance(t / cal, query.bound, nz)
        if mechanism.rescale:
            c = mechanism.rescale_factor(spec)
            mean, var = mean / c, var / c ** 2
        return mean, var
    if isinstance(mechanism, Stretching):
        ref = spec.threshold(mechanism.reference)
        mean = float(np.sum(v * ph / ref))
        var = noise_variance(ref, query.bound * cal)
        if mechanism.rescale:
            c = float(np.mean(spec.eps / ref))
            mean, var = mean / c, var / c ** 2
        return mean, var
    raise ParameterError(f"No closed form for {mechanism.title} on a {query.kind}.")


def exact_mse(mechanism: PDPMechanism, values: np.ndarray, phi: np.ndarray, query: PersonalizedQuery,
              spec: PrivacySpec, truth: float) -> tuple[float, float] | None:
    """(bias, MSE) exactly, where the output law on fixed data is known; ``None`` otherwise.

    Closed forms for count and sum (all but PE), exact pmfs for PE (count, median,
    min) and for Minimum/Threshold on median and min. Sample on median/min/mean and
    everything on mean need simulation.
    """
    kind = query.kind
    if query.black_box is not None:
        return None
    if kind in ("count", "sum") and not isinstance(mechanism, PE):
        mean, var = linear_moments(mechanism, values, phi, query, spec)
        return mean - truth, var + (mean - truth) ** 2
    if isinstance(mechanism, PE):
        pcs, _, probs = pe_distribution(kind, values, phi, lo=float(query.lo),
                                        hi=None if query.hi is None else query.hi_bound, integer=query.on_integers)
        mean, mse = _pieces_mse(pcs, probs, truth)
        return mean - truth, mse
    if kind in ("median", "min") and isinstance(mechanism, (Minimum, Threshold)):
        if isinstance(mechanism, Minimum):
            eps, sub = spec.min_eps, np.asarray(values)
        else:
            eps = spec.threshold(mechanism.t)
            sub = np.asarray(values)[np.asarray(phi) >= eps]
        pcs, probs = em_pieces(kind, sub, eps / noise_calibration(query, spec), float(query.lo), query.hi_bound,
                               integer=query.on_integers, score=query.median_score)
        mean, mse = _pieces_mse(pcs, probs, truth)
        return mean - truth, mse
    return None


def simulate_answers(mechanism: PDPMechanism, values: np.ndarray, phi: np.ndarray, query: PersonalizedQuery,
                     spec: PrivacySpec, *, runs: int, rng: np.random.Generator) -> np.ndarray:
    """``runs`` independent answers on fixed data (vectorised over runs where the noise allows),
    with the black boxes at ε/c (:func:`noise_calibration`) as in the releases."""
    v = np.asarray(values, dtype=float)
    ph = np.asarray(phi, dtype=float)
    R = int(runs)
    if R < 1:
        raise ParameterError("The number of runs must be at least 1.")
    if query.black_box is not None:  # an opaque mechanism: one release's code path per run
        mechanism.check_query(query)
        return np.array([mechanism.answer(v, ph, query, spec, rng=rng).estimate for _ in range(R)])
    kind = query.kind
    cal = noise_calibration(query, spec)
    if isinstance(mechanism, Sample):
        t = spec.threshold(mechanism.t)
        pi = sample_probability(ph, t)
        t_run = t / cal
        if kind in ("count", "sum"):
            # independent Bernoulli inclusions: the kept total is Σ v·Bernoulli(π), drawn in batches
            totals = _bernoulli_weighted_sums(v, pi, R, rng)
            if kind == "count" and mechanism.noise == "geometric":
                nz = _noise.two_sided_geometric(t_run, R, rng=rng).astype(float)
            else:
                nz = rng.laplace(0.0, query.bound / t_run, R)
            est = totals + nz
            if mechanism.rescale:
                est = est / mechanism.rescale_factor(spec)
            return est
        order = np.argsort(v, kind="stable")
        vs, pis = v[order], pi[order]
        out = np.empty(R)
        for i in range(R):  # loop over runs (each run is vectorised over tuples)
            keep = rng.random(vs.size) < pis
            out[i] = dp_answer(kind, vs[keep], t_run, query, rng=rng, noise=mechanism.noise, presorted=True)
        return out
    if kind in ("count", "sum") and not isinstance(mechanism, PE):
        if isinstance(mechanism, Minimum):
            eps, base, back = spec.min_eps, float(v.sum()), 1.0
        elif isinstance(mechanism, Threshold):
            eps = spec.threshold(mechanism.t)
            base, back = float(v[ph >= eps].sum()), 1.0
        elif isinstance(mechanism, Stretching):
            eps = spec.threshold(mechanism.reference)
            base = float(np.sum(v * ph / eps))
            back = float(np.mean(spec.eps / eps)) if mechanism.rescale else 1.0
        else:
            raise ParameterError(f"No simulation for {mechanism.title}.")
        if kind == "count" and getattr(mechanism, "noise", "laplace") == "geometric":
            nz = _noise.two_sided_geometric(eps / cal, R, rng=rng).astype(float)
        else:
            nz = rng.laplace(0.0, query.bound * cal / eps, R)
        return (base + nz) / back
    if isinstance(mechanism, PE) or (kind in ("median", "min") and isinstance(mechanism, (Minimum, Threshold))):
        if isinstance(mechanism, PE):
            pcs, _, probs = pe_distribution(kind, v, ph, lo=float(query.lo),
                                            hi=None if query.hi is None else query.hi_bound,
                                            integer=query.on_integers)
        else:
            eps = spec.min_eps if isinstance(mechanism, Minimum) else spec.threshold(mechanism.t)
            sub = v if isinstance(mechanism, Minimum) else v[ph >= eps]
            pcs, probs = em_pieces(kind, sub, eps / cal, float(query.lo), query.hi_bound, integer=query.on_integers,
                                   score=query.median_score)
        idx = rng.choice(probs.size, size=R, p=probs)
        u = rng.random(R)
        if pcs.integer:
            return pcs.start[idx] + np.floor(u * pcs.size[idx])
        return pcs.start[idx] + u * (pcs.end[idx] - pcs.start[idx])
    # mean with Minimum / Threshold
    eps = spec.min_eps if isinstance(mechanism, Minimum) else spec.threshold(getattr(mechanism, "t", "max"))
    sub = v if isinstance(mechanism, Minimum) else v[ph >= eps]
    bound = query.bound
    e_run = eps / cal
    s = sub.sum() + rng.laplace(0.0, 2 * bound / e_run, R)
    c = sub.size + rng.laplace(0.0, 2.0 / e_run, R)
    return np.clip(s / np.maximum(c, 1.0), float(query.lo), query.hi_bound)


def _bernoulli_weighted_sums(v: np.ndarray, pi: np.ndarray, runs: int, rng: np.random.Generator,
                             max_cells: int = 4_000_000) -> np.ndarray:
    """Σ_i v_i·Bernoulli(π_i) for ``runs`` independent draws (grouped by distinct (v, π) when that is smaller)."""
    keyed = pd.DataFrame({"v": v, "p": pi}).groupby(["v", "p"], sort=False).size().reset_index(name="c")
    out = np.zeros(runs)
    if len(keyed) <= max(1, v.size // 4):
        cnt, pv, vv = keyed["c"].to_numpy(), keyed["p"].to_numpy(), keyed["v"].to_numpy()
        step = max(1, max_cells // len(keyed))
        for s in range(0, runs, step):  # batches of runs, vectorised over groups
            m = min(step, runs - s)
            out[s:s + m] = rng.binomial(cnt[None, :], pv[None, :], size=(m, cnt.size)) @ vv
        return out
    step = max(1, max_cells // max(v.size, 1))
    for s in range(0, runs, step):
        m = min(step, runs - s)
        out[s:s + m] = (rng.random((m, v.size)) < pi[None, :]) @ v
    return out


def evaluate(mechanism: PDPMechanism, values: np.ndarray, phi: np.ndarray, query: PersonalizedQuery,
             spec: PrivacySpec, truth: float, *, runs: int = 200, rng: np.random.Generator) -> dict[str, Any]:
    """RMSE of one mechanism on fixed data: exact when possible, else simulated with a 95% interval."""
    ex = exact_mse(mechanism, values, phi, query, spec, truth)
    if ex is not None:
        bias, mse = ex
        r = math.sqrt(max(mse, 0.0))
        return {"rmse": r, "bias": bias, "ci_low": r, "ci_high": r, "method": "exact"}
    est = simulate_answers(mechanism, values, phi, query, spec, runs=runs, rng=rng)
    sq = (est - truth) ** 2
    mse = float(sq.mean())
    half = 1.96 * float(sq.std(ddof=1)) / math.sqrt(sq.size) if sq.size > 1 else float("nan")
    return {"rmse": math.sqrt(mse), "bias": float(est.mean() - truth),
            "ci_low": math.sqrt(max(mse - half, 0.0)), "ci_high": math.sqrt(mse + half),
            "method": f"simulated ({sq.size} runs)"}


def compare(table: pd.DataFrame, spec: PrivacySpec, query: PersonalizedQuery,
            mechanisms: dict[str, PDPMechanism] | None = None, *, runs: int = 200,
            rng: np.random.Generator) -> pd.DataFrame:
    """RMSE of several mechanisms on ``table`` (uses the private data: for design and teaching only).

    One row per mechanism: RMSE (exact or simulated with a 95% interval), bias, the
    neighbour notion, and what users receive (share of users given their full Φ).
    """
    mechs = mechanisms or paper_mechanisms(query.kind)
    phi = spec.phi_for(table)
    raw = query.raw(table)
    vals = query.prepare(raw)
    truth = query.truth(raw)
    rows = []
    for name, m in mechs.items():
        if not m.supports(query):
            continue
        res = evaluate(m, vals, phi, query, spec, truth, runs=runs, rng=rng)
        dl = m.delivered_for(spec.eps, spec, query)
        rows.append({"mechanism": name, "label": m.label(spec), **res, "neighbours": m.neighbours_for(spec).name,
                     "users_full_phi": float(np.mean(dl >= spec.eps * (1 - 1e-12))),
                     "mean_delivered": float(dl.mean())})
    out = pd.DataFrame(rows)
    if len(out):
        out["truth"] = truth
    return out


def threshold_curve(table: pd.DataFrame, spec: PrivacySpec, query: PersonalizedQuery, ts: Sequence[float], *,
                    mechanism: Literal["sample", "threshold"] = "sample", runs: int = 100,
                    rng: np.random.Generator, noise: CountNoise = "laplace") -> pd.DataFrame:
    """RMSE against the threshold t on the actual data (**oracle: uses the private data**).

    Count and sum: closed form, split into the sampling (or dropping) part and the noise
    variance. Mean, median and min: vectorised simulation (``runs`` per t) for Sample;
    exact pmfs for Threshold on median and min. Choosing t from this curve leaks
    information about the data (Sec. IV-B); use :func:`count_mse_proxy` or old/public
    data for a private choice.
    """
    phi = spec.phi_for(table)
    raw = query.raw(table)
    vals = query.prepare(raw)
    truth = query.truth(raw)
    rows = []
    for t in ts:
        tt = _check_eps(t, "The threshold t")
        m: PDPMechanism = Sample(tt, noise=noise) if mechanism == "sample" else Threshold(tt, noise=noise)
        if query.kind in ("count", "sum"):
            mean, var = linear_moments(m, vals, phi, query, spec)
            nv = noise_variance(tt / noise_calibration(query, spec), query.bound,
                                noise if query.kind == "count" else "laplace")
            mse = var + (mean - truth) ** 2
            rows.append({"t": tt, "rmse": math.sqrt(mse), "data_part_mse": mse - nv, "noise_var": nv,
                         "method": "closed form"})
        else:
            res = evaluate(m, vals, phi, query, spec, truth, runs=runs, rng=rng)
            rows.append({"t": tt, "rmse": res["rmse"], "data_part_mse": float("nan"), "noise_var": float("nan"),
                         "method": res["method"], "ci_low": res["ci_low"], "ci_high": res["ci_high"]})
    return pd.DataFrame(rows)


def count_mse_proxy(phi_universe: np.ndarray, ts: Sequence[float], *, density: float,
                    noise: CountNoise = "laplace") -> pd.DataFrame:
    """Sample's count MSE with an *assumed* density δ of 1s (no private data used).

    With bits i.i.d. Bernoulli(δ), independent of Φ, over the public universe U:
    MSE(t) = Σ_i δ(1 − π_i)(1 − δ(1 − π_i)) + δ²(Σ_i(1 − π_i))² + Var(noise at t).
    """
    d = float(density)
    if not 0 <= d <= 1:
        raise ParameterError("The assumed density must be between 0 and 1.")
    return _mse_proxy(phi_universe, ts, d, d, 1.0, noise)


def sum_mse_proxy(phi_universe: np.ndarray, ts: Sequence[float], *, mean: float, sd: float,
                  bound: float) -> pd.DataFrame:
    """Sample's sum MSE with values assumed i.i.d. (mean m₁, standard deviation s), independent of Φ.

    With m₂ = m₁² + s²: MSE(t) = Σ_i [m₂(1 − π_i) − m₁²(1 − π_i)²] + (m₁ Σ_i (1 − π_i))² +
    2(Δ/t)²; for a count m₁ = m₂ = δ. Uses only the public specification and the assumed
    moments (e.g. from old or public data, as the paper suggests): choosing t from it is safe.
    """
    m, sd_ = float(mean), float(sd)
    if not (math.isfinite(m) and math.isfinite(sd_)) or sd_ < 0:
        raise ParameterError("The assumed mean and standard deviation must be finite (standard deviation ≥ 0).")
    return _mse_proxy(phi_universe, ts, m, m * m + sd_ * sd_, bound, "laplace")


def _mse_proxy(phi_universe: np.ndarray, ts: Sequence[float], m1: float, m2: float, bound: float,
               noise: CountNoise) -> pd.DataFrame:
    ph = np.asarray(phi_universe, dtype=float)
    rows = []
    for t in ts:
        tt = _check_eps(t, "The threshold t")
        q = 1.0 - sample_probability(ph, tt)
        with np.errstate(over="ignore", invalid="ignore"):
            data = float(np.sum(m2 * q - (m1 * m1) * (q * q)) + np.square(m1 * q.sum()))
        nv = noise_variance(tt, bound, noise)
        if not (math.isfinite(data) and math.isfinite(nv)):
            raise ParameterError("The error curve overflows: the bounds or the assumed values are too large "
                                 f"(sensitivity {bound:g}, assumed mean {m1:g}).",
                                 hint="Use public bounds lo and hi of a realistic size (and assumed values within "
                                      "them).")
        rows.append({"t": tt, "rmse": math.sqrt(data + nv), "data_part_mse": data, "noise_var": nv,
                     "method": "closed form (assumed data)"})
    return pd.DataFrame(rows)


def delivered_table(spec: PrivacySpec, mechanisms: dict[str, PDPMechanism],
                    query: PersonalizedQuery | None = None) -> pd.DataFrame:
    """Per mechanism: what users receive relative to what they asked for (over the roster U), in
    the neighbour notion of a release under ``spec`` (``query``: a count when not given)."""
    q = query or PersonalizedQuery("count")
    rows = []
    for name, m in mechanisms.items():
        d = m.delivered_for(spec.eps, spec, q)
        rows.append({"mechanism": name, "label": m.label(spec), "neighbours": m.neighbours_for(spec).name,
                     "mean_delivered": float(d.mean()), "mean_requested": spec.mean_eps,
                     "users_full_phi": float(np.mean(d >= spec.eps * (1 - 1e-12))),
                     "users_unused": float(np.mean(d == 0)),
                     "mean_excess_protection": float(np.mean(spec.eps - d))})
    return pd.DataFrame(rows)


def delivered_by_mechanism(spec: PrivacySpec, mechanisms: dict[str, PDPMechanism],
                           query: PersonalizedQuery | None = None) -> dict[str, np.ndarray]:
    """Delivered ε of every user of U under each mechanism (for CDF plots; ``query``: a count when not given)."""
    q = query or PersonalizedQuery("count")
    return {name: m.delivered_for(spec.eps, spec, q) for name, m in mechanisms.items()}


def pi_curves(thresholds: dict[str, float], upto: float, points: int = 200) -> tuple[np.ndarray, dict[str, np.ndarray]]:
    """Sample's keep probability π(Φ; t) on a grid of Φ in (0, upto] for each named threshold."""
    grid = np.linspace(_check_eps(upto, "The largest ε") / points, upto, points)
    return grid, {name: sample_probability(grid, t) for name, t in thresholds.items()}


#: The worked example of Sec. IV-C: D = ⟨3, 5, 6, 9, 11⟩ with Φ = ⟨0.1, 1, 1, 0.5, 1⟩.
PE_EXAMPLE = (np.array([3.0, 5, 6, 9, 11]), np.array([0.1, 1.0, 1.0, 0.5, 1.0]))


def pe_profile(kind: str, values: np.ndarray, phi: np.ndarray, *, lo: float = 0.0, hi: float | None = None,
               integer: bool = False, max_points: int = 2000) -> pd.DataFrame:
    """PE's score d and output probability density over the range, for plots.

    ``integer``: the declared (public) value type, as in :class:`PersonalizedQuery`. Integer ranges up
    to ``max_points`` values are expanded value by value; otherwise one row per piece (its
    start), with the probability spread over the piece's size.
    """
    pcs, d, probs = pe_distribution(kind, values, phi, lo=lo, hi=hi, integer=integer)
    if pcs.integer and (pcs.end.max() - pcs.start.min() + 1) <= max_points:
        r, pmf = expand_pieces(pcs, probs)
        idx = np.searchsorted(pcs.start, r, side="right") - 1
        return pd.DataFrame({"r": r, "d": d[idx], "probability": pmf})
    return pd.DataFrame({"r": pcs.start, "d": d, "probability": probs / np.maximum(pcs.size, 1e-300)})


def neighbour_table(mechanisms: dict[str, PDPMechanism], spec: PrivacySpec,
                    query: PersonalizedQuery | None = None) -> pd.DataFrame:
    """What each mechanism promises and under which neighbour notion, for a release of ``query``
    (a count when not given) under ``spec`` (for the UI)."""
    q = query or PersonalizedQuery("count")
    return pd.DataFrame([{"mechanism": name, "promise to each user": m.promise_for(spec, q),
                          "neighbours": m.neighbours_for(spec).name} for name, m in mechanisms.items()])
