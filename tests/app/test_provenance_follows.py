"""Where each threshold came from — typed, computed from the data, or a private suggestion charged to the ledger —
follows the value: through the sidebar, the study export and import, a share link and a restored session. A private
threshold is used as released (the value its ledger entry records), never silently rounded."""

from __future__ import annotations

import math

import yaml
from streamlit.testing.v1 import AppTest

from prdp_core.board import sessions as S

from .conftest import ROOT, open_page, texts, upload

# balances 1 … 500 and amounts 1 … 1,000: the page's default thresholds are their 99th percentiles, rounded
CSV = ("acct,balance,amount\n" + "".join(f"a{i},{i},{2 * i}\n" for i in range(1, 501))).encode()


def _sidebar(at: AppTest) -> str:
    return "\n".join(str(m.value) for m in at.sidebar.markdown)


def _designer() -> AppTest:
    at = open_page("data")
    upload(at, "accounts.csv", CSV)
    at.switch_page("app_pages/policy_designer.py")
    at.run()
    assert not at.exception, at.exception
    assert "computed from the data: T(amount), T(balance)" in _sidebar(at)  # the p99 defaults
    return at


def _adopt_private(at: AppTest) -> dict[str, float]:
    """Draw and adopt private thresholds (p97, ε = 0.1 over the default public range); returns the released
    values, as the ledger entry records them."""
    at.button(key="psugg_apply").click().run()
    assert not at.exception, at.exception
    entry = at.session_state["ledger"].entries[-1]
    return {q["column"]: q["value"] for q in entry.params["quantiles"]}


def _study_yaml(at: AppTest) -> str:
    at.switch_page("app_pages/study.py")
    at.run()
    assert not at.exception, at.exception
    return next(c.value for c in at.code if c.value.startswith("# PrDP Explorer study"))


def _load_study(text: str) -> AppTest:
    fresh = open_page("study")
    fresh.file_uploader(key="study_data_upload").set_value(("accounts.csv", CSV, "text/csv"))
    fresh.text_area(key="study_paste").set_value(text).run()
    fresh.button(key="study_load_paste").click().run()
    assert not fresh.exception, fresh.exception
    assert "Loaded the study" in texts(fresh), texts(fresh)
    return fresh


def _assert_private(at: AppTest, released: dict[str, float]) -> None:
    """The active policy uses the released values, labelled private (never "computed from the data")."""
    side = _sidebar(at)
    assert "computed from the data" not in side, side
    assert "private suggestion, charged to the ledger: T(amount) (DP p97" in side, side
    pol = at.session_state["policy"]
    assert pol.thresholds.as_dict()["*"] == released
    sources = pol.threshold_sources()
    assert set(sources) == set(released) and all(s.startswith("private: DP p97") for s in sources.values())


def test_adopted_private_thresholds_are_labelled_private_and_used_as_released():
    at = _designer()
    released = _adopt_private(at)
    assert any(v != round(v) for v in released.values())  # candidates of a log grid: not round numbers
    _assert_private(at, released)
    # the page says so under each editor, and the message names the values the policy holds
    assert "private suggestion, charged to the ledger (DP p97" in texts(at)
    assert "computed from the data" not in texts(at)
    msg = next(s.value for s in at.success if "Adopted private thresholds" in s.value)
    for m, v in released.items():
        assert at.number_input(key=f"thr_{m}").value == v
        assert f"T({m}) = {v:,.6g}" in msg.replace("\\", "")
    # the study config holds the released values and their source
    cfg = yaml.safe_load(_study_yaml(at))
    assert cfg["policy"]["thresholds"] == released
    assert all(s.startswith("private: DP p97") for s in cfg["policy"]["threshold_source"].values())


def test_private_thresholds_stay_private_after_a_study_import():
    at = _designer()
    released = _adopt_private(at)
    fresh = _load_study(_study_yaml(at))
    _assert_private(fresh, released)
    fresh.switch_page("app_pages/policy_designer.py")
    fresh.run()
    assert "computed from the data" not in texts(fresh)
    assert "private suggestion, charged to the ledger (DP p97" in texts(fresh)


def _link(at: AppTest) -> str:
    text = at.query_params["policy"]
    return text[0] if isinstance(text, list) else text


def _open_link(text: str, monkeypatch, tmp_path) -> AppTest:
    """A new session (another person) opening ``text``, on a server whose data folder has accounts.csv."""
    folder = tmp_path / "data"
    folder.mkdir()
    (folder / "accounts.csv").write_bytes(CSV)
    monkeypatch.setenv("PRDP_DATA_DIR", str(folder))
    b = AppTest.from_file(str(ROOT / "app.py"), default_timeout=120)
    b.query_params["policy"] = text
    b.run()
    assert not b.exception, b.exception
    assert "Loaded the design this link carries" in texts(b), texts(b)
    b.switch_page("app_pages/policy_designer.py").run()
    assert not b.exception, b.exception
    return b


def test_a_link_of_typed_thresholds_opens_them_as_typed(monkeypatch, tmp_path):
    a = _designer()
    a.number_input(key="thr_balance").set_value(100.0).run()
    a.number_input(key="thr_amount").set_value(6.0).run()
    assert a.session_state["policy"].threshold_sources() == {}
    b = _open_link(_link(a), monkeypatch, tmp_path)
    pol = b.session_state["policy"]
    assert pol.thresholds.as_dict()["*"] == {"balance": 100.0, "amount": 6.0}
    assert pol.threshold_sources() == {}
    assert "computed from the data" not in texts(b) and "Computed from the confidential data" not in texts(b)
    assert "computed from the data" not in _sidebar(b)


def test_a_link_carries_private_thresholds_as_private(monkeypatch, tmp_path):
    a = _designer()
    released = _adopt_private(a)
    b = _open_link(_link(a), monkeypatch, tmp_path)
    _assert_private(b, released)
    assert "private suggestion, charged to the ledger (DP p97" in texts(b)
    assert len(b.session_state["ledger"]) == 0  # the reader's own ledger: the suggestion was charged to A's


def _import_yaml(text: str) -> AppTest:
    """A fresh session loading a study config on the default sample (no file to upload)."""
    fresh = open_page("study")
    fresh.text_area(key="study_paste").set_value(text).run()
    fresh.button(key="study_load_paste").click().run()
    assert not fresh.exception, fresh.exception
    assert "Loaded the study" in texts(fresh), texts(fresh)
    return fresh


def _pdp_release(at: AppTest) -> dict:
    at.switch_page("app_pages/personalized.py")
    at.run()
    at.radio(key="pdp_view").set_value("Run a release").run()
    at.selectbox(key="pdp_rel_kind").set_value("sum").run()
    at.button(key="pdp_run").click().run()
    assert not at.exception, at.exception
    return dict(at.session_state["pdp_last_release"].params)


def test_a_private_upper_bound_stays_private_in_the_release_the_ledger_and_a_study_round_trip():
    at = open_page("personalized")
    col = at.session_state["pdp_value"]
    at.number_input(key=f"pdp_psugg_hi_{col}").set_value(1e7)
    at.button(key="pdp_psugg_apply").click().run()
    assert not at.exception, at.exception
    hi = at.session_state["pdp_hi"]
    assert hi == at.session_state["ledger"].entries[-1].params["quantiles"][0]["value"]  # used as released
    params = _pdp_release(at)
    assert params["hi_source"].startswith("private: DP p99") and "hi" not in " ".join(
        e for e in at.session_state["ledger"].summary()["data-derived parameters"] if e)
    assert at.session_state["ledger"].entries[-1].params["hi_source"] == params["hi_source"]
    assert "released by a private suggestion, charged to the ledger" in texts(at)
    cfg = yaml.safe_load(_study_yaml(at))
    pdp = next(m for m in cfg["mechanisms"] if m["kind"] == "personalized")
    assert pdp["param_source"] == {"hi": params["hi_source"]} and pdp["query"]["hi"] == hi
    fresh = _import_yaml(yaml.safe_dump(cfg, allow_unicode=True))
    assert fresh.session_state["pdp_hi"] == hi
    again = _pdp_release(fresh)
    assert again["hi_source"] == params["hi_source"]
    # a value typed over it is typed: no source
    fresh.number_input(key="pdp_hi").set_value(5000.0).run()
    fresh.button(key="pdp_run").click().run()
    assert "hi_source" not in fresh.session_state["pdp_last_release"].params


def test_a_private_clipping_bound_stays_private_in_the_release_and_a_study_round_trip():
    at = open_page("analyst_tiers")
    at.radio(key="mt_query").set_value("sum").run()
    col = at.session_state["mt_measure"]
    at.number_input(key=f"mt_psugg_hi_{col}").set_value(1e7)
    at.button(key="mt_psugg_apply").click().run()
    assert not at.exception, at.exception
    clip = at.session_state["mt_clip"]
    released = at.session_state["ledger"].entries[-1].params["quantiles"][0]["value"]
    assert clip == max(1, math.ceil(released))  # rounded up (integer noise), said beside the released value:
    assert f"{released:,.6g}" in texts(at) and "used as U = " in texts(at)
    at.button(key="mt_release_btn").click().run()
    assert not at.exception, at.exception
    src = at.session_state["mt_release"]["release"].params["clip_source"]
    assert src.startswith("private: DP p99") and at.session_state["ledger"].entries[-1].params["clip_source"] == src
    assert clip == released or f"(released {released:,.6g}, rounded up to {clip:,.0f})" in src
    cfg = yaml.safe_load(_study_yaml(at))
    mt = next(m for m in cfg["mechanisms"] if m["kind"] == "multitier")
    assert mt["param_source"] == {"clip": src} and mt["clip"] == clip
    fresh = _import_yaml(yaml.safe_dump(cfg, allow_unicode=True))
    fresh.switch_page("app_pages/analyst_tiers.py")
    fresh.run()
    fresh.button(key="mt_release_btn").click().run()
    assert not fresh.exception, fresh.exception
    assert fresh.session_state["mt_release"]["release"].params["clip_source"] == src


def test_private_thresholds_stay_private_when_the_session_is_restored(one_browser):
    at = _designer()
    released = _adopt_private(at)
    key = at.query_params[S.KEY_PARAM]
    again = AppTest.from_file(str(ROOT / "app.py"), default_timeout=120)  # a reconnect after a restart
    again.query_params[S.KEY_PARAM] = key
    again.run()
    assert not again.exception, again.exception
    again.switch_page("app_pages/policy_designer.py").run()
    assert not again.exception, again.exception
    assert again.session_state["dataset"].name == "accounts.csv"
    _assert_private(again, released)
    assert "private suggestion, charged to the ledger (DP p97" in texts(again)


def test_a_board_entry_of_private_thresholds_loads_as_private(monkeypatch, tmp_path):
    monkeypatch.setenv("PRDP_WORKSHOP_DIR", str(tmp_path / "workshop"))
    a = _designer()
    released = _adopt_private(a)
    a.switch_page("app_pages/board.py").run()
    a.text_input(key="board_name").input("Private")
    a.button(key="board_submit").click().run()
    assert not a.exception, a.exception
    assert "Submitted **#1 Private**" in a.success[0].value
    b = _designer()  # another participant, same table, its p99 defaults computed from the data
    b.switch_page("app_pages/board.py").run()
    b.selectbox(key="board_pick").set_value(1)
    b.button(key="board_load").click().run()
    assert not b.exception, b.exception
    assert "Loaded **#1 Private** into your session" in b.success[0].value
    b.switch_page("app_pages/policy_designer.py").run()
    _assert_private(b, released)
