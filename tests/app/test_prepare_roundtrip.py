"""An upload's preparation choices round-trip in the app: the Study page's export, the restore of a saved
session after a restart, and a share link opened by someone else all give back the same prepared table —
missing group values put in a group of their own included."""

from __future__ import annotations

import os
from pathlib import Path
from urllib.parse import parse_qs, urlparse

import pandas as pd
import pytest
from streamlit.testing.v1 import AppTest

from prdp_core.board import links
from prdp_core.board import sessions as S
from prdp_core.data.dataset import MISSING_GROUP
from prdp_core.study.config import parse_config

from .conftest import ROOT, open_page, texts

pytestmark = pytest.mark.usefixtures("one_browser")  # a restart reopens the session in the browser that saved it


def _csv(n: int = 60) -> bytes:
    """Sales by region, with the region of every fifth record left blank."""
    rows = "".join(f"{i},{(i * 37) % 1000 + 1},{'' if i % 5 == 0 else 'AB'[i % 2]}\n" for i in range(1, n + 1))
    return ("id,sales,region\n" + rows).encode()


def _upload_with_missing_groups() -> AppTest:
    at = open_page("data")
    at.file_uploader(key="upload").set_value(("shop.csv", _csv(), "text/csv")).run()
    rid = at.session_state["raw"]["id"]
    at.selectbox(key=f"map_id_{rid}").set_value("id")
    at.multiselect(key=f"map_measures_{rid}").set_value(["sales"])
    at.multiselect(key=f"map_groups_{rid}").set_value(["region"]).run()
    at.checkbox(key=f"fix_missgroup_{rid}").check().run()  # "Put them in a group of their own, '(missing)'"
    at.button(key=f"apply_{rid}").click().run()
    assert not at.exception, at.exception
    assert at.session_state["dataset"].table["region"].eq(MISSING_GROUP).sum() == 12
    at.switch_page("app_pages/policy_designer.py").run()
    at.number_input(key="thr_sales").set_value(250.0).run()
    assert not at.exception, at.exception
    return at


def test_missing_groups_survive_the_study_export():
    a = _upload_with_missing_groups()
    a.switch_page("app_pages/study.py").run()
    assert not a.exception, a.exception
    assert not a.error, [e.value for e in a.error]
    exported = next(c.value for c in a.code if c.language == "yaml")
    assert parse_config(exported).data.prepare == {"missing_groups": "label"}


def test_missing_groups_survive_the_restore_after_a_restart():
    a = _upload_with_missing_groups()
    again = AppTest.from_file(str(ROOT / "app.py"), default_timeout=120)  # the same address after a restart
    again.query_params[S.KEY_PARAM] = a.query_params[S.KEY_PARAM]
    again.run()
    assert not again.exception, again.exception
    assert "Restored your saved session: **shop.csv**" in texts(again), texts(again)
    pd.testing.assert_frame_equal(again.session_state["dataset"].table, a.session_state["dataset"].table,
                                  check_exact=True)
    assert again.session_state["thr_sales"] == 250.0


def test_missing_groups_survive_a_share_link():
    a = _upload_with_missing_groups()
    a.switch_page("app_pages/board.py").run()  # the share link, opened where the data folder holds the file
    (url,) = [c.value for c in a.code if "policy=" in c.value]
    folder = Path(os.environ["PRDP_WORKSHOP_DIR"]) / "data"
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "shop.csv").write_bytes(_csv())
    b = AppTest.from_file(str(ROOT / "app.py"), default_timeout=120)
    b.query_params[links.PARAM] = parse_qs(urlparse(url).query)[links.PARAM][0]
    b.run()
    assert not b.exception, b.exception
    assert "Loaded the design this link carries" in texts(b), texts(b)
    pd.testing.assert_frame_equal(b.session_state["dataset"].table, a.session_state["dataset"].table,
                                  check_exact=True)
    assert b.session_state["thr_sales"] == 250.0
