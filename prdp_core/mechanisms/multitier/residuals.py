"""Validity of a residual between two tiers' noises (Bochner's theorem; Table 1, App. F).

The construction of central multi-tier release exists only when the ratio of the tiers' noise
characteristic functions is itself a valid CF: :func:`check_residual` decides it for a family
and a pair of budgets before any data is touched (closed forms, lattice Fourier inversion,
Bochner matrices), and reproduces the paper's counterexamples.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Callable, Sequence

import numpy as np

from ...core.validate import positive as _pos
from .noise_families import FAMILY_LABELS, NoiseFamily, noise_family

# ---------------------------------------------------------------------------
# Validity of a residual (Bochner's theorem), Table 1 and App. F
# ---------------------------------------------------------------------------


def bochner_matrix(ratio: Callable[[np.ndarray], np.ndarray], points: Sequence[float] | np.ndarray) -> np.ndarray:
    """M_ab = R(t_a − t_b): a valid CF makes M Hermitian positive semi-definite for any points."""
    t = np.asarray(points, dtype=float)
    diff = np.subtract.outer(t, t)
    return np.asarray(ratio(diff.ravel()), dtype=float).reshape(diff.shape)


def bochner_min_eigenvalue(ratio: Callable[[np.ndarray], np.ndarray], points: Sequence[float] | np.ndarray) -> float:
    """Smallest eigenvalue of the Bochner matrix (negative ⇒ ``ratio`` is not a CF)."""
    return float(np.linalg.eigvalsh(bochner_matrix(ratio, points)).min())


def lattice_residual_pmf(ratio: Callable[[np.ndarray], np.ndarray], n: int = 1 << 14) -> np.ndarray:
    """Fourier coefficients p(k) = (1/2π)∫ R(t) e^{−ikt} dt of a 2π-periodic ratio R, k = −n/2 … n/2−1.

    For integer-valued noise R is a valid CF iff every p(k) ≥ 0; then p is the residual pmf.
    Computed by an n-point FFT (aliasing error is negligible for the smooth ratios here).
    """
    t = 2 * np.pi * np.arange(n) / n
    vals = np.asarray(ratio(t), dtype=complex)
    coef = np.fft.fft(vals).real / n
    return np.fft.fftshift(coef)


def residual_ratio(family: str | NoiseFamily, eps_from: float, eps_to: float, t: np.ndarray, *,
                   sensitivity: float = 1.0, delta: float | None = None,
                   params: tuple[float, float] | None = None) -> np.ndarray:
    """R(t) = Φ_to(t)/Φ_from(t), the characteristic function the residual would need (Algorithm 1)."""
    fam = family if isinstance(family, NoiseFamily) else noise_family(family, sensitivity=sensitivity, delta=delta)
    a, b = params if params is not None else (fam.param(eps_from), fam.param(eps_to))
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.asarray(fam.cf(t, b), dtype=float) / np.asarray(fam.cf(t, a), dtype=float)


@dataclass(frozen=True)
class ResidualCheck:
    """Does a residual distribution exist from budget ``eps_from`` to ``eps_to``? (Algorithm 1)

    ``exists`` is True/False when decided (closed form, a negative Fourier mass, |R| > 1 or a
    negative Bochner eigenvalue), None when no counterexample was found and no closed form is
    known (not a proof). ``witness`` holds the numbers that prove a negative answer.
    """

    family: str
    eps_from: float
    eps_to: float
    param_from: float
    param_to: float
    exists: bool | None
    method: str
    detail: str
    min_eigenvalue: float | None = None
    points: tuple[float, ...] = ()
    min_mass: float | None = None
    max_abs_ratio: float | None = None
    witness: dict[str, float] = field(default_factory=dict)

    def sentence(self) -> str:
        verdict = {True: "a residual exists", False: "no residual exists", None: "undecided"}[self.exists]
        return f"{FAMILY_LABELS[self.family]}, ε {self.eps_from:g} → {self.eps_to:g}: {verdict} ({self.method}). " \
               f"{self.detail}"


def check_residual(family: str | NoiseFamily, eps_from: float, eps_to: float, *, sensitivity: float = 1.0,
                   delta: float | None = None, params: tuple[float, float] | None = None,
                   points: Sequence[float] | None = None) -> ResidualCheck:
    """Decide whether a lower tier at ``eps_to`` can be derived from a higher one at ``eps_from``.

    The residual's CF is R(t) = Φ_{to}(t)/Φ_{from}(t) (Algorithm 1). It exists iff R is a valid
    CF (Bochner). Decided by, in order: a closed form (geometric, Laplace, Gaussian, Skellam);
    for integer-valued noise, the sign of R's Fourier coefficients (the residual pmf); for
    real-valued noise, |R(t)| ≤ 1 on a fine grid (a 2-point Bochner matrix) and the smallest
    eigenvalue of a Bochner matrix on a grid. ``params`` bypasses the ε → parameter mapping
    (e.g. σ 1 → 1.1 for the discrete Gaussian); ``points`` are extra Bochner points to report.
    Depends on the budgets only, never on data, so a plan is checked before the release.
    """
    fam = family if isinstance(family, NoiseFamily) else noise_family(family, sensitivity=sensitivity, delta=delta)
    if params is None:
        e_from, e_to = _pos("ε (from)", eps_from), _pos("ε (to)", eps_to)
        a, b = fam.param(e_from), fam.param(e_to)
    else:
        a, b = float(params[0]), float(params[1])
        e_from, e_to = float(eps_from), float(eps_to)

    def ratio(t: np.ndarray) -> np.ndarray:
        num = np.asarray(fam.cf(t, b), dtype=float)
        den = np.asarray(fam.cf(t, a), dtype=float)
        with np.errstate(divide="ignore", invalid="ignore"):
            r = num / den
        return np.where(np.abs(den) < 1e-300, np.where(np.abs(num) < 1e-300, 1.0, np.inf), r)

    common: dict[str, Any] = dict(family=fam.name, eps_from=e_from, eps_to=e_to, param_from=a, param_to=b)
    if a == b:
        return ResidualCheck(**common, exists=True, method="equal budgets",
                             detail="Same budget: the residual is 0 and both tiers receive the same output.")
    pts = tuple(float(p) for p in (points or ()))
    eig = bochner_min_eigenvalue(ratio, pts) if pts else None
    verdict, why = fam.closed_form(a, b)
    if verdict is not None:
        return ResidualCheck(**common, exists=verdict, method="closed form", detail=why, min_eigenvalue=eig,
                             points=pts)
    if fam.lattice:
        pmf = lattice_residual_pmf(ratio)
        half = pmf.size // 2
        kmin = int(np.argmin(pmf)) - half
        mass = float(pmf.min())
        if not pts:
            pts = (0.0, math.pi / 2, math.pi, 3 * math.pi / 2)
            eig = bochner_min_eigenvalue(ratio, pts)
        ok = mass >= -1e-12
        detail = ("All Fourier coefficients of the ratio are non-negative: they form the residual pmf."
                  if ok else f"The ratio's Fourier coefficient at k = {kmin} is {mass:.5g} < 0, a negative "
                             "'probability': no additive noise maps one tier to the other.")
        return ResidualCheck(**common, exists=True if ok else False, method="lattice Fourier inversion",
                             detail=detail, min_eigenvalue=eig, points=pts, min_mass=mass,
                             witness={"k": float(kmin), "mass": mass})
    # continuous: |R| ≤ 1 everywhere (2-point Bochner matrices), then a Bochner matrix on a grid
    scale = max(math.sqrt(max(fam.variance(a), 0.0)) if fam.name != "staircase" else 1.0 / fam.sensitivity, 1e-9)
    tmax = 40.0 * math.pi / scale
    grid = np.linspace(tmax / 200_000, tmax, 200_000)
    r = ratio(grid)
    absr = np.abs(r)
    i = int(np.argmax(absr))
    if absr[i] > 1 + 1e-9:
        t0 = float(grid[i])
        wit_pts = pts or (0.0, t0)
        return ResidualCheck(**common, exists=False, method="Bochner (2 points)",
                             detail=f"|R(t)| = {absr[i]:.5g} > 1 at t = {t0:.5g}: the 2×2 Bochner matrix "
                                    f"[[1, R(t)], [R(t), 1]] has eigenvalue {1 - absr[i]:.5g} < 0.",
                             min_eigenvalue=bochner_min_eigenvalue(ratio, wit_pts), points=tuple(wit_pts),
                             max_abs_ratio=float(absr[i]), witness={"t": t0, "R": float(r[i])})
    bpts = np.linspace(0, tmax / 8, 96)
    eig_grid = bochner_min_eigenvalue(ratio, bpts)
    if eig_grid < -1e-9:
        return ResidualCheck(**common, exists=False, method="Bochner matrix", detail=(
            f"The Bochner matrix on 96 points has eigenvalue {eig_grid:.5g} < 0."), min_eigenvalue=eig_grid,
            points=tuple(bpts), max_abs_ratio=float(absr[i]))
    return ResidualCheck(**common, exists=None, method="Bochner matrix", detail=(
        "No counterexample found on the test grid; this is not a proof that a residual exists."),
        min_eigenvalue=eig_grid if eig is None else eig, points=pts, max_abs_ratio=float(absr[i]))
