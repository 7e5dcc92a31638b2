"""Load benchmark: N real browser sessions on one app server, each uploading a table and releasing.

Starts the app server itself (127.0.0.1, a free port; stopped through its process handle), launches
one Debian chromium (Playwright) and drives N browser contexts concurrently. Every session:

1. opens the app and uploads its own R-row CSV (generated into a temporary folder);
2. opens the Run page and presses **Run release**;
3. clicks **Download answers (CSV)** and checks that the download completes with the answers.

Reported: failures (with the step and the reason), the time of each step (p50 / p95 / max over the
sessions), and the server's resident memory (VmRSS of its process, sampled every 0.5 s) before the
sessions (after one warm-up session has opened the app and left), at its peak, per session, when
every session has finished, and after the browser contexts are closed and the server has had
``--settle`` seconds to release what they held.

Each step is timed by a :class:`StepTimer` per session, so a new step (e.g. the time from a threshold
change on the Policy designer to the updated chart) is one more ``async with timer.step(name):`` in
:func:`session_flow`.

Run: .venv/bin/python benchmarks/bench_sessions.py [--sessions 20] [--rows 200000] [--settle 150] [--rounds 1]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import re
import statistics
import sys
import tempfile
import threading
import time
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, AsyncIterator

import numpy as np
import pandas as pd

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import machine  # noqa: E402

from tests.e2e.server import CHROMIUM, CHROMIUM_FLAGS, IDLE_JS, app_server  # noqa: E402


def make_csv(path: Path, n: int, seed: int) -> None:
    """A firms-like table: establishment id, firm (owner), county (group), two heavy-tailed measures."""
    rng = np.random.default_rng(seed)
    pd.DataFrame({
        "estab_id": [f"E{i}" for i in range(n)],
        "firm": [f"F{i // 3}" for i in range(n)],
        "county": [f"C{c}" for c in rng.integers(0, 3000, size=n)],
        "emp": np.ceil((1 - rng.random(n)) ** (-1 / 1.2)).astype(np.int64),
        "payroll": np.round(rng.lognormal(5, 2, size=n), 2),
    }).to_csv(path, index=False)


# ---------------------------------------------------------------------------------------------------------
# Measurements


def vm_rss_mb(pid: int) -> float:
    """Resident memory of one process (VmRSS in /proc/PID/status), MB."""
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    raise RuntimeError("no VmRSS line")


def descendants(pid: int) -> list[int]:
    """The processes started by ``pid``, their children and so on (from the parent ids in /proc/*/stat)."""
    parent: dict[int, int] = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/stat") as f:
                    parent[int(entry)] = int(f.read().rsplit(")", 1)[1].split()[1])  # the name may hold ")"
            except (OSError, IndexError, ValueError):
                continue  # the process has exited meanwhile
    found, todo = [], [pid]
    while todo:
        here = todo.pop()
        kids = [c for c, p in parent.items() if p == here]
        found += kids
        todo += kids
    return found


class RssSampler:
    """Samples a process's resident memory (VmRSS in /proc/PID/status) every ``interval`` seconds;
    with ``children``, the sum over the process and everything it started (a child's pages shared with
    the server are then counted twice: an upper bound)."""

    def __init__(self, pid: int, interval: float = 0.5, children: bool = False) -> None:
        self.pid, self.interval, self.children = pid, interval, children
        self.samples: list[tuple[float, float]] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def rss_mb(self) -> float:
        total = vm_rss_mb(self.pid)  # the server itself: its exit ends the sampling
        for child in descendants(self.pid) if self.children else ():
            try:
                total += vm_rss_mb(child)
            except (OSError, RuntimeError):
                pass  # exited meanwhile (a zombie has no VmRSS line)
        return total

    def _run(self) -> None:
        while not self._stop.is_set():
            try:
                self.samples.append((time.monotonic(), self.rss_mb()))
            except (OSError, RuntimeError):
                return  # the server has exited
            self._stop.wait(self.interval)

    def start(self) -> "RssSampler":
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        self._thread.join()

    def peak_mb(self, since: float = 0.0) -> float:
        return max((r for t, r in self.samples if t >= since), default=float("nan"))


@dataclass
class StepTimer:
    """Wall time of each named step of one session."""

    times: dict[str, float] = field(default_factory=dict)

    @asynccontextmanager
    async def step(self, name: str) -> AsyncIterator[None]:
        t0 = time.perf_counter()
        yield
        self.times[name] = time.perf_counter() - t0


@dataclass
class SessionResult:
    index: int
    timer: StepTimer
    ok: bool = False
    failed_step: str = ""
    reason: str = ""
    download_bytes: int = 0
    context: Any = None  # the browser context, closed after the memory reading of finished sessions


# ---------------------------------------------------------------------------------------------------------
# One session


async def wait_idle(page, timeout_ms: float) -> None:
    await page.wait_for_timeout(300)
    await page.wait_for_function(IDLE_JS, timeout=timeout_ms)
    await page.wait_for_timeout(300)


async def open_app(page, url: str, timeout_ms: float) -> None:
    """Open the app at ``url`` (the Data page, default sample) and wait until its first run has ended."""
    await page.goto(url)
    await page.get_by_role("heading", name="Data", exact=True).wait_for(timeout=timeout_ms)
    await wait_idle(page, timeout_ms)


async def session_flow(browser, url: str, csv: Path, res: SessionResult, timeout_ms: float) -> None:
    """Upload ``csv``, release on the Run page, download the answers; fills ``res``."""
    ctx = res.context = await browser.new_context(viewport={"width": 1400, "height": 1000}, accept_downloads=True)
    page = await ctx.new_page()
    page.set_default_timeout(timeout_ms)
    step = "open"
    try:
        async with res.timer.step(step):
            await open_app(page, url, timeout_ms)
        step = "upload"
        async with res.timer.step(step):
            await page.get_by_role("tab", name=re.compile("Upload a file")).click()
            await page.locator('[data-testid="stFileUploaderDropzoneInput"]').set_input_files(str(csv))
            await page.get_by_text(f"{csv.name} is not in use yet").wait_for()  # guessed roles wait for confirmation
            await wait_idle(page, timeout_ms)
            await page.get_by_role("button", name="Use this table").click()
            await page.get_by_text(f"Active dataset: {csv.name}").wait_for()
            await wait_idle(page, timeout_ms)
        step = "release"
        async with res.timer.step(step):
            await page.locator('[data-testid="stSidebarNav"] a').filter(has_text="Run").first.click()
            await page.get_by_role("button", name="Run release").wait_for()
            await wait_idle(page, timeout_ms)
            await page.get_by_role("button", name="Run release").click()
            await page.get_by_text("Released answers", exact=True).wait_for()
            await wait_idle(page, timeout_ms)
        step = "download"
        async with res.timer.step(step):
            async with page.expect_download() as info:
                await page.get_by_role("button", name="Download answers (CSV)").click()
            download = await info.value
            failure = await download.failure()
            if failure is not None:
                raise RuntimeError(f"download failed: {failure}")
            saved = Path(await download.path())
            head = saved.read_text(encoding="utf-8", errors="replace")[:200]
            if not head.startswith("query,"):
                raise RuntimeError(f"downloaded file is not the answers table: {head[:60]!r}")
            res.download_bytes = saved.stat().st_size
        res.ok = True
    except Exception as err:  # any failure of the flow is a result to report, not a crash of the benchmark
        res.failed_step, res.reason = step, f"{type(err).__name__}: {str(err).splitlines()[0][:160]}"


async def run_sessions(url: str, files: list[Path], timeout_ms: float, sampler: RssSampler,
                       settle: float) -> tuple[list[SessionResult], dict[str, float]]:
    from playwright.async_api import async_playwright

    mem: dict[str, float] = {}
    async with async_playwright() as pw:
        browser = await pw.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_FLAGS, headless=True)
        try:
            # warm-up: one session opens the app (imports, the default sample) and leaves
            warm = await browser.new_context()
            await open_app(await warm.new_page(), url, timeout_ms)
            await warm.close()
            results = [SessionResult(i, StepTimer()) for i in range(len(files))]
            mem["before"] = sampler.rss_mb()
            t_start = time.monotonic()
            await asyncio.gather(*(session_flow(browser, url, f, r, timeout_ms) for f, r in zip(files, results)))
            mem["wall"] = time.monotonic() - t_start
            mem["finished"] = sampler.rss_mb()
            mem["peak"] = sampler.peak_mb(since=t_start)
            for r in results:
                await r.context.close()
        finally:
            await browser.close()
    await asyncio.sleep(settle)
    mem["after"] = sampler.rss_mb()
    return results, mem


# ---------------------------------------------------------------------------------------------------------
# Report


def percentile(values: list[float], q: float) -> float:
    return float(np.percentile(values, q)) if values else float("nan")


def report(args: argparse.Namespace, rounds: list[tuple[list[SessionResult], dict[str, float]]]) -> None:
    results = [r for res, _ in rounds for r in res]
    failed = [r for r in results if not r.ok]
    print(f"Machine: {machine()}")
    print(f"Command: .venv/bin/python benchmarks/bench_sessions.py --sessions {args.sessions} --rows {args.rows} "
          f"--settle {args.settle:g}" + (f" --rounds {args.rounds}" if args.rounds > 1 else ""))
    print(f"Input: {args.sessions} concurrent sessions, each uploading its own {args.rows:,}-row CSV "
          f"({args.csv_mb:.1f} MB), releasing on the Run page and downloading the answers; "
          + ", ".join(f"wall time {mem['wall']:.1f} s" for _, mem in rounds)
          + (f" ({args.rounds} rounds on the same server)" if args.rounds > 1 else ""))
    print()
    print("| step | p50 | p95 | max | sessions |")
    print("|---|---|---|---|---|")
    steps = list(dict.fromkeys(s for r in results for s in r.timer.times))
    for s in steps:
        vals = [r.timer.times[s] for r in results if s in r.timer.times]
        print(f"| {s} | {percentile(vals, 50):.1f} s | {percentile(vals, 95):.1f} s | {max(vals):.1f} s | "
              f"{len(vals)} |")
    print()
    mems = [mem for _, mem in rounds]
    heads = ["MB"] if len(mems) == 1 else [f"round {i + 1}, MB" for i in range(len(mems))]
    print("| server resident memory | " + " | ".join(heads) + " |")
    print("|---|" + "---|" * len(mems))

    def line(label: str, values: list[float]) -> None:
        print(f"| {label} | " + " | ".join(f"{v:,.0f}" for v in values) + " |")

    line("before the sessions", [m["before"] for m in mems])
    line("peak", [m["peak"] for m in mems])
    line("peak − before, per session", [(m["peak"] - m["before"]) / max(args.sessions, 1) for m in mems])
    line("every session finished (contexts open)", [m["finished"] for m in mems])
    line(f"{args.settle:g} s after the contexts closed", [m["after"] for m in mems])
    print()
    sizes = [r.download_bytes for r in results if r.ok]
    print(f"Completed: {len(results) - len(failed)} of {len(results)}; failures: {len(failed)}"
          + (f"; answers CSV {statistics.median(sizes) / 1024:,.0f} KB" if sizes else ""))
    for r in failed:
        print(f"- session {r.index}: {r.failed_step}: {r.reason}")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sessions", type=int, default=20, help="concurrent browser sessions (default 20)")
    ap.add_argument("--rows", type=int, default=200_000, help="rows of each uploaded CSV (default 200,000)")
    ap.add_argument("--settle", type=float, default=150.0,
                    help="seconds to wait after the contexts close before the last memory reading (default 150: "
                         "the server keeps a disconnected session for its reconnect window, 120 s)")
    ap.add_argument("--rounds", type=int, default=1,
                    help="run the sessions this many times on the same server (default 1): memory that stays "
                         "after the first round but does not grow is the server's one-time cost")
    ap.add_argument("--timeout", type=float, default=600.0, help="timeout of each browser step, s (default 600)")
    ap.add_argument("--log", type=Path, default=None, help="server log file (default: in the temporary folder)")
    args = ap.parse_args()
    if not Path(CHROMIUM).exists():
        print(f"{CHROMIUM} is missing (apt-get install chromium)", file=sys.stderr)
        return 2
    with tempfile.TemporaryDirectory(prefix="prdp-sessions-") as tmp:
        files = []
        for i in range(args.sessions):
            path = Path(tmp) / f"firms_{i:02d}.csv"
            make_csv(path, args.rows, seed=i)
            files.append(path)
        args.csv_mb = files[0].stat().st_size / 2**20
        log_path = args.log or Path(tmp) / "server.log"
        with open(log_path, "w") as log, app_server(log) as (url, proc):
            sampler = RssSampler(proc.pid).start()
            try:
                rounds = [asyncio.run(run_sessions(url, files, args.timeout * 1000, sampler, args.settle))
                          for _ in range(max(args.rounds, 1))]
            finally:
                sampler.stop()
    report(args, rounds)
    return 1 if any(not r.ok for res, _ in rounds for r in res) else 0


if __name__ == "__main__":
    sys.exit(main())
