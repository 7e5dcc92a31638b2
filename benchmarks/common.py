"""Helpers shared by the benchmarks: timing with repeats, peak memory, machine facts."""

from __future__ import annotations

import datetime as _dt
import os
import platform
import statistics
import time
import tracemalloc
from typing import Any, Callable


def timed(fn: Callable[[], Any], *, repeat: int = 5, warmup: int = 1) -> tuple[float, float, Any]:
    """Run ``fn`` ``warmup`` + ``repeat`` times; return (median s, min s, last result)."""
    result = None
    for _ in range(warmup):
        result = fn()
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        result = fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times), min(times), result


def peak_memory(fn: Callable[[], Any]) -> tuple[float, Any]:
    """Peak Python-allocated memory (MB, numpy buffers included) of one call."""
    tracemalloc.start()
    tracemalloc.reset_peak()
    try:
        result = fn()
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    return peak / 2**20, result


def machine() -> str:
    cpu = platform.processor() or platform.machine()
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    cpu = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    return (f"{cpu}, {os.cpu_count()} cores, Python {platform.python_version()}, "
            f"{_dt.date.today().isoformat()}")


def row(name: str, median: float, best: float, extra: str = "") -> str:
    return f"| {name} | {median * 1000:,.1f} ms | {best * 1000:,.1f} ms | {extra} |"
