"""Text alternatives of the charts (prdp_core.charts.alt_text) and legends that never overlap axis titles."""

from __future__ import annotations

import numpy as np
import pandas as pd
import plotly.graph_objects as go
import pytest

from prdp_core.charts import LEGEND, cdf_figure, layout, lorenz_figure
from prdp_core.charts.alt_text import MAX_ROWS, data_table, summary
from prdp_core.charts.board import board_cdf_figure
from prdp_core.charts.tradeoffs import answers_figure, box_from_quantiles, sweep_figure


def _cdf() -> go.Figure:
    return cdf_figure({"records": (np.array([0.1, 0.5, 2.0]), np.array([0.5, 0.9, 1.0])),
                       "owners": (np.array([0.2, 1.0, 3.0]), np.array([0.3, 0.6, 1.0]))},
                      title="Policy-loss CDF", x_label="loss ρ, log scale", log_x=True)


def test_summary_says_what_the_chart_shows_its_ranges_and_its_largest_value():
    s = summary(_cdf())
    assert s == ("Policy-loss CDF: 2 series (records, owners); loss ρ from 0.1 to 3; share of records (%) from 30 "
                 "to 100; largest share of records (%): 100 (records) at loss ρ = 2.")


def test_summary_of_categories_and_user_text_reads_as_the_chart_does():
    a = pd.DataFrame({"label": ["North", "South <b>", "East", "West"], "estimate": [10.0, 25.0, 5.0, 7.0],
                      "ci_low": [8.0, 20, 4, 6], "ci_high": [12.0, 30, 6, 8]})
    s = summary(answers_figure(a))
    assert s.startswith("Released answers with 95% intervals: released estimate; answer over 4 categories "
                        "(South <b>, North, West, …); value from 5 to 25")
    assert s.endswith("largest value: 25 at answer = South <b>.")


def test_summary_of_a_figure_without_data():
    assert summary(layout(go.Figure(), "Nothing yet", "x", "y")) == "Nothing yet: no data to show."


def test_data_table_lists_every_point_with_the_axes_as_columns():
    table, total = data_table(_cdf())
    assert total == 6
    assert list(table.columns) == ["series", "loss ρ", "share of records (%)"]
    assert table["series"].tolist() == ["records"] * 3 + ["owners"] * 3
    assert table["loss ρ"].tolist() == [0.1, 0.5, 2.0, 0.2, 1.0, 3.0]


def test_data_table_of_boxes_has_their_quantiles():
    stats = pd.DataFrame({"level": [1, 2], "scheme": ["a", "a"], "q05": [0.1, 0.2], "q25": [0.2, 0.3],
                          "median": [0.3, 0.4], "q75": [0.4, 0.5], "q95": [0.5, 0.6]})
    fig = box_from_quantiles(stats, x="level", color="scheme", title="ARE by level", x_label="level")
    table, _ = data_table(fig)
    assert table[["lowerfence", "q1", "median", "q3", "upperfence"]].iloc[1].tolist() == [0.2, 0.3, 0.4, 0.5, 0.6]
    assert "largest median ARE per answer: 0.4 at level = 2" in summary(fig)


def test_data_table_thins_a_long_trace_evenly_and_keeps_its_ends():
    x = np.arange(10 * MAX_ROWS, dtype=float)
    fig = lorenz_figure({"sales": (x / x[-1], (x / x[-1]) ** 2)})
    table, total = data_table(fig)
    assert total == 10 * MAX_ROWS + 2  # the equality line's two points
    assert len(table) <= MAX_ROWS + 2
    sales = table[table["series"] == "sales"]
    assert sales.iloc[0, 1] == 0.0 and sales.iloc[-1, 1] == 100.0


def _legends() -> dict[str, go.Figure]:
    series = {f"policy {i}": (np.array([1.0, 10.0]), np.array([0.5, 1.0])) for i in range(6)}
    stats = pd.DataFrame({"level": [1, 1], "scheme": ["a", "b"], "q05": [0.1, 0.2], "q25": [0.2, 0.3],
                          "median": [0.3, 0.4], "q75": [0.4, 0.5], "q95": [0.5, 0.6]})
    boxes = pd.DataFrame({"family": ["f"] * 2, "setting": ["s1", "s2"], "base_rho": [1.0, 1.0], "q05": [0.1, 0.2],
                          "q25": [0.2, 0.3], "median": [0.3, 0.4], "q75": [0.4, 0.5], "q95": [0.5, 0.6]})
    losses = pd.DataFrame({"setting": ["s1", "s2"], "base_rho": [1.0, 1.0], "share_above_base": [0.1, 0.2]})
    return {"board CDF": board_cdf_figure(series, unit="ρ (zCDP)"),
            "trade-offs top-coding": box_from_quantiles(stats, x="level", color="scheme", title="t", x_label="level"),
            "trade-offs sweep": sweep_figure(boxes, losses, "f"),
            "any chart": layout(go.Figure(go.Scatter(x=[1, 2], y=[1, 2])), "t", "x", "y")}


@pytest.mark.parametrize("name", list(_legends()))
def test_legends_sit_below_the_axis_title_in_the_figures_margin(name):
    """A legend anchored to the bottom of the figure (container coordinates) is a margin Plotly reserves under
    the x-axis title; one at a fixed place under the plot area (paper coordinates, y < 0) is drawn over the title
    when the tick labels and the title need more room than it leaves."""
    leg = _legends()[name].layout.legend
    assert (leg.orientation, leg.yref, leg.y, leg.yanchor, leg.x, leg.xanchor) == \
        ("h", "container", 0.0, "bottom", 0.0, "left"), name
    assert LEGEND["yref"] == "container"
