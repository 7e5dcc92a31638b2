"""The workshop board's store on SQLite and on a real PostgreSQL server.

Every test runs on both: SQLite files in a temporary folder, and databases of a PostgreSQL
server started for the test session (tests/postgres.py; skipped locally without the binaries,
failing under CI=true)."""

from __future__ import annotations

import multiprocessing as mp
import time

import pytest
import sqlalchemy as sa

from prdp_core.board import store as S
from prdp_core.board.store import BoardStore
from prdp_core.core.errors import AccessError, ConfigError, StoreError
from tests.postgres import postgres_server  # noqa: F401 - fixture

KEY = "correct horse battery staple"


@pytest.fixture(params=["sqlite", pytest.param("postgresql", marks=pytest.mark.xdist_group("postgres"))])
def board_url(request, tmp_path):
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path}/workshop/board.sqlite"
    return request.getfixturevalue("postgres_server").new_database()


def _submit(store: BoardStore, name: str = "A", token: str = "tok-a", **kw):
    args = dict(participant=token, name=name, config={"version": 1, "policy": {"x": 1}},
                summary={"kind": "unit splitting"}, kind="unit splitting", dataset="sample 'cbp_like'")
    args.update(kw)
    return store.submit(**args)


def test_a_new_database_gets_the_current_layout(board_url):
    s = BoardStore(board_url)
    assert s.migrated_from == 0 and s.version() == S.SCHEMA_VERSION
    tables = set(sa.inspect(s.engine).get_table_names())
    assert {"schema_version", "boards", "entries", "settings"} <= tables
    if board_url.startswith("sqlite"):
        with s.engine.connect() as conn:
            assert conn.exec_driver_sql("PRAGMA journal_mode").scalar() == "wal"
            assert conn.exec_driver_sql("PRAGMA busy_timeout").scalar() == S.SQLITE_BUSY_SECONDS * 1000
    s.dispose()
    again = BoardStore(board_url)
    assert again.migrated_from == S.SCHEMA_VERSION  # nothing to migrate the second time
    again.dispose()


def _make_v1(url: str) -> None:
    """A database as version 1 of the store wrote it: entries without boards, no settings."""
    md = sa.MetaData()
    ver = sa.Table("schema_version", md, sa.Column("version", sa.Integer, nullable=False))
    ent = sa.Table("entries", md,
                   sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
                   sa.Column("submission_id", sa.String(64), nullable=False, unique=True),
                   sa.Column("participant", sa.String(64), nullable=False),
                   sa.Column("name", sa.String(120), nullable=False),
                   sa.Column("rationale", sa.String(300), nullable=False),
                   sa.Column("kind", sa.String(40), nullable=False),
                   sa.Column("dataset", sa.String(300), nullable=False),
                   sa.Column("config", sa.Text, nullable=False),
                   sa.Column("summary", sa.Text, nullable=False),
                   sa.Column("created_at", sa.Float, nullable=False))
    if url.startswith("sqlite"):
        from pathlib import Path

        Path(sa.make_url(url).database).parent.mkdir(parents=True, exist_ok=True)
    eng = sa.create_engine(url)
    with eng.begin() as conn:
        md.create_all(conn)
        conn.execute(ver.insert().values(version=1))
        conn.execute(ent.insert().values(submission_id="s1", participant=S.participant_hash("old"), name="Old one",
                                         rationale="from v1", kind="budget function", dataset="sample 'x'",
                                         config='{"version": 1}', summary='{"kind": "budget function"}',
                                         created_at=1.0))
    eng.dispose()


def test_a_version_1_database_is_migrated_and_keeps_its_entries(board_url):
    _make_v1(board_url)
    s = BoardStore(board_url, facilitator_key=KEY)
    assert s.migrated_from == 1 and s.version() == S.SCHEMA_VERSION
    (old,) = s.entries()
    assert (old.name, old.rationale, old.kind, old.summary) == ("Old one", "from v1", "budget function",
                                                                {"kind": "budget function"})
    assert old.owned_by("old") and not old.owned_by("other")
    new, created = _submit(s, "New one")  # the migrated database takes new entries on the same board
    assert created and new.board_id == old.board_id
    assert [e.name for e in s.entries()] == ["Old one", "New one"]
    assert s.settings() == S.DEFAULT_SETTINGS
    s.set_mode("review", key=KEY)
    assert s.settings()["mode"] == "review"


def test_a_database_from_a_newer_build_is_refused(board_url):
    BoardStore(board_url).dispose()
    eng = sa.create_engine(board_url)
    with eng.begin() as conn:
        conn.execute(sa.text("UPDATE schema_version SET version = :v"), {"v": S.SCHEMA_VERSION + 1})
    eng.dispose()
    with pytest.raises(StoreError, match="newer than this build"):
        BoardStore(board_url)


def test_submissions_are_idempotent_and_kept_apart(board_url):
    s = BoardStore(board_url)
    a, created = _submit(s, "Policy A", rationale="cheap for small firms")
    assert created and a.name == "Policy A" and a.rationale == "cheap for small firms"
    again, created2 = _submit(s, "Policy A", rationale="cheap for small firms")  # a double click
    assert not created2 and again.id == a.id
    b, created3 = _submit(s, "Policy B")
    assert created3 and b.id != a.id
    _, created4 = _submit(s, "Policy A", token="tok-b", rationale="cheap for small firms")  # someone else
    assert created4
    assert [e.name for e in s.entries()] == ["Policy A", "Policy B", "Policy A"]
    assert s.entry(a.id).config == {"version": 1, "policy": {"x": 1}}


def test_the_token_itself_is_never_stored(board_url):
    s = BoardStore(board_url)
    _submit(s, token="secret-token-4711")
    eng = sa.create_engine(board_url)
    with eng.connect() as conn:
        rows = conn.execute(sa.text("SELECT * FROM entries")).all()
    eng.dispose()
    assert "secret-token-4711" not in repr(rows)
    assert S.participant_hash("secret-token-4711") in repr(rows)


def test_text_is_one_checked_line(board_url):
    s = BoardStore(board_url)
    e, _ = _submit(s, "  two\nlines\t here ", rationale="a\r\nb")
    assert (e.name, e.rationale) == ("two lines here", "a b")
    with pytest.raises(StoreError, match="name"):
        _submit(s, "   ")
    with pytest.raises(StoreError, match="at most 120"):
        _submit(s, "x" * 121)
    with pytest.raises(StoreError, match="at most 300"):
        _submit(s, "ok", rationale="y" * 301)
    with pytest.raises(StoreError, match="token"):
        _submit(s, "ok", token="")


def test_a_participant_withdraws_only_their_own_entries(board_url):
    s = BoardStore(board_url)
    mine, _ = _submit(s, "mine", token="alice")
    theirs, _ = _submit(s, "theirs", token="bob")
    with pytest.raises(AccessError, match="only your own"):
        s.withdraw(theirs.id, "alice")
    with pytest.raises(AccessError):
        s.withdraw(theirs.id, None)
    assert [e.name for e in s.entries()] == ["mine", "theirs"]
    s.withdraw(mine.id, "alice")
    assert [e.name for e in s.entries()] == ["theirs"]
    with pytest.raises(StoreError, match="no entry"):
        s.withdraw(mine.id, "alice")


def test_facilitator_actions_need_the_key(board_url):
    off = BoardStore(board_url)
    with pytest.raises(AccessError, match="PRDP_FACILITATOR_KEY"):
        off.clear(key=KEY)
    s = BoardStore(board_url, facilitator_key=KEY)
    for action in (lambda k: s.pin_dataset({"sample": "cbp_like"}, key=k), lambda k: s.set_mode("review", key=k),
                   lambda k: s.set_delta(1e-8, key=k), lambda k: s.clear(key=k), lambda k: s.archive(key=k),
                   lambda k: s.remove(1, key=k)):
        for wrong in (None, "", KEY + " ", KEY.upper(), 42):
            with pytest.raises(AccessError):
                action(wrong)
    assert s.settings() == S.DEFAULT_SETTINGS
    assert s.is_facilitator(KEY) and not s.is_facilitator("nope") and not off.is_facilitator(KEY)


def test_facilitator_pins_sets_clears_and_archives(board_url):
    s = BoardStore(board_url, facilitator_key=KEY)
    s.pin_dataset({"sample": "cbp_like", "n": 5000, "seed": 1}, key=KEY)
    s.set_delta(1e-8, key=KEY)
    s.set_mode("review", key=KEY)
    assert s.settings() == {"dataset": {"sample": "cbp_like", "n": 5000, "seed": 1}, "mode": "review", "delta": 1e-8}
    s.pin_dataset({"file": "firms.csv"}, key=KEY)
    assert s.settings()["dataset"] == {"file": "firms.csv"}
    s.pin_dataset(None, key=KEY)
    assert s.settings()["dataset"] is None
    for bad in ({"sample": "a", "file": "b"}, {"path": "/etc/passwd"}, {}, "cbp_like",
                {"sample": "a", "prepare": {}}, {"file": "f.csv", "rows": [1]}, {"file": ""}):
        with pytest.raises(StoreError):
            s.pin_dataset(bad, key=KEY)  # type: ignore[arg-type]
    fixed = {"file": "f.csv", "schema": {"measures": ["X"], "owner": "F"},
             "prepare": {"negative": "shift", "shift_by": {"X": 5}}}
    s.pin_dataset(fixed, key=KEY)  # a file with its roles and a public shift, read as a config's data section
    assert s.settings()["dataset"] == {"file": "f.csv", "schema": {"id": None, "measures": ["X"], "groups": [],
                                                                   "owner": "F"},
                                       "prepare": {"negative": "shift", "shift_by": {"X": 5.0}}}
    for bad_fix in ({"negative": "shift", "shift_by": {"X": -5}}, {"shift_by": {"X": 5}}, {"negative": "rm -rf"}):
        with pytest.raises(ConfigError, match="data.prepare"):
            s.pin_dataset({"file": "f.csv", "prepare": bad_fix}, key=KEY)
    assert s.settings()["dataset"]["prepare"]["shift_by"] == {"X": 5.0}  # a refused pin changes nothing
    with pytest.raises(StoreError):
        s.set_mode("chaos", key=KEY)
    for bad_delta in (0, 0.5, float("nan"), "x"):
        with pytest.raises(StoreError):
            s.set_delta(bad_delta, key=KEY)  # type: ignore[arg-type]

    first = [_submit(s, f"p{i}", token=f"t{i}")[0] for i in range(3)]
    s.remove(first[0].id, key=KEY)
    assert [e.name for e in s.entries()] == ["p1", "p2"]
    old_board = first[0].board_id
    new = s.archive(key=KEY, title="Day 2")
    assert s.entries() == [] and new.title == "Day 2"
    assert [e.name for e in s.entries(old_board)] == ["p1", "p2"]  # archived, still readable
    _submit(s, "day two", token="t9")
    assert s.clear(key=KEY) == 1 and s.entries() == []
    assert [e.name for e in s.entries(old_board)] == ["p1", "p2"]
    listed = s.boards()
    assert [(b.title, b.archived_at is None, b.entries) for b in listed] == [("Day 2", True, 0),
                                                                           ("Workshop board", False, 2)]


def test_opening_a_new_sqlite_board_waits_for_a_writer_in_rollback_mode(tmp_path):
    """While another connection writes to a file still in rollback mode, SQLite refuses the switch to WAL at once
    (no busy wait): opening the board must wait for that writer instead of failing (a room opening a new board)."""
    import sqlite3
    import threading

    db = tmp_path / "board.sqlite"
    other = sqlite3.connect(db, isolation_level=None, check_same_thread=False)
    other.execute("CREATE TABLE other_app (a)")
    other.execute("BEGIN IMMEDIATE")
    other.execute("INSERT INTO other_app VALUES (1)")
    release = threading.Timer(0.5, lambda: other.execute("COMMIT"))
    release.start()
    try:
        t0 = time.monotonic()
        s = BoardStore(f"sqlite:///{db}")
        assert 0.4 < time.monotonic() - t0 < 30
        assert s.version() == S.SCHEMA_VERSION
        with s.engine.connect() as conn:
            assert conn.exec_driver_sql("PRAGMA journal_mode").scalar() == "wal"
        s.dispose()
    finally:
        release.join()
        other.close()


@pytest.mark.parametrize("url, message", [("not a url", "not an SQLAlchemy URL"),
                                          ("sqlite://", "SQLite file"), ("sqlite:///:memory:", "SQLite file"),
                                          ("nosuchdb://x/y", "Cannot use the board database"),
                                          ("postgresql+psycopg://u:hunter2@127.0.0.1:1/none", "cannot be used")])
def test_bad_urls_give_a_message_without_the_password(url, message):
    with pytest.raises(StoreError, match=message) as exc:
        BoardStore(url)
    assert "hunter2" not in str(exc.value)


def test_an_unwritable_folder_gives_a_message(tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("x")
    with pytest.raises(StoreError, match="Cannot create the folder"):
        BoardStore(f"sqlite:///{blocker}/sub/board.sqlite")


# ---------------------------------------------------------------------------
# Twenty processes at once
# ---------------------------------------------------------------------------


def _worker(url: str, i: int, barrier, out) -> None:  # pragma: no cover - runs in a child process
    try:
        barrier.wait(timeout=60)
        s = BoardStore(url)  # the first of them creates the tables, the others wait for the lock
        for _ in range(2):  # every submission is sent twice (a retry): stored once
            _submit(s, f"policy {i}", token=f"participant-{i}", rationale=f"r{i}")
        s.dispose()
        out.put((i, None))
    except BaseException as err:  # noqa: BLE001 - reported to the parent
        out.put((i, repr(err)))


@pytest.mark.timeout(300)
def test_twenty_processes_submitting_at_once_leave_exactly_twenty_entries(board_url):
    ctx = mp.get_context("fork")
    n = 20
    barrier, out = ctx.Barrier(n), ctx.Queue()
    procs = [ctx.Process(target=_worker, args=(board_url, i, barrier, out)) for i in range(n)]
    t0 = time.monotonic()
    for p in procs:
        p.start()
    results = [out.get(timeout=240) for _ in range(n)]
    for p in procs:
        p.join(timeout=60)
    assert [err for _, err in results if err] == []
    entries = BoardStore(board_url).entries()
    assert sorted(e.name for e in entries) == sorted(f"policy {i}" for i in range(n))
    assert len({e.submission_id for e in entries}) == n
    assert time.monotonic() - t0 < 240
