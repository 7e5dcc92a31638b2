"""Heavy engine steps shared fairly: at most a few at once on a server, each within its share of memory.

A room of reviewers works on one server, often on the same large table. A *heavy step* — the check of a
large table's roles, its preparation and profile, the owners' losses, a release — makes its engine (DuckDB)
work over every record, and DuckDB fills the memory limit it is given. Two rules keep the room within the
server's limit (``PRDP_SERVER_MEMORY_MB``, :func:`prdp_core.data.memory.server_limit_mb`):

* **a cap on concurrent heavy steps** — ``PRDP_HEAVY_STEPS``, default :data:`DEFAULT_HEAVY_STEPS`: a step
  beyond the cap waits in a process-wide queue (:class:`StepQueue`, :data:`QUEUE`; one per server process,
  shared by every session) and runs when a running step ends. A waiting step is told how many steps run
  ahead of it; it never fails because another session is working;
* **a memory share per step** — :func:`step_limit_mb`: the engine's configured limit
  (``PRDP_DUCKDB_MEMORY_LIMIT``, at most) and never more than :data:`ENGINE_SHARE` of the server's limit
  divided by the cap, so that the steps running at once hold at most that part of the server's limit and
  the rest stays for the sessions' own memory.

Privacy: nothing here is released; the queue and the shares depend on the server's settings and load only.
"""

from __future__ import annotations

import math
import os
import threading
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Callable, Iterator

from ..core.errors import ConfigError

#: Environment variable of the cap on heavy engine steps running at once on a server.
STEPS_ENV = "PRDP_HEAVY_STEPS"
#: Heavy steps running at once by default: two reviewers release together, a third waits.
DEFAULT_HEAVY_STEPS = 2
#: Part of the server's memory limit the heavy steps' engines may hold together (the rest: the sessions'
#: tables, charts and Python objects).
ENGINE_SHARE = 0.5
#: Smallest memory limit given to a step (MiB): below it DuckDB cannot run a query at all.
MIN_STEP_MB = 256.0
#: Seconds between two looks at the queue while waiting (a freed slot wakes the waiters at once).
POLL_S = 0.5


def heavy_steps() -> int:
    """The cap on heavy steps running at once: ``PRDP_HEAVY_STEPS`` or :data:`DEFAULT_HEAVY_STEPS`."""
    raw = os.environ.get(STEPS_ENV, "").strip()
    if not raw:
        return DEFAULT_HEAVY_STEPS
    try:
        value = int(raw)
    except ValueError:
        value = 0
    if value < 1:
        raise ConfigError(f"{STEPS_ENV}: must be a whole number of steps, at least 1 (got {raw[:40]!r}).",
                          hint="Fix the server's environment and restart it.")
    return value


@dataclass(frozen=True)
class Share:
    """A heavy step's memory limit and where it comes from (MiB): ``limit_mb`` = min(``configured_mb``,
    ``share_mb``), ``share_mb`` = :data:`ENGINE_SHARE` × ``server_mb`` / ``steps``."""

    limit_mb: float
    configured_mb: float
    server_mb: float
    steps: int
    share_mb: float

    @property
    def capped(self) -> bool:
        """Whether the share, not the configured limit, sets the step's limit."""
        return self.share_mb < self.configured_mb

    def duckdb(self) -> str:
        """The limit written as DuckDB reads it (whole MiB)."""
        return f"{int(self.limit_mb)}MiB"


def step_limit_mb(configured_mb: float, server_mb: float, steps: int) -> Share:
    """A heavy step's memory limit: the configured engine limit, but at most its share of the server's limit
    (:data:`ENGINE_SHARE` × ``server_mb`` / ``steps``) and at least :data:`MIN_STEP_MB`."""
    if steps < 1:
        raise ConfigError(f"{STEPS_ENV}: must be at least 1 (got {steps}).")
    share = ENGINE_SHARE * server_mb / steps if math.isfinite(server_mb) else math.inf
    limit = max(min(float(configured_mb), share), MIN_STEP_MB)
    return Share(limit_mb=float(math.floor(limit)), configured_mb=float(configured_mb), server_mb=float(server_mb),
                 steps=int(steps), share_mb=share)


class StepQueue:
    """At most ``cap()`` heavy steps at once in this process; the others wait their turn (see the module doc).

    :meth:`slot` is re-entrant in one thread: a heavy step that runs another (a release that sums the owners'
    losses) holds one slot, never waits for itself."""

    def __init__(self, cap: Callable[[], int] = heavy_steps) -> None:
        self._cap = cap
        self._cond = threading.Condition()
        self._running = 0
        self._local = threading.local()

    @property
    def running(self) -> int:
        """Heavy steps running now."""
        with self._cond:
            return self._running

    @contextmanager
    def slot(self, on_wait: Callable[[int], None] | None = None, poll_s: float = POLL_S) -> Iterator[None]:
        """Run the block as a heavy step: at once when fewer than the cap run, else after waiting for a running
        step to end. ``on_wait(n)`` is called (outside the queue's lock) when the step must wait and whenever the
        number ``n`` of steps running ahead of it changes; an exception it raises (a page rerun) leaves the
        queue without the step."""
        depth = getattr(self._local, "depth", 0)
        if depth:
            self._local.depth = depth + 1
            try:
                yield
            finally:
                self._local.depth -= 1
            return
        told = -1
        while True:
            with self._cond:
                cap = self._cap()
                if self._running < cap:
                    self._running += 1
                    break
                ahead = self._running
            if on_wait is not None and ahead != told:
                on_wait(ahead)
                told = ahead
            with self._cond:
                if self._running >= self._cap():
                    self._cond.wait(poll_s)
        self._local.depth = 1
        try:
            yield
        finally:
            self._local.depth = 0
            with self._cond:
                self._running -= 1
                self._cond.notify_all()


#: The server's queue of heavy engine steps, shared by every session of the process.
QUEUE = StepQueue()

__all__ = ["DEFAULT_HEAVY_STEPS", "ENGINE_SHARE", "MIN_STEP_MB", "QUEUE", "STEPS_ENV", "Share", "StepQueue",
           "heavy_steps", "step_limit_mb"]
