"""AppTest of SAS, Stata and SPSS tables on the Data page: an upload, and a file of the server's data folder chosen on
the Large dataset tab (read whole by the loader: DuckDB cannot read these formats), give the dataset, the profile
and the group names (the value labels) of the same table's CSV."""

from __future__ import annotations

import hashlib

import pandas as pd
import pytest

from prdp_core.core import limits
from prdp_core.data.profile import profile_dataset
from ui import large_roles

from .. import hostile_files as H
from .conftest import open_page, texts, upload


@pytest.fixture(scope="module")
def tables() -> dict[str, bytes]:
    return H.stat_tables()


def _use(at):
    """Confirm the guessed roles of the table on the Column roles view, dropping the rows missing a measure."""
    rid = at.session_state["raw"]["id"]
    at.checkbox(key=f"fix_missing_{rid}").check().run()
    at.button(key=f"apply_{rid}").click().run()
    assert not at.exception, at.exception
    return at


def _upload(at, name: str, content: bytes):
    return _use(upload(at, name, content, "application/octet-stream", use=False))


def _same_table(ds, base) -> None:
    """``ds`` holds the records of ``base`` with the same roles, and profiles to the same numbers."""
    assert ds.schema == base.schema and ds.n == base.n
    pd.testing.assert_frame_equal(ds.table, base.table)
    pd.testing.assert_frame_equal(profile_dataset(ds).table(), profile_dataset(base).table())
    assert set(ds.table["region"]) == set(H.REGIONS.values())


def test_uploads_give_the_dataset_and_profile_of_the_csv(data_page, tables):
    at = _upload(data_page, "firms.csv", tables[".csv"])
    base = at.session_state["dataset"]
    assert base.name == "firms.csv" and base.schema.groups == ("region",) and base.n == 54
    for ext in (".dta", ".sav", ".xpt"):
        at = _upload(at, f"firms{ext}", tables[ext])
        ds = at.session_state["dataset"]
        assert ds.name == f"firms{ext}"
        _same_table(ds, base)
        assert f"Profile of firms{ext}" in texts(at)


def test_a_malformed_upload_is_refused_and_the_app_goes_on(data_page, tables):
    at = upload(data_page, "crash.sav", H.sav_crashing_reader(), "application/octet-stream", use=False)
    assert "The SPSS file could not be read" in texts(at)
    assert at.session_state["dataset"].name == "cbp_like"
    at = _upload(at, "firms.sav", tables[".sav"])  # the same server reads the next one
    assert at.session_state["dataset"].name == "firms.sav"


def test_a_data_folder_file_is_read_whole_from_the_large_dataset_tab(tables, tmp_path, monkeypatch):
    for ext in (".csv", ".dta"):
        (tmp_path / f"firms{ext}").write_bytes(tables[ext])
    monkeypatch.setenv("PRDP_DATA_DIR", str(tmp_path))
    at = _upload(open_page("data"), "firms.csv", tables[".csv"])
    base = at.session_state["dataset"]
    assert at.selectbox(key="large_file").options == ["firms.csv", "firms.dta"]
    at.selectbox(key="large_file").set_value("firms.dta").run()
    at.button(key="large_connect_go").click().run()
    assert not at.exception, at.exception
    raw = at.session_state["raw"]
    assert raw["pending"] and not raw.get("large") and raw["name"] == "firms.dta"
    assert raw["source"] == {"kind": "file", "filename": "firms.dta"}
    assert "DuckDB cannot read SAS, Stata or SPSS files in place" in at.info[0].value
    _use(at)
    _same_table(at.session_state["dataset"], base)
    # kept by the server as an upload is: a restored session reads it there
    assert at.session_state["dataset_source"]["upload"] == hashlib.sha256(tables[".dta"]).hexdigest()

    monkeypatch.setattr(limits, "MAX_ROWS", 10)  # over the upload limits: refused, with what to do instead
    at.button(key="large_connect_go").click().run()
    assert not at.exception, at.exception
    shown = texts(at)
    assert "60 rows, over the 10 row limit" in shown and large_roles.STAT_NOTE in shown


def test_a_session_on_a_data_folder_file_is_restored_from_the_servers_copy(tables, tmp_path, monkeypatch, one_browser):
    from prdp_core.board import sessions as S

    from .test_durable import _release, _reopen

    (tmp_path / "firms.sav").write_bytes(tables[".sav"])
    monkeypatch.setenv("PRDP_DATA_DIR", str(tmp_path))
    at = open_page("data")
    at.selectbox(key="large_file").set_value("firms.sav").run()
    at.button(key="large_connect_go").click().run()
    table = _use(at).session_state["dataset"].table  # its roles needed a fix: rows missing a measure dropped
    _release(at)
    (tmp_path / "firms.sav").unlink()  # the restore reads the server's copy, not the data folder
    again = _reopen(at.query_params[S.KEY_PARAM])
    ds = again.session_state["dataset"]
    assert ds.name == "firms.sav" and ds.table.equals(table) and len(again.session_state["ledger"]) == 1
