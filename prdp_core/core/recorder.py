"""The one recording release: noise on confidential data is drawn only inside :meth:`Recorder.release`,
which records what the mechanism released in a ledger before handing it back (or, when the mechanism
refuses, records nothing and lets the refusal through).

Every route that releases on confidential data — the app's pages, the study runner behind ``prdp run``
and the report — calls a mechanism through a :class:`Recorder`; outputs (the report, the results CSVs,
board entries) render releases recorded this way and never call a mechanism themselves.

While a recorder runs a mechanism, :func:`recording` gives the recorder and the release's label (a context
variable, so each thread and each Streamlit run has its own). Draws on public or generated data — the
Trade-offs page's Monte Carlo on synthetic records, sample generation, the sample of a large table a
page works on — are not noise on confidential data and run outside any recorder; the test that wraps
every sampler (``tests/unit/test_recorder.py``) tells the two apart by the noise source: every draw
from the generator or exact sampler of a :class:`~prdp_core.noise_source.Noise` (the noise handed to a
mechanism) must happen while :func:`recording` names a recorder of the session's ledger.
"""

from __future__ import annotations

from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any, Callable, Iterable, Iterator, TypeVar

from .accounting import Ledger, LedgerEntry
from .release import Release

T = TypeVar("T")

#: The recorder making a release in this context and the release's label, or None outside every recorder.
_RECORDING: ContextVar[tuple[Recorder, str] | None] = ContextVar("prdp_recording", default=None)


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


def entries_of(result: Any) -> tuple[LedgerEntry, ...]:
    """The ledger entries of what a mechanism returned: a :class:`Release`, a ledger entry, or a list or
    tuple of them (pairs ``(label, Release)`` included, as :meth:`prdp_core.runs.RunConfig.run` returns)."""
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


__all__ = ["Recorder", "entries_of", "recording"]
