"""Server CPU of one Policy designer rerun after a threshold change (the workshop latency's server share).

Runs the real ``app.py`` in Streamlit's ``AppTest`` (the default sample, teaching mode), opens the Policy
designer, then changes the first threshold ``--changes`` times, each to a value not used before (so no
cached preview serves it, as in ``bench_workshop_load.py``). Per rerun it measures the CPU time of the
script thread (``time.thread_time``: the page, the sidebar, the link and the durable save, and the
serialisation of every element, Plotly figures included) and the bytes of the messages the rerun sends
to the browser (the protobuf ``ForwardMsg`` deltas, in which the charts' figure JSON is most of it).
With ``--profile N`` it prints the N costliest functions (cumulative time) of the script thread over the
timed reruns (cProfile inflates the times; read it for shares, the unprofiled run for the CPU).

Two differences from a server's rerun: AppTest compiles the page scripts again at every run (a server keeps
their bytecode), and its process holds fewer objects, so Streamlit's garbage collection after each run
costs less than in a server (``bench_workshop_load.py`` measures the server's CPU).

Run: .venv/bin/python benchmarks/bench_threshold_rerun.py [--changes 20] [--profile 30]
"""

from __future__ import annotations

import argparse
import cProfile
import io
import os
import pstats
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import machine  # noqa: E402


class ScriptThreadMeter:
    """Wraps Streamlit's ``ScriptRunner._run_script`` to measure each run in its own thread: CPU seconds and,
    when ``profile`` is set, a cProfile of every measured run."""

    def __init__(self, profile: bool) -> None:
        from streamlit.runtime.scriptrunner import script_runner

        self.cpu: list[float] = []
        self.sent: list[int] = []
        self.measuring = False
        self.profiler = cProfile.Profile() if profile else None
        self._cls = script_runner.ScriptRunner
        self._orig = self._cls._run_script
        meter = self

        def run_script(runner: Any, rerun_data: Any) -> None:
            if not meter.measuring:
                return meter._orig(runner, rerun_data)
            t0 = time.thread_time()
            if meter.profiler is not None:
                meter.profiler.enable()
            try:
                return meter._orig(runner, rerun_data)
            finally:
                if meter.profiler is not None:
                    meter.profiler.disable()
                meter.cpu.append(time.thread_time() - t0)
                meter.sent.append(sum(m.ByteSize() for m in runner.forward_msg_queue._queue))

        self._cls._run_script = run_script  # type: ignore[method-assign]

    def restore(self) -> None:
        self._cls._run_script = self._orig  # type: ignore[method-assign]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--changes", type=int, default=20)
    ap.add_argument("--profile", type=int, default=0, help="print the N costliest functions (cProfile)")
    args = ap.parse_args()

    os.environ.setdefault("PRDP_WORKSHOP_DIR", tempfile.mkdtemp(prefix="prdp-bench-rerun-"))
    from streamlit.testing.v1 import AppTest

    meter = ScriptThreadMeter(profile=args.profile > 0)
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=300)
    at.run()
    at.switch_page("app_pages/policy_designer.py")
    at.run()
    assert not at.exception, at.exception
    measure = at.session_state["dataset"].schema.measures[0]
    box = f"thr_{measure}"
    start = float(at.number_input(key=box).value)
    at.number_input(key=box).set_value(start * 1.37)  # warm-up: caches of the page's first changes
    at.run()
    meter.measuring = True
    wall = []
    for k in range(args.changes):
        value = start * (2.0 + 0.01 * k if k % 2 == 0 else 0.5 - 0.001 * k)  # never used before
        at.number_input(key=box).set_value(value)
        t0 = time.perf_counter()
        at.run()
        wall.append(time.perf_counter() - t0)
        assert not at.exception, at.exception
    meter.measuring = False
    meter.restore()
    cpu = sorted(meter.cpu)
    print(f"machine: {machine()}; load average {os.getloadavg()[0]:.1f}; {time.strftime('%Y-%m-%d %H:%M')}")
    print(f"{args.changes} threshold changes of T({measure}) on the Policy designer"
          + (" (profiled: times inflated)" if meter.profiler else ""))
    print(f"script-thread CPU per rerun: median {statistics.median(cpu):.3f} s, "
          f"p90 {cpu[int(0.9 * (len(cpu) - 1))]:.3f} s, min {cpu[0]:.3f} s")
    print(f"wall per rerun (AppTest): median {statistics.median(wall):.3f} s")
    print(f"bytes sent per rerun: median {statistics.median(meter.sent) / 1024:.0f} KiB")
    if meter.profiler is not None:
        out = io.StringIO()
        pstats.Stats(meter.profiler, stream=out).sort_stats("cumulative").print_stats(args.profile)
        print(out.getvalue())


if __name__ == "__main__":
    main()
