"""Heavy engine steps shared fairly (prdp_core.data.heavy_steps): the queue of steps running at once and each
step's share of the server's memory."""

from __future__ import annotations

import threading
import time

import pytest

from prdp_core.core.errors import ConfigError
from prdp_core.data import heavy_steps as H


@pytest.fixture(autouse=True)
def _no_cap_from_the_environment(monkeypatch):
    monkeypatch.delenv(H.STEPS_ENV, raising=False)


def _hold(queue: H.StepQueue, held: threading.Event, until: threading.Event, on_wait=None) -> None:
    with queue.slot(on_wait):
        held.set()
        until.wait(0.2 if on_wait else 10)


def test_a_second_step_waits_for_the_first_and_both_succeed():
    queue = H.StepQueue(cap=lambda: 1)
    first_in, release_first = threading.Event(), threading.Event()
    order: list[str] = []
    told: list[int] = []

    def first() -> None:
        with queue.slot():
            order.append("first starts")
            first_in.set()
            release_first.wait(10)
            order.append("first ends")

    def second() -> None:
        with queue.slot(told.append, poll_s=0.05):
            order.append("second starts")
            assert queue.running == 1

    a = threading.Thread(target=first)
    a.start()
    assert first_in.wait(10)
    b = threading.Thread(target=second)
    b.start()
    time.sleep(0.3)
    assert order == ["first starts"] and told == [1]  # the second waits, told one step runs ahead of it
    release_first.set()
    a.join(10)
    b.join(10)
    assert order == ["first starts", "first ends", "second starts"]
    assert queue.running == 0


def test_steps_under_the_cap_run_at_once_and_a_nested_step_takes_no_second_slot():
    queue = H.StepQueue(cap=lambda: 2)
    told: list[int] = []
    with queue.slot(told.append):
        with queue.slot(told.append):  # a release that sums the owners' losses: one slot, no wait for itself
            assert queue.running == 1
        ran = threading.Event()
        other = threading.Thread(target=_hold, args=(queue, ran, threading.Event(), told.append))
        other.start()
        assert ran.wait(10) and told == []  # the second session's step ran at once, beside the first
        other.join(10)
    assert queue.running == 0


def test_a_step_that_fails_or_stops_while_waiting_leaves_the_queue_clean():
    queue = H.StepQueue(cap=lambda: 1)
    with pytest.raises(RuntimeError):
        with queue.slot():
            raise RuntimeError("the engine failed")
    assert queue.running == 0
    held, hold = threading.Event(), threading.Event()
    t = threading.Thread(target=_hold, args=(queue, held, hold))
    t.start()
    assert held.wait(10)

    def stop(_n: int) -> None:
        raise InterruptedError  # a page rerun interrupts the wait

    with pytest.raises(InterruptedError):
        with queue.slot(stop, poll_s=0.01):
            pass
    assert queue.running == 1  # only the holder
    hold.set()
    t.join(10)


def test_the_share_is_the_configured_limit_within_half_the_server_limit_per_step():
    s = H.step_limit_mb(2000, 18_000, 2)  # a 24 GB machine's 18 GB, two steps at once: 2 GB fits in 4.5 GB
    assert (s.limit_mb, s.share_mb, s.capped, s.duckdb()) == (2000, 4500, False, "2000MiB")
    s = H.step_limit_mb(8000, 18_000, 2)  # 8 GB asked: each of two steps gets at most 4.5 GB
    assert (s.limit_mb, s.capped) == (4500, True) and 2 * s.limit_mb <= H.ENGINE_SHARE * 18_000
    assert H.step_limit_mb(8000, 18_000, 1).limit_mb == 8000  # one step at a time: the limit asked
    assert H.step_limit_mb(2000, 300, 4).limit_mb == H.MIN_STEP_MB  # never below what DuckDB needs to run
    assert H.step_limit_mb(2000, float("inf"), 3).limit_mb == 2000
    with pytest.raises(ConfigError):
        H.step_limit_mb(2000, 18_000, 0)


def test_the_cap_comes_from_the_environment(monkeypatch):
    assert H.heavy_steps() == H.DEFAULT_HEAVY_STEPS == 2
    monkeypatch.setenv(H.STEPS_ENV, "3")
    assert H.heavy_steps() == 3
    for bad in ("0", "-1", "two", "1.5"):
        monkeypatch.setenv(H.STEPS_ENV, bad)
        with pytest.raises(ConfigError, match="PRDP_HEAVY_STEPS"):
            H.heavy_steps()
