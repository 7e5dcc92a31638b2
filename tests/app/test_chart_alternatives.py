"""Every chart of every page comes with its text alternatives (ui.figures.show): a one-sentence summary that
names it, under it, and its data as a table on request, all in the chart's box (which the page's script uses to
name the chart for screen readers). The pages are read from app.py's navigation, so a page added later is
checked too."""

from __future__ import annotations

import html
import json
import re

import pytest
from streamlit.testing.v1.element_tree import Block, Element, Expander, Markdown

from ui.figures import CHART_BOX, TABLE_OPEN

from .conftest import ROOT, open_page, visible

PAGES = re.findall(r'st\.Page\("app_pages/(\w+)\.py"', (ROOT / "app.py").read_text())


def _chart_boxes(node) -> list[Block]:
    """The blocks of the page's element tree that hold a chart (a Plotly element among their children)."""
    found = []
    for child in getattr(node, "children", {}).values():
        if isinstance(child, Block):
            kids = list(child.children.values())
            if any(getattr(k, "type", "") == "plotly_chart" for k in kids):
                found.append(child)
            found += _chart_boxes(child)
    return found


@pytest.mark.parametrize("page", PAGES)
def test_each_chart_has_a_summary_and_a_table(page):
    at = open_page(page)
    charts = at.get("plotly_chart")
    boxes = _chart_boxes(at._tree)
    assert len(boxes) == len(charts)
    for box in boxes:
        kids = list(box.children.values())
        chart = next(k for k in kids if isinstance(k, Element) and k.type == "plotly_chart")
        where = f"{page}: chart {chart.proto.id.rsplit('-', 1)[-1]!r}"
        assert box.proto.id.rsplit("-", 1)[-1].startswith(CHART_BOX), f"{where} is not shown with ui.figures.show"
        assert [type(k) for k in kids] == [type(chart), Markdown, Expander], where
        title = html.unescape(json.loads(chart.proto.spec)["layout"]["title"]["text"])
        summary = visible(kids[1].value)
        assert summary.startswith(title) and summary.endswith(".") and len(summary) > len(title) + 20, where
        assert kids[2].label == "Show data as a table", where
    if boxes:  # a table is built when its expander is opened
        key = list(boxes[0].children.values())[0].proto.id.rsplit("-", 1)[-1]
        at.session_state[f"{key}{TABLE_OPEN}"] = True
        at.run()
        box = next(b for b in _chart_boxes(at._tree) if b.proto.id.endswith(f"{CHART_BOX}{key}"))
        table = list(box.children.values())[2]
        assert len(table.get("dataframe")) == 1 and len(table.get("dataframe")[0].value) > 0, f"{page}: {key}"


def test_the_pages_are_the_navigation():
    assert len(PAGES) >= 10 and "policy_designer" in PAGES
