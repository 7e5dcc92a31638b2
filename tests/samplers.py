"""Every sampler wrapped: each draw of the noise handed to a mechanism (the generator of a
:class:`prdp_core.core.noise_source.Noise`, or its exact :class:`prdp_core.core.secure.SecureSampler`) is checked to
happen inside a recorded release (:func:`prdp_core.core.recorder.recording`) or inside a declared teaching simulation
(:func:`prdp_core.core.recorder.simulating`; its own throwaway runs included), and counted as one or the other.

Draws on public or generated data (samples, synthetic records, Monte Carlo on synthetic data) come from generators
that are not a release's noise and are not checked: the rule is about the noise of releases.
"""

from __future__ import annotations

import traceback
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from prdp_core.core import noise_source, secure
from prdp_core.core.recorder import recording, simulating

#: numpy Generator methods a release's noise may draw with.
GENERATOR_METHODS = ("laplace", "normal", "standard_normal", "exponential", "standard_exponential", "gumbel",
                     "integers", "random", "choice", "binomial", "geometric", "poisson", "uniform", "permutation",
                     "permuted", "shuffle", "multinomial", "hypergeometric", "logistic")
#: SecureSampler methods that draw.
SECURE_METHODS = ("laplace_answers", "gaussian_answers", "laplace", "gaussian", "select", "select_integers",
                  "select_at_scale", "bernoulli_dyadic")


@dataclass
class Draws:
    """What the wrapped samplers saw: the ledgers of the recorders the draws happened in, the draws made inside a
    teaching simulation (``simulations``, their labels in ``simulated``), and every draw outside both (where it
    came from)."""

    ledgers: set[int] = field(default_factory=set)
    outside: list[str] = field(default_factory=list)
    count: int = 0
    simulations: int = 0
    simulated: set[str] = field(default_factory=set)

    def check(self, what: str) -> None:
        self.count += 1
        sim = simulating()
        if sim is not None:  # a declared simulation, the runs it records in throwaway ledgers included
            self.simulations += 1
            self.simulated.add(sim)
            return
        rec = recording()
        if rec is None:
            stack = [f"{f.filename.split('/work/')[-1]}:{f.lineno} {f.name}" for f in traceback.extract_stack()[:-3]
                     if "/prdp_core/" in f.filename or "/ui/" in f.filename or "/app_pages/" in f.filename]
            self.outside.append(f"{what} ← " + " ← ".join(reversed(stack[-6:])))
        else:
            self.ledgers.add(id(rec[0].ledger))


def watch(monkeypatch: Any) -> Draws:
    """Wrap every release's noise for the rest of the test; returns the record of the draws."""
    draws = Draws()

    class Watched(np.random.Generator):
        """The same stream as the generator it wraps (its bit generator), every draw checked."""

    def wrapped(name: str, fn: Any) -> Any:
        def method(self: Any, *args: Any, **kwargs: Any) -> Any:
            draws.check(name)
            return fn(self, *args, **kwargs)
        return method

    for name in GENERATOR_METHODS:
        setattr(Watched, name, wrapped(f"Generator.{name}", getattr(np.random.Generator, name)))
    for name in SECURE_METHODS:
        monkeypatch.setattr(secure.SecureSampler, name, wrapped(f"SecureSampler.{name}",
                                                                getattr(secure.SecureSampler, name)))
    post_init = noise_source.Noise.__post_init__

    def watched_post_init(self: Any) -> None:
        post_init(self)
        if self.rng is not None and not isinstance(self.rng, Watched):
            object.__setattr__(self, "rng", Watched(self.rng.bit_generator))

    monkeypatch.setattr(noise_source.Noise, "__post_init__", watched_post_init)
    return draws
