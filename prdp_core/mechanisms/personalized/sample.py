"""Sample mechanism helpers (Def. 9, Thm 5): keep probabilities π and the ε each user receives.

Tuple x is kept with π_x = (e^{Φ^x} − 1)/(e^t − 1) (1 if Φ^x ≥ t), and its owner receives
exactly min(Φ^x, t) under add/remove neighbours.
"""

from __future__ import annotations

import math

import numpy as np

from .spec import _check_eps


def sample_probability(phi: np.ndarray | float, t: float) -> np.ndarray:
    """π_x = (e^{Φ^x} − 1)/(e^t − 1) if Φ^x < t, else 1 (computed with expm1 for small ε)."""
    tt = _check_eps(t, "The threshold t")
    p = np.minimum(np.asarray(phi, dtype=float), tt)
    # (e^Φ − 1)/(e^t − 1) = e^{Φ−t}·(1 − e^{−Φ})/(1 − e^{−t}): accurate for tiny ε and no overflow for huge ε
    return np.where(p < tt, np.exp(p - tt) * -np.expm1(-p) / -math.expm1(-tt), 1.0)


def sample_delivered(phi: np.ndarray | float, t: float) -> np.ndarray:
    """ln(1 + π_x(e^t − 1)) = min(Φ^x, t): the ε each user receives from Sample(t)."""
    return np.minimum(np.asarray(phi, dtype=float), _check_eps(t, "The threshold t"))
