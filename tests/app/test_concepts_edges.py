"""Concepts page at edge values: huge per-record losses, dataset switches after a histogram run."""

from __future__ import annotations

import prdp_core

from .conftest import open_page, texts


def test_huge_pure_per_record_loss_is_read_out():
    at = open_page("concepts")
    at.radio(key="cc_rec_measure").set_value("eps").run()
    at.number_input(key="cc_rec_value").set_value(1000.0).run()
    assert not at.exception, at.exception
    assert "e^1e+03 = about 10^434 times" in texts(at)


def test_histograms_of_a_previous_dataset_are_not_shown_after_a_switch():
    at = open_page("concepts")
    at.radio(key="hl_source").set_value("dataset").run()
    at.button(key="hl_run").click().run()
    assert not at.exception, at.exception
    entries = len(at.session_state["ledger"])
    assert "Heavy-hitter histogram" in texts(at)
    # another dataset with the same columns (the same sample, another size and seed)
    ds = prdp_core.data.samples.load_dataset("cbp_like", n=3000, seed=5)
    at.session_state["dataset"] = ds
    at.session_state["dataset_source"] = {"kind": "sample", "name": "cbp_like", "n": 3000, "seed": 5}
    at.session_state["dataset_token"] = "another-dataset"
    at.run()
    assert not at.exception, at.exception
    assert "Heavy-hitter histogram" not in texts(at)  # not re-run silently on the new records
    assert "press **Run both histograms**" in texts(at)
    at.button(key="hl_run").click().run()
    assert "Heavy-hitter histogram" in texts(at)
    assert len(at.session_state["ledger"]) == entries + 2  # the new run is in the ledger


def _lab_on_dataset(at):
    at.radio(key="hl_source").set_value("dataset").run()
    at.multiselect(key="hl_columns").set_value(["STATE", "COUNTY"]).run()
    at.radio(key="hl_domains").set_value("public").run()
    at.text_input(key="hl_dom_COUNTY").set_value("001, 003").run()
    assert not at.exception, at.exception


def test_declared_categories_survive_navigation():
    at = open_page("concepts")
    _lab_on_dataset(at)
    at.switch_page("app_pages/study.py")
    at.run()
    at.switch_page("app_pages/concepts.py")
    at.run()
    assert at.text_input(key="hl_dom_COUNTY").value == "001, 003"


def test_histogram_lab_settings_round_trip_through_a_study_config():
    at = open_page("concepts")
    _lab_on_dataset(at)
    at.radio(key="hl_domains").set_value("data").run()
    at.switch_page("app_pages/study.py")
    at.run()
    yaml_text = next(c.value for c in at.code if "version: 1" in c.value)
    fresh = open_page("study")
    fresh.text_area(key="study_paste").set_value(yaml_text).run()
    fresh.button(key="study_load_paste").click().run()
    assert not fresh.exception and not fresh.error, (fresh.exception, [e.value for e in fresh.error])
    fresh.switch_page("app_pages/concepts.py")
    fresh.run()
    assert fresh.radio(key="hl_domains").value == "data"
    assert fresh.session_state["hl_dom_COUNTY"] == "001, 003"
    fresh.radio(key="hl_domains").set_value("public").run()
    assert fresh.text_input(key="hl_dom_COUNTY").value == "001, 003"


def test_attribute_accountant_edits_survive_another_page():
    at = open_page("concepts")
    at.session_state["pa_releases"] = {"edited_rows": {0: {"rho": 1.5}}, "added_rows": [], "deleted_rows": []}
    at.run()
    total = texts(at).split("whole record**: ρ = **")[1][:5]
    assert total.startswith("3.83")  # 2.63 + (1.5 − 0.3)
    at.switch_page("app_pages/study.py")
    at.run()
    at.run()
    at.switch_page("app_pages/concepts.py")
    at.run()
    assert not at.exception, at.exception
    assert texts(at).split("whole record**: ρ = **")[1][:5] == total
    at.run()  # not applied twice
    assert texts(at).split("whole record**: ρ = **")[1][:5] == total
