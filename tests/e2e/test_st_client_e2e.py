"""The load benchmark's Streamlit-protocol client (benchmarks/st_client.py) against a real browser on one
workshop server: a chromium page and a protocol client each open the Policy designer on the default sample
and change the first threshold to the same value. The rerun the client sends must carry the same widgets
with the same values as the browser's (decoded from the browser's websocket frames), and the policy-loss
CDF figure the client receives must be the one the browser receives — so that ``bench_workshop_load.py
--client protocol`` loads the server as the browsers do."""

from __future__ import annotations

import asyncio
import json
import sys
from concurrent.futures import ThreadPoolExecutor

import pytest
from streamlit.proto.BackMsg_pb2 import BackMsg
from streamlit.proto.ForwardMsg_pb2 import ForwardMsg

from .conftest import FINGERPRINT_JS, ROOT, change_first_threshold, new_page, wait_idle

sys.path.insert(0, str(ROOT / "benchmarks"))
from st_client import StreamlitClient, element_key, plotly_data, state_value  # noqa: E402

pytestmark = [pytest.mark.e2e, pytest.mark.xdist_group("e2e")]

CDF = ".st-key-cdf_records .js-plotly-plot"


def _browser_change(browser, url: str) -> tuple[float, dict, str]:
    """Change the first threshold (to twice its value) in chromium; the widgets of the rerun it sent
    (key → value) and the CDF figure's data it received."""
    page = new_page(browser)
    frames: list[tuple[str, bytes]] = []
    page.on("websocket", lambda ws: (ws.on("framesent", lambda p: frames.append(("sent", p))),
                                     ws.on("framereceived", lambda p: frames.append(("received", p)))))
    try:
        page.goto(url)
        page.get_by_role("heading", name="Data", exact=True).wait_for()
        wait_idle(page)
        page.locator('[data-testid="stSidebarNav"] a').filter(has_text="Policy designer").first.click()
        page.locator(CDF).wait_for()
        wait_idle(page)
        mark = len(frames)
        _old, new, _seconds = change_first_threshold(page, FINGERPRINT_JS % CDF, lambda t: 2 * t)
        wait_idle(page)
    finally:
        page.context.close()
    sent, charts = [], []
    for direction, payload in frames[mark:]:
        if direction == "sent":
            m = BackMsg()
            m.ParseFromString(payload)
            if m.WhichOneof("type") == "rerun_script":
                sent.append(m.rerun_script)
        else:
            f = ForwardMsg()
            f.ParseFromString(payload)
            el = f.delta.new_element
            if f.WhichOneof("type") == "delta" and el.WhichOneof("type") == "plotly_chart" \
                    and element_key(el.plotly_chart.id) == "cdf_records":
                charts.append(plotly_data(el.plotly_chart))
    assert len(sent) == 1 and charts, "the browser sent one rerun and received the chart's new figure"
    widgets = {element_key(w.id): state_value(w) for w in sent[0].widget_states.widgets}
    return new, widgets, charts[-1]


async def _client_change(url: str, value: float) -> tuple[dict, str, list[str]]:
    async with StreamlitClient(url, timeout=120) as c:
        await c.wait_idle()
        await c.open_page("Policy designer")
        _, box = c.find("number_input", lambda e: e.label.startswith("T("))
        before = plotly_data(c.keyed("plotly_chart", "cdf_records"))
        await c.set_number(box.id, value)
        widgets = {element_key(k): state_value(w) for k, w in c.widgets.items()}  # what the rerun sent
        await c.wait_for(lambda: plotly_data(c.keyed("plotly_chart", "cdf_records")) != before, "the new chart")
        await c.wait_idle()
        return widgets, plotly_data(c.keyed("plotly_chart", "cdf_records")), c.errors


def test_the_protocol_client_sends_and_receives_what_the_browser_does(browser, workshop_url):
    new, browser_widgets, browser_chart = _browser_change(browser, workshop_url)
    with ThreadPoolExecutor(1) as pool:  # its own event loop, beside Playwright's
        client_widgets, client_chart, errors = pool.submit(asyncio.run, _client_change(workshop_url, new)).result()
    assert errors == []
    assert browser_widgets["thr_EMP"] == client_widgets["thr_EMP"] == new
    assert client_widgets == browser_widgets  # every widget of the page, with the browser's values
    assert json.loads(client_chart) and client_chart == browser_chart  # the same updated curve
