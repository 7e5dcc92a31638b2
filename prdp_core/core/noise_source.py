"""Where a release's noise comes from: one :class:`Noise` value, a seeded teaching run or the secure samplers.

Every release function takes ``noise=`` and reads from it the generator of a seeded run (``rng``), the
exact sampler of a secure one (``sampler``), the seed the release and its ledger entries record
(``seed``, ``None`` for a secure run) and the mode's label. Privacy meaning:

* :meth:`Noise.teaching` — numpy's floating-point samplers from a seed: reproducible, so for teaching and
  review only (the seed and the low-order bits of the draws predict the noise; Mironov 2012);
* :meth:`Noise.secure` — OpenDP's exact samplers on a grid (:mod:`prdp_core.core.secure`), system randomness,
  unseeded: the noise of numbers that may be published, each loss certified by OpenDP's map.

The legacy keywords ``rng=`` / ``seed=`` / ``secure=`` / ``sampler=`` stay accepted by every release
function; :func:`resolve` (through :meth:`Noise.from_keywords`) is the one place they become a
:class:`Noise`, so a seeded run gives bit-identical answers whichever spelling the caller used.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, overload

import numpy as np
import pandas as pd

from .errors import ParameterError
from .provenance import stamp_answers
from .secure import SecureSampler, mode_label

#: The refusal of a seed given to a secure run (the study config says the same for its ``seed`` key).
SEEDED_SECURE = "A secure release is unseeded: drop the seed or the secure flag."

#: What a seeded run without a generator is told.
NO_GENERATOR = "Pass a numpy random Generator as rng (seeded run) or secure=True (real release)."


class _SecureAttribute:
    """``Noise.secure()`` builds a secure noise source; ``noise.secure`` says whether one is."""

    @overload
    def __get__(self, obj: None, cls: type[Noise]) -> Callable[..., Noise]: ...

    @overload
    def __get__(self, obj: Noise, cls: type[Noise]) -> bool: ...

    def __get__(self, obj: Noise | None, cls: type[Noise]) -> Callable[..., Noise] | bool:
        if obj is None:
            return cls._secure_source
        return obj.sampler is not None


@dataclass(frozen=True)
class Noise:
    """The noise of one release: a seeded generator (teaching run) or an exact sampler (secure run).

    ``rng`` — numpy Generator of a seeded run (``None`` for a secure one); ``sampler`` — the exact
    sampler of a secure run (``None`` for a seeded one); ``seed`` — the seed recorded with the release
    (a label: the draws come from ``rng``). ``noise.secure`` is True for a secure run; build one with
    :meth:`teaching`, :meth:`secure`, :meth:`from_rng` or :meth:`from_keywords`.
    """

    rng: np.random.Generator | None = None
    sampler: Any = None
    seed: int | None = None

    secure = _SecureAttribute()

    def __post_init__(self) -> None:
        if self.sampler is not None and self.seed is not None:
            raise ParameterError(SEEDED_SECURE)
        if self.rng is not None and not isinstance(self.rng, np.random.Generator):
            raise ParameterError(NO_GENERATOR)

    @classmethod
    def teaching(cls, seed: int) -> Noise:
        """A seeded teaching run: ``numpy.random.default_rng(seed)``, reproducible (not for publication)."""
        if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)) or seed < 0:
            raise ParameterError(f"A teaching seed must be a non-negative whole number (got {seed!r}).")
        return cls(rng=np.random.default_rng(int(seed)), seed=int(seed))

    @classmethod
    def _secure_source(cls, sampler: SecureSampler | None = None) -> Noise:
        """A secure run: the exact samplers of :mod:`prdp_core.core.secure` (``sampler``, default
        ``SecureSampler()``), system randomness, unseeded."""
        return cls(sampler=SecureSampler() if sampler is None else sampler)

    @classmethod
    def from_rng(cls, rng: np.random.Generator, seed: int | None = None) -> Noise:
        """A seeded run drawing from a Generator the caller holds (``seed``: the seed it records, if any)."""
        if not isinstance(rng, np.random.Generator):
            raise ParameterError(NO_GENERATOR)
        return cls(rng=rng, seed=None if seed is None else int(seed))

    @classmethod
    def from_keywords(cls, *, rng: np.random.Generator | None = None, seed: int | None = None,
                      secure: bool = False, sampler: SecureSampler | None = None) -> Noise:
        """The noise the legacy keywords name: ``sampler`` or ``secure=True`` → :meth:`secure` (a seed is
        refused: a secure run is unseeded; an ``rng`` is not used); else ``rng`` → :meth:`from_rng` (``seed``
        recorded); else ``seed`` → :meth:`teaching`; none of them → a source with no generator, which a
        release refuses when it draws (:meth:`generator`)."""
        if sampler is not None or secure:
            if seed is not None:
                raise ParameterError(SEEDED_SECURE)
            return cls._secure_source(sampler)
        if rng is not None:
            return cls.from_rng(rng, seed)
        if seed is not None:
            return cls.teaching(seed)
        return cls()

    @property
    def label(self) -> str:
        """The mode's label for answers, the ledger and the report: secure, or seeded teaching run."""
        return mode_label(self.secure)

    def parts(self) -> tuple[Any, np.random.Generator | None, int | None]:
        """``(sampler, rng, seed)`` of a run: the exact sampler of a secure run (its rng and seed None), or
        None, the Generator and the seed of a seeded one; a source with neither is refused."""
        if self.sampler is None:
            self.generator()
        return self.sampler, self.rng, self.seed

    def generator(self) -> np.random.Generator:
        """The Generator of a seeded run; refuses a source without one."""
        if self.rng is None:
            raise ParameterError(NO_GENERATOR)
        return self.rng

    def stamp(self, answers: pd.DataFrame, *, teaching: bool, derived: list[str] | tuple[str, ...] = ()
              ) -> pd.DataFrame:
        """``answers`` with the export columns of :func:`prdp_core.core.provenance.stamp_answers` for this noise."""
        return stamp_answers(answers, teaching=teaching, secure=self.secure, seed=self.seed, derived=derived)


def resolve(noise: Noise | None, *, rng: np.random.Generator | None = None, seed: int | None = None,
            secure: bool = False, sampler: SecureSampler | None = None) -> Noise:
    """The noise of a release call: ``noise`` itself, or the one its legacy keywords name
    (:meth:`Noise.from_keywords`). Giving both is refused, so a call says once where its noise comes from."""
    if noise is None:
        return Noise.from_keywords(rng=rng, seed=seed, secure=secure, sampler=sampler)
    if not isinstance(noise, Noise):
        raise ParameterError(f"noise must be a Noise value (Noise.teaching(seed) or Noise.secure()), got "
                             f"{type(noise).__name__}.")
    if rng is not None or seed is not None or secure or sampler is not None:
        raise ParameterError("Give the noise once: noise= or the keywords rng/seed/secure/sampler, not both.")
    return noise


__all__ = ["NO_GENERATOR", "SEEDED_SECURE", "Noise", "resolve"]
