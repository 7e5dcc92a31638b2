"""Black-box ε-DP mechanisms wrapped by Minimum, Threshold and Sample (add/remove neighbours, any input size).

The built-in ones: Laplace (or the two-sided geometric) for count and sum, a split-budget
ratio for the mean, and the exponential mechanism for the median (rank score, sensitivity ½,
or the change-count score of Eq. 3) and the minimum (change-count score, sensitivity 1). Any
other ε-DP mechanism can be wrapped instead: a caller-supplied :class:`BlackBox` on the query
(it must be ε-DP under add/remove neighbours for any input size, empty included).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING, Callable, Literal

import numpy as np

from ...core import noise as _noise
from ...core.errors import ParameterError
from .ranges import Pieces, _draw_from_pieces, _on_grid, _pieces, _pieces_probs
from .spec import _check_eps

if TYPE_CHECKING:
    from .query import PersonalizedQuery


BlackBoxFn = Callable[[np.ndarray, float, np.random.Generator], float]


@dataclass(frozen=True)
class BlackBox:
    """A caller-supplied ε-DP mechanism DP_f (Sec. IV) for Minimum, Threshold and Sample to wrap.

    The paper's wrappers take *any* ε-DP mechanism for f as a black box; the built-in ones
    (Laplace or geometric counts and sums, the split-budget mean, the exponential-mechanism
    median and minimum) are used when a :class:`PersonalizedQuery` has no ``black_box``.

    fn:
        ``fn(values, eps, rng) -> float``. ``values`` are the prepared per-tuple inputs of the
        query (0/1 bits for a count, values clipped to [lo, hi] otherwise) of the tuples the
        wrapper passes on — all of them (Minimum), those with Φ ≥ t (Threshold) or the secret
        random sample (Sample); ``eps`` is the ε it may spend; ``rng`` the generator it must
        draw its randomness from. **Privacy meaning:** ``fn`` must be ε-DP under
        **add/remove** neighbours (one input present or absent) for every input size, empty
        included — the proofs of Defs. 7–9 and Thm 5 use exactly that. The engine cannot
        check it; a black box that is not ε-DP voids every per-user ε reported for it.
    substitution:
        k such that ``fn`` run at ε is k·ε-DP under **substitution** neighbours (one input's
        value changes, the number of inputs fixed). Used only when the roster is read from
        the table (releases then stated under substitution): the wrapper runs ``fn`` at ε/max(k, 1)
        and reports the per-user ε for k. The default 2 holds for every add/remove ε-DP ``fn``
        (a substitution is a removal followed by an addition); declare less only with a proof.
    name:
        Shown in labels, release parameters and the ledger.
    """

    name: str
    fn: BlackBoxFn
    substitution: float = 2.0

    def __post_init__(self) -> None:
        if not isinstance(self.name, str) or not self.name.strip():
            raise ParameterError("A black-box mechanism needs a name.")
        if not callable(self.fn):
            raise ParameterError(f"The black box '{self.name}' is not callable.",
                                 hint="Pass a function fn(values, eps, rng) -> float.")
        k = self.substitution
        if isinstance(k, bool) or not isinstance(k, (int, float)) or not (math.isfinite(k) and 0 < k <= 2):
            raise ParameterError(f"The substitution factor of '{self.name}' must be in (0, 2] (got {k!r}).",
                                 hint="2 is valid for every add/remove ε-DP mechanism.")

    def __call__(self, values: np.ndarray, eps: float, rng: np.random.Generator) -> float:
        """Run ``fn`` on ``values`` at ``eps``; its failures become a :class:`ParameterError`."""
        e = _check_eps(eps, "ε")
        try:
            out = self.fn(np.asarray(values, dtype=float), e, rng)
            est = float(out)
        except Exception as exc:  # noqa: BLE001 - a user's function: report, never crash the app
            raise ParameterError(f"The black-box mechanism '{self.name}' failed: {exc}") from None
        if not math.isfinite(est):
            raise ParameterError(f"The black-box mechanism '{self.name}' returned {est!r}, not a finite number.")
        return est


CountNoise = Literal["laplace", "geometric"]


def noise_variance(eps: float, sensitivity: float = 1.0, noise: CountNoise = "laplace") -> float:
    """Variance of the noise of an ε-DP count or sum: 2(Δ/ε)² (Laplace) or 2a/(1 − a)², a = e^{−ε}
    (geometric, Δ = 1)."""
    e = _check_eps(eps, "ε")
    if noise == "geometric":
        a = math.exp(-e)
        return 2 * a / (1 - a) ** 2
    r = sensitivity / e
    return 2.0 * r * r  # inf for a vanishing ε (float ** would raise OverflowError)


def dp_count(bits: np.ndarray, eps: float, *, rng: np.random.Generator, noise: CountNoise = "laplace") -> float:
    """ε-DP count (add/remove, sensitivity 1): Σ bits + Laplace(1/ε) or two-sided geometric(ε)."""
    e = _check_eps(eps, "ε")
    c = float(np.sum(bits))
    if noise == "geometric":
        return c + float(_noise.two_sided_geometric(e, rng=rng))
    return c + float(_noise.laplace(1.0 / e, rng=rng))


def dp_sum(values: np.ndarray, eps: float, bound: float, *, rng: np.random.Generator) -> float:
    """ε-DP sum of values clipped to |v| ≤ ``bound``: Σ v + Laplace(bound/ε)."""
    e = _check_eps(eps, "ε")
    return float(np.sum(values)) + float(_noise.laplace(_check_eps(bound, "The value bound") / e, rng=rng))


def dp_mean(values: np.ndarray, eps: float, lo: float, hi: float, *, rng: np.random.Generator) -> float:
    """ε-DP mean: noisy sum (ε/2, Laplace) over noisy count (ε/2, Laplace), clamped to [lo, hi].

    Both parts are add/remove DP, so the ratio is ε-DP (sequential composition); an
    empty or tiny input gives a clamped, very noisy answer rather than an error.
    """
    e = _check_eps(eps, "ε")
    bound = max(abs(lo), abs(hi))
    s = float(np.sum(values)) + float(_noise.laplace(2 * bound / e, rng=rng))
    c = float(np.size(values)) + float(_noise.laplace(2.0 / e, rng=rng))
    return float(np.clip(s / max(c, 1.0), lo, hi))


def median_scores(pieces: Pieces, score: str = "rank") -> np.ndarray:
    """Scores of the black-box median.

    ``"rank"``: s(D, r) = −(max(L(r), G(r)) − n/2)⁺. Adding or removing one tuple moves
    max(L, G) by at most 1 and n/2 by ½ in the same direction, so the sensitivity is ½;
    s = 0 exactly on the median(s).
    ``"changes"``: s(D, r) = −[(L − a)⁺ + (G − b)⁺], a = ⌊n/2⌋, b = n − 1 − a — the number
    of tuples to change for r to become the (upper) median (Eq. 3); sensitivity 1.
    """
    if score == "changes":
        n = pieces.n
        a = n // 2
        b = n - 1 - a
        if n == 0:
            return np.zeros(pieces.L.size)
        return -(np.maximum(pieces.L - a, 0) + np.maximum(pieces.G - b, 0)).astype(float)
    return -np.maximum(np.maximum(pieces.L, pieces.G) - pieces.n / 2.0, 0.0)


def min_scores(pieces: Pieces) -> np.ndarray:
    """Change-count score of the minimum: −#{x < r}, and −1 below the minimum (−1 everywhere if empty).

    Sensitivity 1 under add/remove (and under substitution: it is Eq. 3 for min).
    """
    below = (pieces.L == 0) & ~(pieces.is_point & (pieces.n > 0))
    return -(pieces.L.astype(float) + below)


def _em_logits(kind: str, pieces: Pieces, eps: float, score: str = "rank") -> np.ndarray:
    if kind == "median":
        if score == "changes":
            return eps * median_scores(pieces, "changes") / 2.0  # Δ = 1
        return eps * median_scores(pieces)  # ε·s/(2Δ) with Δ = ½
    return eps * min_scores(pieces) / 2.0  # Δ = 1


def em_pieces(kind: str, values: np.ndarray, eps: float, lo: float, hi: float, *, integer: bool = False,
              presorted: bool = False, score: str = "rank") -> tuple[Pieces, np.ndarray]:
    """Pieces and exact piece probabilities of the ε-DP exponential mechanism for median or min.

    ``integer`` (public, declared): the output range is the integers of [lo, hi] (values are
    rounded onto it) rather than the continuum; it is never inferred from the values.
    """
    e = _check_eps(eps, "ε")
    v = np.asarray(values, dtype=float)
    xs = _on_grid(v if presorted else np.sort(v), lo, hi, bool(integer))  # rounding keeps the order
    pcs = _pieces(xs, lo, hi, bool(integer))
    return pcs, _pieces_probs(pcs, _em_logits(kind, pcs, e, score))


def dp_quantile_em(kind: str, values: np.ndarray, eps: float, lo: float, hi: float, *, rng: np.random.Generator,
                   integer: bool = False, presorted: bool = False, score: str = "rank") -> float:
    """ε-DP median or min by the exponential mechanism over [lo, hi] (add/remove, any input size).

    ``integer`` (public, declared): draw from the integers of [lo, hi] instead of the
    continuum. An empty input gives a uniform draw from the range.
    """
    e = _check_eps(eps, "ε")
    v = np.asarray(values, dtype=float)
    xs = _on_grid(v if presorted else np.sort(v), lo, hi, bool(integer))
    pcs = _pieces(xs, lo, hi, bool(integer))
    return _draw_from_pieces(pcs, _em_logits(kind, pcs, e, score), rng)


def dp_answer(kind: str, values: np.ndarray, eps: float, query: PersonalizedQuery, *, rng: np.random.Generator,
              noise: CountNoise = "laplace", presorted: bool = False) -> float:
    """Run the ε-DP black box of ``kind`` on prepared values (bits or clipped values).

    The output range of median and min comes from the query's public declaration
    (``query.integer``), never from the values. A query with a :class:`BlackBox` runs it
    instead of the built-in mechanism.
    """
    if query.black_box is not None:
        return query.black_box(values, eps, rng)
    if kind == "count":
        return dp_count(values, eps, rng=rng, noise=noise)
    if kind == "sum":
        return dp_sum(values, eps, query.bound, rng=rng)
    if kind == "mean":
        return dp_mean(values, eps, float(query.lo), query.hi_bound, rng=rng)
    return dp_quantile_em(kind, values, eps, float(query.lo), query.hi_bound, rng=rng, integer=query.on_integers,
                          presorted=presorted, score=query.median_score)
