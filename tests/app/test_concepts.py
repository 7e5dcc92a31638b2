"""AppTest of the Concepts page: calculators, per-attribute explorer, histogram lab, limitations."""

from __future__ import annotations

import pytest

from prdp_core.core import interpret

from .conftest import open_page, texts, upload


@pytest.fixture(scope="module")
def page():
    return open_page("concepts")


def _run(at):
    at.run()
    assert not at.exception, at.exception
    return at


def test_renders_with_published_numbers(page):
    at = page
    t = texts(at)
    assert at.title[0].value == "Concepts"
    assert "73.1%" in t  # ε = 1
    assert "(13.79, 1e-6)-DP by CKS vs (14.69, 1e-6)" in t  # 2020 Census, both conversions
    assert "ρ(S) = **1.02**" in t and "(7.86, 1e-06)-DP" in t  # race and ethnicity only
    assert "delivers ε0 = 1.583 per attribute, not 1" in t  # the paper's printed calibration
    assert len(at.checkbox) == len(interpret.LIMITATIONS)
    assert len(at.get("plotly_chart")) >= 5
    code = at.code[0].value
    assert "interpret.zcdp_side_by_side(2.63, 1e-06)" in code and "granular.heavy_hitter_histogram" in code
    assert not at.error
    scope: dict = {}
    exec(compile(code, "reproduce.py", "exec"), scope)  # the shown code runs as is
    assert scope["hh"].extras["calibration"].method == "exact" and len(scope["std"].answers) > 0


def test_calculators_respond(page):
    at = page
    at.number_input(key="cc_eps").set_value(10.0)
    _run(at)
    metrics = {m.label: m.value for m in at.metric}
    assert metrics["Best guess of one yes/no fact"] == "99.9955%"
    assert metrics["Laplace count rounds back exactly"] == "99.33%"
    at.number_input(key="cc_rho").set_value(1.02)
    _run(at)
    metrics = {m.label: m.value for m in at.metric}
    assert metrics["ε by Canonne–Kamath–Steinke"] == "7.856"
    assert metrics["ε by the textbook bound"] == "8.528"
    at.radio(key="cc_rec_measure").set_value("eps")
    at.number_input(key="cc_rec_value").set_value(10.0)
    _run(at)
    t = texts(at)
    assert "at most e^10" in t and "99.9955%" in t and "ρ = ε²/2 = 50" in t


def test_explorer_whole_record_cost(page):
    at = page
    at.slider(key="pa_k").set_value(15)
    _run(at)
    at.slider(key="pa_d").set_value(10)  # k follows d down
    at.slider(key="pa_eps0").set_value(0.1)
    at.radio(key="pa_kind").set_value("pure")
    _run(at)
    assert at.session_state["pa_k"] == 10
    t = texts(at)
    assert "whole record** (10 attributes) costs at most **ε = 1**" in t
    at.radio(key="pa_kind").set_value("cdp")
    _run(at)
    t = texts(at)
    assert "ρ ≤ **0.5**" in t  # ½(d·ε0)²
    at.multiselect(key="pa_subset").set_value(["hhgq"])
    _run(at)
    assert "Changing **hhgq**: ρ(S) = **1.24**" in texts(at)


def test_histogram_lab_generated_and_ledger():
    at = open_page("concepts")
    at.slider(key="hl_d").set_value(32)
    at.number_input(key="hl_n").set_value(20_000)
    _run(at)
    assert "press **Run both histograms**" in texts(at)
    at.button(key="hl_run").click()
    _run(at)
    t = texts(at)
    assert "Seeded run (seed 0)" in t
    assert "**Heavy-hitter histogram**: ε0 = **0.825** per attribute" in t
    assert "Heavy cells (at least νn = 200 records)" in t
    assert len(at.session_state["ledger"]) == 2
    assert {e.mechanism for e in at.session_state["ledger"].entries} == {"granular.heavy_hitter_histogram",
                                                                          "granular.standard_histogram"}
    # a rerun without a click reuses the result and records nothing new
    _run(at)
    assert len(at.session_state["ledger"]) == 2
    # changing a parameter asks for a new run
    at.slider(key="hl_eps0").set_value(2.0)
    _run(at)
    assert "press **Run both histograms**" in texts(at)


def test_histogram_lab_runs_on_generated_records_are_charged_to_their_own_data_not_the_active_table():
    rows = "".join(f"{i},{(i * 37) % 1000 + 1},{'AB'[i % 2]}\n" for i in range(300))
    at = upload(open_page("data"), "shop.csv", ("id,sales,region\n" + rows).encode())
    at.switch_page("app_pages/concepts.py").run()
    at.slider(key="hl_d").set_value(16)
    at.number_input(key="hl_n").set_value(5_000)
    at.button(key="hl_run").click()
    _run(at)
    assert len(at.session_state["ledger"]) == 2
    fps = at.session_state["ledger_fps"]
    assert [fp["identity"] for fp in fps] == [{"generated": "histogram lab", "n": 5000, "d": 16, "patterns": 20,
                                               "heavy_share": 0.5, "seed": 0}] * 2
    assert "generated records of the histogram lab" in fps[0]["name"]
    at.switch_page("app_pages/run.py").run()
    t = texts(at)
    assert ("2 release(s) of this session ran on other data and are not in the totals below: generated records "
            "of the histogram lab (n = 5,000, d = 16, seed 0).") in t
    assert "most exposed record" not in t  # nothing is charged to shop.csv
    at.button(key="run_go").click().run()
    one = at.session_state["ledger"].entries[-1].loss(at.session_state["dataset"].table)
    assert f"the most exposed record has lost **ρ = {one.max():.4g}**" in texts(at)  # the release on shop.csv only
    # the lab on the active table's records is charged to that table
    at.switch_page("app_pages/concepts.py").run()
    at.radio(key="hl_source").set_value("dataset")
    _run(at)
    at.multiselect(key="hl_columns").set_value(["sales"])
    at.button(key="hl_run").click()
    _run(at)
    at.switch_page("app_pages/run.py").run()
    assert "Totals on this table** over its 3 release(s)" in texts(at)


def test_histogram_lab_on_active_dataset_teaching_and_review():
    at = open_page("concepts")
    at.radio(key="hl_source").set_value("dataset")
    _run(at)
    assert at.multiselect(key="hl_columns").value == ["STATE", "NAICS2", "EMP"]
    at.button(key="hl_run").click()
    _run(at)
    t = texts(at)
    assert "Confidential" in t and "Heavy cells" in t
    assert "STATE: 51 declared public categories + (other)" in t  # the sample's documented domain
    assert "read from the data" not in t and "Teaching only" not in t
    assert {e.label for e in at.session_state["ledger"].entries if "TEACHING ONLY" in e.label} == set()
    # review mode hides truth (set through the sidebar radio's key, for this run)
    at.session_state["mode"] = "review"
    at.button(key="hl_run").click()
    _run(at)
    t = texts(at)
    assert "Heavy-hitter histogram" in t and "Heavy cells" not in t and "Confidential" not in t
    assert not any("true" in df.value.columns for df in at.dataframe if hasattr(df.value, "columns"))
    # no attribute picked: a message, not a crash
    at.multiselect(key="hl_columns").set_value([])
    at.button(key="hl_run").click()
    _run(at)
    assert "Pick at least one column" in at.error[0].value


def test_histogram_lab_needs_declared_categories():
    """A column without a documented domain is not read from the data unless the user says so (exploration)."""
    at = open_page("concepts")
    at.radio(key="hl_source").set_value("dataset")
    _run(at)
    at.multiselect(key="hl_columns").set_value(["COUNTY", "EMP"])
    _run(at)
    assert at.text_input(key="hl_dom_COUNTY") is not None  # the page asks for COUNTY's categories
    at.button(key="hl_run").click()
    _run(at)
    assert "Declare the public categories of 'COUNTY'" in at.error[0].value
    at.text_input(key="hl_dom_COUNTY").input("06001, 06003, 48201")
    _run(at)
    at.button(key="hl_run").click()
    _run(at)
    t = texts(at)
    assert "COUNTY: 3 declared public categories + (other)" in t and "Heavy-hitter histogram" in t
    code = at.code[0].value
    assert "'COUNTY': '06001, 06003, 48201'" in code and "from_data" not in code
    scope: dict = {}
    exec(compile(code, "reproduce.py", "exec"), scope)  # the shown code runs as is, on the same domains
    assert scope["data"].domains[0] == ("06001", "06003", "48201", "(other)") and scope["data"].public_domains
    # exploration with categories read from the data: said on the page and in the ledger
    at.radio(key="hl_domains").set_value("data")
    _run(at)
    assert any("Exploration only" in w.value for w in at.warning)
    at.button(key="hl_run").click()
    _run(at)
    t = texts(at)
    assert "categories read from the data — teaching only" in t
    assert any("Teaching only" in w.value for w in at.warning)
    assert sum("TEACHING ONLY" in e.label for e in at.session_state["ledger"].entries) == 2
    assert "from_data=True" in at.code[0].value
