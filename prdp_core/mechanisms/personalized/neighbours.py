"""Neighbour notions of personalized DP, and the per-user loss under substitution neighbours.

:class:`~prdp_core.mechanisms.personalized.mechanisms.Minimum`, ``Threshold``, ``Sample`` and
``Stretching`` are proved under **add/remove** neighbours (Def. 2: D′ = D plus or minus one
tuple); ``PE`` only under **substitution** neighbours (Sec. IV-C: one tuple's *value* changes,
n is public). A substitution is a removal plus an addition, so a substitution-ε is roughly
twice as weak as an add/remove-ε; releases of the two kinds should not be totalled in one
ledger as if they were the same unit.

A roster read from the table (roster ``"table"``) is protected under substitution only: n, the
users and their Φ are public, one tuple's value changes. The per-user loss is then recomputed
for that notion (:func:`substitution_factor`, :func:`noise_calibration`; Sample by the
amplification bound of :func:`sample_delivered_substitution`).
"""

from __future__ import annotations

import math

import numpy as np

from ...core.errors import ParameterError
from ...core.neighbours import AddRemove, NeighbourRelation, Substitution
from .query import PersonalizedQuery
from .sample import sample_probability
from .spec import PrivacySpec, _check_eps

#: A PDP mechanism's neighbour relation (:class:`~prdp_core.core.neighbours.AddRemove` or
#: :class:`~prdp_core.core.neighbours.Substitution`).
Neighbours = NeighbourRelation

#: Plain-language statement of each neighbour notion by its name, for docstrings and the UI.
NEIGHBOUR_TEXT: dict[str, str] = {r.name: r.text for r in (AddRemove(), Substitution())}


def substitution_factor(query: PersonalizedQuery) -> float:
    """k: the ε-DP black box of ``query`` run at ε (add/remove) is k·ε-DP under substitution.

    Substitution neighbours keep n and change one tuple's (clipped) value:

    * count — a bit flips: sensitivity 1 either way, k = 1;
    * sum — the value moves across [lo, hi] instead of appearing: k = (hi − lo)/max(|lo|, |hi|)
      (1 for lo = 0; up to 2 when lo < 0 < hi);
    * mean — only the noisy sum (run at ε/2 with Laplace(2·max(|lo|, |hi|)/ε)) moves, the
      count is n: k = (hi − lo)/(2·max(|lo|, |hi|)) ≤ 1;
    * median with the rank score — sensitivity ½ under add/remove but 1 under substitution
      (L and G can both move by one): k = 2; with the change-count score of Eq. 3 (built for
      substitution, sensitivity 1 both ways) k = 1;
    * min — the change-count score has sensitivity 1 under both notions: k = 1.

    All brute-force checked in the tests. A caller-supplied :class:`BlackBox` declares its own
    k (default 2, valid for any add/remove ε-DP mechanism).
    """
    if query.black_box is not None:
        return float(query.black_box.substitution)
    if query.kind == "count":
        return 1.0
    lo, hi, b = float(query.lo), query.hi_bound, query.bound
    if query.kind == "sum":
        return (hi - lo) / b
    if query.kind == "mean":
        return (hi - lo) / (2.0 * b)
    if query.kind == "median" and query.median_score == "rank":
        return 2.0
    return 1.0


def noise_calibration(query: PersonalizedQuery, spec: PrivacySpec) -> float:
    """c: the black boxes of Minimum, Threshold, Sample and Stretching run at ε/c.

    c = 1 when the roster is public (add/remove, as in the paper). With a roster read from
    the table the releases are stated under substitution, where the black box of ``query``
    costs k·ε (:func:`substitution_factor`); c = max(k, 1) recalibrates it so that every user
    still receives at most their Φ (k > 1 only for the rank-score median, k = 2, and for sums
    with lo < 0 < hi). Public: it depends on the query and the roster's provenance only.
    """
    return max(substitution_factor(query), 1.0) if spec.roster == "table" else 1.0


def sample_delivered_substitution(phi: np.ndarray | float, t: float, k: float = 1.0) -> np.ndarray:
    """Sample(t)'s per-user ε under substitution neighbours when its black box runs at t/c,
    c = max(k, 1) (:func:`noise_calibration`): a = t/c under add/remove, s = k·t/c ≤ t under
    substitution (0 ≤ k ≤ 2, :func:`substitution_factor`).

    With A the output law when x is not kept, B and B′ when x is kept with its two values
    (B ≤ e^a·A, A ≤ e^a·B′, B ≤ e^s·B′), the ratio ((1 − π)A + πB)/((1 − π)A + πB′) is
    largest at A = e^{s−a}·B′, B = e^s·B′, which gives

        ε_x = ln(1 + π(e^a − 1)) − ln(1 + π(e^{a−s} − 1)).

    k = 1 (counts, min, the change-count median): min(Φ^x, t), as under add/remove; k < 1
    (means, sums with lo > 0): less; k > 1 (recalibrated): at most min(Φ^x, t) (with
    u = π(e^a − 1) the claim reduces to u ≤ e^a − 1, i.e. π ≤ 1). Checked against exact
    output laws in the audits.
    """
    tt = _check_eps(t, "The threshold t")
    kk = float(k)
    if not (math.isfinite(kk) and 0 <= kk <= 2):
        raise ParameterError(f"The substitution factor k must be in [0, 2] (got {k!r}).")
    pi = sample_probability(phi, tt)
    c = max(kk, 1.0)
    a, s_ = tt / c, kk * tt / c
    first = np.minimum(np.asarray(phi, dtype=float), tt) if c == 1.0 else _log_mix(pi, a)
    return np.maximum(first - _log_mix(pi, a - s_), 0.0)


def _log_mix(pi: np.ndarray, x: float) -> np.ndarray:
    """ln(1 + π(e^x − 1)) = ln((1 − π) + π·e^x), also where π·(e^x − 1) rounds to −1 (π = 1 and a
    large negative x: log1p(−1) would give −∞ instead of x)."""
    p = np.asarray(pi, dtype=float)
    u = p * math.expm1(x)
    with np.errstate(divide="ignore"):
        stable = np.logaddexp(np.log1p(-p), np.log(p) + x)
    return np.where(u > -0.5, np.log1p(np.maximum(u, -0.5)), stable)
