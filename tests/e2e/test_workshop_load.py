"""The workshop load benchmark (benchmarks/bench_workshop_load.py) end to end at a tiny size: a
``prdp app`` server with a fresh workshop folder, two browser sessions on the default sample's Policy
designer, three threshold changes. Its figures are recorded in benchmarks/README.md, never asserted
here: the test checks that every session opened, that every change reached the chart (a latency is
only recorded once the chart's data differs from before the change, and the threshold box then shows
the new value), that the chart's new figure was seen arriving on the websocket first, and that the
memory and CPU readings are real."""

from __future__ import annotations

import json
import math
import subprocess
import sys

import pytest

from .conftest import _require_browser
from .server import ROOT, clean_env

pytestmark = [pytest.mark.e2e, pytest.mark.xdist_group("e2e")]


def test_workshop_load_benchmark_measures_chart_updates(tmp_path):
    _require_browser()
    out = tmp_path / "load.json"
    cmd = [sys.executable, str(ROOT / "benchmarks" / "bench_workshop_load.py"), "--sessions", "2", "--active", "2",
           "--changes", "3", "--settle", "0", "--open-at-once", "2", "--json", str(out)]
    run = subprocess.run(cmd, capture_output=True, text=True, timeout=600, env=clean_env(), cwd=tmp_path)
    assert run.returncode == 0, run.stdout + run.stderr
    assert "| threshold change → updated chart |" in run.stdout

    s = json.loads(out.read_text())
    assert s["opened"] == 2 and s["failures"] == []
    assert s["latency_s"]["n"] == 3 and s["latency_s"]["failed"] == 0
    assert sorted(c["session"] for c in s["changes"]) == [0, 0, 1]  # 3 changes shared by the 2 active sessions
    for c in s["changes"]:
        assert c["error"] == "" and math.isfinite(c["seconds"]) and c["seconds"] > 0
        assert c["new"] != c["old"] and c["new"] > 0
        # the chart's new figure reached the browser (websocket) before the page had drawn it
        assert math.isfinite(c["delivered"]) and 0 < c["delivered"] <= c["seconds"]
    assert len({c["new"] for c in s["changes"]}) == 3  # each change a value not used before
    mem = s["memory_mb"]
    assert 100 < mem["before"] <= mem["peak_opening"] and mem["peak_active"] >= mem["before"] * 0.5
    assert s["cpu_s"]["active"]["server"] > 0 and s["cpu_s"]["opening"]["browser"] > 0
    assert s["targets"] == {}  # too small a room for the acceptance targets: they are not judged
