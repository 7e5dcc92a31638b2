"""The route guard against a real server: an oversize share link refused, and ended sessions' samples released.

Starts ``streamlit run app.py`` on 127.0.0.1 and a free port (a workshop folder of its own) and drives it with
Streamlit-protocol clients (``st_client.StreamlitClient``: what a browser sends, nothing drawn), sampling the
server's resident memory (VmRSS) every 0.2 s:

1. **warm-up**: one session opens the app (the default sample, the first page's modules) and leaves; the
   server's memory after it is the *start*;
2. **the oversize link**: a session opens a share link whose design names ``cbp_like`` with n = 10⁷
   (``--link-rows``); measured: the time from sending the address to the end of the first run (the page
   saying the link's design was not loaded, per-session memory budget), and the server's memory growth
   (peak during the run − the memory before it). Target: ≤ 2 s and ≤ 300 MB;
3. **ten large sessions**: ``--sessions`` sessions (at most ``--open-at-once`` loading at the same time)
   each open a share link on a 10⁶-record sample (``--rows``; above the shared limit, so each session's
   own), all stay open until every one has loaded, then all close; after ``--settle`` seconds (the server's
   reconnect window, 120 s by default, then the closing and trimming of ui.memory) the server's memory is
   read again. Target: within 300 MB of the start.

``--app DIR`` runs another checkout's app.py (e.g. ``git archive`` of an earlier commit, with
``--link-rows 0``: without the guard the link would generate its 10⁷ records).

Run: .venv/bin/python benchmarks/bench_route_guard.py [--sessions 10] [--rows 1000000] [--open-at-once 2]
     [--settle 140] [--reconnect-window 120] [--rounds 1] [--link-rows 10000000] [--app DIR]
"""

from __future__ import annotations

import argparse
import asyncio
import re
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_sessions import RssSampler  # noqa: E402
from common import machine  # noqa: E402
from st_client import StreamlitClient  # noqa: E402

from prdp_core.board import links  # noqa: E402
from tests.e2e.server import app_server, clean_env, streamlit_command  # noqa: E402

WORKLOAD = {"queries": [{"kind": "count", "group_by": ["STATE"], "rho": 0.5},
                        {"kind": "sum", "measure": "EMP", "group_by": ["STATE"], "rho": 0.5}]}


def link_query(rows: int, seed: int = 0) -> str:
    """The query string of a share link whose design (thresholds on cbp_like) names ``rows`` records."""
    design = {"version": 1, "data": {"sample": "cbp_like", "n": rows, "seed": seed},
              "policy": {"thresholds": {"EMP": 30, "PAYANN": 3000, "PAYQTR1": 800}},
              "workload": WORKLOAD, "mechanisms": [{"kind": "unit_splitting"}]}
    return f"{links.PARAM}={links.encode(design)}"


def page_text(client: StreamlitClient) -> str:
    """The text of the page's alerts and Markdown as the reader sees it (Markdown's backslash escapes removed)."""
    text = "\n".join(str(getattr(s.element, "body", "")) for s in client.elements.values()
                     if s.kind in ("alert", "markdown"))
    return re.sub(r"\\([!-/:-@\[-`{-~])", r"\1", text)


async def open_link(url: str, query: str, timeout: float) -> tuple[StreamlitClient, float, float]:
    """A session opened on a share link; returns it (open), when the address was sent and the time until its
    first run ended (``time.perf_counter`` and seconds)."""
    client = StreamlitClient(url, timeout=timeout)
    t0 = time.perf_counter()
    await client.connect(query)
    await client.wait_idle()
    return client, t0, time.perf_counter() - t0


def said_at(client: StreamlitClient, phrase: str) -> float:
    """When the alert saying ``phrase`` arrived (``time.perf_counter``)."""
    return min(s.arrived for s in client.elements.values()
               if s.kind == "alert" and phrase in re.sub(r"\\(.)", r"\1", str(s.element.body)))


async def scenario(url: str, args: argparse.Namespace, sampler: RssSampler) -> dict[str, float]:
    """Phase 1 (the warm-up and the start's memory), then the link and the sessions."""
    out: dict[str, float] = {}
    warm, _, _ = await open_link(url, "", args.timeout)
    await warm.close()
    await asyncio.sleep(3)
    out["start"] = sampler.rss_mb()

    if args.link_rows:
        await refused_link(url, args, sampler, out)
    for k in range(args.rounds):
        r: dict[str, float] = {}
        await many_sessions(url, args, sampler, r, first_seed=k * args.sessions)
        out.update({key if k == 0 else f"{key} {k + 1}": v for key, v in r.items()})
    return out


async def refused_link(url: str, args: argparse.Namespace, sampler: RssSampler, out: dict[str, float]) -> None:
    """Phase 2: the oversize link, refused (its time and the server's memory growth)."""
    before = sampler.rss_mb()
    t_mark = time.monotonic()
    client, t0, elapsed = await open_link(url, link_query(args.link_rows), args.timeout)
    text = page_text(client)
    if "link's design was not loaded" not in text or "per-session memory budget" not in text:
        raise RuntimeError(f"the oversize link was not refused as expected; the page says:\n{text[:2000]}")
    out["link_seconds"] = said_at(client, "link's design was not loaded") - t0
    out["link_run_seconds"] = elapsed
    peak = sampler.peak_mb(t_mark)  # nan when the run was shorter than one sampling interval
    out["link_growth"] = max(sampler.rss_mb(), peak if peak == peak else 0.0) - before
    await client.close()


async def many_sessions(url: str, args: argparse.Namespace, sampler: RssSampler, out: dict[str, float],
                        first_seed: int = 0) -> None:
    """Phase 3: sessions of large samples open, close, and the server's memory after the reconnect window."""
    gate = asyncio.Semaphore(args.open_at_once)
    times: list[float] = []

    async def one(i: int) -> StreamlitClient:
        async with gate:
            c, _, t = await open_link(url, link_query(args.rows, seed=first_seed + i), args.timeout)
            if "Loaded the design this link carries" not in page_text(c):
                raise RuntimeError(f"session {i} did not load its sample; the page says:\n{page_text(c)[:2000]}")
            times.append(t)
            return c

    t_mark = time.monotonic()
    clients = await asyncio.gather(*(one(i) for i in range(args.sessions)))
    out["open_peak"] = sampler.peak_mb(t_mark)
    out["all_open"] = sampler.rss_mb()
    out["load_seconds_max"] = max(times)
    for c in clients:
        await c.close()
    out["just_closed"] = sampler.rss_mb()
    await asyncio.sleep(args.settle)
    out["after"] = sampler.rss_mb()


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--sessions", type=int, default=10)
    ap.add_argument("--rows", type=int, default=1_000_000, help="records of each session's sample")
    ap.add_argument("--link-rows", type=int, default=10_000_000,
                    help="records the oversize link names (0: no link phase, e.g. on a build without the guard)")
    ap.add_argument("--rounds", type=int, default=1, help="times the sessions open and close (new seeds each time)")
    ap.add_argument("--open-at-once", type=int, default=2, help="sessions loading their sample at the same time")
    ap.add_argument("--settle", type=float, default=140.0,
                    help="seconds after the sessions close before the last reading (the reconnect window + 20)")
    ap.add_argument("--reconnect-window", type=float, default=120.0,
                    help="the server's server.disconnectedSessionTTL (Streamlit's default: 120 s)")
    ap.add_argument("--timeout", type=float, default=600.0)
    ap.add_argument("--app", type=Path, default=ROOT,
                    help="the checkout whose app.py the server runs (e.g. an export of an earlier commit)")
    args = ap.parse_args()

    def command(port: int) -> list[str]:
        cmd = streamlit_command(port) + ["--server.disconnectedSessionTTL", f"{args.reconnect_window:g}"]
        return [str(args.app / "app.py") if c == str(ROOT / "app.py") else c for c in cmd]

    print(f"Machine: {machine()}")
    print(f"Command: {' '.join(sys.argv)}")
    with tempfile.TemporaryDirectory() as tmp, open(Path(tmp) / "server.log", "w") as log:
        env = clean_env(PRDP_WORKSHOP_DIR=str(Path(tmp) / "workshop"))
        with app_server(log, env=env, command=command, cwd=args.app) as (url, proc):
            sampler = RssSampler(proc.pid, interval=0.2).start()
            try:
                r = asyncio.run(scenario(url, args, sampler))
            finally:
                sampler.stop()
    ok_link = not args.link_rows or (r["link_seconds"] <= 2 and r["link_growth"] <= 300)
    ok_after = r["after"] - r["start"] <= 300
    link = "" if not args.link_rows else (
        f"| link with n = {args.link_rows:,}: refusal on the page after | {r['link_seconds']:.2f} s | ≤ 2 s |\n"
        f"| link with n = {args.link_rows:,}: end of its first run (the whole page) | {r['link_run_seconds']:.2f} s"
        " | |\n"
        f"| link with n = {args.link_rows:,}: server memory growth | {r['link_growth']:,.0f} MB | ≤ 300 MB |\n")
    print(f"| measure | value | target |\n|---|---|---|\n"
          f"| server memory at the start (after one warm-up session) | {r['start']:,.0f} MB | |\n{link}"
          f"| {args.sessions} sessions of {args.rows:,} records: slowest first run |"
          f" {r['load_seconds_max']:.1f} s | |\n"
          f"| peak while they opened | {r['open_peak']:,.0f} MB | |\n"
          f"| all open | {r['all_open']:,.0f} MB | |\n"
          f"| just after they closed | {r['just_closed']:,.0f} MB | |\n"
          f"| {args.settle:g} s after they closed | {r['after']:,.0f} MB "
          f"({r['after'] - r['start']:+,.0f} MB from the start) | ≤ +300 MB |")
    for k in range(2, args.rounds + 1):
        print(f"| round {k}: all open / {args.settle:g} s after they closed | {r[f'all_open {k}']:,.0f} MB / "
              f"{r[f'after {k}']:,.0f} MB ({r[f'after {k}'] - r['start']:+,.0f} MB from the start) | ≤ +300 MB |")
        ok_after = ok_after and r[f"after {k}"] - r["start"] <= 300
    link_said = "not measured" if not args.link_rows else "met" if ok_link else "NOT met"
    print(f"Link target {link_said}; release target {'met' if ok_after else 'NOT met'}.")
    return 0 if ok_link and ok_after else 1


if __name__ == "__main__":
    raise SystemExit(main())
