"""The step curves sent to the browser: fewer points, the same drawing (prdp_core.charts.steps)."""

from __future__ import annotations

import numpy as np
import pytest

from prdp_core.charts.policy import loss_cdf_figure, public_function_figure
from prdp_core.charts.steps import COLUMNS, ROWS, step_corners, thin_steps


def drawn(x: np.ndarray, y: np.ndarray, at: np.ndarray) -> np.ndarray:
    """The value a curve drawn with line_shape="hv" shows at ``at`` (the last point at or left of it)."""
    return np.asarray(y)[np.searchsorted(np.asarray(x), at, side="right") - 1]


def test_step_corners_draw_the_same_curve():
    rng = np.random.default_rng(1)
    grid = np.unique(rng.uniform(1, 1e4, 5000))
    values = np.ceil(grid / 37.0) ** 2  # a step function of the grid, as P(r) of one measure
    x, y = step_corners(grid, values)
    assert x.size == np.unique(values).size + 1  # one point per step, and the last point
    assert (x[0], y[0], x[-1], y[-1]) == (grid[0], values[0], grid[-1], values[-1])
    probe = np.concatenate((grid, rng.uniform(grid[0], grid[-1], 20000)))
    assert np.array_equal(drawn(x, y, probe), drawn(grid, values, probe))


def test_step_corners_keep_a_curve_without_repeats():
    grid = np.linspace(1, 2, 50)
    assert step_corners(grid, grid**2)[0].size == 50
    assert step_corners(np.array([1.0, 2.0]), np.array([3.0, 3.0]))[0].size == 2


@pytest.mark.parametrize("log_x", [True, False])
def test_thin_steps_moves_the_curve_by_less_than_a_cell(log_x):
    rng = np.random.default_rng(2)
    losses = np.sort(rng.lognormal(0, 2, 200_000))  # a distinct loss per record: a CDF of 200,000 steps
    share = np.arange(1, losses.size + 1) / losses.size
    x, y = thin_steps(losses, share, log_x=log_x)
    assert x.size <= COLUMNS + ROWS + 2
    assert (x[0], y[0], x[-1], y[-1]) == (losses[0], share[0], losses[-1], share[-1])  # the largest loss stays
    # at every original point the drawn value differs by less than one row of the screen grid
    assert np.max(np.abs(drawn(x, y, losses) - share)) < 1.0 / (ROWS - 1)


def test_thin_steps_leaves_a_small_curve_alone():
    x = np.arange(1.0, 101.0)
    tx, ty = thin_steps(x, x / 100)
    assert np.array_equal(tx, x) and np.array_equal(ty, x / 100)


@pytest.mark.parametrize("view", ["cdf", "zoom", "tail"])
def test_loss_cdf_figure_sends_at_most_a_screen_of_points(view):
    losses = np.sort(np.random.default_rng(3).lognormal(0, 1, 50_000))
    share = np.arange(1, losses.size + 1) / losses.size
    fig = loss_cdf_figure({"a": (losses, share)}, title="t", base=1.0, view=view)
    tr = fig.data[0]
    assert len(tr.x) <= COLUMNS + ROWS + 2 and float(max(tr.x)) == pytest.approx(losses[-2 if view == "tail" else -1])


def test_public_function_figure_sends_only_the_steps():
    grid = np.logspace(0, 4, 3000)
    fig = public_function_figure(grid, {"every record": np.ceil(grid / 100.0) ** 2}, measure="EMP")
    tr = fig.data[0]
    assert len(tr.x) == np.unique(np.ceil(grid / 100.0)).size + 1
    assert np.array_equal(drawn(np.asarray(tr.x), np.asarray(tr.y), grid), np.ceil(grid / 100.0) ** 2)


def test_figure_digest_follows_the_content():
    from ui.figures import digest

    a = np.arange(5.0)
    assert digest({"x": (a, a)}, "t") == digest({"x": (a.copy(), a.copy())}, "t")
    assert digest({"x": (a, a)}, "t") != digest({"x": (a, a + 1e-12)}, "t")
    assert digest({"x": (a, a)}, "t") != digest({"y": (a, a)}, "t")
    assert digest(a) != digest(a.astype(np.float32)) and digest([1, 2]) != digest([12])
