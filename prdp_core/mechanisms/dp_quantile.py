"""Private suggestions of public parameters: a differentially private quantile over a public grid.

A splitting threshold T(a), a clipping bound or a personalized query's upper bound sets a
sensitivity, so it must be public. Read off the data (the 97th percentile), it leaks through the
parameter itself. :func:`dp_quantile` suggests it privately instead, and the suggestion is charged
to the ledger like any release.

The mechanism (Smith 2011's exponential-mechanism quantile, on a public grid of candidates; the
selection is report-noisy-max with exponential noise, the permute-and-flip law of McKenna and
Sheldon 2020, as OpenDP's ``make_noisy_max``):

* candidates c_1 < … < c_K are fixed before the data is touched (:class:`CandidateGrid`: a range
  and a spacing the designer types; the output is always one of them);
* the score of c_i is s_i = −|#{r : r(a) ≤ c_i} − α·n| (the rank error of c_i as the α-quantile),
  computed exactly in integers as −|(D − a)·n − D·#{r(a) > c_i}| with α = a/D, D = 10,000;
* adding or removing one record changes every score by at most Δ = max(a, D − a) (the ℓ∞ distance
  of the score vector; scores move in both directions), so the index of max_i (s_i + E_i), E_i ~
  Exponential(2Δ/ε), is ε-DP for add/remove neighbours (pure DP: ε²/2-zCDP in a ρ ledger);
* the engine computes the counts #{r(a) > c_i} where the data lives (K numbers reach the driver).

Accuracy: the output's rank error exceeds the best candidate's by more than
2·max(α, 1 − α)·(ln K + ln(1/β))/ε records with probability at most β
(:meth:`DPQuantile.rank_error_bound`; proof: the chosen score is at least the best score minus the
largest of the K noises, and P(max E_i > b·(ln K + t)) ≤ e^{−t}).

Secure mode draws the selection with OpenDP's exact sampler (system randomness), its privacy map
certifying ε before the index is returned; teaching mode draws the same law from a seeded numpy
generator.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

import numpy as np
import pandas as pd

from ..core.accounting import FlatLoss, LedgerEntry, pure_to_zcdp
from ..core.errors import ParameterError
from ..core.noise_source import Noise, resolve
from ..core.provenance import private_source
from ..core.secure import SecureSampler, mode_label
from ..engines import is_engine_data
from ..engines.memory import MemoryEngine

#: Denominator of the quantile level α = a/D (percentiles with up to two decimals are exact).
LEVEL_DENOMINATOR = 10_000
#: Largest number of candidates of a grid (the selection's cost grows with ln K; the scores are K numbers).
MAX_CANDIDATES = 100_000
#: Largest ε of a private quantile (the app's input allows the same). At ε = 100 the exponential noise is
#: 2Δ/ε ≤ 0.02 records of rank: the draw is already the best candidate, and a larger ε would only record
#: a weaker guarantee (and ρ = ε²/2 overflows beyond ε ≈ 10¹⁵⁴).
MAX_EPSILON = 100.0

Spacing = Literal["log", "linear"]


@dataclass(frozen=True)
class CandidateGrid:
    """The public candidates of a private quantile: ``size`` values from ``lo`` to ``hi``.

    ``spacing``: ``"log"`` (geometric, for heavy-tailed measures such as payroll or balances;
    needs lo > 0) or ``"linear"``. The range and spacing are public choices made without looking
    at the records (e.g. from the measure's definition or a published table); a value of the
    data outside the range is counted like any other, and the answer is always a candidate.
    """

    lo: float
    hi: float
    size: int = 1000
    spacing: Spacing = "log"

    def __post_init__(self) -> None:
        lo, hi = float(self.lo), float(self.hi)
        if not (math.isfinite(lo) and math.isfinite(hi) and lo < hi):
            raise ParameterError(f"A candidate range needs finite bounds with lo < hi (got {self.lo!r}, {self.hi!r}).")
        if not math.isfinite(hi - lo):
            raise ParameterError(f"The candidate range from {lo:g} to {hi:g} is too wide: its width is not a finite "
                                 "number.", hint="Narrow the range (or, for a wide positive range, use log spacing).")
        if self.spacing not in ("log", "linear"):
            raise ParameterError(f"A candidate grid's spacing is 'log' or 'linear' (got {self.spacing!r}).")
        if self.spacing == "log" and lo <= 0:
            raise ParameterError("A log-spaced candidate grid needs lo > 0.",
                                 hint="Start the range at the smallest positive value that matters (e.g. 1), or "
                                      "use linear spacing.")
        if isinstance(self.size, bool) or not isinstance(self.size, (int, np.integer)) \
                or not 2 <= int(self.size) <= MAX_CANDIDATES:
            raise ParameterError(f"A candidate grid has between 2 and {MAX_CANDIDATES:,} values (got {self.size!r}).")

    def values(self) -> np.ndarray:
        """The candidates, increasing (the grid the answer lies on)."""
        if self.spacing == "log":
            v = np.geomspace(float(self.lo), float(self.hi), int(self.size))
        else:
            v = np.linspace(float(self.lo), float(self.hi), int(self.size))
        v[0], v[-1] = float(self.lo), float(self.hi)  # the typed ends exactly
        return v

    def describe(self) -> str:
        return f"{int(self.size):,} {self.spacing}-spaced candidates from {self.lo:,.6g} to {self.hi:,.6g}"

    def to_dict(self) -> dict[str, Any]:
        return {"lo": float(self.lo), "hi": float(self.hi), "size": int(self.size), "spacing": self.spacing}

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> CandidateGrid:
        try:
            return cls(float(d["lo"]), float(d["hi"]), int(d.get("size", 1000)), d.get("spacing", "log"))
        except KeyError as exc:
            raise ParameterError(f"A candidate grid needs the key {exc} (lo, hi; size and spacing optional).") from None
        except (TypeError, ValueError):
            raise ParameterError("A candidate grid's lo, hi and size must be numbers.") from None


def level_units(pct: float) -> int:
    """The quantile level as a = α·D (α = pct/100, D = :data:`LEVEL_DENOMINATOR`), exactly."""
    try:
        p = float(pct)
    except (TypeError, ValueError):
        raise ParameterError(f"A percentile must be a number (got {pct!r}).") from None
    a = round(p * LEVEL_DENOMINATOR / 100)
    if not (0 < p < 100) or abs(a - p * LEVEL_DENOMINATOR / 100) > 1e-6:
        raise ParameterError(f"A private percentile lies strictly between 0 and 100, with at most two decimals "
                             f"(got {pct!r}).")
    return int(a)


def score_sensitivity(pct: float) -> int:
    """Δ = max(a, D − a): the ℓ∞ change of the integer scores when one record is added or removed."""
    a = level_units(pct)
    return max(a, LEVEL_DENOMINATOR - a)


def quantile_scores(n: int, above: np.ndarray, pct: float) -> np.ndarray:
    """Integer scores −|(D − a)·n − D·#{r > c_i}| = −D·|#{r ≤ c_i} − α·n| of the candidates (int64)."""
    a = level_units(pct)
    g = np.asarray(above, dtype=np.int64)
    return -np.abs((LEVEL_DENOMINATOR - a) * np.int64(n) - LEVEL_DENOMINATOR * g)


def _counts(data: Any, column: str, candidates: np.ndarray) -> tuple[int, np.ndarray]:
    """(n, #{r(column) > c} per candidate), computed by the engine holding the records."""
    if is_engine_data(data):
        eng = data.engine
        return int(eng.n_rows()), np.asarray(eng.count_above(column, candidates.tolist()), dtype=np.int64)
    table = data.table if hasattr(data, "table") and isinstance(data.table, pd.DataFrame) else data
    if not isinstance(table, pd.DataFrame):
        raise ParameterError("A private quantile reads a table, a dataset or a dataset held by an engine.")
    eng = MemoryEngine(table, cache=False)
    return int(eng.n_rows()), np.asarray(eng.count_above(column, candidates.tolist()), dtype=np.int64)


def select_index(scores: np.ndarray, sensitivity: int, epsilon: float, *, secure: bool,
                 rng: np.random.Generator | None, sampler: SecureSampler | None = None) -> tuple[int, float]:
    """argmax_i (s_i + E_i), E_i ~ Exponential(2Δ/ε): ε-DP for integer scores of ℓ∞ sensitivity Δ.
    Secure: OpenDP's exact sampler (``sampler``, default a new one), ε certified by its map; teaching:
    numpy with ``rng``. Returns (index, ε)."""
    if secure:
        return (sampler or SecureSampler()).select_integers(scores, epsilon, sensitivity=sensitivity)
    if rng is None:
        raise ParameterError("A teaching run needs a seeded generator (rng).")
    s = np.asarray(scores, dtype=float)
    noise = rng.exponential(2.0 * sensitivity / float(epsilon), size=s.size)
    return int(np.argmax(s + noise)), float(epsilon)


@dataclass(frozen=True)
class DPQuantile:
    """A private α-quantile of one measure: ``value`` (a candidate of ``grid``), its cost ``epsilon``
    (pure ε-DP for add/remove neighbours; every record pays it) and how it was drawn."""

    column: str
    pct: float
    value: float
    epsilon: float
    grid: CandidateGrid
    secure: bool = False
    seed: int | None = None

    @property
    def rho(self) -> float:
        """The cost in zCDP: ε²/2 (Bun and Steinke 2016, Prop. 1.4)."""
        return float(pure_to_zcdp(self.epsilon))

    def rank_error_bound(self, beta: float = 0.05) -> float:
        """Records by which the answer's rank error exceeds the best candidate's, with probability ≥ 1 − β:
        2·max(α, 1 − α)·(ln K + ln(1/β))/ε."""
        return rank_error_bound(self.pct, self.epsilon, int(self.grid.size), beta)

    def source(self) -> str:
        """The parameter's provenance: private, charged (never "data")."""
        return private_source(f"DP p{self.pct:g}, ε = {float(self.epsilon)!r}")  # exact: its cost is read back


def rank_error_bound(pct: float, epsilon: float, size: int, beta: float = 0.05) -> float:
    """2·max(α, 1 − α)·(ln K + ln(1/β))/ε: the exponential mechanism's bound on the extra rank error."""
    if not (0 < beta < 1):
        raise ParameterError(f"β must be strictly between 0 and 1 (got {beta!r}).")
    alpha = level_units(pct) / LEVEL_DENOMINATOR
    return 2.0 * max(alpha, 1.0 - alpha) * (math.log(size) + math.log(1.0 / beta)) / check_epsilon(epsilon)


def check_epsilon(epsilon: Any) -> float:
    """ε of a private quantile as a float: finite, > 0 and at most :data:`MAX_EPSILON`; else ParameterError."""
    try:
        e = float(epsilon)
    except (TypeError, ValueError, OverflowError):
        raise ParameterError(f"ε must be a number (got {epsilon!r}).") from None
    if not (math.isfinite(e) and e > 0):
        raise ParameterError(f"ε must be a positive finite number (got {epsilon!r}).")
    if e > MAX_EPSILON:
        raise ParameterError(f"ε must be at most {MAX_EPSILON:g} (got {e:g}).",
                             hint=f"At ε = {MAX_EPSILON:g} the private quantile is already the best candidate; a "
                                  "larger ε buys no accuracy and records a weaker guarantee.")
    return e


def dp_quantile(data: Any, column: str, pct: float, *, grid: CandidateGrid, epsilon: float, secure: bool = False,
                rng: np.random.Generator | None = None, seed: int | None = None,
                noise: Noise | None = None) -> DPQuantile:
    """The private ``pct``-th percentile of ``column`` (ε-DP, add/remove neighbours).

    ``data``: a DataFrame, a prepared dataset or a dataset held by an engine (the counts are
    computed there). ``grid``: the public candidates. ``epsilon``: the privacy loss of every
    record. ``secure``: OpenDP's exact sampler and system randomness (``rng``/``seed`` ignored);
    otherwise a teaching run seeded by ``rng`` (or ``seed``). ``noise``: the noise source
    (``Noise.teaching(seed)`` or ``Noise.secure()``), of which ``secure``/``rng``/``seed`` are the legacy spelling.
    """
    nz = resolve(noise, rng=rng, seed=seed, secure=secure)
    secure, rng, seed = nz.secure, nz.rng, nz.seed
    e = check_epsilon(epsilon)
    cands = grid.values()
    n, above = _counts(data, column, cands)
    sens = score_sensitivity(pct)
    if not secure and rng is None:
        rng = np.random.default_rng(seed)
    idx, certified = select_index(quantile_scores(n, above, pct), sens, e, secure=secure, rng=rng, sampler=nz.sampler)
    return DPQuantile(str(column), float(pct), float(cands[idx]), certified, grid, bool(secure),
                      None if secure else seed)


@dataclass(frozen=True)
class PrivateThresholds:
    """Splitting thresholds suggested privately: one DP quantile per measure, their ledger entry."""

    quantiles: tuple[DPQuantile, ...]
    entry: LedgerEntry = field(repr=False)

    @property
    def thresholds(self) -> dict[str, float]:
        return {q.column: q.value for q in self.quantiles}

    @property
    def sources(self) -> dict[str, str]:
        """``threshold_source`` of a policy using them: private (not data-derived)."""
        return {q.column: q.source() for q in self.quantiles}

    @property
    def epsilon(self) -> float:
        return float(sum(q.epsilon for q in self.quantiles))


def suggestion_entry(quantiles: Sequence[DPQuantile], what: str = "splitting thresholds") -> LedgerEntry:
    """The ledger entry of adopted private suggestions: Σ ε (sequential composition), flat for every record."""
    if not quantiles:
        raise ParameterError("No private quantile to record.")
    eps = float(sum(q.epsilon for q in quantiles))
    secure = all(q.secure for q in quantiles)
    cols = ", ".join(f"{q.column} p{q.pct:g}" for q in quantiles)
    return LedgerEntry(
        label=f"Private {what} ({cols}; {mode_label(secure)})", mechanism="dp_quantile",
        loss=FlatLoss(eps, "eps"),
        params={"what": what, "quantiles": [{"column": q.column, "pct": q.pct, "epsilon": q.epsilon,
                                             "value": q.value, "grid": q.grid.to_dict()} for q in quantiles]},
        seed=None if secure else quantiles[0].seed, secure=secure)


#: The cost a private source names: ``ε = 0.1`` in ``"private: DP p97, ε = 0.1"``.
_SOURCE_EPSILON = re.compile(r"ε\s*=\s*(?P<eps>[0-9.eE+-]+)")


def adopted_suggestions(threshold_source: Mapping[str, Any] | None, *, part: str = "threshold_source",
                        what: str = "splitting threshold", name: str = "threshold T({})") -> list[LedgerEntry]:
    """The ledger entries of the private suggestions a policy adopted, read back from its
    ``threshold_source`` (``"private: DP p97, ε = 0.1"`` per measure, as :meth:`DPQuantile.source` writes it
    with its ε exactly) — or, with ``part``, ``what`` and ``name`` (the label, ``{}`` the parameter), from a
    mechanism's ``param_source`` (a personalized bound ``hi``, a multi-tier clipping bound ``clip``).

    One flat pure-ε entry per adopted threshold, charged to every record: a study report's budget table
    and ledger list what was spent on its public parameters, not only on its releases. A private source
    written by hand is charged too when its text names its ε (``ε = …``), else
    refused (:class:`ParameterError`): a cost that cannot be read cannot be reported."""
    out: list[LedgerEntry] = []
    for column, src in (threshold_source or {}).items():
        text = str(src).strip()
        if not text.startswith("private:"):
            continue
        m = _SOURCE_EPSILON.search(text)
        if m is None:
            raise ParameterError(f"{part}.{column} ({text!r}) is private but names no ε.",
                                 hint="Write it as 'private: DP p97, ε = 0.1' (prdp suggest thresholds does).")
        eps = check_epsilon(m.group("eps"))
        out.append(LedgerEntry(label=f"Private {name.format(column)} ({text[len('private:'):].strip()})",
                               mechanism="dp_quantile", loss=FlatLoss(eps, "eps"),
                               params={"what": what, "column": str(column), "source": text}))
    return out


def dp_percentile_thresholds(data: Any, measures: Sequence[str], pct: float | Mapping[str, float], *,
                             grids: Mapping[str, CandidateGrid], epsilon: float, secure: bool = False,
                             seed: int | None = None, noise: Noise | None = None) -> PrivateThresholds:
    """Private splitting thresholds T(a) at a percentile of each measure (the PctScore of Table 8, privately).

    ``epsilon`` is the total, split evenly over the measures (sequential composition: every record
    pays ``epsilon`` once the thresholds are adopted — the returned ``entry`` goes in the ledger).
    ``grids``: the public candidates of each measure. ``pct``: one percentile or one per measure.
    ``noise``: the noise source (``Noise.teaching(seed)`` or ``Noise.secure()``); ``secure``/``seed`` are its
    legacy spelling (a seeded run without a seed draws from an unseeded generator).
    """
    ms = [str(m) for m in measures]
    if not ms:
        raise ParameterError("Name at least one measure.")
    missing = [m for m in ms if m not in grids]
    if missing:
        raise ParameterError(f"No candidate range for {', '.join(missing)}.",
                             hint="Type a public range (lo, hi) for each measure.")
    each = check_epsilon(epsilon) / len(ms)
    nz = resolve(noise, seed=seed, secure=secure)
    if not nz.secure and nz.rng is None:
        nz = Noise.from_rng(np.random.default_rng(seed))
    qs = tuple(dp_quantile(data, m, float(pct[m] if isinstance(pct, Mapping) else pct), grid=grids[m],
                           epsilon=each, noise=nz) for m in ms)
    return PrivateThresholds(qs, suggestion_entry(qs))


def suggestion_text(sug: Any, out: str) -> str:
    """What ``prdp suggest thresholds`` prints of the suggestion ``sug`` (a :class:`PrivateThresholds`, public:
    released values, their cost and the public grid) written to ``out``."""
    lines = [f"T({q.column}) = {q.value:,.6g}  (DP p{q.pct:g}, ε = {q.epsilon:.4g}; {q.grid.describe()}; rank "
             f"error within {q.rank_error_bound(0.05):,.0f} records of the best candidate's with probability 95%)\n"
             for q in sug.quantiles]
    cost = f"cost ε = {sug.epsilon:.4g} (ρ = {sug.epsilon ** 2 / 2:.4g}) for every record"
    return "".join(lines) + f"{cost}; {sug.entry.label}; written to {out}\n"


__all__ = ["CandidateGrid", "DPQuantile", "LEVEL_DENOMINATOR", "MAX_CANDIDATES", "MAX_EPSILON", "PrivateThresholds",
           "adopted_suggestions", "check_epsilon", "dp_percentile_thresholds", "dp_quantile", "level_units",
           "quantile_scores", "rank_error_bound", "score_sensitivity", "select_index", "suggestion_entry",
           "suggestion_text"]
