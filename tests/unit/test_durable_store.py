"""Durable sessions and ledgers in the workshop store (layout version 7), on SQLite and on a real
PostgreSQL server (tests/postgres.py): the migration of a version-2 and a version-3 database, sessions by
hashed key and bound to their browser (transfer codes), uploaded tables stored once by content hash and
their retention rule, ledgers whose restored per-record totals equal the original's, named ledgers tied to
their data, concurrent appends."""

from __future__ import annotations

import json
import multiprocessing as mp
import os
import stat
import time

import numpy as np
import pandas as pd
import pytest
import sqlalchemy as sa

from prdp_core.board import ledgers as L
from prdp_core.board import sessions as S
from prdp_core.board import store as B
from prdp_core.board.store import BoardStore
from prdp_core.core.accounting import FlatLoss, Ledger, LedgerEntry, ParallelLoss, RecordLoss, SumLoss
from prdp_core.core.errors import AccessError, StoreError
from prdp_core.core.splitting import as_thresholds
from prdp_core.core.workload import Filter, Query, SplittingPolicy, Workload
from tests.postgres import postgres_server  # noqa: F401 - fixture


@pytest.fixture(params=["sqlite", pytest.param("postgresql", marks=pytest.mark.xdist_group("postgres"))])
def url(request, tmp_path):
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path}/workshop/board.sqlite"
    return request.getfixturevalue("postgres_server").new_database()


@pytest.fixture
def sessions(url, tmp_path):
    s = S.SessionStore(BoardStore(url), tmp_path / "uploads")
    yield s
    s.store.dispose()


# ---------------------------------------------------------------------------
# Layout
# ---------------------------------------------------------------------------


def _make_v2(url: str) -> None:
    """A database as version 2 of the store left it (the real steps 1 and 2), with one entry."""
    if url.startswith("sqlite"):
        from pathlib import Path

        Path(sa.make_url(url).database).parent.mkdir(parents=True, exist_ok=True)
    eng = sa.create_engine(url)
    with eng.begin() as conn:
        for step in range(2):
            B.MIGRATIONS[step](conn)
            conn.execute(sa.text("UPDATE schema_version SET version = :v"), {"v": step + 1})
        conn.execute(sa.text("INSERT INTO entries (submission_id, participant, name, rationale, kind, dataset, config, "
                             "summary, created_at, board_id) VALUES ('s2', :p, 'From v2', 'kept', 'unit splitting', "
                             "'sample x', '{}', '{\"kind\": \"unit splitting\"}', 2.0, 1)"),
                     {"p": B.participant_hash("t")})
    eng.dispose()


def test_a_version_2_database_is_migrated_and_keeps_its_entries(url, tmp_path):
    _make_v2(url)
    bs = BoardStore(url)
    assert bs.migrated_from == 2 and bs.version() == B.SCHEMA_VERSION == 7
    assert {"sessions", "uploads", "ledgers", "ledger_entries"} <= set(sa.inspect(bs.engine).get_table_names())
    (old,) = bs.entries()
    assert (old.name, old.rationale) == ("From v2", "kept")
    ss = S.SessionStore(bs, tmp_path / "up")  # the new tables work on the migrated database
    key = S.new_key()
    ss.save(key, source={"kind": "sample", "name": "cbp_like"}, config={"version": 1})
    assert ss.load(key).source == {"kind": "sample", "name": "cbp_like"}
    bs.dispose()
    assert BoardStore(url).migrated_from == 7  # nothing to do the second time


def test_a_version_3_session_is_kept_unbound_and_goes_to_the_first_browser_that_opens_it(url, tmp_path):
    _make_v2(url)
    eng = sa.create_engine(url)
    key = S.new_key()
    with eng.begin() as conn:  # step 3 as version 3 wrote it, and a session saved then
        B.MIGRATIONS[2](conn)
        conn.execute(sa.text("UPDATE schema_version SET version = 3"))
        conn.execute(sa.text("INSERT INTO ledgers (name, fingerprint, created_at) VALUES (NULL, NULL, 1.0)"))
        lid = conn.execute(sa.text("SELECT MAX(id) FROM ledgers")).scalar()
        conn.execute(sa.text("INSERT INTO sessions (key_hash, ledger_id, source, config, created_at, seen_at) "
                             "VALUES (:h, :l, '{\"kind\": \"sample\"}', '{}', 1.0, 1.0)"),
                     {"h": S.key_hash(key), "l": lid})
    eng.dispose()
    bs = BoardStore(url)
    assert bs.migrated_from == 3 and bs.version() == B.SCHEMA_VERSION
    ss = S.SessionStore(bs, tmp_path / "up")
    got = ss.load(key)
    assert got.source == {"kind": "sample"} and got.browser_hash is None
    first, second = S.browser_hash(S.new_browser_secret()), S.browser_hash(S.new_browser_secret())
    assert ss.admit(key, first) and not ss.admit(key, second) and ss.admit(key, first)
    assert ss.load(key).browser_hash == first
    bs.dispose()


def test_a_version_5_session_is_kept_and_its_recorded_releases_are_stored_after_the_migration(url, tmp_path):
    from prdp_core.board import session_releases as SR

    _make_v2(url)
    eng = sa.create_engine(url)
    key, me = S.new_key(), S.browser_hash(S.new_browser_secret())
    with eng.begin() as conn:  # steps 3 to 5 as version 5 wrote them, and a session saved then
        for step in range(2, 5):
            B.MIGRATIONS[step](conn)
            conn.execute(sa.text("UPDATE schema_version SET version = :v"), {"v": step + 1})
        assert not sa.inspect(conn).has_table("session_releases")
        conn.execute(sa.text("INSERT INTO ledgers (name, fingerprint, created_at) VALUES (NULL, NULL, 1.0)"))
        lid = conn.execute(sa.text("SELECT MAX(id) FROM ledgers")).scalar()
        conn.execute(sa.text("INSERT INTO sessions (key_hash, ledger_id, source, config, created_at, seen_at, "
                             "browser_hash) VALUES (:h, :l, '{\"kind\": \"sample\"}', '{}', 1.0, 1.0, :b)"),
                     {"h": S.key_hash(key), "l": lid, "b": me})
    eng.dispose()
    bs = BoardStore(url)
    assert bs.migrated_from == 5 and bs.version() == B.SCHEMA_VERSION == 7
    assert "session_releases" in sa.inspect(bs.engine).get_table_names()
    ss = S.SessionStore(bs, tmp_path / "up")
    assert ss.load(key).source == {"kind": "sample"} and ss.load_releases(key) is None  # kept, nothing recorded yet
    text = SR.encode({})[0]
    ss.save_releases(key, text, browser=me)
    assert ss.load_releases(key) == text and ss.ledger_id(key, browser=me) == lid
    bs.dispose()
    assert BoardStore(url).migrated_from == 7


# ---------------------------------------------------------------------------
# Sessions
# ---------------------------------------------------------------------------


def test_keys_are_long_random_and_stored_hashed(sessions, url):
    keys = {S.new_key() for _ in range(200)}
    assert len(keys) == 200 and all(S.valid_key(k) and len(k) == 32 for k in keys)  # 32 × 6 = 192 bits
    assert not S.valid_key("short") and not S.valid_key("x" * 31) and not S.valid_key("a/b" * 20)
    key = keys.pop()
    sessions.save(key, source={"kind": "sample", "name": "cbp_like", "n": None, "seed": 0},
                  config={"version": 1, "seed": 3})
    with sessions.store.engine.connect() as conn:
        dump = json.dumps([list(map(str, r)) for r in conn.execute(sa.text("SELECT * FROM sessions")).all()])
    assert key not in dump and S.key_hash(key) in dump
    got = sessions.load(key)
    assert got.config == {"version": 1, "seed": 3} and got.source["name"] == "cbp_like"
    assert sessions.load(S.new_key()) is None and sessions.load("not a key") is None


def test_a_session_keeps_one_ledger_and_later_saves_replace_its_design(sessions):
    key = S.new_key()
    lid = sessions.ledger_id(key)
    assert sessions.ledger_id(key) == lid  # the same ledger every time
    sessions.save(key, source={"kind": "sample", "name": "a"}, config={"v": 1})
    sessions.save(key, source={"kind": "sample", "name": "b"}, config={"v": 2})
    got = sessions.load(key)
    assert (got.ledger_id, got.source["name"], got.config) == (lid, "b", {"v": 2})


def test_a_session_opens_and_takes_writes_only_in_its_own_browser(sessions):
    mine, other = S.new_browser_secret(), S.new_browser_secret()
    assert S.valid_key(mine) and mine != other and S.browser_hash(mine) != S.browser_hash(other)
    a, b = S.browser_hash(mine), S.browser_hash(other)
    key = S.new_key()
    sessions.save(key, source={"kind": "sample", "name": "a"}, config={"v": 1}, browser=a)
    assert sessions.load(key).browser_hash == a and mine not in repr(sessions.load(key))  # the hash only
    assert sessions.admit(key, a) and not sessions.admit(key, b)
    assert not sessions.admit(S.new_key(), a) and not sessions.admit("not a key", a)
    with pytest.raises(AccessError, match="belongs to another browser"):
        sessions.save(key, source={"kind": "file", "upload": "0" * 64}, config={"v": 2}, browser=b)
    with pytest.raises(AccessError, match="belongs to another browser"):
        sessions.ledger_id(key, browser=b)
    with pytest.raises(AccessError):
        sessions.new_transfer_code(key, b)  # only the session's browser makes its codes
    assert sessions.load(key).config == {"v": 1}  # nothing of the other browser was written
    lid = sessions.ledger_id(key, browser=a)
    other_key = S.new_key()  # a new session is bound to the browser that creates it, by its ledger too
    assert sessions.ledger_id(other_key, browser=b) != lid and sessions.admit(other_key, b)
    assert not sessions.admit(other_key, a)


def test_a_transfer_code_moves_the_session_once_before_it_expires(sessions):
    a, b, c = (S.browser_hash(S.new_browser_secret()) for _ in range(3))
    key = S.new_key()
    sessions.save(key, source={"kind": "sample"}, config={}, browser=a)
    code, until = sessions.new_transfer_code(key, a, now=1000.0)
    assert until == 1000.0 + S.TRANSFER_SECONDS and S.normal_code(code) == code and len(code) == 10
    with sessions.store.engine.connect() as conn:
        dump = repr(conn.execute(sa.text("SELECT * FROM sessions")).all())
    assert code not in dump  # kept hashed
    with pytest.raises(AccessError, match="does not open this address"):
        sessions.transfer(key, code, b, now=until + 1)  # expired (and now void)
    with pytest.raises(AccessError):
        sessions.transfer(key, code, b, now=1001.0)
    code, _ = sessions.new_transfer_code(key, a, now=2000.0)
    typed = f" {code[:5].lower()}-{code[5:]} "
    sessions.transfer(key, typed, b, now=2001.0)
    assert sessions.admit(key, b) and not sessions.admit(key, a)  # the old browser lost it
    with pytest.raises(AccessError):
        sessions.transfer(key, code, c, now=2002.0)  # used once
    with pytest.raises(AccessError):
        sessions.save(key, source={"kind": "sample"}, config={"v": 9}, browser=a)


def test_wrong_transfer_codes_void_the_code(sessions):
    a, b = S.browser_hash(S.new_browser_secret()), S.browser_hash(S.new_browser_secret())
    key = S.new_key()
    sessions.save(key, source={"kind": "sample"}, config={}, browser=a)
    code, _ = sessions.new_transfer_code(key, a)
    wrong = "".join("A" if ch != "A" else "B" for ch in code)
    for _ in range(S.TRANSFER_TRIES):
        with pytest.raises(AccessError):
            sessions.transfer(key, wrong, b)
    with pytest.raises(AccessError):
        sessions.transfer(key, code, b)  # the right code after too many wrong ones
    assert sessions.admit(key, a) and not sessions.admit(key, b)
    for bad in ("", "ABCDE", "0OIL1-ABCDE", None, "A" * 40):
        with pytest.raises(AccessError):
            sessions.transfer(key, bad, b)
    with pytest.raises(AccessError):
        sessions.transfer("not a key", code, b)


def test_an_uploaded_table_is_stored_once_by_content_hash(sessions):
    data = b"id,sales\n1,10\n2,20\n"
    a = sessions.put_upload(data, "a.csv")
    import io

    b = sessions.put_upload(io.BytesIO(data), "b.csv")  # the same bytes under another name, as a file object
    assert a == b and len(a) == 64
    files = [p for p in sessions.upload_dir.iterdir()]
    assert [p.name for p in files] == [a] and files[0].read_bytes() == data
    assert stat.S_IMODE(files[0].stat().st_mode) == 0o600
    assert sessions.uploads_size() == len(data)
    assert sessions.upload_path(a) == files[0] and sessions.upload_path("../etc/passwd") is None
    assert sessions.read_upload(a) == data and sessions.read_upload("0" * 64) is None
    files[0].write_bytes(b"changed")
    with pytest.raises(StoreError, match="changed on the server"):
        sessions.read_upload(a)


def _age(sessions, sha: str, days: float) -> None:
    with sessions.store.engine.begin() as conn:
        conn.execute(S.uploads.update().where(S.uploads.c.sha256 == sha).values(used_at=time.time() - days * 86_400))


def test_retention_deletes_old_tables_and_least_recently_used_first_but_never_a_live_sessions(url, tmp_path):
    ss = S.SessionStore(BoardStore(url), tmp_path / "uploads", S.Retention(max_age_days=30, max_bytes=250))
    shas = [ss.put_upload(bytes([65 + i]) * 100, f"t{i}.csv") for i in range(3)]  # 300 bytes > 250: one must go
    # the third upload ran the rule: the least recently used (the first) went, never the new one
    assert ss.upload_path(shas[0]) is None and ss.upload_path(shas[1]) and ss.upload_path(shas[2])
    live = S.new_key()
    ss.save(live, source={"kind": "file", "filename": "t1.csv", "upload": shas[1]}, config=None)
    _age(ss, shas[1], 40)  # old, but its session was seen just now
    _age(ss, shas[2], 40)
    assert ss.apply_retention() == [shas[2]]
    assert ss.upload_path(shas[1]) is not None
    # once its session is no longer live (seen 2 days ago), the old table goes too
    with ss.store.engine.begin() as conn:
        conn.execute(S.sessions.update().values(seen_at=time.time() - 2 * 86_400))
    _age(ss, shas[1], 40)
    assert ss.apply_retention() == [shas[1]] and ss.uploads_size() == 0
    assert ss.load(live).source["upload"] == shas[1]  # the session (and its ledger) stay; its table is gone
    ss.store.dispose()


def test_retention_removes_only_its_own_orphan_files(sessions):
    d = sessions.upload_dir
    d.mkdir(parents=True, exist_ok=True)
    orphan, tmp, other = d / ("a" * 64), d / ".tmp-x", d / "facilitator-table.csv"
    for p in (orphan, tmp, other):
        p.write_bytes(b"x")
        os.utime(p, (time.time() - 3 * 86_400,) * 2)
    young = d / ("b" * 64)
    young.write_bytes(b"y")  # written a moment ago, its row may be on its way
    sessions.apply_retention()
    assert not orphan.exists() and not tmp.exists() and other.exists() and young.exists()


def test_retention_settings_come_from_the_environment():
    r = S.Retention.from_env({"PRDP_UPLOAD_RETENTION_DAYS": "7", "PRDP_UPLOAD_MAX_GB": "0.5"})
    assert (r.max_age_days, r.max_bytes) == (7.0, 500_000_000)
    assert S.Retention.from_env({}) == S.Retention()
    for bad in ("0", "-1", "soon", "inf"):
        with pytest.raises(StoreError, match="PRDP_UPLOAD_MAX_GB must be a positive number"):
            S.Retention.from_env({"PRDP_UPLOAD_MAX_GB": bad})


def test_an_unwritable_uploads_folder_gives_a_message(url, tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("x")
    ss = S.SessionStore(BoardStore(url), blocker / "uploads")
    with pytest.raises(StoreError, match="Cannot keep the uploaded table"):
        ss.put_upload(b"a,b\n1,2\n", "t.csv")
    ss.store.dispose()


# ---------------------------------------------------------------------------
# Ledgers
# ---------------------------------------------------------------------------


def _table() -> pd.DataFrame:
    rng = np.random.default_rng(5)
    n = 400
    return pd.DataFrame({"id": np.arange(n), "G": rng.integers(1, 4, n), "V": rng.lognormal(4, 1.5, n),
                         "W": rng.uniform(0, 50, n)})


def _entries(table: pd.DataFrame) -> list[LedgerEntry]:
    """Entries of every loss kind, including per-group thresholds on integer groups and data-dependent losses."""
    thr = as_thresholds({"*": {"V": 100.0, "W": 30.0}, 2: {"V": 10.0, "W": 30.0}}, group_col="G")
    wl = Workload((Query("count", rho=0.1, group_by=("G",)), Query("sum", "V", rho=0.25, split=True,
                                                                    filter=Filter("G", (1, 2)))))
    rec = RecordLoss(np.random.default_rng(1).choice([0.01, 0.02, 0.04], len(table)), "eps", note="PrDP", bound=0.04)
    rec_rho = RecordLoss(np.random.default_rng(2).uniform(0, 1, len(table)), "rho", note="data-dependent ρ", bound=1.0)
    par = ParallelLoss("G", ((1, FlatLoss(0.3)), (3, FlatLoss(0.1))), default=FlatLoss(0.2))
    return [LedgerEntry("splitting", "unit_splitting.gaussian", SplittingPolicy(thr, wl), params={"k": np.int64(3)}),
            LedgerEntry("flat", "baseline", FlatLoss(0.5), seed=1),
            LedgerEntry("prdp", "prdp.framework", rec, secure=True),
            LedgerEntry("sum", "composite", SumLoss((rec_rho, FlatLoss(0.05)))),
            LedgerEntry("parallel", "per group", par)]


def test_a_stored_ledger_gives_the_same_per_record_totals_as_the_original(sessions):
    table = _table()
    original = Ledger(_entries(table))
    lid = sessions.ledgers.create()
    for i, e in enumerate(original.entries):
        sessions.ledgers.append(lid, [(f"u{i}", e)], fingerprint=L.data_fingerprint({"sample": "t"}))
    stored = sessions.ledgers.entries(lid)
    restored = Ledger([s.entry for s in stored])
    assert [s.seq for s in stored] == [1, 2, 3, 4, 5] and [s.uid for s in stored] == [f"u{i}" for i in range(5)]
    for a, b in zip(original.entries, restored.entries):
        assert np.array_equal(a.loss(table), b.loss(table)), a.label
        assert (a.label, a.mechanism, a.seed, a.secure, a.neighbours) == (b.label, b.mechanism, b.seed, b.secure,
                                                                          b.neighbours)
    assert np.array_equal(original.total(table, "rho"), restored.total(table, "rho"))
    assert pd.DataFrame.equals(original.running_totals(table), restored.running_totals(table))
    assert restored.entries[0].params == {"k": 3}


def test_appends_are_idempotent_and_keep_their_order(sessions):
    lid = sessions.ledgers.create()
    e1, e2 = LedgerEntry("a", "m", FlatLoss(0.1)), LedgerEntry("b", "m", FlatLoss(0.2))
    assert sessions.ledgers.append(lid, [("x1", e1)]) == 1
    assert sessions.ledgers.append(lid, [("x1", e1), ("x2", e2)]) == 1  # a retried append adds only what is new
    assert [s.entry.label for s in sessions.ledgers.entries(lid)] == ["a", "b"] and sessions.ledgers.count(lid) == 2


def test_a_damaged_entry_is_a_store_error(sessions):
    lid = sessions.ledgers.create()
    sessions.ledgers.append(lid, [("x", LedgerEntry("r", "m", RecordLoss(np.ones(10), "eps")))])
    with sessions.store.engine.begin() as conn:
        text = conn.execute(sa.select(L.ledger_entries.c.entry)).scalar_one()
        d = json.loads(text)
        d["loss"]["n"] = 11  # the packed values no longer match their count
        conn.execute(L.ledger_entries.update().values(entry=json.dumps(d)))
    with pytest.raises(StoreError, match="damaged"):
        L.unpack_entry(json.dumps(d))
    with pytest.raises(StoreError, match=r"changed in the store: entry #1 of 1 \(id x\)"):  # its seal refuses it first
        sessions.ledgers.entries(lid)


def test_a_named_ledger_belongs_to_its_data(sessions):
    table = _table()
    here = L.data_fingerprint({"sha256": "1" * 64}, id_col="id", name="t.csv")
    other = L.data_fingerprint({"sha256": "2" * 64}, id_col="id", name="t2.csv")
    same_renamed = L.data_fingerprint({"sha256": "1" * 64}, id_col="id", name="copy.csv")
    pol = _entries(table)[0]
    led = sessions.ledgers
    led.check_named("cbp", here)  # a new name passes
    lid = led.append_named("cbp", [("a", pol)], fingerprint=here, table=table)
    led.append_named("cbp", [("b", pol)], fingerprint=same_renamed, table=table)  # same bytes, another name
    with pytest.raises(StoreError, match="belongs to t.csv .*this run reads t2.csv"):
        led.check_named("cbp", other)
    with pytest.raises(StoreError, match="--ledger-new-data"):
        led.append_named("cbp", [("c", pol)], fingerprint=other, table=table)
    one = pol.loss(table)
    a, b = led.entries(lid)
    assert a.largest == pytest.approx(one.max()) and a.total_rho == pytest.approx(one.max())
    assert b.total_rho == pytest.approx((2 * one).max()) and b.total_eps is None
    # told that it is the same records in a new version: appended, earlier entries at their worst case (∞ here)
    led.append_named("cbp", [("c", pol)], fingerprint=other, table=table, new_data=True)
    assert L.same_data(led.fingerprint(lid), other)
    assert led.entries(lid)[-1].total_rho == float("inf")
    assert led.names() == [("cbp", 3)]
    with pytest.raises(StoreError, match="A ledger name"):
        led.find("../etc")


def test_pure_epsilon_totals_are_kept_in_epsilon_too(sessions):
    table = _table()
    rec = _entries(table)[2]
    fp = L.data_fingerprint({"sample": "t"})
    lid = sessions.ledgers.append_named("eps", [("a", rec), ("b", rec)], fingerprint=fp, table=table)
    a, b = sessions.ledgers.entries(lid)
    v = np.asarray(rec.loss.values)
    assert (a.total_eps, b.total_eps) == (pytest.approx(v.max()), pytest.approx(2 * v.max()))
    assert b.total_rho == pytest.approx((2 * 0.5 * v ** 2).max())


def _append_one(url: str, i: int) -> None:
    from prdp_core.board.ledgers import LedgerStore, data_fingerprint

    table = _table()
    led = LedgerStore(BoardStore(url))
    led.append_named("shared", [(f"p{i}", LedgerEntry(f"run {i}", "m", FlatLoss(0.5)))],
                     fingerprint=data_fingerprint({"sample": "t"}), table=table)
    led.store.dispose()


def test_concurrent_runs_append_to_one_named_ledger_and_their_totals_add_up(url):
    BoardStore(url).dispose()
    ctx = mp.get_context("spawn")
    procs = [ctx.Process(target=_append_one, args=(url, i)) for i in range(6)]
    for p in procs:
        p.start()
    for p in procs:
        p.join(600)
        assert p.exitcode == 0
    led = L.LedgerStore(BoardStore(url))
    entries = led.entries(led.find("shared"))
    assert len(entries) == 6
    assert [e.total_rho for e in entries] == pytest.approx([0.5 * k for k in range(1, 7)])  # each saw all before it
    led.store.dispose()


def test_prdp_app_refuses_a_bad_retention_setting_before_starting(tmp_path, monkeypatch):
    import io

    from prdp_core.commands.cli import main

    monkeypatch.setenv("PRDP_WORKSHOP_DIR", str(tmp_path))
    monkeypatch.setenv("PRDP_BOARD_URL", "")  # prdp app sets these for the server it runs: restored after the test
    monkeypatch.setenv("PRDP_DATA_DIR", "")
    monkeypatch.setenv("PRDP_UPLOAD_RETENTION_DAYS", "forever")
    err = io.StringIO()
    assert main(["app", "--port", "8799"], stdout=io.StringIO(), stderr=err) == 5
    assert "PRDP_UPLOAD_RETENTION_DAYS must be a positive number" in err.getvalue()


def test_a_loss_known_as_a_distribution_is_stored_with_its_counts(sessions):
    """A data-dependent release on a table held by an engine carries its losses as counts per loss
    (DistributionLoss, whose to_dict keeps a summary only): the store keeps the counts, and the restored
    entry counts at its worst case on any table, as the original does."""
    from prdp_core.core.accounting import DistributionLoss
    from prdp_core.core.distribution import LossDistribution

    exact = LossDistribution.from_counts([0.01, 0.02, 0.08], [700, 250, 50], "eps", label="PrDP", base=0.01)
    binned = LossDistribution.binned([0.0, 0.5, 1.0, 2.0], [10, 5, 1], "rho", total=4.2)
    lid = sessions.ledgers.create()
    entries = [LedgerEntry("engine prdp", "prdp.framework", DistributionLoss(exact, "eps", "on DuckDB", 0.08)),
               LedgerEntry("engine binned", "m", DistributionLoss(binned, "rho", "", 2.0))]
    sessions.ledgers.append(lid, [(f"d{i}", e) for i, e in enumerate(entries)])
    back = [s.entry for s in sessions.ledgers.entries(lid)]
    for a, b in zip(entries, back):
        da, db = a.loss.distribution, b.loss.distribution
        assert np.array_equal(da.values, db.values) and np.array_equal(da.counts, db.counts)
        assert (da.measure, da.total, da.label, da.base) == (db.measure, db.total, db.label, db.base)
        assert (a.loss.note, a.loss.bound, a.label) == (b.loss.note, b.loss.bound, b.label)
    assert back[1].loss.distribution.edges.tolist() == [0.0, 0.5, 1.0, 2.0]
    table = _table()
    assert pd.DataFrame.equals(Ledger(entries).running_totals(table), Ledger(back).running_totals(table))
    assert Ledger(back).running_totals(table)["counted"].tolist() == ["worst case", "worst case"]
