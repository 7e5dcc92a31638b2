"""Conversions between privacy measures: zCDP to (ε, δ)-DP and back, pure ε-DP to zCDP.

:func:`zcdp_to_approx_dp` uses the Canonne–Kamath–Steinke bound (default, tight) or the textbook
ε = ρ + 2√(ρ ln(1/δ)); :func:`approx_dp_delta` is the δ of a ρ-zCDP release at a given ε; a pure
ε-DP release is also ε²/2-zCDP (Bun and Steinke 2016, Prop. 1.4), :func:`pure_to_zcdp`.
"""

from __future__ import annotations

import math
from typing import Literal, overload

import numpy as np
import pandas as pd
from scipy.optimize import minimize_scalar

from .errors import ParameterError


def _check_rho_delta(rho: float, delta: float) -> tuple[float, float]:
    r, d = float(rho), float(delta)
    if not math.isfinite(r) or r < 0:
        raise ParameterError(f"ρ must be a non-negative number (got {rho!r}).")
    if not (0 < d < 1):
        raise ParameterError(f"δ must be strictly between 0 and 1 (got {delta!r}).")
    return r, d


def zcdp_to_approx_dp(rho: float, delta: float, *, method: Literal["cks", "textbook"] = "cks") -> float:
    """ε such that ρ-zCDP implies (ε, δ)-DP.

    * ``"cks"`` — Canonne, Kamath and Steinke (2020), Prop. 12 / Cor. 13:
      ε = inf_{α>1} αρ + [ln(1/δ) + (α−1)·ln(1−1/α) − ln α] / (α−1).
    * ``"textbook"`` — Bun and Steinke (2016), Prop. 1.3: ε = ρ + 2√(ρ·ln(1/δ)).

    Example: ρ = 2.63, δ = 1e-6 gives ε ≈ 13.79 (CKS) and ≈ 14.69 (textbook).
    """
    r, d = _check_rho_delta(rho, delta)
    if r == 0:
        return 0.0
    if method == "textbook":
        return r + 2.0 * math.sqrt(r * -math.log(d))
    if method != "cks":
        raise ParameterError(f"Unknown conversion '{method}'.", hint="Use 'cks' or 'textbook'.")
    ld = -math.log(d)  # ln(1/δ), finite even where 1/δ overflows

    def eps_at(log_am1: float) -> float:
        a = 1.0 + math.exp(log_am1)
        if a == 1.0:  # α − 1 below float resolution (huge ρ): outside the useful range
            return math.inf
        return a * r + (ld + (a - 1.0) * math.log1p(-1.0 / a) - math.log(a)) / (a - 1.0)

    # α* ≈ 1 + sqrt(ln(1/δ)/ρ); search log(α−1) around it
    centre = 0.5 * (math.log(ld) - math.log(r))
    res = minimize_scalar(eps_at, bounds=(centre - 30.0, centre + 30.0), method="bounded",
                          options={"xatol": 1e-10})
    best = min(float(res.fun), r + 2.0 * math.sqrt(r * ld))  # never worse than the textbook bound
    return max(best, 0.0)


def approx_dp_delta(rho: float, eps: float) -> float:
    """Smallest δ (CKS bound) such that ρ-zCDP implies (ε, δ)-DP."""
    r, e = float(rho), float(eps)
    if r < 0 or not math.isfinite(r) or not math.isfinite(e):
        raise ParameterError("ρ and ε must be finite, ρ ≥ 0.")
    if r == 0:
        return 0.0

    def log_delta(log_am1: float) -> float:
        a = 1.0 + math.exp(log_am1)
        return (a - 1.0) * (a * r - e) - math.log(a - 1.0) + a * math.log1p(-1.0 / a)

    res = minimize_scalar(log_delta, bounds=(-30.0, 30.0), method="bounded", options={"xatol": 1e-10})
    return float(min(1.0, math.exp(min(res.fun, 0.0))))


def conversion_table(levels: dict[str, float], delta: float) -> pd.DataFrame:
    """(ε, δ) equivalents of several zCDP losses: one row per named level, CKS and textbook."""
    rows = []
    for name, rho in levels.items():
        rows.append({"level": name, "ρ (zCDP)": float(rho),
                     "ε at δ (CKS)": zcdp_to_approx_dp(rho, delta, method="cks"),
                     "ε at δ (textbook)": zcdp_to_approx_dp(rho, delta, method="textbook")})
    return pd.DataFrame(rows)


@overload
def pure_to_zcdp(eps: float) -> float: ...
@overload
def pure_to_zcdp(eps: np.ndarray) -> np.ndarray: ...
def pure_to_zcdp(eps: float | np.ndarray) -> float | np.ndarray:
    """ε-DP implies (ε²/2)-zCDP (Bun and Steinke 2016, Prop. 1.4)."""
    return 0.5 * np.square(eps)
