"""The charts' lean template (prdp_core.charts.TEMPLATE): plotly_white without the defaults of trace types
and subplot kinds no chart uses. A chart must look the same as with plotly_white, so the template keeps every
default of what the charts draw, and every trace type the app's code builds is among those kept. The
policy-loss CDF's base-loss line, set directly rather than through Plotly's add_vline (a threshold change
builds two of these figures), is the line and label add_vline draws."""

from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np
import plotly.graph_objects as go
import plotly.io as pio
from plotly.basedatatypes import BaseTraceType

from prdp_core.charts import TEMPLATE, TRACE_TYPES, UNUSED_SUBPLOTS
from prdp_core.charts.policy import loss_cdf_figure

ROOT = Path(__file__).resolve().parents[2]


def test_the_lean_template_keeps_every_default_of_what_the_charts_draw():
    lean = pio.templates[TEMPLATE].to_plotly_json()
    full = pio.templates["plotly_white"].to_plotly_json()
    assert lean["data"] == {t: v for t, v in full["data"].items() if t in TRACE_TYPES}
    assert lean["layout"] == {k: v for k, v in full["layout"].items() if k not in UNUSED_SUBPLOTS}
    assert set(full["layout"]) - set(lean["layout"]) == set(UNUSED_SUBPLOTS)
    assert len(json.dumps(lean)) < 0.4 * len(json.dumps(full))


def test_every_trace_type_the_app_builds_keeps_its_template_defaults():
    sources = [*ROOT.joinpath("prdp_core").rglob("*.py"), *ROOT.joinpath("ui").glob("*.py"),
               *ROOT.joinpath("app_pages").glob("*.py"), ROOT / "app.py"]
    built = {name for f in sources for name in re.findall(r"\bgo\.([A-Z]\w*)\(", f.read_text(encoding="utf-8"))}
    traces = {getattr(go, name)().type for name in built if issubclass(getattr(go, name), BaseTraceType)}
    assert {"scatter", "bar"} <= traces and traces <= set(TRACE_TYPES)
    for f in sources:  # no chart is drawn on a polar, ternary, 3-D or map subplot
        text = f.read_text(encoding="utf-8")
        assert not re.search(r"\bgo\.(Scatter(polar|ternary|3d|geo|mapbox|map)|Barpolar)\b", text), f
        assert not re.search(r"\b(polar|ternary|scene|geo)\s*=\s*dict\(", text), f


def test_a_chart_drawn_with_the_lean_template_is_the_same_figure_with_less_to_send():
    series = {"current policy": (np.array([0.1, 0.4, 1.6]), np.array([0.9, 0.99, 1.0]))}
    fig = loss_cdf_figure(series, title="Policy-loss CDF over records", base=0.1)
    lean = json.loads(pio.to_json(fig, validate=False))
    fig.update_layout(template="plotly_white")
    full = json.loads(pio.to_json(fig, validate=False))
    assert lean["data"] == full["data"]
    lean_layout, full_layout = dict(lean["layout"]), dict(full["layout"])
    t_lean, t_full = lean_layout.pop("template"), full_layout.pop("template")
    assert lean_layout == full_layout
    assert t_lean["data"]["scatter"] == t_full["data"]["scatter"]
    assert t_lean["layout"]["xaxis"] == t_full["layout"]["xaxis"]
    assert len(json.dumps(lean)) < len(json.dumps(full)) - 4000


def test_the_base_loss_line_is_the_one_plotly_draws_for_a_vertical_line():
    series = {"current policy": (np.array([0.1, 0.4, 1.6]), np.array([0.9, 0.99, 1.0])),
              "policy 1": (np.array([0.1, 0.2]), np.array([0.5, 1.0]))}
    for view in ("cdf", "zoom", "tail"):
        fig = loss_cdf_figure(series, title="CDF", base=0.1, log_x=view != "cdf", view=view)
        ref = go.Figure(fig)
        ref.layout.shapes, ref.layout.annotations = (), ()
        ref.add_vline(x=0.1, line_dash="dot", line_color="#666666", annotation_text="base loss 0.1ρ",
                      annotation_position="bottom right")
        assert fig.to_plotly_json() == ref.to_plotly_json()
    assert not loss_cdf_figure(series, title="CDF", base=None).layout.shapes
