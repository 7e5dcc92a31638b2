"""AppTest of the Data page: default sample, sample switching, uploads good and bad, schema edits."""

from __future__ import annotations

import io

import pandas as pd

from ui import data as udata

from .conftest import texts


def _upload(at, name: str, content: bytes):
    at.file_uploader(key="upload").set_value((name, content, "application/octet-stream"))
    at.run()
    assert not at.exception, at.exception
    return at


def test_default_sample_profiled(data_page):
    at = data_page
    assert at.session_state["dataset"].name == "cbp_like"
    t = texts(at)
    assert "100,000 records" in t
    assert "top 1% of records hold" in t
    assert len(at.get("plotly_chart")) == 2
    assert any("Confidential" in c.value for c in at.caption)


def test_load_other_sample(data_page):
    at = data_page
    at.selectbox(key="sample_name").set_value("sim_pareto")
    at.run()
    at.number_input(key="sample_n_sim_pareto").set_value(5000)
    at.button(key="load_sample").click()
    at.run()
    assert not at.exception
    ds = at.session_state["dataset"]
    assert ds.name == "sim_pareto" and ds.n == 5000
    assert "Loaded sim_pareto" in texts(at)


def test_upload_good_csv_becomes_active_once_its_roles_are_confirmed(data_page):
    at = _upload(data_page, "firms.csv", b"estab_id,firm,county,emp\nA,f1,X,1\nB,f1,Y,50\nC,f2,X,3\n")
    # even a clean file waits on the Column roles view with its guessed roles; the previous dataset stays active
    assert at.session_state["dataset"].name == "cbp_like"
    assert at.session_state["data_tab"] == udata.ROLES_TAB
    assert "firms.csv is not in use yet" in texts(at) and "roles below were guessed" in at.info[0].value
    rid = at.session_state["raw"]["id"]
    assert at.multiselect(key=f"map_measures_{rid}").value == ["emp"]
    at.button(key=f"apply_{rid}").click().run()
    ds = at.session_state["dataset"]
    assert ds.name == "firms.csv" and ds.n == 3 and ds.schema.measures == ("emp",)
    assert ds.schema.owner_col == "firm" and ds.schema.id_col == "estab_id"
    assert "Active dataset: firms.csv" in at.success[0].value and at.session_state["data_tab"] == udata.PROFILE_TAB
    assert "Profile of firms.csv" in texts(at)  # the profile of the same rerun shows the new data
    assert "not in use yet" not in texts(at)


def test_bad_uploads_keep_previous_dataset(data_page):
    at = data_page
    for name, content, fragment in [
        ("empty.csv", b"", "empty"),
        ("doc.pdf", b"%PDF-1.4 binary", "not supported"),
        ("bin.csv", b"\x00\x01\x02\x03", "binary"),
        ("ragged.csv", b"a,b\n1,2\n1,2,3,4\n", "same number of fields"),
        ("latin.csv", b"a,b\n\x81\x8d,1\n", "cannot be decoded"),
        ("words.csv", b"name,city\nann,paris\nbob,rome\n", "no numeric column"),
    ]:
        _upload(at, name, content)
        assert at.error, name
        assert fragment in at.error[0].value, (name, at.error[0].value)
        assert at.session_state["dataset"].name == "cbp_like"


def test_non_numeric_and_missing_values_offer_fixes(data_page):
    csv = b"id,emp,grp\n1,5,a\n2,unknown,b\n3,,a\n4,7,b\n"
    at = _upload(data_page, "messy.csv", csv)
    rid = at.session_state["raw"]["id"]
    at.multiselect(key=f"map_measures_{rid}").set_value(["emp"])
    at.multiselect(key=f"map_groups_{rid}").set_value(["grp"])
    at.run()
    t = texts(at)
    assert "not numbers" in t and "'unknown'" in t
    at.button(key=f"apply_{rid}").click()
    at.run()
    assert "not numbers" in at.error[0].value
    assert at.session_state["dataset"].name == "cbp_like"
    at.checkbox(key=f"fix_nonnum_{rid}").check()
    at.run()
    assert "2 row(s) have a missing" in texts(at)
    at.checkbox(key=f"fix_missing_{rid}").check()
    at.button(key=f"apply_{rid}").click()
    at.run()
    ds = at.session_state["dataset"]
    assert ds.name == "messy.csv" and ds.n == 2
    assert any("Dropped 2" in c.value for c in at.caption)


def test_negative_values_reject_or_add_the_public_constant_typed(data_page):
    at = _upload(data_page, "neg.csv", b"id,bal\n1,-5\n2,10\n3,20\n")
    rid = at.session_state["raw"]["id"]
    assert "Negative values" in texts(at)
    at.button(key=f"apply_{rid}").click()
    at.run()
    assert "negative" in at.error[0].value
    # the shift adds the public constant typed, nothing else: without one, nothing is applied
    at.radio(key=f"fix_neg_{rid}").set_value("shift")
    at.button(key=f"apply_{rid}").click()
    at.run()
    assert "No public constant is typed for 'bal'" in at.error[0].value
    assert at.session_state["dataset"].name == "cbp_like"
    assert at.number_input(key=f"fix_shift_{rid}_bal").value is None  # no default read off the smallest record
    assert "Smallest bal in this table: -5 (confidential)" in texts(at)
    at.number_input(key=f"fix_shift_{rid}_bal").set_value(100.0)
    at.button(key=f"apply_{rid}").click()
    at.run()
    ds = at.session_state["dataset"]
    assert ds.table["bal"].tolist() == [95.0, 110.0, 120.0] and ds.shifts == {"bal": 100.0}
    assert "bal shifted by +100 (public constant)" in texts(at)  # the profile says what was added
    shown = next(d.value for d in at.dataframe if "shift" in d.value.columns)
    assert shown.loc["bal", "shift"] == 100.0 and shown.loc["bal", "min"] == 95.0
    # a constant too small to lift every value is refused with what to fix
    at = _upload(at, "neg2.csv", b"id,bal\n1,-502.3\n2,10\n3,20\n")
    rid = at.session_state["raw"]["id"]
    at.radio(key=f"fix_neg_{rid}").set_value("shift").run()
    at.number_input(key=f"fix_shift_{rid}_bal").set_value(500.0)
    at.button(key=f"apply_{rid}").click().run()
    assert "too small" in at.error[0].value and at.session_state["dataset"].name == "neg.csv"


def test_duplicate_ids_and_schema_edits(data_page):
    at = _upload(data_page, "dup.csv", b"acct_id,branch,bal\n1,x,5\n1,y,10\n2,x,20\n")
    rid = at.session_state["raw"]["id"]
    at.selectbox(key=f"map_id_{rid}").set_value("acct_id")
    at.run()
    assert "both record id and group" in at.error[0].value  # a column has one role
    at.multiselect(key=f"map_groups_{rid}").set_value(["branch"])
    at.run()
    assert "duplicate" in texts(at)
    # editing the schema: make the repeated id the owner and generate record ids
    at.selectbox(key=f"map_id_{rid}").set_value(None)
    at.selectbox(key=f"map_owner_{rid}").set_value("acct_id")
    at.multiselect(key=f"map_groups_{rid}").set_value(["branch"])
    at.run()
    at.button(key=f"apply_{rid}").click()
    at.run()
    ds = at.session_state["dataset"]
    assert ds.schema.owner_col == "acct_id" and ds.schema.id_col == "row_id"
    assert ds.schema.groups == ("branch",)


def test_schema_without_measure_is_explained(data_page):
    at = _upload(data_page, "t.csv", b"id,v\n1,2\n2,3\n")
    rid = at.session_state["raw"]["id"]
    at.multiselect(key=f"map_measures_{rid}").set_value([])
    at.run()
    assert "at least one measure" in at.error[0].value


def test_parquet_and_excel_uploads(data_page):
    df = pd.DataFrame({"id": [1, 2, 3], "emp": [1, 20, 300]})
    buf = io.BytesIO()
    df.to_parquet(buf)
    at = _upload(data_page, "t.parquet", buf.getvalue())
    assert at.session_state["raw"]["name"] == "t.parquet"
    buf = io.BytesIO()
    df.to_excel(buf, index=False)
    at = _upload(at, "t.xlsx", buf.getvalue())
    assert at.session_state["raw"]["name"] == "t.xlsx"
    assert not at.error


def test_reproduce_code_shown(data_page):
    code = [c.value for c in data_page.code]
    assert any("prdp_core.data.samples.load_dataset('cbp_like'" in c for c in code)


def test_upload_over_the_size_limit_keeps_previous_dataset(data_page, monkeypatch):
    """The loader checks the configured limit itself (here lowered to 1 MB)."""
    import prdp_core

    monkeypatch.setattr(prdp_core.core.limits, "MAX_UPLOAD_MB", 1)
    at = _upload(data_page, "big.csv", b"id,v\n" + b"1,2\n" * 300_000)
    assert "over the" in at.error[0].value and "limit" in at.error[0].value, at.error[0].value
    assert at.session_state["dataset"].name == "cbp_like"


def test_missing_group_values_get_a_decision_and_a_group_of_their_own(data_page):
    """Blank group values used to pass silently and make every grouped release fail later, with a hint
    pointing to a fix the Data page did not offer."""
    at = data_page
    rows = "".join(f"{i},{'' if i % 3 == 0 else 'k'},{i}\n" for i in range(60))
    _upload(at, "gaps.csv", ("id,g,x\n" + rows).encode())
    assert at.session_state["dataset"].name != "gaps.csv"  # not applied without a decision
    assert "Missing or blank values in the group column(s) g (20 rows)" in texts(at)
    rid = at.session_state["raw"]["id"]
    at.checkbox(key=f"fix_missgroup_{rid}").check()
    at.button(key=f"apply_{rid}").click()
    at.run()
    assert not at.exception
    ds = at.session_state["dataset"]
    assert ds.name == "gaps.csv" and (ds.table["g"] == "(missing)").sum() == 20
    at.switch_page("app_pages/run.py")
    at.run()
    at.button(key="run_go").click()
    at.run()
    assert not at.exception and not at.error
    assert at.session_state["run_release"] is not None


def test_hostile_uploads_show_the_limit_and_keep_the_previous_dataset(data_page):
    """Issue 15: a Parquet file with nested columns crashed the page (uncaught TypeError); a CSV with a
    huge cell loaded and crashed the browser when the Column roles tab rendered it."""
    from prdp_core.core import limits

    from .. import hostile_files

    at = _upload(data_page, "nested.parquet", hostile_files.parquet_nested())
    shown = at.error[0].value.replace("\\", "") if at.error else ""  # stored messages are Markdown-escaped
    assert "tags (list<" in shown and "blob (binary)" in shown
    assert at.session_state["dataset"].name == "cbp_like"
    long_cell = b"id,emp,note\n1,5," + b"x" * (limits.MAX_CELL_BYTES + 10) + b"\n2,6,y\n"
    at = _upload(at, "long.csv", long_cell)
    assert at.error and "cell size limit" in at.error[0].value, at.error[0].value
    assert at.session_state["dataset"].name == "cbp_like"
    assert "The active dataset is still" in texts(at)


def test_the_column_roles_preview_cuts_long_cells(data_page):
    from prdp_core.core import limits

    n = limits.MAX_PREVIEW_CHARS
    at = _upload(data_page, "notes.csv", ("id,emp,note\n1,5," + "w" * (n + 300) + "\n2,6,short\n").encode())
    shown = [d.value for d in at.dataframe if "note" in getattr(d.value, "columns", [])]
    assert shown, "the preview of the uploaded table is rendered"
    notes = list(shown[0]["note"])
    assert notes == ["w" * n + "…", "short"]
