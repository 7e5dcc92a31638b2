"""Durable sessions in the app (AppTest): the session key in the URL, a new session with a known key
restores the table, the design and the ledger (whose totals equal the original's and keep adding up),
and every failure to restore is said on the page instead of showing an empty ledger as the session's."""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pytest
import sqlalchemy as sa
from streamlit.testing.v1 import AppTest

from prdp_core.board import sessions as S
from prdp_core.board.store import BoardStore

from .conftest import ROOT, open_page, texts, upload

pytestmark = pytest.mark.usefixtures("one_browser")  # every session of a test from one browser, unless it says


def _csv(n: int = 300) -> bytes:
    rows = "".join(f"{i},{(i * 37) % 1000 + 1},{'AB'[i % 2]}\n" for i in range(n))
    return ("id,sales,region\n" + rows).encode()


def _release(at: AppTest, times: int = 1) -> AppTest:
    at.switch_page("app_pages/run.py").run()
    for _ in range(times):
        at.button(key="run_go").click().run()
        assert not at.exception, at.exception
    return at


def _reopen(key: str, page: str = "run") -> AppTest:
    """A new session (a reconnect after a restart) opening the address with ``key``; the texts of the first page
    (where the restore says what it did) are kept in ``at.first_texts``."""
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=120)
    at.query_params[S.KEY_PARAM] = key
    at.run()
    assert not at.exception, at.exception
    at.first_texts = texts(at)
    if page != "data":
        at.switch_page(f"app_pages/{page}.py").run()
        assert not at.exception, at.exception
    return at


def _designed_session() -> AppTest:
    """An uploaded table, a typed threshold, two releases."""
    at = upload(open_page("data"), "shop.csv", _csv())
    at.switch_page("app_pages/policy_designer.py").run()
    at.number_input(key="thr_sales").set_value(250.0).run()
    assert not at.exception, at.exception
    return _release(at, 2)


def _largest_total(at: AppTest) -> float:
    led = at.session_state["ledger"]
    return float(led.total(at.session_state["dataset"].table).max())


def test_every_session_has_a_long_random_key_in_its_url():
    a, b = open_page("data"), open_page("data")
    ka, kb = a.query_params[S.KEY_PARAM], b.query_params[S.KEY_PARAM]
    assert ka != kb and S.valid_key(ka) and len(ka) >= 32  # ≥ 128 bits (token_urlsafe(24): 192)
    a.switch_page("app_pages/concepts.py").run()
    assert a.query_params[S.KEY_PARAM] == ka  # kept on every page


def test_a_new_session_with_the_key_restores_table_design_and_ledger_and_its_totals_keep_adding_up():
    first = _designed_session()
    key = first.query_params[S.KEY_PARAM]
    table = first.session_state["dataset"].table
    before = _largest_total(first)
    one = first.session_state["ledger"].entries[0].loss(table)

    again = _reopen(key)
    ds = again.session_state["dataset"]
    assert ds.name == "shop.csv" and ds.table.equals(table)  # the same table, read back from the store
    assert again.session_state["thr_sales"] == 250.0
    assert dict(again.session_state["policy"].thresholds.as_dict()["*"]) == {"sales": 250.0}
    assert len(again.session_state["ledger"]) == 2
    assert _largest_total(again) == pytest.approx(before) == pytest.approx(2 * one.max())
    assert "Restored your saved session: **shop.csv**, your design and your privacy ledger (2 earlier releases)" \
        in again.first_texts
    assert f"the most exposed record has lost **ρ = {before:.4g}**" in texts(again)

    again.button(key="run_go").click().run()  # a third release adds to the restored totals
    assert len(again.session_state["ledger"]) == 3
    assert _largest_total(again) == pytest.approx(3 * one.max())
    assert f"the most exposed record has lost **ρ = {3 * one.max():.4g}**" in texts(again)
    third = _reopen(key)
    assert len(third.session_state["ledger"]) == 3  # the third one was stored too


def test_an_unknown_key_says_so_and_starts_a_new_session():
    at = _reopen(S.new_key())
    t = texts(at)
    assert "This address names a session this server does not have" in at.first_texts
    assert "This ledger is new" in t  # on the ledger, not an empty ledger shown as the session's
    assert at.query_params[S.KEY_PARAM] != "" and len(at.session_state["ledger"]) == 0
    bad = _reopen("not-a-key")
    assert "session key is not one this app writes" in bad.first_texts
    assert S.valid_key(bad.query_params[S.KEY_PARAM])


def test_a_table_the_retention_rule_deleted_keeps_the_ledger_and_says_the_table_is_gone(tmp_path):
    first = _designed_session()
    key = first.query_params[S.KEY_PARAM]
    sha = first.session_state["dataset_source"]["upload"]
    uploads = Path(os.environ["PRDP_WORKSHOP_DIR"]) / "data" / "uploads"
    (uploads / sha).unlink()
    again = _reopen(key)
    first = again.first_texts
    assert "Restored your privacy ledger (2 earlier releases), but not your data and design" in first
    assert "the table 'shop.csv' is no longer on the server" in first and "Upload it again" in first
    assert len(again.session_state["ledger"]) == 2
    assert "2 release(s) of this session ran on other data" in texts(again)


def test_a_store_that_cannot_be_read_writes_nothing_under_the_key(monkeypatch, tmp_path):
    first = _designed_session()
    key = first.query_params[S.KEY_PARAM]
    good = f"sqlite:///{Path(os.environ['PRDP_WORKSHOP_DIR']) / 'board.sqlite'}"
    blocker = tmp_path / "blocker"
    blocker.write_text("x")
    monkeypatch.setenv("PRDP_BOARD_URL", f"sqlite:///{blocker}/sub/board.sqlite")
    broken = _reopen(key)
    t = texts(broken)
    assert "Your saved session could not be read" in broken.first_texts and "reload this address later" in \
        broken.first_texts
    assert "The earlier releases of this session are missing from the ledger below" in t
    assert broken.query_params[S.KEY_PARAM] == key and "This session is not (entirely) saved" in t
    _release(broken, 1)
    monkeypatch.setenv("PRDP_BOARD_URL", good)  # the store is back: the saved session is as it was
    back = _reopen(key)
    assert len(back.session_state["ledger"]) == 2 and back.session_state["dataset"].name == "shop.csv"


def test_a_ledger_changed_in_the_store_is_refused_on_restore_and_nothing_is_written_under_the_key():
    import json

    from prdp_core.board import ledgers as L

    first = _designed_session()
    key = first.query_params[S.KEY_PARAM]
    eng = BoardStore(f"sqlite:///{Path(os.environ['PRDP_WORKSHOP_DIR']) / 'board.sqlite'}").engine
    with eng.begin() as conn:  # the second release's sum query: ρ lowered to 10⁻⁶ in the store
        row = conn.execute(sa.select(L.ledger_entries).order_by(L.ledger_entries.c.id)).all()[1]
        d = json.loads(row.entry)
        for q in d["loss"]["workload"]["queries"]:
            q["rho"] = 1e-6
        conn.execute(L.ledger_entries.update().where(L.ledger_entries.c.id == row.id).values(entry=json.dumps(d)))
        n = conn.execute(sa.select(sa.func.count()).select_from(L.ledger_entries)).scalar()
    again = _reopen(key)
    assert "Your saved session's privacy ledger was changed on the server" in again.first_texts
    assert "entry #2 of 2" in again.first_texts and "Restore the database from a backup" in again.first_texts
    assert "The earlier releases of this session are missing from the ledger below" in texts(again)
    assert len(again.session_state["ledger"]) == 0  # the edited ledger is never used
    _release(again, 1)
    with eng.begin() as conn:  # nothing was appended under the key
        assert conn.execute(sa.select(sa.func.count()).select_from(L.ledger_entries)).scalar() == n


def test_a_store_that_cannot_be_opened_never_stops_the_app(monkeypatch, tmp_path):
    blocker = tmp_path / "blocker"
    blocker.write_text("x")
    monkeypatch.setenv("PRDP_BOARD_URL", f"sqlite:///{blocker}/sub/board.sqlite")
    at = _release(open_page("data"), 1)
    t = texts(at)
    assert "Sessions are not saved on this server" in t and len(at.session_state["ledger"]) == 1


def test_the_share_link_carries_the_design_but_never_the_session_key():
    at = open_page("policy_designer")
    at.switch_page("app_pages/board.py").run()
    assert not at.exception, at.exception
    (code,) = [c for c in at.code if "policy=" in c.value]
    assert f"{S.KEY_PARAM}=" not in code.value and at.query_params[S.KEY_PARAM] not in code.value
    assert "not the address bar" in texts(at)


def test_a_study_imported_with_its_data_file_is_kept_like_an_upload():
    at = open_page("study")
    at.session_state["study_paste"] = ("version: 1\nmode: teaching\ndata: {path: shop.csv, schema: {id: id, measures: "
                                       "[sales]}}\npolicy: {thresholds: {sales: 300}}\nworkload: {queries: [{kind: "
                                       "count, rho: 0.5}, {kind: sum, measure: sales, rho: 0.5}]}\n"
                                       "mechanisms: [{kind: unit_splitting}]\n")
    at.file_uploader(key="study_data_upload").set_value(("shop.csv", _csv(), "text/csv")).run()
    at.button(key="study_load_paste").click().run()
    assert not at.exception, at.exception
    src = at.session_state["dataset_source"]
    assert src["filename"] == "shop.csv" and len(src.get("upload", "")) == 64
    again = _reopen(at.query_params[S.KEY_PARAM], page="data")
    assert again.session_state["dataset"].name == "shop.csv" and again.session_state["thr_sales"] == 300.0


def test_review_mode_shows_public_totals_only():
    first = _designed_session()
    first.sidebar.radio(key="mode").set_value("review").run()
    t = texts(first)
    assert "Totals on this table** over its 2 release(s), public forms summed: base loss ρ = 2" in t
    assert "most exposed record" not in t and "Hidden in review mode:** the largest total loss of a record" in t


def test_a_review_session_is_restored_in_review_even_when_its_table_is_gone():
    first = _designed_session()
    first.sidebar.radio(key="mode").set_value("review").run()
    key = first.query_params[S.KEY_PARAM]
    assert _reopen(key).session_state["mode"] == "review"
    uploads = Path(os.environ["PRDP_WORKSHOP_DIR"]) / "data" / "uploads"
    (uploads / first.session_state["dataset_source"]["upload"]).unlink()
    again = _reopen(key)
    assert "but not your data and design" in again.first_texts
    assert again.session_state["mode"] == again.sidebar.radio(key="mode").value == "review"


def test_stored_rows_hold_no_session_key_and_the_uploaded_bytes_once():
    a = _designed_session()
    b = upload(open_page("data"), "same.csv", _csv())  # another session, the same bytes
    url = f"sqlite:///{Path(os.environ['PRDP_WORKSHOP_DIR']) / 'board.sqlite'}"
    eng = BoardStore(url).engine
    with eng.connect() as conn:
        rows = conn.execute(sa.text("SELECT * FROM sessions")).all()
        n_uploads = conn.execute(sa.text("SELECT COUNT(*) FROM uploads")).scalar()
    dump = repr(rows)
    for at in (a, b):
        assert at.query_params[S.KEY_PARAM] not in dump
    assert n_uploads == 1
    assert a.session_state["dataset_source"]["upload"] == b.session_state["dataset_source"]["upload"]
    assert np.isfinite(_largest_total(a))


def test_a_table_of_the_data_folder_is_restored_by_name_and_content_hash_not_copied():
    from prdp_core.board import links

    folder = Path(os.environ["PRDP_WORKSHOP_DIR"]) / "data"
    folder.mkdir(parents=True)
    (folder / "firms.csv").write_bytes(_csv(200))
    design = {"version": 1, "policy": {"thresholds": {"sales": 400}},
              "data": {"path": "firms.csv", "schema": {"id": "id", "measures": ["sales"], "groups": ["region"]}},
              "workload": {"queries": [{"kind": "count", "rho": 0.5}, {"kind": "sum", "measure": "sales", "rho": 0.5}]},
              "mechanisms": [{"kind": "unit_splitting"}]}
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=120)
    at.query_params[links.PARAM] = links.encode(design)
    at.run()
    assert not at.exception, at.exception
    src = at.session_state["dataset_source"]
    assert src["filename"] == "firms.csv" and src.get("shared") and "upload" not in src
    again = _reopen(at.query_params[S.KEY_PARAM], page="data")
    assert again.session_state["dataset_source"]["shared"] == src["shared"] and again.session_state["thr_sales"] == 400
    assert not (folder / "uploads").exists()  # the data folder's table is not copied: named by the session
    (folder / "firms.csv").write_bytes(_csv(210))  # the facilitator changed the file since
    changed = _reopen(at.query_params[S.KEY_PARAM], page="data")
    assert "changed since this session used it" in changed.first_texts
