"""AppTest of the one memory and size guard of every route into a table (prdp_core.data.memory.guard_table): a share
link, a study import, the board's *Load this policy* and *Use the workshop dataset*, a session restore and the
Data page ask it before a sample is generated or a file read; a refusal leaves the session as it was; a large
sample is the session's own, never cached for the whole server."""

from __future__ import annotations

from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

import prdp_core
from prdp_core.board import links
from prdp_core.board import sessions as S
from prdp_core.board import summary as BS
from prdp_core.board.store import BoardStore
from prdp_core.core.errors import ResourceLimitError
from prdp_core.data import memory
from prdp_core.study.config import parse_config

from .conftest import ROOT, open_page, small_sample, texts, upload

pytestmark = pytest.mark.usefixtures("one_browser")  # a restored session is reopened in the browser that saved it

KEY = "facilitator passphrase"
#: The design of the finding: a share link naming cbp_like with ten million records.
HUGE = {"sample": "cbp_like", "n": 10_000_000}
WORKLOAD = {"queries": [{"kind": "count", "group_by": ["STATE"], "rho": 0.5},
                        {"kind": "sum", "measure": "EMP", "group_by": ["STATE"], "rho": 0.5}]}


def _design(data: dict) -> dict:
    return {"version": 1, "data": data, "policy": {"thresholds": {"EMP": 30, "PAYANN": 3000, "PAYQTR1": 800}},
            "workload": WORKLOAD, "mechanisms": [{"kind": "unit_splitting"}]}


@pytest.fixture(autouse=True)
def _nothing_large_is_generated(monkeypatch, tmp_path):
    """No limit from the environment, a workshop folder of the test's own, and a sample generator that fails
    the test when asked for more than a million records (what the guard must refuse before generating)."""
    monkeypatch.delenv(memory.SESSION_ENV, raising=False)
    monkeypatch.delenv(memory.SERVER_ENV, raising=False)
    monkeypatch.setenv("PRDP_WORKSHOP_DIR", str(tmp_path / "workshop"))
    monkeypatch.setenv("PRDP_FACILITATOR_KEY", KEY)
    (tmp_path / "workshop" / "data").mkdir(parents=True)
    load = prdp_core.data.samples.load

    def guarded_load(name, *, n=None, seed=0):
        assert n is None or n <= 1_000_000, f"a sample of {n:,} records was generated"
        return load(name, n=n, seed=seed)

    monkeypatch.setattr(prdp_core.data.samples, "load", guarded_load)


def _store(tmp_path: Path) -> BoardStore:
    return BoardStore(f"sqlite:///{tmp_path / 'workshop' / 'board.sqlite'}", facilitator_key=KEY)


def _entry(tmp_path: Path, data: dict) -> int:
    """Someone else's board entry whose design is on ``data`` (its summary computed on a small sample)."""
    cfg = parse_config(_design(data))
    summ = BS.summarise(cfg, prdp_core.samples.load_dataset("cbp_like", n=2000, seed=1), teaching=True)
    e, _ = _store(tmp_path).submit(participant="someone-else", name="Theirs", config=cfg.to_dict(), summary=summ,
                                   kind=summ["kind"], dataset=cfg.data.describe())
    return e.id


def _open_link(text: str) -> AppTest:
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=120)
    at.query_params[links.PARAM] = text
    at.run()
    assert not at.exception, at.exception
    return at


def _refused(at: AppTest, *phrases: str) -> None:
    assert not at.exception, at.exception
    shown = texts(at)
    assert all(p in shown for p in phrases), shown


def _default_session(at: AppTest) -> None:
    ds = at.session_state["dataset"]
    assert ds.name == "cbp_like" and ds.n == prdp_core.data.samples.info("cbp_like").default_n


def test_a_share_link_naming_ten_million_records_is_refused_before_anything_is_generated():
    at = _open_link(links.encode(_design(HUGE)))
    _refused(at, "link's design was not loaded", "per-session memory budget", memory.SESSION_ENV,
             "Ask for fewer records")
    _default_session(at)


def test_the_study_page_import_of_five_million_rows_is_refused_and_the_session_stays():
    at = open_page("study")
    at.text_area(key="study_paste").input("version: 1\ndata: {sample: cbp_like, n: 5000000}\n")
    at.button(key="study_load_paste").click().run()
    _refused(at, "Limit reached", "Generating the sample would need about 3,662 MB")
    _default_session(at)


def test_board_load_this_policy_on_ten_million_records_is_refused(tmp_path):
    eid = _entry(tmp_path, HUGE)
    at = open_page("board")
    at.selectbox(key="board_pick").set_value(eid)
    at.button(key="board_load").click().run()
    _refused(at, "per-session memory budget")
    _default_session(at)


def test_a_session_restore_asks_the_guard_before_generating_its_sample(monkeypatch):
    at = small_sample(seed=None)
    assert at.session_state["dataset"].n == 4000
    key = at.query_params[S.KEY_PARAM]
    key = key[0] if isinstance(key, list) else key
    monkeypatch.setenv(memory.SESSION_ENV, "0.5")  # 4,000 × 12 cells of the sample's model: about 3 MB
    again = AppTest.from_file(str(ROOT / "app.py"), default_timeout=120)
    again.query_params[S.KEY_PARAM] = key
    again.run()
    _refused(again, "not your data and design", "per-session memory budget")
    _default_session(again)


def test_a_sample_larger_than_the_shared_limit_is_the_sessions_own_and_ends_with_it(monkeypatch):
    """A large sample is generated once per session (its table and its dataset: one generation) and dropped with
    the session's caches when it ends, so the next session generates it again; a small one stays in the
    server-wide cache. (Every AppTest has the same session id: the end of a session is its caches' release,
    as Streamlit does at a disconnect.)"""
    from streamlit.runtime import caching

    from ui import state as ustate

    made = []
    load = prdp_core.data.samples.load

    def counting(name, *, n=None, seed=0):
        made.append(n)
        return load(name, n=n, seed=seed)

    monkeypatch.setattr(prdp_core.data.samples, "load", counting)
    large = ustate.SHARED_SAMPLE_MAX_ROWS + 1
    for n in (3001, 3001, large, large):
        at = open_page("data")
        at.session_state["sample_name"] = "sim_pareto"
        at.session_state["sample_n_sim_pareto"] = n
        at.session_state["sample_seed"] = 5
        at.button(key="load_sample").click().run()
        assert not at.exception, at.exception
        assert at.session_state["dataset"].n == n and len(at.session_state["raw"]["df"]) == n
        caching.clear_session_resource_cache("test session id")  # the session ends
        caching.clear_session_data_cache("test session id")
    assert made.count(large) == 2  # once per session
    assert made.count(3001) == 2  # once for the shared dataset, once for the shared table


def test_every_route_into_a_table_asks_the_one_guard(monkeypatch, tmp_path):
    """With the guard refusing everything, every route refuses with its message and the session keeps its
    dataset: the guard is the one every route asks."""
    asked = []

    def refuse(**kw):
        asked.append(kw)
        raise ResourceLimitError("Planted refusal of the route guard.", hint="Nothing was changed.")

    small = {"sample": "cbp_like", "n": 3000, "seed": 4}
    eid = _entry(tmp_path, small)
    _store(tmp_path).pin_dataset({"sample": "cbp_like", "n": 3000, "seed": 4}, key=KEY)
    saved = open_page("data")
    saved.session_state["sample_name"] = "sim_pareto"
    saved.session_state["sample_n_sim_pareto"] = 2000
    saved.button(key="load_sample").click().run()
    key = saved.query_params[S.KEY_PARAM]
    key = key[0] if isinstance(key, list) else key
    monkeypatch.setattr(memory, "guard_table", refuse)

    def data_page_sample(at):
        at.session_state["sample_name"] = "bank_zipf_b3"
        at.button(key="load_sample").click().run()

    def data_page_upload(at):
        upload(at, "shop.csv", b"id,sales\n1,5\n2,7\n", use=False)

    def study_import(at):
        at.switch_page("app_pages/study.py").run()
        at.text_area(key="study_paste").input("version: 1\ndata: {sample: sim_pareto, n: 2500}\n")
        at.button(key="study_load_paste").click().run()

    def board_load(at):
        at.switch_page("app_pages/board.py").run()
        at.selectbox(key="board_pick").set_value(eid)
        at.button(key="board_load").click().run()

    def board_workshop_dataset(at):
        at.switch_page("app_pages/board.py").run()
        at.button(key="board_use_pin").click().run()

    for route in (data_page_sample, data_page_upload, study_import, board_load, board_workshop_dataset):
        at = open_page("data")
        before = len(asked)
        route(at)
        _refused(at, "Planted refusal of the route guard")
        _default_session(at)
        assert len(asked) > before, route.__name__
    before = len(asked)
    _refused(_open_link(links.encode(_design(small))), "Planted refusal of the route guard")
    assert len(asked) > before
    restored = AppTest.from_file(str(ROOT / "app.py"), default_timeout=120)
    restored.query_params[S.KEY_PARAM] = key
    restored.run()
    _refused(restored, "Planted refusal of the route guard", "not your data and design")
    _default_session(restored)


def test_the_app_allocates_arrow_memory_on_the_system_heap():
    """pandas' text columns are Arrow arrays; the app puts Arrow's allocations on the system heap, whose freed
    pages an ended session's release returns (Arrow's own allocator kept 1.6 GB after ten 10⁶-record sessions
    ended: benchmarks/README.md, "Route guard")."""
    import pyarrow as pa

    pa.set_memory_pool(pa.mimalloc_memory_pool())  # as a fresh server starts
    open_page("data")
    assert pa.default_memory_pool().backend_name == "system"
