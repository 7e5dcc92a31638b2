"""What a privacy parameter means: inference accuracy, rounding, (ε, δ), per-record read-outs.

Teaching demos and review sessions translate numbers into meaning. Everything here is a
closed form or a conversion, with the paper it comes from:

* **Inference of one sensitive bit** (partial DP paper, §1: "ε = 10 permits a sensitive bit
  to be revealed with 99.995% accuracy"): against ε-DP the best adversary, who knows
  everything else, guesses a bit with a 50/50 prior correctly with probability at most
  e^ε/(1+e^ε) — randomized response reaches it. With a prior p the posterior is at most
  p·e^ε/(p·e^ε + 1 − p). Under (ε, δ)-DP: (e^ε + δ)/(1 + e^ε).
* **Rounding back Laplace counts** (§5): a count f released as f + Lap(b) rounds back to f
  exactly when |noise| < ½, with probability 1 − e^{−1/(2b)}: 1 − e^{−ε/2} for Lap(1/ε)
  (one count, add/remove neighbours), 1 − e^{−ε/4} for a histogram under replacement
  (Lap(2/ε)).
* **zCDP ↔ (ε, δ)**: the Canonne–Kamath–Steinke conversion next to the textbook
  ε = ρ + 2√(ρ ln(1/δ)) (both from :func:`prdp_core.core.accounting.zcdp_to_approx_dp`);
  the 2020 Census's 2.63-zCDP is (13.79, 1e-6)-DP by CKS but only (14.69, 1e-6) by the
  textbook bound.
* **Per-record read-out**: "a record with P(r) = x has these guarantees", for a per-record
  loss x in ε (pure, E(r)) or in ρ (zCDP, P(r)).
* **Per-attribute semantics** (partial DP paper, Props 26–27) and the limitations of
  per-record and per-attribute guarantees (§7).
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass
from typing import Iterable, Literal, Sequence

import numpy as np
import pandas as pd
from scipy.optimize import brentq, minimize_scalar

from .accounting import approx_dp_delta, zcdp_to_approx_dp
from .errors import ParameterError
from .loss_profile import Measure, _check_measure, format_loss
from .validate import non_negative as _nonneg
from .validate import probability as _prob

# ---------------------------------------------------------------------------
# ε → inference
# ---------------------------------------------------------------------------


def inference_accuracy(eps: float, delta: float = 0.0) -> float:
    """Best accuracy of guessing one sensitive bit (50/50 prior) against (ε, δ)-DP.

    ``eps`` — the privacy loss bound of the record (or attribute) the bit belongs to;
    ``delta`` — the (ε, δ) slack. The bound is (e^ε + δ)/(1 + e^ε): tight for δ = 0
    (randomized response). ε = 10 gives 0.9999546 ("99.995%", partial DP paper §1).
    """
    e = _nonneg("ε", eps)
    d = _nonneg("δ", delta)
    if d >= 1:
        raise ParameterError(f"δ must be below 1 (got {delta!r}).")
    sig = 1.0 / (1.0 + math.exp(-e))  # e^ε/(1+e^ε), stable for large ε
    return min(1.0, sig + d * (1.0 - sig))


def posterior_bound(eps: float, prior: float) -> float:
    """Largest posterior belief in a sensitive fact with prior ``prior``, against ε-DP.

    Bayes with a likelihood ratio of at most e^ε: p·e^ε / (p·e^ε + 1 − p). A 1% prior at
    ε = 5 can rise to 60%.
    """
    e = _nonneg("ε", eps)
    p = _prob("The prior", prior)
    return 1.0 / (1.0 + (1.0 - p) / p * math.exp(-e))


def laplace_round_back(scale: float) -> float:
    """Probability that f + Lap(``scale``) rounds to the exact count f: 1 − e^{−1/(2·scale)}."""
    b = _nonneg("The Laplace scale", scale)
    if b == 0:
        return 1.0
    return -math.expm1(-0.5 / b)


def laplace_round_back_eps(eps: float, *, sensitivity: float = 1.0) -> float:
    """Round-back probability of a count released with Lap(sensitivity/ε).

    ``sensitivity`` 1 — one count, or a histogram under add/remove neighbours: 1 − e^{−ε/2}
    (99.33% at ε = 10, the partial DP paper's "> 99%"); 2 — a histogram under replacement
    neighbours (Lap(2/ε)): 1 − e^{−ε/4}.
    """
    e = _nonneg("ε", eps)
    s = _nonneg("The sensitivity", sensitivity)
    if e == 0:
        return 0.0
    if s == 0:
        raise ParameterError("The sensitivity must be positive.")
    return laplace_round_back(s / e)


def accuracy_curve(eps_values: Iterable[float] | None = None, *, eps_max: float = 20.0,
                   points: int = 201) -> pd.DataFrame:
    """Inference accuracy and round-back probabilities over a range of ε (for charts).

    Without ``eps_values``, ``points`` values evenly spaced on [0, ``eps_max``].
    """
    if eps_values is None:
        eps_values = np.linspace(0.0, _nonneg("The largest ε", eps_max), int(points))
    eps = [_nonneg("ε", e) for e in eps_values]
    return pd.DataFrame({
        "eps": eps,
        "accuracy": [inference_accuracy(e) for e in eps],
        "round_back": [laplace_round_back_eps(e) for e in eps],
        "round_back_replacement": [laplace_round_back_eps(e, sensitivity=2.0) for e in eps],
    })


# ---------------------------------------------------------------------------
# zCDP ↔ (ε, δ)
# ---------------------------------------------------------------------------


@dataclass(frozen=True)
class ZcdpConversion:
    """ρ-zCDP as (ε, δ)-DP, by the CKS conversion and by the textbook bound, side by side."""

    rho: float
    delta: float
    eps_cks: float
    eps_textbook: float

    @property
    def eps_zcdp(self) -> float:
        """The "ε" of the zCDP parametrisation ½ε² = ρ (partial DP paper, Def. 3): √(2ρ)."""
        return math.sqrt(2.0 * self.rho)

    @property
    def saving(self) -> float:
        """How much smaller the CKS ε is than the textbook one."""
        return self.eps_textbook - self.eps_cks


def zcdp_side_by_side(rho: float, delta: float = 1e-6) -> ZcdpConversion:
    """(ε, δ) of ρ-zCDP by Canonne–Kamath–Steinke and by ρ + 2√(ρ ln(1/δ)).

    ``rho`` — the zCDP parameter (per record, or of a whole release); ``delta`` — the
    failure probability. ρ = 2.63, δ = 1e-6 (2020 Census) gives 13.79 vs 14.69.
    """
    return ZcdpConversion(float(rho), float(delta), zcdp_to_approx_dp(rho, delta, method="cks"),
                          zcdp_to_approx_dp(rho, delta, method="textbook"))


def conversion_table(rhos: Sequence[float] | np.ndarray | None = None, delta: float = 1e-6, *, rho_max: float = 5.0,
                     points: int = 60) -> pd.DataFrame:
    """One row per ρ: ε by CKS, ε by the textbook bound, and √(2ρ).

    Without ``rhos``, ``points`` values evenly spaced on (0, ``rho_max``].
    """
    if rhos is None:
        rhos = np.linspace(0.0, _nonneg("The largest ρ", rho_max), int(points) + 1)[1:]
    rows = []
    for r in rhos:
        c = zcdp_side_by_side(r, delta)
        rows.append({"rho": c.rho, "eps_cks": c.eps_cks, "eps_textbook": c.eps_textbook, "eps_zcdp": c.eps_zcdp})
    return pd.DataFrame(rows)


def rho_for_approx_dp(eps: float, delta: float = 1e-6, *,
                      method: Literal["cks", "textbook"] = "cks") -> float:
    """Largest ρ whose zCDP guarantee implies (ε, δ)-DP by ``method`` (inverse of the conversion)."""
    e = _nonneg("ε", eps)
    d = _prob("δ", delta)
    if e == 0:
        return 0.0
    if method == "textbook":
        ld = -math.log(d)
        return (math.sqrt(ld + e) - math.sqrt(ld)) ** 2
    if method != "cks":
        raise ParameterError(f"Unknown conversion '{method}'.", hint="Use 'cks' or 'textbook'.")
    def f(r: float) -> float:
        return zcdp_to_approx_dp(r, d) - e

    # CKS gives ε = 0 for tiny ρ (the guarantee is then (0, δ)-DP), so ρ can exceed ε: widen the bracket
    hi = max(e, 1e-15)
    while f(hi) <= 0 and hi < 1e300:
        hi *= 16.0
    return float(brentq(f, 0.0, hi, xtol=min(1e-14, e), rtol=1e-12))


def zcdp_inference_accuracy(rho: float) -> float:
    """Best accuracy of guessing one bit (50/50 prior) against ρ-zCDP (an upper bound).

    The smaller of two valid bounds: Pinsker (KL ≤ ρ ⇒ accuracy ≤ ½ + ½√(ρ/2)) and the
    best (ε, δ(ε)) point of the CKS conversion, min_ε (e^ε + δ(ε))/(1 + e^ε).
    """
    return _zcdp_accuracy(_nonneg("ρ", rho))


@functools.lru_cache(maxsize=512)
def _zcdp_accuracy(r: float) -> float:
    if r == 0:
        return 0.5
    pinsker = 0.5 + 0.5 * math.sqrt(r / 2.0)

    def acc(e: float) -> float:
        return inference_accuracy(e, min(approx_dp_delta(r, e), 1.0 - 1e-16))

    hi = r + 10.0 * math.sqrt(r) + 10.0
    grid = np.linspace(0.0, hi, 25)
    vals = [acc(float(e)) for e in grid]
    i = int(np.argmin(vals))
    res = minimize_scalar(acc, bounds=(grid[max(i - 1, 0)], grid[min(i + 1, grid.size - 1)]), method="bounded")
    return float(min(pinsker, vals[i], res.fun, 1.0))


# ---------------------------------------------------------------------------
# Per-record read-out
# ---------------------------------------------------------------------------


def _exp_text(x: float) -> str:
    """e^x as text, also beyond the float range (e^1000 is written as a power of ten)."""
    if x < 700:
        return f"{math.exp(x):,.3g}"
    return f"about 10^{x / math.log(10):,.0f}"


@dataclass(frozen=True)
class RecordGuarantee:
    """What a record with per-record loss P(r) = ``value`` (in ``measure``) is promised.

    For ``measure="eps"`` (pure, E(r)): every output is at most e^value times more likely
    with the record than without it. For ``"rho"`` (zCDP, P(r)): every Rényi divergence of
    order α is at most α·value. Derived read-outs: (ε, δ) at ``delta`` (CKS and textbook),
    the best accuracy of guessing one bit about the record, and the posterior from ``prior``.
    """

    value: float
    measure: Measure
    delta: float
    prior: float
    rho: float
    eps_pure: float | None
    eps_cks: float
    eps_textbook: float
    accuracy: float
    posterior: float

    def sentences(self) -> list[str]:
        """Plain-language read-out, one sentence per guarantee."""
        pct = percent
        if self.measure == "eps":
            e = self.value
            out = [f"With or without this record, any output of the release is at most e^{e:.3g} = "
                   f"{_exp_text(e)} times more (or less) likely.",
                   f"Someone who knows everything else guesses one yes/no fact about this record correctly with "
                   f"probability at most {pct(self.accuracy)} (a coin flip is 50%).",
                   f"A suspicion held with {pct(self.prior)} certainty can rise to at most {pct(self.posterior)}.",
                   f"In zCDP terms this is ρ = ε²/2 = {self.rho:.4g}."]
        else:
            out = [f"Each Rényi divergence of order α between the outputs with and without this record is at most "
                   f"α × {self.value:.4g}.",
                   f"As (ε, δ)-DP with δ = {self.delta:.0e}: ε = {self.eps_cks:.3g} by the "
                   f"Canonne–Kamath–Steinke "
                   f"conversion (the textbook bound ρ + 2√(ρ ln(1/δ)) says {self.eps_textbook:.3g}).",
                   f"Someone who knows everything else guesses one yes/no fact about this record correctly with "
                   f"probability at most {pct(self.accuracy)} (a coin flip is 50%).",
                   f"A suspicion held with {pct(self.prior)} certainty can rise to at most about "
                   f"{pct(self.posterior)} (using the (ε, δ) view; δ is the chance the bound fails)."]
        return out


def percent(p: float) -> str:
    """A probability as a percentage with enough digits to tell it from 100% (99.995%, 99.33%)."""
    if p >= 1.0:
        return "100%"
    if p <= 0.0:
        return "0%"
    if p < 0.1:
        return f"{100 * p:.2g}%"
    gap = 1.0 - p
    digits = 1 if gap >= 0.05 else min(12, max(1, int(math.ceil(-math.log10(gap))) - 1))
    return f"{100 * p:.{digits}f}%"


def record_guarantee(value: float, measure: Measure = "rho", *, delta: float = 1e-6,
                     prior: float = 0.01) -> RecordGuarantee:
    """The guarantees of a record whose per-record loss is ``value`` in ``measure``.

    ``value`` — P(r) in ρ (zCDP) or E(r) in ε (pure DP); ``delta`` — δ of the (ε, δ) read-out;
    ``prior`` — the adversary's prior belief in a sensitive fact about the record.
    """
    _check_measure(measure)
    v = _nonneg("The per-record loss", value)
    d = _prob("δ", delta)
    p = _prob("The prior", prior)
    if measure == "eps":
        rho = 0.5 * v * v
        return RecordGuarantee(v, measure, d, p, rho, v, v, v, inference_accuracy(v), posterior_bound(v, p))
    conv = zcdp_side_by_side(v, d)
    post = min(1.0, posterior_bound(conv.eps_cks, p) + d) if v > 0 else p
    return RecordGuarantee(v, measure, d, p, v, None, conv.eps_cks, conv.eps_textbook,
                           zcdp_inference_accuracy(v), post)


def record_guarantee_table(values: Sequence[float], measure: Measure = "rho", *, delta: float = 1e-6,
                           prior: float = 0.01) -> pd.DataFrame:
    """:func:`record_guarantee` for several losses, one row each."""
    rows = []
    for v in values:
        g = record_guarantee(v, measure, delta=delta, prior=prior)
        rows.append({"loss": g.value, "rho": g.rho, "eps_cks": g.eps_cks, "eps_textbook": g.eps_textbook,
                     "accuracy": g.accuracy, "posterior": g.posterior})
    return pd.DataFrame(rows)


# ---------------------------------------------------------------------------
# Per-attribute semantics (partial DP paper, §7, Props 26–27)
# ---------------------------------------------------------------------------


def tv_bound_prop26(eps0: float, attributes: int = 1) -> float:
    """Prop. 26: an ε0-∇0DP release moves the posterior of |s| attributes by at most e^{2|s|ε0} − 1
    in total variation — assuming the prior factors between those attributes and the others.
    Vacuous (≥ 1) once |s|·ε0 ≥ ln 2 / 2 ≈ 0.347."""
    e = _nonneg("ε0", eps0)
    s = int(attributes)
    if s < 1:
        raise ParameterError("The number of attributes must be at least 1.")
    return math.expm1(2.0 * s * e)


def mi_bound_prop27(eps0: float, block_sizes: Sequence[int]) -> float:
    """Prop. 27: mutual information (nats) between a record and an ε0-∇0CDP release is at most
    ½ε0²·Σ_j |s_j|², for independent records whose attribute blocks s_j are independent."""
    e = _nonneg("ε0", eps0)
    sizes = [int(s) for s in block_sizes]
    if not sizes or min(sizes) < 1:
        raise ParameterError("Give at least one block of at least one attribute.")
    return 0.5 * e * e * sum(s * s for s in sizes)


# ---------------------------------------------------------------------------
# Plain-language guidance next to extreme values
# ---------------------------------------------------------------------------

#: Above this ε (at the read-out's δ) a loss is called weak: under pure ε-DP a worst-case guesser would be right
#: about one yes/no fact with probability e^ε/(1 + e^ε) > 99.995% (the read-out itself states the zCDP bound of
#: :func:`zcdp_inference_accuracy`, about 90% at this cut-off).
WEAK_EPS = 10.0
#: Above this ε a loss promises nothing a reader would call privacy.
VOID_EPS = 100.0

#: What "unbounded" means beside a worst-case ρ of a release's public form.
UNBOUNDED_NOTE = ("**Unbounded** means that the policy's formula sets no largest loss: a query on split data charges "
                  "a record ρ × m(r)², and a record can be as large as you like, so it could lose as much as you "
                  "like. The real records' losses are finite (teaching mode shows the largest). For a finite worst "
                  "case, answer the sums before splitting with the measure top-coded (clamped at a public bound).")


def loss_guidance(rho: float, delta: float = 1e-6, *, pieces: int | None = None) -> str | None:
    """A plain-language sentence for an extreme per-record loss ``rho`` (in ρ): what it means as (ε, δ) at ``delta``,
    what an attacker could infer, and what to change; None for a loss at most :data:`WEAK_EPS` at ``delta``.
    ``pieces``: m(r) of the record paying it, when known (the loss grows with its square)."""
    if isinstance(rho, (int, float)) and rho == math.inf:
        return UNBOUNDED_NOTE
    r = _nonneg("The loss", rho)
    eps = zcdp_to_approx_dp(r, _prob("δ", delta))
    if eps <= WEAK_EPS:
        return None
    cut = f" It is paid by a record cut into {pieces:,} pieces: the loss grows with the square of that number." \
        if pieces and pieces > 1 else ""
    if eps > VOID_EPS:
        what = ("For this record the release promises nothing useful: someone who knows every other record could "
                "read its values off the answers almost exactly.")
    else:
        what = (f"That is weak: someone who knows every other record guesses one yes/no fact about it correctly with "
                f"probability up to {percent(zcdp_inference_accuracy(r))}.")
    return (f"A loss of {format_loss(r)} is ε ≈ {format_loss(eps, 'eps')[:-1]} at δ = {delta:.0e}. {what}{cut} "
            "To lower it, raise the "
            "splitting thresholds T(a), or answer the sums before splitting with the measure top-coded.")


# ---------------------------------------------------------------------------
# Limitations checklist (partial DP paper §7; per-record papers)
# ---------------------------------------------------------------------------


@dataclass(frozen=True)
class Limitation:
    """One thing a guarantee does not promise, with the question a reviewer should ask."""

    title: str
    applies_to: Literal["per-record", "per-attribute", "both"]
    question: str
    explanation: str


LIMITATIONS: tuple[Limitation, ...] = (
    Limitation("Membership is not protected better", "per-attribute",
               "Is being in the dataset itself sensitive (a register of patients, of debtors)?",
               "Whether someone is in the data depends on all of their attributes at once, so the per-attribute "
               "ε0 says nothing about it: only the whole-record guarantee (up to d·ε0) does."),
    Limitation("Repeated or correlated attributes add up", "per-attribute",
               "Do several attributes carry the same fact (nested codes, a home address repeated over time)?",
               "A fact recorded in k attributes is protected only at about k·ε0 (pure) or ½(k·ε0)² (zCDP). "
               "Nested codes (NAICS2 … NAICS6, state and county) change together."),
    Limitation("The encoding decides what an 'attribute' is", "per-attribute",
               "Is each attribute a meaningful fact, or a bit of an encoding?",
               "A category stored as b bits or b one-hot columns costs up to b·ε0 under bit-level accounting; "
               "account it as one attribute group."),
    Limitation("A large whole-record ε is still large", "both",
               "Is the whole-record (or largest per-record) loss reported next to the finer numbers?",
               "Per-attribute and per-record statements supplement ε, never replace it: ε = 10 still lets a "
               "worst-case adversary guess a bit with 99.995% accuracy."),
    Limitation("The loss of a record is itself confidential", "per-record",
               "Could publishing a record's loss reveal its value?",
               "Under a per-record policy the loss depends on the record (e.g. its size), so per-record losses "
               "are shown to the designer only; the public form is the policy function."),
    Limitation("Large records may lose more", "per-record",
               "Who pays the highest loss, and do they know and accept it?",
               "Per-record policies let some records (large firms, willing users) lose more than others; the "
               "guarantee of the record with the largest P(r) is the standard DP guarantee of the release."),
    Limitation("Groups and owners", "both",
               "Does one person or firm own several records?",
               "An owner of several records is protected only by group privacy: the sum of its records' losses "
               "(pure) or more (zCDP)."),
    Limitation("Correlations between people are not covered", "both",
               "Could a release about others reveal something about this person (relatives, an outbreak)?",
               "DP bounds what a release reveals because of one record's data, not what it reveals about "
               "someone through correlated data of others."),
    Limitation("Seeded or floating-point noise is not a real release", "both",
               "Was the noise drawn with the secure sampler?",
               "Teaching runs are seeded and reproducible; floating-point samplers can leak through their low "
               "bits. Real releases use the secure mode."),
)


def limitations(applies_to: str | None = None) -> list[Limitation]:
    """The limitations checklist, optionally only those applying to ``"per-record"`` or ``"per-attribute"``."""
    if applies_to is None:
        return list(LIMITATIONS)
    return [x for x in LIMITATIONS if x.applies_to in (applies_to, "both")]
