"""The Data page's messages in review mode (issue 29): a message naming the active dataset, written in teaching
mode (*Use this table*, *Load sample*), holds no record count once the session has switched to review mode — the
count of the table is a true answer (COUNT(*)), hidden in review mode as the sidebar hides it."""

from __future__ import annotations

import numpy as np
import pandas as pd

from .conftest import texts

N = 6208


def _table() -> bytes:
    rng = np.random.default_rng(5)
    return pd.DataFrame({"estab_id": range(N), "firm": [i // 3 for i in range(N)],
                         "county": [f"C{i % 7}" for i in range(N)],
                         "emp": rng.integers(1, 90, N)}).to_csv(index=False).encode()


def _to_review(at):
    at.sidebar.radio(key="mode").set_value("review").run()
    assert at.session_state["mode"] == "review" and not at.exception, at.exception
    return texts(at)


def test_use_this_table_then_review_shows_no_record_count(data_page):
    at = data_page
    at.file_uploader(key="upload").set_value(("firms.csv", _table(), "text/csv"))
    at.run()
    rid = at.session_state["raw"]["id"]
    at.button(key=f"apply_{rid}").click().run()
    assert not at.exception, at.exception
    assert "Active dataset: firms.csv" in texts(at) and "6,208 records" in texts(at)  # teaching: the count
    shown = _to_review(at)
    assert "Active dataset: firms.csv" in shown  # the message is still there …
    assert "6,208" not in shown and "6208" not in shown, shown  # … without the count


def test_load_sample_then_review_shows_no_record_count(data_page):
    at = data_page
    at.selectbox(key="sample_name").set_value("sim_pareto").run()
    at.number_input(key="sample_n_sim_pareto").set_value(5432)
    at.button(key="load_sample").click().run()
    assert "Loaded sim_pareto" in texts(at) and "5,432 records" in texts(at)
    shown = _to_review(at)
    assert "Loaded sim_pareto" in shown and "5,432" not in shown, shown
