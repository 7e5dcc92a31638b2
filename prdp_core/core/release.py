"""The record of one mechanism run: answers, per-record losses, parameters, seed.

Every mechanism's ``release(...)`` returns a :class:`Release`. It carries enough to
reproduce and audit the run: the noisy answers (with their noise scale and confidence
intervals where the noise allows), the per-record *delivered* loss next to the
*requested* one where the policy is a requirement (E(r), Φ), the ledger entries it adds,
the parameters and the seed. True answers are attached only when the caller asks for
them (teaching mode); :meth:`Release.for_review` strips them and every per-record
number, for review-mode exports.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np
import pandas as pd

from .accounting import LedgerEntry
from .distribution import LossDistribution
from .loss_profile import LossProfile, Measure

#: Columns of ``Release.answers`` that reveal true (confidential) values.
TRUTH_COLUMNS = ("true", "error", "abs_error", "rel_error", "are", "n_records")


@dataclass(frozen=True)
class Release:
    """Result of one mechanism run.

    Attributes
    ----------
    mechanism:
        Dotted name, e.g. ``"unit_splitting.gaussian_sum"``.
    answers:
        One row per released number: ``query`` and any group-key columns, ``estimate``,
        and where meaningful ``sigma``/``scale``, ``ci_low``/``ci_high``; truth columns
        (``true``, ``error``, ``rel_error`` …) only when ``truth_included``.
    measure:
        Unit of the per-record losses: ``"rho"`` (zCDP) or ``"eps"`` (pure DP).
    loss:
        Delivered per-record loss, aligned with the rows of the input table
        (confidential), or ``None`` in review exports.
    requested:
        Requested per-record loss (E(r) or Φ) where the policy is a requirement.
    loss_distribution:
        The delivered losses as a distribution (how many records pay each loss), for releases
        of tables held by an engine, which carry no per-record array (``loss`` is None then);
        confidential too.
    entries:
        The ledger entries this release adds (their loss functions are public forms).
    params:
        Every parameter of the run. ``seed`` is the teaching seed (``None`` for secure runs).
    """

    mechanism: str
    answers: pd.DataFrame
    measure: Measure
    loss: np.ndarray | None
    entries: tuple[LedgerEntry, ...] = ()
    params: dict[str, Any] = field(default_factory=dict)
    seed: int | None = None
    secure: bool = False
    requested: np.ndarray | None = None
    truth_included: bool = False
    extras: dict[str, Any] = field(default_factory=dict)
    loss_distribution: LossDistribution | None = None
    #: What a review sees instead of ``answers`` less their truth columns, when a mechanism's answers are
    #: confidential through and through (today's methods' cells: which are withheld and their values).
    review_answers: pd.DataFrame | None = None

    def loss_profile(self, label: str = "") -> LossProfile:
        if self.loss is None:
            raise ValueError("This release carries no per-record losses (review export, or a table held by an "
                             "engine: see loss_distribution).")
        return LossProfile(np.asarray(self.loss, dtype=float), self.measure, label or self.mechanism)

    def distribution(self, label: str = "") -> LossDistribution:
        """The delivered per-record losses as a distribution (from ``loss`` or ``loss_distribution``)."""
        if self.loss_distribution is not None:
            return self.loss_distribution.with_label(label or self.mechanism)
        if self.loss is None:
            raise ValueError("This release carries no per-record losses (review export).")
        return LossDistribution.from_values(self.loss, self.measure, label=label or self.mechanism)

    def for_review(self) -> "Release":
        """A copy without true answers, errors or per-record losses (safe to export)."""
        ans = self.review_answers if self.review_answers is not None else \
            self.answers.drop(columns=[c for c in TRUTH_COLUMNS if c in self.answers.columns])
        return replace(self, answers=ans, loss=None, requested=None, truth_included=False, loss_distribution=None,
                       extras={k: v for k, v in self.extras.items() if not k.startswith("private_")})

    def check_delivered_within_requested(self, rtol: float = 1e-9) -> bool:
        """True when every record's delivered loss is at most its requested loss."""
        if self.loss is None or self.requested is None:
            raise ValueError("Both delivered and requested losses are needed.")
        d = np.asarray(self.loss, dtype=float)
        r = np.asarray(self.requested, dtype=float)
        return bool(np.all(d <= r * (1 + rtol) + 1e-15))
