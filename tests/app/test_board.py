"""Board page (AppTest): submit, compare, load, withdraw, review mode, the facilitator, and
shareable links restoring a design in a new session."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest
from streamlit.testing.v1 import AppTest

import prdp_core
from prdp_core.board import links
from prdp_core.board import summary as S
from prdp_core.board.store import BoardStore
from prdp_core.study.config import parse_config

from .conftest import open_page, small_sample, texts

ROOT = Path(__file__).resolve().parents[2]
KEY = "facilitator passphrase"
SMALL = {"sample": "cbp_like", "n": 4000, "seed": 1}
#: The statistics of the records the board's compact table shows (the others are in each entry's details).
SHOWN_RECORD_COLUMNS = set(S.RECORD_COLUMNS) & set(S.COMPACT_COLUMNS)


@pytest.fixture(autouse=True)
def workshop(tmp_path, monkeypatch):
    """Each test has its own workshop folder (board database and data folder) and facilitator key."""
    monkeypatch.setenv("PRDP_WORKSHOP_DIR", str(tmp_path / "workshop"))
    monkeypatch.delenv("PRDP_BOARD_URL", raising=False)
    monkeypatch.delenv("PRDP_DATA_DIR", raising=False)
    monkeypatch.setenv("PRDP_FACILITATOR_KEY", KEY)
    (tmp_path / "workshop" / "data").mkdir(parents=True)
    return tmp_path / "workshop"


def _store(workshop: Path) -> BoardStore:
    return BoardStore(f"sqlite:///{workshop / 'board.sqlite'}", facilitator_key=KEY)


def _board(at: AppTest) -> AppTest:
    at.switch_page("app_pages/board.py").run()
    assert not at.exception, at.exception
    return at


def _designer() -> AppTest:
    """A session on a small sample with the Policy designer's default policy."""
    at = small_sample()
    at.switch_page("app_pages/policy_designer.py").run()
    assert not at.exception, at.exception
    return at


def _submit(at: AppTest, name: str, why: str = "", part: str | None = None) -> AppTest:
    _board(at)
    at.text_input(key="board_name").input(name)
    at.text_input(key="board_rationale").input(why)
    if part is not None:
        at.selectbox(key="board_part").set_value(part)
    at.button(key="board_submit").click().run()
    assert not at.exception, at.exception
    return at


def _frame(at: AppTest) -> pd.DataFrame:
    return next(d.value for d in at.dataframe)


def _other_entry(workshop: Path, name: str, thresholds: dict, token: str = "someone-else",
                 mode: str = "review") -> int:
    cfg = parse_config({"version": 1, "mode": mode, "seed": 0, "data": SMALL, "policy": {"thresholds": thresholds},
                        "workload": {"queries": [{"kind": "count", "group_by": ["STATE"], "rho": 0.5},
                                                 {"kind": "sum", "measure": "EMP", "group_by": ["STATE"],
                                                  "rho": 0.5}]},
                        "mechanisms": [{"kind": "unit_splitting"}]})
    ds = prdp_core.samples.load_dataset("cbp_like", n=4000, seed=1)
    summ = S.summarise(cfg, ds, teaching=True)
    e, _ = _store(workshop).submit(participant=token, name=name, config=cfg.to_dict(), summary=summ,
                                   kind=summ["kind"], dataset=cfg.data.describe())
    return e.id


def test_submit_and_see_the_policy_with_its_record_statistics(workshop):
    at = _submit(_designer(), "Mine", "small firms pay the base loss")
    assert "Submitted **#1 Mine** (unit splitting)" in at.success[0].value
    df = _frame(at)
    assert df["name"].tolist() == ["Mine"] and df["yours"].tolist() == [True]
    assert SHOWN_RECORD_COLUMNS <= set(df.columns) and set(df.columns) <= set(S.COMPACT_COLUMNS)  # fits the screen
    details = next(d.value for d in at.dataframe  # the rest of the row: under Details
                   if list(d.value.columns) == ["field", "value"]).set_index("field")
    assert details.loc["rationale", "value"] == "small firms pay the base loss"
    assert details.loc["error measure", "value"] == "closed form" and "P(r)" in details.loc["policy", "value"]
    (entry,) = _store(workshop).entries()
    assert entry.summary["records"]["p99"] > 0 and entry.config["policy"]["thresholds"]["EMP"] == 100
    at.button(key="board_submit").click().run()  # the same submission again
    assert "already on the board as **#1 Mine**" in at.info[0].value
    assert len(_store(workshop).entries()) == 1
    keys = {c.proto.id.split("-")[-1] for c in at.get("plotly_chart")}
    assert {"board_cdf", "board_tradeoff", "board_public_fn"} <= keys  # teaching mode: every chart


def test_names_are_shown_as_text_not_markdown(workshop):
    at = _submit(_designer(), "[click](http://evil.example) ![img](http://tracker.example/x.png)")
    shown = at.success[0].value
    assert "\\[click\\]" in shown and "\\!\\[img\\]" in shown


def test_review_mode_shows_no_statistic_of_the_records(workshop):
    at = _submit(_designer(), "Mine")
    _other_entry(workshop, "Theirs", {"EMP": 30, "PAYANN": 3000, "PAYQTR1": 800})
    at.session_state["mode"] = "review"  # the viewer's own session in review mode
    _board(at)
    df = _frame(at)
    assert df["name"].tolist() == ["Mine", "Theirs"] and not set(S.RECORD_COLUMNS) & set(df.columns)
    assert "Review mode (your session)" in texts(at)
    keys = {c.proto.id.split("-")[-1] for c in at.get("plotly_chart")}
    assert not any("board_cdf" in k or "board_tradeoff" in k for k in keys)
    at.session_state["mode"] = "teaching"
    _store(workshop).set_mode("review", key=KEY)  # the facilitator's setting wins over a teaching session
    _board(at)
    assert not set(S.RECORD_COLUMNS) & set(_frame(at).columns)
    assert "Review mode (the facilitator's setting)" in texts(at)


def test_withdraw_only_your_own_entries(workshop):
    at = _submit(_designer(), "Mine")
    other = _other_entry(workshop, "Theirs", {"EMP": 30, "PAYANN": 3000, "PAYQTR1": 800})
    _board(at)
    at.selectbox(key="board_pick").set_value(other)
    at.button(key="board_withdraw").click().run()
    assert "You can withdraw only your own entries" in at.error[0].value
    assert [e.name for e in _store(workshop).entries()] == ["Mine", "Theirs"]
    at.selectbox(key="board_pick").set_value(1)
    at.button(key="board_withdraw").click().run()
    assert "Entry #1 was withdrawn" in at.success[0].value
    assert [e.name for e in _store(workshop).entries()] == ["Theirs"]


def test_an_earlier_participant_code_restores_ownership(workshop):
    at = _submit(_designer(), "Mine")
    code = at.session_state["board_participant"]
    fresh = _board(_designer())  # a new session (a reconnect)
    assert _frame(fresh)["yours"].tolist() == [False]
    fresh.text_input(key="board_code_input").input(code)
    fresh.button(key="board_use_code").click().run()
    assert _frame(fresh)["yours"].tolist() == [True]
    fresh.text_input(key="board_code_input").input("no!")
    fresh.button(key="board_use_code").click().run()
    assert "not a participant code" in fresh.error[0].value


def test_load_another_participants_policy_keeps_the_other_pages(workshop):
    at = _designer()
    at.switch_page("app_pages/budget_functions.py").run()  # the session also has a budget function
    assert "bf_mode" in at.session_state
    other = _other_entry(workshop, "Theirs", {"EMP": 30, "PAYANN": 3000, "PAYQTR1": 800})
    _board(at)
    at.selectbox(key="board_pick").set_value(other)
    at.button(key="board_load").click().run()
    assert not at.exception, at.exception
    assert "Loaded **#1 Theirs** into your session" in at.success[0].value
    assert at.session_state["thr_EMP"] == 30 and at.session_state["policy"].thresholds.as_dict()["*"]["EMP"] == 30
    assert "bf_mode" in at.session_state  # the budget function was kept
    at.switch_page("app_pages/policy_designer.py").run()
    assert not at.exception and at.session_state["policy"].thresholds.as_dict()["*"]["PAYANN"] == 3000


def test_loading_a_teaching_entry_keeps_a_review_session_in_review(workshop):
    at = _designer()
    at.sidebar.radio(key="mode").set_value("review").run()
    other = _other_entry(workshop, "Theirs", {"EMP": 30, "PAYANN": 3000, "PAYQTR1": 800}, mode="teaching")
    assert _store(workshop).entries()[0].config["mode"] == "teaching"
    _board(at)
    at.selectbox(key="board_pick").set_value(other)
    at.button(key="board_load").click().run()
    assert not at.exception, at.exception
    assert at.session_state["thr_EMP"] == 30 and at.session_state["mode"] == "review"
    at.switch_page("app_pages/policy_designer.py").run()
    assert "Hidden in review mode" in texts(at)


def test_other_policy_kinds_can_be_submitted(workshop):
    at = _designer()
    at.switch_page("app_pages/budget_functions.py").run()
    at = _submit(at, "My budget", part="budget")
    assert not at.error, at.error[0].value
    at.switch_page("app_pages/analyst_tiers.py").run()
    at = _submit(at, "My tiers", part="tiers")
    assert not at.error, at.error[0].value
    kinds = [e.kind for e in _store(workshop).entries()]
    assert kinds == ["budget function", "analyst tiers"]
    df = _frame(at)
    assert set(df["kind"]) == {"budget function", "analyst tiers"}
    basis = df["error measure"].tolist()  # other queries answered: the later entry is not comparable
    assert basis[0].endswith("seeded runs") and basis[1].startswith("not comparable: measured on")
    assert "Not on this chart (no error measured like the others'): #2 My tiers" in texts(at)


def test_facilitator_pins_a_sample_and_participants_follow(workshop):
    at = _board(_designer())
    at.text_input(key="board_key_input").input("wrong")
    at.button(key="board_unlock").click().run()
    assert "not the facilitator key" in at.error[0].value
    at.text_input(key="board_key_input").input(KEY)
    at.button(key="board_unlock").click().run()
    assert "unlocked" in at.success[0].value
    at.radio(key="board_pin_kind").set_value("sample").run()
    at.selectbox(key="board_pin_sample").set_value("bank_normal_50k")
    at.number_input(key="board_pin_n").set_value(3000)
    at.button(key="board_pin").click().run()
    assert _store(workshop).settings()["dataset"] == {"sample": "bank_normal_50k", "n": 3000, "seed": 0}
    participant = _submit(_designer(), "Off the pin")  # another session, still on cbp_like
    assert "pinned the workshop dataset" in participant.error[0].value
    assert _store(workshop).entries() == []
    participant.button(key="board_use_pin").click().run()
    assert participant.session_state["dataset"].name == "bank_normal_50k"
    assert participant.session_state["dataset"].n == 3000


def test_facilitator_pins_a_data_folder_file_and_exports(workshop):
    df = prdp_core.data.samples.load("cbp_like", n=1500, seed=2)
    df.to_csv(workshop / "data" / "establishments.csv", index=False)
    fac = _board(_designer())
    fac.text_input(key="board_key_input").input(KEY)
    fac.button(key="board_unlock").click().run()
    fac.radio(key="board_pin_kind").set_value("file").run()
    assert fac.selectbox(key="board_pin_file").options == ["establishments.csv"]
    fac.button(key="board_pin").click().run()
    pin = _store(workshop).settings()["dataset"]
    assert pin["file"] == "establishments.csv" and "prepare" not in pin  # the guessed roles, no fix needed
    assert pin["schema"]["measures"] == ["EMP", "PAYANN", "PAYQTR1"] and pin["schema"]["owner"] == "FIRM_ID"

    p = _board(_designer())
    p.button(key="board_use_pin").click().run()
    ds = p.session_state["dataset"]
    assert ds.name == "establishments.csv" and ds.n == 1500 and p.session_state["dataset_source"]["shared"]
    p.switch_page("app_pages/policy_designer.py").run()
    p = _submit(p, "On the file")
    assert "Submitted **#1 On the file**" in p.success[0].value
    (entry,) = _store(workshop).entries()
    assert entry.config["data"]["path"] == "establishments.csv"

    fac.radio(key="board_set_mode").set_value("review")
    fac.button(key="board_save").click().run()
    _board(fac)
    fac.button(key="board_build_export").click().run()
    out = fac.session_state["board_export"]
    assert out["review"] and out["n"] == 1
    header = out["csv"].decode().splitlines()[0]
    assert "On the file" in out["csv"].decode() and not any(c in header for c in S.RECORD_COLUMNS)
    assert b"Review mode" in out["html"] and b"Loss distributions" not in out["html"]
    fac.checkbox(key="board_clear_confirm").check()
    fac.button(key="board_clear").click().run()
    assert _store(workshop).entries() == []


def _in_block(at: AppTest, key: str) -> list:
    """The elements inside the container with the key ``key``."""
    found = []

    def walk(node, inside: bool) -> None:
        here = inside or getattr(getattr(node, "proto", None), "id", "").endswith(key)
        for child in getattr(node, "children", {}).values():
            walk(child, here)
        if inside and not getattr(node, "children", None):
            found.append(node)

    walk(at._tree, False)
    return found


def test_facilitator_pins_a_data_folder_file_with_roles_and_a_public_shift(workshop):
    """A data-folder file with negative values: the facilitator picks its roles and types a public shift; without
    one the pin is refused with the reason right beside the Pin button; with it, every participant gets the same
    shifted table and submits on it."""
    df = prdp_core.data.samples.load("cbp_like", n=800, seed=3)
    df["PROFIT"] = df["PAYANN"] - 3 * df["PAYQTR1"]  # negative for many firms
    assert (df["PROFIT"] < 0).any()
    df.to_csv(workshop / "data" / "profits.csv", index=False)
    fac = _board(_designer())
    fac.text_input(key="board_key_input").input(KEY)
    fac.button(key="board_unlock").click().run()
    fac.radio(key="board_pin_kind").set_value("file").run()
    assert fac.selectbox(key="board_pin_file").value == "profits.csv"
    fac.multiselect(key="board_pin_measures_profits.csv").set_value(["EMP", "PROFIT"])
    fac.selectbox(key="board_pin_owner_profits.csv").set_value("FIRM_ID")
    fac.selectbox(key="board_pin_id_profits.csv").set_value(None).run()
    assert not fac.exception, fac.exception
    shift = fac.number_input(key="board_pin_shift_profits.csv_PROFIT")
    assert "negative" in shift.label
    fac.button(key="board_pin").click().run()
    beside = [e for e in _in_block(fac, "board_pin_box") if e.type == "alert" or "error" in str(type(e)).lower()]
    assert any("No public constant is typed for 'PROFIT'" in str(e.value).replace("\\", "") for e in beside), beside
    assert "shift" not in fac.session_state["board_msg"]["text"]  # not at the top of the page: beside the button
    assert _store(workshop).settings()["dataset"] is None
    low = float(df["PROFIT"].min())
    fac.number_input(key="board_pin_shift_profits.csv_PROFIT").set_value(-low + 10)
    fac.button(key="board_pin").click().run()
    assert not [e for e in _in_block(fac, "board_pin_box") if "No public constant" in str(getattr(e, "value", ""))]
    pin = _store(workshop).settings()["dataset"]
    assert pin == {"file": "profits.csv", "prepare": {"negative": "shift", "shift_by": {"PROFIT": -low + 10}},
                   "schema": {"id": None, "measures": ["EMP", "PROFIT"], "owner": "FIRM_ID",
                              "groups": pin["schema"]["groups"]}}
    assert "PROFIT shifted by" in fac.success[0].value

    p = _board(_designer())  # a participant follows the pin: the same shifted table
    p.button(key="board_use_pin").click().run()
    assert not p.exception, p.exception
    ds = p.session_state["dataset"]
    assert ds.name == "profits.csv" and ds.schema.measures == ("EMP", "PROFIT") and ds.schema.owner_col == "FIRM_ID"
    assert ds.shifts == {"PROFIT": -low + 10} and float(ds.table["PROFIT"].min()) == pytest.approx(10.0)
    assert "Workshop dataset" in texts(_board(p))  # the page says it is the pinned one
    p.switch_page("app_pages/policy_designer.py").run()
    p = _submit(p, "On the shifted file")
    assert "Submitted **#1 On the shifted file**" in p.success[0].value, p.error


def _reload(key: str, page: str = "board") -> AppTest:
    """The address of a durable session opened again (a reload, or a reconnect after a restart)."""
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=120)
    at.query_params["s"] = key
    at.run()
    assert not at.exception, at.exception
    at.switch_page(f"app_pages/{page}.py").run()
    assert not at.exception, at.exception
    return at


def _unlocked(at: AppTest) -> bool:
    keys = {b.key for b in at.button}
    assert ("board_lock" in keys) != ("board_unlock" in keys)
    return "board_lock" in keys


def test_the_facilitator_unlock_is_kept_for_a_reload_of_the_session_in_its_browser(workshop, one_browser):
    at = _board(open_page("data"))
    assert not _unlocked(at)
    at.text_input(key="board_key_input").input(KEY)
    at.button(key="board_unlock").click().run()
    assert _unlocked(at) and "a reload in this browser keeps them unlocked" in at.success[0].value
    key = at.query_params["s"]
    key = key[0] if isinstance(key, list) else key
    again = _reload(key)
    assert _unlocked(again)  # the reload: still the facilitator
    again.radio(key="board_set_mode").set_value("review")
    again.button(key="board_save").click().run()
    assert _store(workshop).settings()["mode"] == "review"  # and its actions work
    assert not _unlocked(_board(open_page("data")))  # another session of this browser is not unlocked
    mine = one_browser.cookie
    one_browser.cookie = "another-browser-secret-of-32-chars-x"
    assert not _unlocked(_reload(key))  # the address opened in another browser
    one_browser.cookie = mine
    again = _reload(key)
    again.button(key="board_lock").click().run()
    assert not _unlocked(again)
    assert not _unlocked(_reload(key))  # locked: also after a reload


def test_a_broken_board_database_gives_a_message(monkeypatch, tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("x")
    monkeypatch.setenv("PRDP_BOARD_URL", f"sqlite:///{blocker}/sub/board.sqlite")
    at = _board(open_page("data"))
    assert "Cannot create the folder" in at.error[0].value


# ---------------------------------------------------------------------------
# Links
# ---------------------------------------------------------------------------


def _open_link(text: str, page: str = "policy_designer") -> AppTest:
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=120)
    at.query_params["policy"] = text
    at.run()
    assert not at.exception, at.exception
    at.switch_page(f"app_pages/{page}.py").run()
    assert not at.exception, at.exception
    return at


def test_the_url_carries_the_design_and_a_new_session_restores_it():
    at = _designer()
    at.number_input(key="thr_EMP").set_value(42.0).run()
    text = at.query_params["policy"]
    text = text[0] if isinstance(text, list) else text
    design = links.decode(text)
    assert design.policy["thresholds"]["EMP"] == 42.0 and design.data.sample == "cbp_like" and design.data.n == 4000
    fresh = _open_link(text)
    assert fresh.session_state["dataset"].n == 4000
    assert fresh.session_state["policy"].thresholds.as_dict()["*"]["EMP"] == 42.0
    assert fresh.session_state["thr_EMP"] == 42.0
    assert fresh.session_state["mode"] == "teaching"  # a link never sets its reader's mode


def test_a_link_opened_in_a_review_session_keeps_review_mode():
    design = {"version": 1, "mode": "teaching", "seed": 0, "data": SMALL, "policy": {"thresholds": {"EMP": 42}},
              "workload": {"queries": [{"kind": "count", "group_by": ["STATE"], "rho": 0.5}]},
              "mechanisms": [{"kind": "unit_splitting"}]}
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=120)
    at.session_state["mode"] = "review"
    at.query_params["policy"] = links.encode(design)
    at.run()
    assert not at.exception, at.exception
    assert at.session_state["thr_EMP"] == 42 and at.session_state["mode"] == "review"


@pytest.mark.parametrize("text, message", [
    ("not*base64", "damaged"),
    (links.encode({"version": 1, "data": {"sample": "cbp_like"}, "policy": {"thresholds": {"EMP": -1}}}),
     "policy.thresholds.EMP"),
    (links.encode({"version": 1, "data": {"path": "their_private.csv"},
                   "policy": {"tiers": {"a": 1.0, "b": 2.0}}}), "this server does not have"),
])
def test_a_bad_link_says_why_and_keeps_the_default_session(text, message):
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=120)
    at.query_params["policy"] = text
    at.run()
    assert not at.exception, at.exception
    assert message in at.error[0].value.replace("\\", "") and "link's design was not loaded" in at.error[0].value
    assert at.session_state["dataset"].name == "cbp_like"


def test_the_table_on_screen_is_made_by_the_review_boundary_in_the_boards_mode(workshop, monkeypatch):
    """The Board page's table is the registered output ``board table (screen)``, made in the board's mode: a
    builder swapped for one that adds a column naming its mode is what the page shows."""
    import json
    from dataclasses import replace

    from prdp_core.review import review_boundary as B

    real = B.REGISTRY["board table (screen)"].build

    def build(entries, teaching, **context):
        doc = json.loads(real(entries, teaching, **context))
        doc["columns"].append("made in")
        for row in doc["data"]:
            row.append("teaching" if teaching else "review")
        return json.dumps(doc)

    monkeypatch.setitem(B.REGISTRY, "board table (screen)", replace(B.REGISTRY["board table (screen)"], build=build))
    at = _submit(_designer(), "Mine")
    df = _frame(at)
    assert df["made in"].tolist() == ["teaching"] and SHOWN_RECORD_COLUMNS <= set(df.columns)
    at.session_state["mode"] = "review"
    _board(at)
    df = _frame(at)
    assert df["made in"].tolist() == ["review"] and not set(S.RECORD_COLUMNS) & set(df.columns)
