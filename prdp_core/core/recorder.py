"""The one recording release: noise on confidential data is drawn only inside :meth:`Recorder.release`,
which records what the mechanism released in a ledger before handing it back (or, when the mechanism
refuses, records nothing and lets the refusal through) — or inside a declared teaching simulation.

Every route that releases on confidential data — the app's pages, the study runner behind ``prdp run``
and the report — calls a mechanism through a :class:`Recorder`; outputs (the report, the results CSVs,
board entries) render releases recorded this way and never call a mechanism themselves.

While a recorder runs a mechanism, :func:`recording` gives the recorder and the release's label (a context
variable, so each thread and each Streamlit run has its own). Draws on public or generated data — the
Trade-offs page's Monte Carlo on synthetic records, sample generation, the sample of a large table a
page works on — are not noise on confidential data and run outside any recorder.

**Teaching simulations.** An accuracy simulation — a mechanism run many times on the records to estimate
its error against the true answers (the board's median relative error, the Personalized DP page's
comparison of mechanisms and its oracle threshold curve) — is never a release: its answers are not shown,
only an error figure, and that figure is a statistic of the records, shown in teaching mode only. Such a
route runs inside :func:`simulation`, which declares it (:func:`simulating` names it) and refuses with
:class:`~prdp_core.core.errors.SimulationRefused` when the mode is not teaching: in review mode no noise is
drawn on the records outside a recorded release, and the route shows what follows from the public policy
instead. A simulation's runs may go through a recorder of their own throwaway ledger (the study runner
always records); they are part of the simulation, not releases. A simulation on the records draws from a
:class:`~prdp_core.core.noise_source.Noise`'s generator, as a release does, so that the test below sees it.

The test that wraps every sampler (``tests/samplers.py``, used by ``tests/unit/test_recorder.py`` and
``tests/app/test_recorder_pages.py``) tells these apart by the noise source: every draw from the generator
or exact sampler of a :class:`~prdp_core.core.noise_source.Noise` (the noise handed to a mechanism) must happen
inside a declared simulation (teaching mode only) or while :func:`recording` names a recorder of the
session's ledger.
"""

from __future__ import annotations

from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any, Callable, Iterable, Iterator, TypeVar

from .accounting import Ledger, LedgerEntry
from .errors import SimulationRefused
from .release import Release

T = TypeVar("T")

#: The recorder making a release in this context and the release's label, or None outside every recorder.
_RECORDING: ContextVar[tuple[Recorder, str] | None] = ContextVar("prdp_recording", default=None)
#: The label of the teaching simulation running in this context, or None outside every simulation.
_SIMULATING: ContextVar[str | None] = ContextVar("prdp_simulating", default=None)


def recording() -> tuple[Recorder, str] | None:
    """The :class:`Recorder` making a release in this context and the release's label (None: no release is
    being made)."""
    return _RECORDING.get()


@contextmanager
def _inside(recorder: Recorder, label: str) -> Iterator[None]:
    token = _RECORDING.set((recorder, label))
    try:
        yield
    finally:
        _RECORDING.reset(token)


def simulating() -> str | None:
    """The label of the teaching simulation running in this context (the innermost one), or None."""
    return _SIMULATING.get()


@contextmanager
def simulation(label: str, *, teaching: bool) -> Iterator[None]:
    """Declare a teaching simulation: under it a mechanism's noise may be drawn on the records because the
    result is an error estimate shown in teaching mode only, never a release (nothing is recorded).

    ``label`` names the simulation (in messages, and for :func:`simulating`); ``teaching`` is the mode of the
    session or command asking for it. In review mode (``teaching`` False) it raises
    :class:`~prdp_core.core.errors.SimulationRefused` before anything is drawn. Simulations nest (the innermost
    label is the one :func:`simulating` gives) and the declaration ends with the block, also on an error."""
    if not teaching:
        raise SimulationRefused(f"{label}: this error estimate runs the mechanism on the records, which review "
                                "mode does not do outside a recorded release.",
                                hint="Switch to teaching mode to see it; review mode shows what follows from the "
                                     "public policy only.")
    token = _SIMULATING.set(label)
    try:
        yield
    finally:
        _SIMULATING.reset(token)


def entries_of(result: Any) -> tuple[LedgerEntry, ...]:
    """The ledger entries of what a mechanism returned: a :class:`Release`, a ledger entry, or a list or
    tuple of them (pairs ``(label, Release)`` included, as :meth:`prdp_core.study.runs.RunConfig.run` returns)."""
    if isinstance(result, Release):
        return tuple(result.entries)
    if isinstance(result, LedgerEntry):
        return (result,)
    if isinstance(result, (list, tuple)):
        return tuple(e for part in result for e in entries_of(part))
    return ()


class Recorder:
    """The release function of one ledger: :meth:`release` runs a mechanism with its noise and records the
    ledger entries of what it released before returning it.

    ``ledger`` — where releases are recorded (the session's, or a study run's); ``write`` — how entries are
    added (default ``ledger.extend``; the app adds them to the session ledger and stores them, labelled with
    the sample or the data they ran on)."""

    def __init__(self, ledger: Ledger | None = None,
                 write: Callable[[tuple[LedgerEntry, ...]], Any] | None = None) -> None:
        self.ledger = Ledger() if ledger is None else ledger
        self._write = write if write is not None else self.ledger.extend

    def release(self, make: Callable[[], T], *, label: str = "release",
                entries: Callable[[T], Iterable[LedgerEntry]] | None = None) -> T:
        """Run ``make()`` (a mechanism's release with its noise) as a recorded release, record its entries
        (``entries(result)``, default :func:`entries_of`) and return the result. A refusal raised by
        ``make`` records nothing."""
        with _inside(self, label):
            out = make()
        self._write(tuple(entries(out) if entries is not None else entries_of(out)))
        return out


__all__ = ["Recorder", "entries_of", "recording", "simulating", "simulation"]
