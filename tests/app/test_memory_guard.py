"""AppTest of the memory guard: a refused heavy step shows a message and keeps the session's dataset and
ledger; every download button downloads without rerunning; an ended session's memory is released."""

from __future__ import annotations

import pytest

from prdp_core.data import memory

from .conftest import open_page, texts


@pytest.fixture(autouse=True)
def _no_limits_from_the_environment(monkeypatch):
    monkeypatch.delenv(memory.SESSION_ENV, raising=False)
    monkeypatch.delenv(memory.SERVER_ENV, raising=False)


def _release(at):
    at.button(key="run_go").click().run()
    assert not at.exception, at.exception
    return at


def test_a_release_refused_when_the_server_is_short_keeps_dataset_release_and_ledger(monkeypatch):
    at = _release(open_page("run"))
    ds, rel = at.session_state["dataset"], at.session_state["run_release"]
    assert len(at.session_state["ledger"]) == 1
    monkeypatch.setenv(memory.SERVER_ENV, "1")  # the server's resident memory is surely above 1 MB
    at.button(key="run_go").click().run()
    assert not at.exception, at.exception
    err = at.session_state["run_error"]
    assert type(err).__name__ == "ResourceLimitError"
    shown = " ".join(e.value for e in at.error)
    assert "server is short of memory" in shown and memory.SERVER_ENV in shown and "Nothing was changed" in shown
    assert at.session_state["dataset"] is ds and at.session_state["run_release"] is rel
    assert len(at.session_state["ledger"]) == 1
    assert "Released answers" in texts(at)  # the earlier release is still on the page
    monkeypatch.delenv(memory.SERVER_ENV)
    at = _release(at)  # once memory is back, the same button works
    assert at.session_state.get("run_error") is None and len(at.session_state["ledger"]) == 2


def test_an_upload_over_the_session_budget_is_refused_and_the_dataset_stays(monkeypatch):
    at = _release(open_page("run"))
    at.switch_page("app_pages/data.py").run()
    before = at.session_state["dataset"]
    monkeypatch.setenv(memory.SESSION_ENV, "0.1")
    csv = "estab_id,county,emp\n" + "".join(f"E{i},C{i % 7},{1 + i % 50}\n" for i in range(20_000))
    at.file_uploader(key="upload").set_value(("firms.csv", csv.encode(), "text/csv"))
    at.run()
    assert not at.exception, at.exception
    shown = " ".join(e.value for e in at.error)
    assert "per-session memory budget" in shown and memory.SESSION_ENV in shown
    assert at.session_state["dataset"] is before and len(at.session_state["ledger"]) == 1
    assert f"still **{before.name}**" in texts(at)


def test_the_policy_designer_shows_a_refused_preview_instead_of_failing(monkeypatch):
    at = open_page("policy_designer")
    monkeypatch.setenv(memory.SERVER_ENV, "1")
    # a threshold no other test uses: its preview is not in the server's caches, so it is modelled and refused
    at.number_input(key="thr_EMP").set_value(123.456).run()
    assert not at.exception, at.exception
    assert "server is short of memory" in " ".join(e.value for e in at.error)
    assert "dataset" in at.session_state and "policy" in at.session_state


def test_every_download_button_downloads_without_rerunning():
    at = _release(open_page("run"))
    buttons = at.get("download_button")
    at.switch_page("app_pages/study.py").run()
    at.button(key="study_build").click().run()
    assert not at.exception, at.exception
    buttons += at.get("download_button")
    labels = {b.proto.label for b in buttons}
    assert {"Download answers (CSV)", "Report (HTML)", "Ledger (CSV)", "Download the study config (YAML)"} <= labels
    assert all(b.proto.ignore_rerun for b in buttons), [b.proto.label for b in buttons if not b.proto.ignore_rerun]


def test_the_app_calls_download_buttons_only_through_the_helper():
    """A new ``st.download_button`` in a page would rerun on click again (cancelled downloads under load)."""
    import re

    from .conftest import ROOT

    for path in [*ROOT.glob("app_pages/*.py"), *ROOT.glob("ui/*.py"), ROOT / "app.py"]:
        calls = re.findall(r"\.download_button\(", path.read_text())
        assert len(calls) == (1 if path.name == "common.py" else 0), path


def test_a_session_is_tracked_and_closed_after_the_reconnect_window(monkeypatch):
    """The release hook of the session marker waits out the reconnect window, closes the session through the
    runtime unless its browser came back, clears its state and trims the heap."""
    import streamlit as st
    from streamlit.runtime import Runtime

    from ui import memory as umem

    timers = []

    class FakeTimer:
        def __init__(self, delay, fn, args=()):
            timers.append((delay, fn, args))
            self.daemon = False

        def start(self):
            pass

    class FakeRuntime:
        active: set[str] = set()
        closed: list[str] = []

        def is_active_session(self, sid):
            return sid in self.active

        def clear_user_info_for_session(self, sid):
            self.closed.append(sid)

    class FakeState:
        def __init__(self):
            self.cleared = 0
            self._new_widget_state = type("W", (), {"widget_metadata": {"w": object()}})()

        def clear(self):
            self.cleared += 1

    rt = FakeRuntime()
    trimmed = []
    monkeypatch.setattr(umem.threading, "Timer", FakeTimer)
    monkeypatch.setattr(Runtime, "exists", classmethod(lambda cls: True))
    monkeypatch.setattr(Runtime, "instance", classmethod(lambda cls: rt))
    monkeypatch.setattr(umem.memory, "release_free_memory", lambda: trimmed.append(True) or True)

    # the browser came back within the window: nothing is closed
    back = umem._SessionHandle("s-back", FakeState())
    umem._on_disconnect(back)
    delay, fn, args = timers.pop()
    assert delay == pytest.approx(float(st.get_option("server.disconnectedSessionTTL")) - umem.CLOSE_MARGIN_S)
    rt.active.add("s-back")
    fn(*args)
    assert rt.closed == [] and not timers

    # it did not: the session is closed, then its state cleared and the heap trimmed
    state = FakeState()
    gone = umem._SessionHandle("s-gone", state)
    umem._on_disconnect(gone)
    _, fn, args = timers.pop()
    fn(*args)
    assert rt.closed == ["s-gone"]
    delay, release, _ = timers.pop()
    assert delay == umem.TRIM_DELAY_S
    release()
    assert state.cleared == 1 and state._new_widget_state.widget_metadata == {} and trimmed == [True]


def test_the_first_run_of_a_page_freezes_what_it_loaded_and_later_runs_do_not():
    """Streamlit's collection after every run examines only what sessions made since a page's first run on the
    server: the libraries loaded by then are frozen once (ui.memory.freeze_loaded), not at every run."""
    import gc

    from ui import memory as umemory

    gc.unfreeze()
    umemory._frozen_after.clear()
    at = open_page("policy_designer")
    frozen = gc.get_freeze_count()
    assert frozen > 50_000  # streamlit, plotly, pandas, pyarrow, prdp_core… and the sample: all frozen
    for value in (61.0, 62.0, 63.0):
        at.number_input(key="thr_EMP").set_value(value).run()
        assert not at.exception, at.exception
    assert gc.get_freeze_count() <= frozen  # a threshold change freezes nothing more
