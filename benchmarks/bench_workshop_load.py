"""Workshop load benchmark: a room of sessions (browsers or protocol clients) on one server's Policy designer.

Starts the app as a facilitator would (``prdp app`` on 127.0.0.1 and a free port, with a fresh
workshop folder: board database, data folder, saved sessions), launches one Debian chromium
(Playwright) and:

1. **opens the room**: N browser contexts (``--sessions``; at most ``--open-at-once`` of them
   loading at the same time) each open the app (the default sample) and then the Policy designer,
   until its policy-loss CDF chart is drawn and the run has ended;
2. **leaves the room idle** for ``--settle`` seconds (every context still open);
3. **drives the active participants**: the first K sessions (``--active``) change the first
   threshold T(…) ``--changes`` times in all, *concurrently* (each of the K sessions changes, waits
   for the chart, waits for its run to end, pauses ``--think`` seconds and changes again, all K at
   the same time) or *in turns* (``--pattern turns``: one change in the whole room at a time), while
   the other N − K sessions stay open and idle.

Measured:

- the server's resident memory with its children (VmRSS summed over the process tree, sampled
  every 0.5 s): before the room (after one warm-up session has opened the Policy designer and left),
  the peak while the N sessions open, after they have all rendered, "settled" (after ``--settle`` s
  idle), and the peak while the K sessions change thresholds;
- per change, the time from pressing Enter in the threshold box to the updated chart: the chart's
  Plotly data (its traces' x and y, fingerprinted in the page every 20 ms) differs from before
  the change. Each change sets a value used nowhere before in the session (alternately about twice
  and about half the starting threshold), so no cached preview serves it and the curve always moves;
- per change, the time from Enter to the arrival of the chart's new figure in the browser (the
  websocket frame holding the chart's title): the server's share of the latency, without the
  page's drawing, which a workshop's participants do on their own machines while the benchmark's
  chromium does it on the server's cores;
- the CPU time of the server and of the browser side in each phase (per change while active).

The latency target (p95 ≤ 2 s with 10 sessions active) is judged on the chart drawn in the page.

``--client protocol`` runs the same room with Streamlit-protocol clients instead of browsers
(``st_client.StreamlitClient``: the browser's messages — the page, the address, every widget's state —
and the server's in return, nothing drawn): the server measured alone, as in a workshop where the
participants' browsers draw on their own machines. A change is then timed from sending the new
threshold to the arrival of the CDF chart's new figure (its traces differ from before), the event the
browser mode's "figure received" column observes; the client side's CPU is this process's.

Run: .venv/bin/python benchmarks/bench_workshop_load.py [--client browser|protocol] [--sessions 30] [--active 10]
     [--changes 100] [--pattern concurrent|turns] [--think 0] [--settle 60] [--json FILE]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import math
import os
import sys
import tempfile
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Callable

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_sessions import RssSampler, StepTimer, descendants, open_app, percentile, wait_idle  # noqa: E402
from common import machine  # noqa: E402
from st_client import StreamlitClient, plotly_data  # noqa: E402

from tests.e2e.server import (  # noqa: E402
    CDF_CHART,
    CHROMIUM,
    CHROMIUM_FLAGS,
    FINGERPRINT_JS,
    app_server,
    chart_changed_js,
    clean_env,
    prdp_app_command,
    threshold_input,
)

FINGERPRINT = FINGERPRINT_JS % CDF_CHART  # the CDF chart's data: changes whenever the curve does
CHANGED = chart_changed_js(FINGERPRINT)
#: The CDF chart's title, as it stands in the figure the server sends (a Streamlit ForwardMsg on the websocket).
CHART_TITLE = b"Policy-loss CDF over records"
#: The CDF chart's key on the Policy designer (its element id ends with it).
CDF_KEY = "cdf_records"

#: Targets of the workshop issue's acceptance, checked only at (or above) the sizes they name.
MEMORY_TARGET_MB, MEMORY_TARGET_SESSIONS = 3 * 1024, 30
LATENCY_TARGET_S, LATENCY_TARGET_ACTIVE, LATENCY_TARGET_CHANGES = 2.0, 10, 100


@dataclass
class Change:
    """One threshold change: which session, its number in the session, the values, the seconds from
    Enter to the updated chart drawn in the page (nan when it failed) and to the arrival of the chart's
    new figure in the browser (``delivered``: the server's share, without the page's drawing), and when
    it started (seconds into the phase)."""

    session: int
    k: int
    old: float
    new: float
    seconds: float = math.nan
    delivered: float = math.nan
    started: float = 0.0
    error: str = ""


@dataclass
class Participant:
    index: int
    timer: StepTimer = field(default_factory=StepTimer)
    page: Any = None
    context: Any = None
    client: Any = None  # the session's Streamlit-protocol client (``--client protocol``)
    start: float = math.nan  # the threshold shown after the first render
    opened: bool = False
    failed_step: str = ""
    reason: str = ""
    changes: list[Change] = field(default_factory=list)
    chart_frames: list[float] = field(default_factory=list)  # arrival times of websocket frames with the chart

    def on_websocket(self, ws: Any) -> None:
        ws.on("framereceived", self.on_frame)

    def on_frame(self, payload: bytes | str) -> None:
        data = payload if isinstance(payload, bytes) else payload.encode("utf-8", "replace")
        if CHART_TITLE in data:
            self.chart_frames.append(time.perf_counter())


def cpu_seconds(pids: list[int]) -> float:
    """CPU time (user + system) the processes have used so far, s (processes that exited meanwhile: 0)."""
    total = 0
    for pid in pids:
        try:
            with open(f"/proc/{pid}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
            total += int(fields[11]) + int(fields[12])  # utime, stime (fields 14 and 15 of stat)
        except (OSError, IndexError, ValueError):
            continue
    return total / os.sysconf("SC_CLK_TCK")


class CpuMeter:
    """CPU time of the server (its process tree) and of the client side, read at the phases' boundaries: the
    browsers (chromium and Playwright's driver: every other process this benchmark started) or, with
    ``include_self``, also this process (where the protocol clients run)."""

    def __init__(self, server_pid: int, include_self: bool = False) -> None:
        self.server_pid = server_pid
        self.include_self = include_self
        self.marks: dict[str, tuple[float, float]] = {}

    def mark(self, name: str) -> None:
        server = [self.server_pid, *descendants(self.server_pid)]
        client = [p for p in descendants(os.getpid()) if p not in server] + ([os.getpid()] if self.include_self else [])
        self.marks[name] = (cpu_seconds(server), cpu_seconds(client))

    def between(self, a: str, b: str) -> dict[str, float]:
        (s0, c0), (s1, c1) = self.marks[a], self.marks[b]
        return {"server": s1 - s0, "browser": c1 - c0}


def cpu_list(text: str) -> set[int]:
    """CPUs of a taskset-style list: ``0``, ``0,1``, ``0-3``."""
    cpus: set[int] = set()
    for part in text.split(","):
        lo, _, hi = part.strip().partition("-")
        cpus.update(range(int(lo), int(hi or lo) + 1))
    return cpus


def pinned(command: Callable[[int], list[str]], cpus: str) -> Callable[[int], list[str]]:
    """``command`` run on ``cpus`` only (taskset executes it: the server keeps the process id)."""
    return lambda port: ["taskset", "-c", cpus, *command(port)]


def describe(err: Exception) -> str:
    return f"{type(err).__name__}: {str(err).splitlines()[0][:160] if str(err) else ''}"


def new_value(start: float, session: int, k: int) -> float:
    """The k-th threshold of a session: alternately about 2× and ½× the starting value, each value
    distinct across changes and sessions (a new preview every time, and a chart that moves)."""
    base = start if start > 0 else 10.0
    return float(f"{base * (2.0 if k % 2 == 0 else 0.5) * (1 + 0.001 * (k + 1) + 0.00001 * session):.6g}")


# ---------------------------------------------------------------------------------------------------------
# The sessions


class BrowserDriver:
    """Sessions in chromium contexts (Playwright): the page is drawn, as a participant sees it."""

    def __init__(self, browser: Any, url: str, timeout_ms: float) -> None:
        self.browser, self.url, self.timeout_ms = browser, url, timeout_ms

    async def open(self, p: Participant) -> None:
        """Open the app (default sample), then the Policy designer until its CDF chart is drawn and idle."""
        p.context = await self.browser.new_context(viewport={"width": 1400, "height": 1000})
        p.page = page = await p.context.new_page()
        page.on("websocket", p.on_websocket)
        page.set_default_timeout(self.timeout_ms)
        async with p.timer.step("open the app"):
            await open_app(page, self.url, self.timeout_ms)
        async with p.timer.step("open the Policy designer"):
            await page.locator('[data-testid="stSidebarNav"] a').filter(has_text="Policy designer").first.click()
            await page.locator(CDF_CHART).wait_for()
            await wait_idle(page, self.timeout_ms)
        if not await page.evaluate(FINGERPRINT):
            raise RuntimeError("the policy-loss CDF chart has no data")
        p.start = float(await threshold_input(page).input_value())

    async def change(self, p: Participant, c: Change) -> None:
        """Type the change's value into the first threshold box and press Enter; time Enter → the updated chart
        drawn in the page, and → the chart's new figure on the websocket; wait for the run's end."""
        page = p.page
        box = threshold_input(page)
        c.old = float(await box.input_value())
        before = await page.evaluate(FINGERPRINT)
        if not before:
            raise RuntimeError("the policy-loss CDF chart has no data before the change")
        await box.fill(f"{c.new:.6g}")
        t0 = time.perf_counter()
        await box.press("Enter")
        await page.wait_for_function(CHANGED, arg=before, timeout=self.timeout_ms, polling=20)
        c.seconds = time.perf_counter() - t0
        c.delivered = next((t - t0 for t in p.chart_frames if t > t0), math.nan)
        await wait_idle(page, self.timeout_ms)  # the rest of the page's run: the next change starts after it
        shown = float(await box.input_value())
        if not math.isclose(shown, c.new, rel_tol=1e-9):
            raise RuntimeError(f"the threshold box shows {shown:g} after the change to {c.new:g}")

    async def close(self, p: Participant) -> None:
        if p.context is not None:
            await p.context.close()


class ProtocolDriver:
    """Sessions as Streamlit-protocol clients (:class:`st_client.StreamlitClient`): the same messages as a
    browser's, nothing drawn, so the machine's cores are the server's."""

    def __init__(self, url: str, timeout_s: float) -> None:
        self.url, self.timeout_s = url, timeout_s

    async def open(self, p: Participant) -> None:
        """Open the app (default sample), then the Policy designer until its run has ended."""
        async with p.timer.step("open the app"):
            p.client = StreamlitClient(self.url, timeout=self.timeout_s)
            await p.client.connect()
            await p.client.wait_idle()
        async with p.timer.step("open the Policy designer"):
            await p.client.open_page("Policy designer")
        if not json.loads(plotly_data(p.client.keyed("plotly_chart", CDF_KEY))):
            raise RuntimeError("the policy-loss CDF chart has no data")
        p.start = float(p.client.value(self.threshold(p)))

    @staticmethod
    def threshold(p: Participant) -> str:
        """The widget id of the first threshold box T(…) (the first number input so labelled on the page)."""
        return p.client.find("number_input", lambda e: e.label.startswith("T("))[1].id

    async def change(self, p: Participant, c: Change) -> None:
        """Send the first threshold's new value in a rerun with every widget's state; time the send → the arrival
        of the CDF chart's new figure (its traces differ from before); wait for the run's end."""
        client, box = p.client, self.threshold(p)
        c.old = float(client.value(box))
        before = plotly_data(client.keyed("plotly_chart", CDF_KEY))
        t0 = await client.set_number(box, c.new)
        await client.wait_for(lambda: plotly_data(client.keyed("plotly_chart", CDF_KEY)) != before,
                              "the updated policy-loss CDF")
        c.seconds = c.delivered = client.shown("plotly_chart", CDF_KEY).arrived - t0
        await client.wait_idle()
        shown = float(client.value(box))
        if not math.isclose(shown, c.new, rel_tol=1e-9):
            raise RuntimeError(f"the threshold box holds {shown:g} after the change to {c.new:g}")

    async def close(self, p: Participant) -> None:
        if p.client is not None:
            await p.client.close()


async def open_session(driver: Any, p: Participant, gate: asyncio.Semaphore) -> None:
    """Open one session (at most as many at once as ``gate`` lets); a failure is recorded with its step."""
    try:
        async with gate:
            await driver.open(p)
        p.opened = True
    except Exception as err:  # a failure is a result to report, not a crash of the benchmark
        p.failed_step = next((s for s in ("open the app", "open the Policy designer") if s not in p.timer.times),
                             "check the chart")
        p.reason = describe(err)


async def change_threshold(driver: Any, p: Participant, k: int, t0_phase: float) -> bool:
    """Change the session's first threshold once to a value not used before; time it; wait for the run's end."""
    c = Change(p.index, k, old=p.start, new=new_value(p.start, p.index, k))
    p.changes.append(c)
    c.started = time.monotonic() - t0_phase
    try:
        await driver.change(p, c)
        return True
    except Exception as err:
        c.error = describe(err)
        return False


async def active_phase(driver: Any, active: list[Participant], changes: int, pattern: str, think: float) -> None:
    """``changes`` threshold changes in all, shared among the active sessions (concurrently or in turns).
    A session stops after a failed change (its page may be in any state)."""
    per = [changes // len(active) + (i < changes % len(active)) for i in range(len(active))]
    t0 = time.monotonic()

    async def participant(p: Participant, n: int) -> None:
        for k in range(n):
            if not await change_threshold(driver, p, k, t0):
                return
            await asyncio.sleep(think)

    if pattern == "concurrent":
        await asyncio.gather(*(participant(p, n) for p, n in zip(active, per)))
        return
    stopped: set[int] = set()
    for k in range(max(per)):
        for p, n in zip(active, per):
            if k < n and p.index not in stopped:
                if not await change_threshold(driver, p, k, t0):
                    stopped.add(p.index)
                await asyncio.sleep(think)


async def run_room(url: str, sampler: RssSampler, cpu: CpuMeter, args: argparse.Namespace
                   ) -> tuple[list[Participant], dict]:
    """The room with the sessions of ``--client``: browsers (one chromium) or protocol clients."""
    if args.client == "protocol":
        return await room_phases(ProtocolDriver(url, args.timeout), sampler, cpu, args)
    from playwright.async_api import async_playwright

    async with async_playwright() as pw:
        browser = await pw.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_FLAGS, headless=True)
        try:
            return await room_phases(BrowserDriver(browser, url, args.timeout * 1000), sampler, cpu, args)
        finally:
            await browser.close()


async def room_phases(driver: Any, sampler: RssSampler, cpu: CpuMeter, args: argparse.Namespace
                      ) -> tuple[list[Participant], dict]:
    mem: dict[str, float] = {}
    load: dict[str, list[float]] = {}
    warm = Participant(-1)  # imports, the default sample, the Policy designer's modules: once per server
    await open_session(driver, warm, asyncio.Semaphore(1))
    await driver.close(warm)
    if not warm.opened:
        raise RuntimeError(f"the warm-up session failed: {warm.failed_step}: {warm.reason}")
    mem["before"] = sampler.rss_mb()
    load["before"] = list(os.getloadavg())
    cpu.mark("before")

    room = [Participant(i) for i in range(args.sessions)]
    gate = asyncio.Semaphore(max(1, args.open_at_once))
    t_open = time.monotonic()
    await asyncio.gather(*(open_session(driver, p, gate) for p in room))
    mem["open_wall"] = time.monotonic() - t_open
    mem["peak_opening"] = sampler.peak_mb(since=t_open)
    mem["all_open"] = sampler.rss_mb()
    load["opened"] = list(os.getloadavg())
    cpu.mark("opened")
    t_idle = time.monotonic()
    await asyncio.sleep(args.settle)
    mem["settled"] = sampler.rss_mb()
    mem["peak_idle"] = sampler.peak_mb(since=t_idle)
    cpu.mark("settled")

    active = [p for p in room if p.opened][:args.active]
    if active and args.changes > 0:
        t_act = time.monotonic()
        await active_phase(driver, active, args.changes, args.pattern, args.think)
        mem["active_wall"] = time.monotonic() - t_act
        mem["peak_active"] = sampler.peak_mb(since=t_act)
        mem["after_active"] = sampler.rss_mb()
        load["active"] = list(os.getloadavg())
        cpu.mark("active")
    for p in room:
        await driver.close(p)
    phases = [("opening", "before", "opened"), ("idle", "opened", "settled"), ("active", "settled", "active")]
    used = {name: cpu.between(a, b) for name, a, b in phases if a in cpu.marks and b in cpu.marks}
    return room, {"memory_mb": mem, "load_average": load, "cpu_s": used}


# ---------------------------------------------------------------------------------------------------------
# Report


def command_line() -> str:
    return " ".join([".venv/bin/python benchmarks/bench_workshop_load.py", *sys.argv[1:]])


def summarise(args: argparse.Namespace, room: list[Participant], measured: dict) -> dict:
    """Everything the report prints, as JSON-ready data."""
    changes = [c for p in room for c in p.changes]
    lat = [c.seconds for c in changes if c.error == ""]
    mem = measured["memory_mb"]
    opened = sum(p.opened for p in room)
    steps = {}
    for s in dict.fromkeys(s for p in room for s in p.timer.times):
        vals = [p.timer.times[s] for p in room if s in p.timer.times]
        steps[s] = {"p50": percentile(vals, 50), "p95": percentile(vals, 95), "max": max(vals), "n": len(vals)}
    latency = {"p50": percentile(lat, 50), "p95": percentile(lat, 95), "max": max(lat, default=math.nan),
               "n": len(lat), "failed": len(changes) - len(lat)}
    got = [c.delivered for c in changes if c.error == "" and math.isfinite(c.delivered)]
    delivered = {"p50": percentile(got, 50), "p95": percentile(got, 95), "max": max(got, default=math.nan),
                 "n": len(got)}
    targets = {}
    if args.sessions >= MEMORY_TARGET_SESSIONS:
        worst = max(mem[k] for k in ("peak_opening", "peak_idle", "settled", "peak_active") if k in mem)
        targets["memory"] = {"target_mb": MEMORY_TARGET_MB, "worst_mb": worst,
                             "met": opened == args.sessions and worst <= MEMORY_TARGET_MB}
    if len([p for p in room if p.changes]) >= LATENCY_TARGET_ACTIVE and len(lat) >= LATENCY_TARGET_CHANGES:
        targets["latency"] = {"target_p95_s": LATENCY_TARGET_S, "p95_s": latency["p95"],
                              "met": latency["failed"] == 0 and latency["p95"] <= LATENCY_TARGET_S}
    return {
        "machine": machine(), "command": command_line(),
        "settings": {k: v for k, v in vars(args).items() if k not in ("json", "log")},
        "opened": opened, "failures": [{"session": p.index, "step": p.failed_step, "reason": p.reason}
                                       for p in room if not p.opened],
        "steps_s": steps, "latency_s": latency, "delivered_s": delivered, "targets": targets, **measured,
        "changes": [asdict(c) for c in changes],
    }


def report(s: dict) -> None:
    a, mem, lat = s["settings"], s["memory_mb"], s["latency_s"]
    print(f"Machine: {s['machine']}")
    print(f"Command: {s['command']}")
    pattern = ("concurrently (each changes, waits for the chart and the end of its run"
               + (f", pauses {a['think']:g} s" if a["think"] else "") + ", changes again)"
               if a["pattern"] == "concurrent" else "in turns (one change in the room at a time"
               + (f", {a['think']:g} s apart" if a["think"] else "") + ")")
    protocol = a.get("client", "browser") == "protocol"
    who = "Streamlit-protocol clients (nothing drawn)" if protocol else "browser sessions (chromium)"
    print(f"Input: {a['sessions']} {who} on the default sample (at most {a['open_at_once']} opening at once), "
          f"idle {a['settle']:g} s; then {min(a['active'], s['opened'])} of them change the first threshold "
          f"{a['changes']} times in all, {pattern}. "
          + (f"Server on CPU {a['server_cpus']}. " if a["server_cpus"] else "")
          + (f"Browsers on CPU {a['browser_cpus']}. " if a["browser_cpus"] else "")
          + "Load average (1, 5, 15 min): "
          + "; ".join(f"{k} {', '.join(f'{x:.1f}' for x in v)}" for k, v in s["load_average"].items()))
    print()
    print("| step (per session) | p50 | p95 | max | sessions |")
    print("|---|---|---|---|---|")
    for name, v in s["steps_s"].items():
        print(f"| {name} | {v['p50']:.1f} s | {v['p95']:.1f} s | {v['max']:.1f} s | {v['n']} |")
    d = s["delivered_s"]
    label = "threshold change → updated chart (its new figure received)" if protocol else \
        "threshold change → updated chart"
    print(f"| {label} | {lat['p50']:.2f} s | {lat['p95']:.2f} s | {lat['max']:.2f} s | {lat['n']} changes |")
    if not protocol:
        print(f"| threshold change → chart's figure received (websocket) | {d['p50']:.2f} s | {d['p95']:.2f} s | "
              f"{d['max']:.2f} s | {d['n']} changes |")
    print()
    print("| server resident memory (with children) | MB |")
    print("|---|---|")
    rows = [("before the room (after a warm-up session)", mem.get("before")),
            (f"peak while {a['sessions']} sessions open ({mem.get('open_wall', math.nan):.0f} s)",
             mem.get("peak_opening")),
            ("every session rendered", mem.get("all_open")),
            (f"settled: {a['settle']:g} s idle, every session open", mem.get("settled")),
            ("settled − before, per session", (mem["settled"] - mem["before"]) / max(a["sessions"], 1)),
            (f"peak while {min(a['active'], s['opened'])} sessions change thresholds", mem.get("peak_active"))]
    for label, v in rows:
        if v is not None:
            print(f"| {label} | {v:,.0f} |")
    print()
    print("| CPU time | server | " + ("client side (this process)" if protocol else "browser side (chromium, driver)")
          + " |")
    print("|---|---|---|")
    for phase, v in s["cpu_s"].items():
        print(f"| {phase} | {v['server']:.1f} s | {v['browser']:.1f} s |")
        if phase == "active" and lat["n"] + lat["failed"]:
            n = lat["n"] + lat["failed"]
            print(f"| active, per change | {v['server'] / n:.2f} s | {v['browser'] / n:.2f} s |")
    print()
    print(f"Opened: {s['opened']} of {a['sessions']}; threshold changes: {lat['n']} timed, {lat['failed']} failed")
    for f in s["failures"]:
        print(f"- session {f['session']}: {f['step']}: {f['reason']}")
    for c in s["changes"]:
        if c["error"]:
            print(f"- session {c['session']}, change {c['k']} ({c['old']:g} → {c['new']:g}): {c['error']}")
    for name, t in s["targets"].items():
        got = f"{t['worst_mb']:,.0f} MB" if name == "memory" else f"p95 {t['p95_s']:.2f} s"
        want = f"≤ {t['target_mb']:,} MB" if name == "memory" else f"p95 ≤ {t['target_p95_s']:g} s"
        print(f"Target {name}: {want}: {got}: {'met' if t['met'] else 'MISSED'}")
    if not s["targets"]:
        print(f"Targets not evaluated at this size (memory: {MEMORY_TARGET_SESSIONS} sessions; latency: "
              f"{LATENCY_TARGET_ACTIVE} active sessions, {LATENCY_TARGET_CHANGES} changes).")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sessions", type=int, default=30, help="browser sessions in the room (default 30)")
    ap.add_argument("--active", type=int, default=10, help="sessions that change thresholds (default 10)")
    ap.add_argument("--changes", type=int, default=100, help="threshold changes in all, shared among the active "
                                                               "sessions (default 100)")
    ap.add_argument("--client", choices=("browser", "protocol"), default="browser",
                    help="the sessions: chromium pages, drawn as a participant sees them (default), or "
                         "Streamlit-protocol clients that send and receive the same messages without drawing "
                         "(the server measured alone)")
    ap.add_argument("--pattern", choices=("concurrent", "turns"), default="concurrent",
                    help="the active sessions change at the same time (default) or one after another")
    ap.add_argument("--think", type=float, default=0.0,
                    help="seconds an active session pauses after its run ends before its next change (default 0)")
    ap.add_argument("--open-at-once", type=int, default=10,
                    help="sessions loading their first pages at the same time (default 10)")
    ap.add_argument("--settle", type=float, default=60.0,
                    help="seconds the room stays idle before the settled memory reading (default 60)")
    ap.add_argument("--server-cpus", metavar="LIST", default=None,
                    help="run the server on these CPUs only (taskset list, e.g. 0); default: all")
    ap.add_argument("--browser-cpus", metavar="LIST", default=None,
                    help="run chromium, its driver and this script on these CPUs only (e.g. 1), so that the "
                         "browsers, which a workshop runs on the participants' machines, do not take the "
                         "server's CPU; default: all")
    ap.add_argument("--timeout", type=float, default=300.0, help="timeout of each browser step, s (default 300)")
    ap.add_argument("--json", type=Path, default=None, help="write the results (and every change) to this file")
    ap.add_argument("--log", type=Path, default=None, help="server log file (default: in the workshop folder)")
    args = ap.parse_args(argv)
    if args.sessions < 1 or not 0 <= args.active <= args.sessions or args.changes < 0:
        ap.error("need --sessions ≥ 1, 0 ≤ --active ≤ --sessions and --changes ≥ 0")
    for opt, cpus in (("--server-cpus", args.server_cpus), ("--browser-cpus", args.browser_cpus)):
        try:
            cpu_list(cpus or "0")
        except ValueError:
            ap.error(f"{opt} {cpus}: give CPU numbers as taskset does, e.g. 0 or 0,1 or 0-1")
    if args.client == "browser" and not Path(CHROMIUM).exists():
        print(f"{CHROMIUM} is missing (apt-get install chromium)", file=sys.stderr)
        return 2
    with tempfile.TemporaryDirectory(prefix="prdp-workshop-load-") as home:
        (Path(home) / "data").mkdir()
        env = clean_env(PRDP_WORKSHOP_DIR=home)
        log_path = args.log or Path(home) / "server.log"
        command = prdp_app_command(Path(home) / "data")
        if args.server_cpus:
            command = pinned(command, args.server_cpus)
        with open(log_path, "w") as log, app_server(log, env=env, command=command, cwd=Path(home)) as (url, proc):
            if args.browser_cpus:  # inherited by the driver and chromium, started after this
                os.sched_setaffinity(0, cpu_list(args.browser_cpus))
            sampler = RssSampler(proc.pid, children=True).start()
            try:
                cpu = CpuMeter(proc.pid, include_self=args.client == "protocol")
                room, measured = asyncio.run(run_room(url, sampler, cpu, args))
            finally:
                sampler.stop()
    summary = summarise(args, room, measured)
    report(summary)
    if args.json is not None:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(summary, indent=2, default=float))
    failed = summary["failures"] or summary["latency_s"]["failed"]
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
