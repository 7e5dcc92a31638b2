"""The Streamlit-protocol client of the load benchmark (benchmarks/st_client.py) against a real workshop
server: ``prdp app`` on 127.0.0.1 and a free port with a fresh workshop folder, stopped through its process
handle. One session opens the app, goes to the Policy designer, changes the first threshold and receives the
updated policy-loss CDF; the rerun sends every widget of the page with the new threshold among them. No
browser is involved, so nothing here skips."""

from __future__ import annotations

import asyncio
import json
import sys
from concurrent.futures import ThreadPoolExecutor

import pytest
from streamlit.proto.Element_pb2 import Element

from tests.e2e.server import ROOT, app_server, clean_env, prdp_app_command

sys.path.insert(0, str(ROOT / "benchmarks"))
from st_client import ProtocolError, StreamlitClient, default_state, element_key, plotly_data, state_value  # noqa: E402


def _run(coro):
    """Run a coroutine on an event loop of its own thread: a test run before in this worker (a browser
    driven by Playwright) may have left an event loop running in this one."""
    with ThreadPoolExecutor(1) as pool:
        return pool.submit(asyncio.run, coro).result()


@pytest.fixture(scope="module")
def server_url(tmp_path_factory):
    home = tmp_path_factory.mktemp("workshop")
    (home / "data").mkdir()
    env = clean_env(PRDP_WORKSHOP_DIR=str(home))
    with open(home / "server.log", "w") as log, app_server(log, env=env, command=prdp_app_command(home / "data"),
                                                           cwd=home) as (url, proc):
        yield url
        assert proc.poll() is None, "the server exited during the test"


async def _change_threshold(url: str) -> dict:
    async with StreamlitClient(url, timeout=120) as c:
        await c.wait_idle()
        assert "Policy designer" in c.pages and c.query_string.startswith("s=")  # the durable session key
        await c.open_page("Policy designer")
        _, box = c.find("number_input", lambda e: e.label.startswith("T("))
        chart = c.keyed("plotly_chart", "cdf_records")
        before = plotly_data(chart)
        start = c.value(box.id)
        sent_before = dict(c.widgets)
        t0 = await c.set_number(box.id, start * 2)
        await c.wait_for(lambda: plotly_data(c.keyed("plotly_chart", "cdf_records")) != before, "the updated chart")
        arrived = c.shown("plotly_chart", "cdf_records").arrived
        await c.wait_idle()
        return {"start": start, "after": c.value(box.id), "key": element_key(box.id), "label": box.label,
                "before": json.loads(before), "now": json.loads(plotly_data(c.keyed("plotly_chart", "cdf_records"))),
                "title": json.loads(c.keyed("plotly_chart", "cdf_records").spec)["layout"]["title"]["text"],
                "seconds": arrived - t0, "widgets": {element_key(k) for k in c.widgets},
                "widgets_before": {element_key(k) for k in sent_before}, "unmodelled": c.unmodelled,
                "query": c.query_string, "errors": c.errors}


def test_a_session_changes_the_threshold_and_receives_the_updated_chart(server_url):
    r = _run(_change_threshold(server_url))
    assert r["errors"] == [] and r["unmodelled"] == set()
    assert r["label"] == "T(EMP)" and r["key"] == "thr_EMP" and r["start"] > 0
    assert r["after"] == 2 * r["start"]  # the server kept the value sent (it did not reset the box)
    assert r["title"] == "Policy-loss CDF over records"
    assert r["now"] != r["before"] and r["now"][0]["x"] != r["before"][0]["x"]  # the curve moved
    assert 0 < r["seconds"] < 120
    # the rerun sent the whole page's widgets, as a browser does: the sidebar's and the designer's
    assert {"thr_EMP", "thr_PAYANN", "policy_logx", "policy_view", "policy_delta", "mode", "seed"} <= r["widgets"]
    assert r["widgets"] == r["widgets_before"]
    assert "policy=" in r["query"]  # the design went into the address, which the next rerun sends back


def test_a_missing_page_is_a_clear_error(server_url):
    async def go() -> None:
        async with StreamlitClient(server_url, timeout=60) as c:
            await c.wait_idle()
            await c.open_page("No such page")

    with pytest.raises(ProtocolError, match="no page 'No such page'"):
        _run(go())


def test_widget_defaults_follow_the_browser():
    el = Element()
    el.slider.id, el.slider.options[:], el.slider.default[:] = "$$ID-x-d", ["1e-06", "1e-05"], [1]
    assert state_value(default_state("slider", el.slider)) == ["1e-05"]
    el.slider.raw_value[:], el.slider.set_value = ["1e-06"], True  # the server set the value
    assert state_value(default_state("slider", el.slider)) == ["1e-06"]
    el.radio.id, el.radio.options[:], el.radio.default = "$$ID-y-r", ["a", "b"], 1
    assert state_value(default_state("radio", el.radio)) == "b"
    el.number_input.id, el.number_input.data_type = "$$ID-z-n", el.number_input.INT
    assert default_state("number_input", el.number_input) is None  # no default: no state sent
    el.number_input.default = 3
    assert state_value(default_state("number_input", el.number_input)) == 3
    assert element_key("$$ID-abc-thr_a-b") == "thr_a-b" and element_key("$$ID-abc-None") is None


def test_the_load_benchmark_runs_a_room_of_protocol_clients(tmp_path):
    """``bench_workshop_load.py --client protocol`` at a tiny size: every session opens, every change is timed
    to the chart's new figure, and the server's CPU and memory readings are real."""
    import math
    import subprocess

    out = tmp_path / "load.json"
    cmd = [sys.executable, str(ROOT / "benchmarks" / "bench_workshop_load.py"), "--client", "protocol",
           "--sessions", "2", "--active", "2", "--changes", "4", "--settle", "0", "--json", str(out)]
    run = subprocess.run(cmd, capture_output=True, text=True, timeout=600, env=clean_env(), cwd=tmp_path)
    assert run.returncode == 0, run.stdout + run.stderr
    assert "| threshold change → updated chart (its new figure received) |" in run.stdout
    s = json.loads(out.read_text())
    assert s["settings"]["client"] == "protocol" and s["opened"] == 2 and s["failures"] == []
    assert s["latency_s"]["n"] == 4 and s["latency_s"]["failed"] == 0
    assert sorted(c["session"] for c in s["changes"]) == [0, 0, 1, 1]
    for c in s["changes"]:
        assert c["error"] == "" and 0 < c["seconds"] == c["delivered"] and c["new"] != c["old"]
    assert len({c["new"] for c in s["changes"]}) == 4 and all(math.isfinite(c["seconds"]) for c in s["changes"])
    assert 100 < s["memory_mb"]["before"] and s["cpu_s"]["active"]["server"] > 0
