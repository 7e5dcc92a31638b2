"""The personalized DP mechanisms: Minimum, Threshold, Sample, PE and Stretching (Sec. IV).

* :class:`Minimum` (Def. 7) — any ε-DP mechanism at α = min_u Φ^u;
* :class:`Threshold` (Def. 8) — drop users with Φ^u < t, run at ε = t;
* :class:`Sample` (Def. 9, Thm 5) — keep tuple x with probability
  π_x = (e^{Φ^x} − 1)/(e^t − 1) (1 if Φ^x ≥ t), then run a t-DP mechanism on the kept
  tuples; user x receives exactly min(Φ^x, t);
* :class:`PE` (Def. 10, Thm 6) — the personalized exponential mechanism (substitution
  neighbours only);
* :class:`Stretching` (Alaggan et al., as translated in Sec. V-A) — scale each value by
  Φ^x/ε_ref and add Laplace(Δ/ε_ref); for sums and counts.

Every mechanism states the ε each tuple's owner receives (:meth:`PDPMechanism.delivered`,
:meth:`PDPMechanism.delivered_for`) and its promise in words, in the neighbour notion of the
release.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, ClassVar

import numpy as np
import pandas as pd

from ...core import noise as _noise
from ...core.errors import ParameterError
from ...core.neighbours import AddRemove, Substitution
from ...core.noise_source import Noise
from ...core.release import Release
from ...core.secure import SecureSampler
from .blackbox import CountNoise, dp_answer
from .neighbours import Neighbours, noise_calibration, sample_delivered_substitution, substitution_factor
from .pe import pe_draw
from .query import QUERY_KINDS, PersonalizedQuery
from .release import release
from .sample import sample_delivered, sample_probability
from .secure import secure_answer, secure_pe, secure_sample_keep, secure_stretching
from .spec import PrivacySpec, ThresholdSpec


@dataclass(frozen=True)
class Answer:
    """A mechanism's answer and what it may say about it publicly."""

    estimate: float
    eps_used: float | None = None
    scale: float | None = None
    private: dict[str, Any] = field(default_factory=dict)
    #: Secure mode: the largest ratio of the loss OpenDP's map certifies to the loss promised (≤ 1).
    certified: float | None = None


class PDPMechanism:
    """Common interface: ``answer`` on prepared arrays, ``delivered`` ε per tuple, ``release`` on a table."""

    name: ClassVar[str] = "pdp"
    title: ClassVar[str] = "PDP mechanism"
    neighbours: ClassVar[Neighbours] = AddRemove()
    kinds: ClassVar[tuple[str, ...]] = QUERY_KINDS
    #: Whether the mechanism wraps an ε-DP black box (a query's :class:`BlackBox` may replace it).
    wraps_black_box: ClassVar[bool] = True

    def label(self, spec: PrivacySpec | None = None) -> str:
        return self.title

    def check_kind(self, kind: str) -> None:
        if kind not in self.kinds:
            raise ParameterError(f"{self.title} does not answer a {kind} query.",
                                 hint=f"It supports: {', '.join(self.kinds)}.")

    def supports(self, query: PersonalizedQuery) -> bool:
        """Whether this mechanism answers ``query`` (its kind, and its black box if it has one)."""
        return query.kind in self.kinds and (query.black_box is None or self.wraps_black_box)

    def check_query(self, query: PersonalizedQuery) -> None:
        """Refuse a query this mechanism does not answer, with a message saying why."""
        self.check_kind(query.kind)
        if query.black_box is not None and not self.wraps_black_box:
            raise ParameterError(f"{self.title} has its own mechanism and cannot run the black box "
                                 f"'{query.black_box.name}'.",
                                 hint="Black boxes are wrapped by Minimum, Threshold and Sample.")

    def answer(self, values: np.ndarray, phi: np.ndarray, query: PersonalizedQuery, spec: PrivacySpec, *,
               rng: np.random.Generator) -> Answer:
        raise NotImplementedError

    def secure_answer(self, values: np.ndarray, phi: np.ndarray, query: PersonalizedQuery, spec: PrivacySpec, *,
                      sampler: SecureSampler) -> Answer:
        """The answer of a secure release: exact OpenDP samplers on a documented grid, the loss certified
        before it is returned (:mod:`.secure`)."""
        raise NotImplementedError

    def delivered(self, phi: np.ndarray, spec: PrivacySpec) -> np.ndarray:
        """The ε each tuple's owner receives from this mechanism under its own neighbour notion
        (:attr:`neighbours`; a function of the public Φ)."""
        raise NotImplementedError

    def delivered_substitution(self, phi: np.ndarray, spec: PrivacySpec, query: PersonalizedQuery) -> np.ndarray:
        """The ε each tuple's owner receives under substitution neighbours (n, the roster and Φ
        fixed; one tuple's value changes), with the black box recalibrated at ε/c
        (:func:`noise_calibration`): (k/c)·(add/remove ε) = min(k, 1)·(add/remove ε)."""
        return min(substitution_factor(query), 1.0) * self.delivered(phi, spec)

    def neighbours_for(self, spec: PrivacySpec) -> Neighbours:
        """The neighbour notion a release under ``spec`` is stated in: the mechanism's own when
        the roster was fixed independently of the data, substitution when it was read from the
        table (α, t and π then move with the table; only value changes are protected)."""
        return self.neighbours if spec.roster == "public" else Substitution()

    def delivered_for(self, phi: np.ndarray, spec: PrivacySpec, query: PersonalizedQuery) -> np.ndarray:
        """Per-user ε of a release of ``query`` under ``spec``, in the notion of :meth:`neighbours_for`."""
        if self.neighbours_for(spec) == self.neighbours:
            return self.delivered(phi, spec)
        return self.delivered_substitution(phi, spec, query)

    def promise(self, spec: PrivacySpec) -> str:
        """Public form of the per-user loss under the mechanism's own neighbour notion."""
        return f"{self._promise_core(spec, 1.0)} ({self.neighbours})"

    def promise_for(self, spec: PrivacySpec, query: PersonalizedQuery) -> str:
        """Public form of the per-user loss of a release of ``query`` under ``spec``."""
        if self.neighbours_for(spec) == self.neighbours:
            return self.promise(spec)
        k = substitution_factor(query)
        c = noise_calibration(query, spec)
        calib = f"; noise calibrated at ε/{c:.3g} for the substitution sensitivity" if c > 1 else ""
        return f"{self._promise_core(spec, k)} (substitution; roster read from the table{calib})"

    def _promise_core(self, spec: PrivacySpec, k: float) -> str:
        """The per-user loss in words, for a black box costing k·ε (recalibrated to min(k, 1)·ε)."""
        raise NotImplementedError

    def expected_share(self, spec: PrivacySpec, query: PersonalizedQuery) -> float | None:
        """The share of the true count or sum this mechanism's answer holds on average when it answers on a subset
        of the tuples without rescaling: a public number (the specification Φ over the roster), exact when the
        values are independent of Φ. None for an answer not biased this way, or a query it is not stated for."""
        return None

    def _bias_reason(self, spec: PrivacySpec) -> tuple[str, str]:
        """Why the answer holds only :meth:`expected_share` of the truth, and what that share is (the mechanisms
        that have one say)."""
        raise NotImplementedError

    def bias_note(self, spec: PrivacySpec, query: PersonalizedQuery) -> str | None:
        """The bias of this mechanism's answer to ``query`` in words, quantified (None when it has none stated)."""
        share = self.expected_share(spec, query)
        if share is None or share >= 1.0:
            return None
        why, what = self._bias_reason(spec)
        return (f"Biased low: on average its {query.kind} is about {share:.0%} of the true one "
                f"({(share - 1) * 100:+.0f}%)".replace("-", "−") + f". {why}; {share:.0%} is {what}, exact when the "
                "values are independent of Φ. More records do not shrink this bias; the noise does not cause it.")

    def release(self, table: pd.DataFrame, spec: PrivacySpec, query: PersonalizedQuery, *,
                rng: np.random.Generator | None = None, seed: int | None = None, reveal: bool = False,
                label: str | None = None, secure: bool = False, sampler: SecureSampler | None = None,
                noise: Noise | None = None) -> Release:
        """This mechanism's :func:`~.release.release` on ``table`` (``noise``: Noise.teaching(seed) or
        Noise.secure(); ``rng``/``seed``/``secure``/``sampler`` its legacy spelling)."""
        return release(table, spec, query, self, rng=rng, seed=seed, reveal=reveal, label=label, secure=secure,
                       sampler=sampler, noise=noise)

    def params(self, spec: PrivacySpec) -> dict[str, Any]:
        return {}


@dataclass(frozen=True)
class Minimum(PDPMechanism):
    """Minimum (Def. 7, baseline "M"): a standard ε-DP mechanism at α = min_u Φ^u over U.

    α ≤ Φ^x for every x, so the result is Φ-PDP. Neighbours: add/remove.
    ``noise``: count noise, ``"laplace"`` or the discrete ``"geometric"``.
    """

    noise: CountNoise = "laplace"
    name: ClassVar[str] = "minimum"
    title: ClassVar[str] = "Minimum (M)"

    def answer(self, values, phi, query, spec, *, rng):
        a = spec.min_eps / noise_calibration(query, spec)
        est = dp_answer(query.kind, values, a, query, rng=rng, noise=self.noise)
        return Answer(est, eps_used=a, scale=_scale(query, a))

    def secure_answer(self, values, phi, query, spec, *, sampler):
        a = spec.min_eps / noise_calibration(query, spec)
        est, scale, loss = secure_answer(query.kind, values, a, query, sampler)
        return Answer(est, eps_used=a, scale=scale, certified=loss / a)

    def delivered(self, phi, spec):
        return np.full(np.size(phi), spec.min_eps)

    def _promise_core(self, spec, k):
        a = spec.min_eps
        if k >= 1.0:
            return f"α = min Φ = {a:.4g} for every user"
        return f"{k:.3g}·α = {k * a:.4g} for every user (α = min Φ = {a:.4g})"

    def params(self, spec):
        return {"alpha": spec.min_eps, "noise": self.noise}


@dataclass(frozen=True)
class Threshold(PDPMechanism):
    """Threshold (Def. 8, baseline "T"): drop tuples with Φ < t, run a t-DP mechanism on the rest.

    ``t``: ``"max"`` (the paper's εL), ``"mean"``, ``"min"`` or a number; resolved on the
    public specification. Users below t receive 0 (their data is not used), the others
    t ≤ Φ. Neighbours: add/remove. The count of the kept subset is not rescaled (as in
    the paper), so it is biased low.
    """

    t: ThresholdSpec = "max"
    noise: CountNoise = "laplace"
    name: ClassVar[str] = "threshold"
    title: ClassVar[str] = "Threshold (T)"

    def label(self, spec=None):
        return f"Threshold (T, t = {_t_label(self.t, spec)})"

    def answer(self, values, phi, query, spec, *, rng):
        t = spec.threshold(self.t)
        keep = np.asarray(phi) >= t
        e = t / noise_calibration(query, spec)
        est = dp_answer(query.kind, np.asarray(values)[keep], e, query, rng=rng, noise=self.noise)
        return Answer(est, eps_used=e, scale=_scale(query, e), private={"kept": int(keep.sum())})

    def secure_answer(self, values, phi, query, spec, *, sampler):
        t = spec.threshold(self.t)
        keep = np.asarray(phi) >= t
        e = t / noise_calibration(query, spec)
        est, scale, loss = secure_answer(query.kind, np.asarray(values)[keep], e, query, sampler)
        return Answer(est, eps_used=e, scale=scale, private={"kept": int(keep.sum())}, certified=loss / e)

    def delivered(self, phi, spec):
        t = spec.threshold(self.t)
        return np.where(np.asarray(phi) >= t, t, 0.0)

    def promise(self, spec):
        t = spec.threshold(self.t)
        return f"t = {t:.4g} for users with Φ ≥ t, 0 for the others (their data is dropped; add/remove)"

    def _promise_core(self, spec, k):
        t = spec.threshold(self.t)
        head = f"t = {t:.4g}" if k >= 1.0 else f"{k:.3g}·t = {k * t:.4g}"
        return f"{head} for users with Φ ≥ t = {t:.4g}, 0 for the others (their data is dropped)"

    def params(self, spec):
        return {"t": spec.threshold(self.t), "t_rule": str(self.t), "noise": self.noise}

    def expected_share(self, spec, query):
        if query.kind not in ("count", "sum") or not spec.n_users:
            return None
        return float(np.mean(np.asarray(spec.eps) >= spec.threshold(self.t)))

    def _bias_reason(self, spec):
        return (f"Threshold drops the tuples of users with Φ < t = {spec.threshold(self.t):.4g} and does not rescale "
                "(the paper's T)", "the roster's share of users with Φ ≥ t")


@dataclass(frozen=True)
class Sample(PDPMechanism):
    """Sample (Def. 9, Thm 5, "S"; "S-avg" with ``t="mean"``): amplification by sampling.

    Each tuple x is kept independently with π_x = (e^{Φ^x} − 1)/(e^t − 1) (1 when
    Φ^x ≥ t); a t-DP black box (add/remove, any input size) runs on the kept tuples.
    User x receives ln(1 + π_x(e^t − 1)) = **min(Φ^x, t)** exactly (Eq. 2), in both
    directions. Any t > 0 is valid (the paper's range [min Φ, max Φ] is not needed by
    the proof); t = max Φ gives everyone exactly their Φ, t = min Φ is Minimum.
    The kept set must stay secret: only the answer is released.

    ``t``: threshold (``"max"``, ``"mean"``, ``"min"`` or a number; named ones from the
    public spec). ``rescale`` (ours, not the paper's): divide count and sum answers by the
    mean π over the public universe U — post-processing of public quantities only,
    unbiased when values are independent of Φ. Neighbours: add/remove.
    """

    t: ThresholdSpec = "max"
    noise: CountNoise = "laplace"
    rescale: bool = False
    name: ClassVar[str] = "sample"
    title: ClassVar[str] = "Sample (S)"

    def label(self, spec=None):
        base = "S-avg" if self.t in ("mean", "avg") else "S"
        resc = ", rescaled" if self.rescale else ""
        return f"Sample ({base}, t = {_t_label(self.t, spec)}{resc})"

    def answer(self, values, phi, query, spec, *, rng):
        t = spec.threshold(self.t)
        pi = sample_probability(phi, t)
        keep = rng.random(pi.size) < pi
        e = t / noise_calibration(query, spec)
        est = dp_answer(query.kind, np.asarray(values)[keep], e, query, rng=rng, noise=self.noise)
        if self.rescale and query.kind in ("count", "sum"):
            est = est / self.rescale_factor(spec)
        return Answer(est, eps_used=e, scale=_scale(query, e), private={"kept": int(keep.sum())})

    def secure_answer(self, values, phi, query, spec, *, sampler):
        t = spec.threshold(self.t)
        keep = secure_sample_keep(phi, t, sampler)
        e = t / noise_calibration(query, spec)
        est, scale, loss = secure_answer(query.kind, np.asarray(values)[keep], e, query, sampler)
        if self.rescale and query.kind in ("count", "sum"):
            est = est / self.rescale_factor(spec)
            scale = None if scale is None else scale / self.rescale_factor(spec)
        return Answer(est, eps_used=e, scale=scale, private={"kept": int(keep.sum())}, certified=loss / e)

    def rescale_factor(self, spec: PrivacySpec) -> float:
        """Mean π over the public universe U (the expected share of tuples kept)."""
        return float(sample_probability(spec.eps, spec.threshold(self.t)).mean())

    def expected_share(self, spec, query):
        if self.rescale or query.kind not in ("count", "sum") or not spec.n_users:
            return None
        return self.rescale_factor(spec)

    def _bias_reason(self, spec):
        return (f"Sample keeps each tuple with probability π = (e^Φ − 1)/(e^t − 1), t = {spec.threshold(self.t):.4g}, "
                "and does not rescale (the paper's S), so its expected answer is Σ π over the counted tuples (the "
                "bias Σ (π − 1) of the paper's Example 1)",
                f"the mean π over the public roster, {self.rescale_factor(spec):.3g} (the option to rescale divides "
                "by it)")

    def delivered(self, phi, spec):
        return sample_delivered(phi, spec.threshold(self.t))

    def delivered_substitution(self, phi, spec, query):
        return sample_delivered_substitution(phi, spec.threshold(self.t), substitution_factor(query))

    def _promise_core(self, spec, k):
        t = spec.threshold(self.t)
        if k == 1.0:
            return f"min(Φ, t) with t = {t:.4g}"
        return f"at most min(Φ, t) with t = {t:.4g}"

    def params(self, spec):
        t = spec.threshold(self.t)
        return {"t": t, "t_rule": str(self.t), "noise": self.noise, "rescale": self.rescale,
                "expected_share_kept": float(sample_probability(spec.eps, t).mean())}


@dataclass(frozen=True)
class PE(PDPMechanism):
    """PE, the personalized exponential mechanism (Def. 10, Thm 6) for count, median and min.

    Pr[PE(D) = r] ∝ exp(½ d_f(D, r, Φ)), d_f = −(cheapest total Φ of the tuples that
    must change for r to be the answer) (Eq. 5; the paper's "sum of …" descriptions of
    d_count and d_min miss the minus sign). Every user gets at most Φ^x.
    Neighbours: **substitution** only (one tuple's value changes, n is public; PE-count's
    output range {0..n} itself reveals n). Not comparable one-to-one with the add/remove
    mechanisms.
    """

    name: ClassVar[str] = "pe"
    title: ClassVar[str] = "PE (personalized exponential)"
    neighbours: ClassVar[Neighbours] = Substitution()
    kinds: ClassVar[tuple[str, ...]] = ("count", "median", "min")
    wraps_black_box: ClassVar[bool] = False

    def answer(self, values, phi, query, spec, *, rng):
        self.check_query(query)
        est = pe_draw(query.kind, values, phi, rng=rng, lo=float(query.lo),
                      hi=None if query.hi is None else float(query.hi), integer=query.on_integers)
        return Answer(est)

    def secure_answer(self, values, phi, query, spec, *, sampler):
        self.check_query(query)
        est, ratio = secure_pe(query.kind, values, phi, query, sampler)
        return Answer(est, certified=ratio)

    def delivered(self, phi, spec):
        return np.asarray(phi, dtype=float).copy()

    def delivered_substitution(self, phi, spec, query):
        return self.delivered(phi, spec)

    def promise(self, spec):
        return "at most Φ for every user (substitution neighbours, n public)"

    def _promise_core(self, spec, k):
        return "at most Φ for every user"


@dataclass(frozen=True)
class Stretching(PDPMechanism):
    """Stretching (Alaggan et al., "Alag." in Sec. V-A) for sums and counts.

    Each tuple's value is multiplied by Φ^x/ε_ref, then f(D′) + Laplace(Δ/ε_ref) is
    released. A tuple contributes at most Δ·Φ^x/ε_ref, so its owner receives Φ^x whatever
    ε_ref is; ``reference`` (``"max"`` = the paper's ε_L, or a number) only moves the
    bias/noise balance. The answer is biased (Σ v·Φ/ε_ref ≠ Σ v) unless ``rescale``
    (ours) divides by the mean Φ/ε_ref over U. Neighbours: add/remove.
    """

    reference: ThresholdSpec = "max"
    rescale: bool = False
    name: ClassVar[str] = "stretching"
    title: ClassVar[str] = "Stretching (Alag.)"
    kinds: ClassVar[tuple[str, ...]] = ("count", "sum")
    wraps_black_box: ClassVar[bool] = False

    def label(self, spec=None):
        resc = ", rescaled" if self.rescale else ""
        return f"Stretching (Alag., ε_ref = {_t_label(self.reference, spec)}{resc})"

    def answer(self, values, phi, query, spec, *, rng):
        self.check_query(query)
        ref = spec.threshold(self.reference)
        scaled = np.asarray(values, dtype=float) * (np.asarray(phi, dtype=float) / ref)
        scale = query.bound * noise_calibration(query, spec) / ref
        est = float(scaled.sum()) + float(_noise.laplace(scale, rng=rng))
        if self.rescale:
            est = est / float(np.mean(spec.eps / ref))
        return Answer(est, eps_used=ref, scale=scale)

    def secure_answer(self, values, phi, query, spec, *, sampler):
        self.check_query(query)
        ref = spec.threshold(self.reference)
        est, scale, ratio = secure_stretching(values, phi, query.bound, ref, noise_calibration(query, spec), sampler)
        if self.rescale:
            est = est / float(np.mean(spec.eps / ref))
        return Answer(est, eps_used=ref, scale=scale, certified=ratio)

    def delivered(self, phi, spec):
        return np.asarray(phi, dtype=float).copy()

    def _promise_core(self, spec, k):
        return "Φ for every user" if k >= 1.0 else f"{k:.3g}·Φ for every user"

    def params(self, spec):
        return {"eps_ref": spec.threshold(self.reference), "rescale": self.rescale}


def _t_label(t: ThresholdSpec, spec: PrivacySpec | None) -> str:
    if isinstance(t, str):
        name = {"max": "max Φ", "mean": "mean Φ", "avg": "mean Φ", "min": "min Φ"}.get(t, t)
        return f"{name} = {spec.threshold(t):.3g}" if spec is not None else name
    return f"{float(t):.3g}"


def _scale(query: PersonalizedQuery, eps: float) -> float | None:
    if query.kind in ("count", "sum") and query.black_box is None:
        return query.bound / eps
    return None


def paper_mechanisms(kind: str) -> dict[str, PDPMechanism]:
    """The mechanisms of the paper's count/median comparison (Sec. V-A) under their short names."""
    mechs: dict[str, PDPMechanism] = {"M": Minimum(), "T": Threshold("max"), "S": Sample("max"),
                                      "S-avg": Sample("mean")}
    if kind in PE.kinds:
        mechs["PE"] = PE()
    if kind in Stretching.kinds:
        mechs["Alag"] = Stretching()
    return mechs
