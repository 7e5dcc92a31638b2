"""Ledgers that detect tampering: a named or a session's ledger edited in the store (a query's ρ lowered to 10⁻⁶, an
entry deleted in the middle or at the end, two entries swapped, the head edited) is refused by ``prdp ledger show``,
by a run that appends to it and by every restore, with a message naming the first bad entry — on SQLite and on a
real PostgreSQL server (tests/postgres.py). Ledgers stored before sealing are sealed once by the upgrade, recorded.
The store's files and folders are private: 0600/0700 when created, tightened when found looser."""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path
from typing import Callable

import numpy as np
import pandas as pd
import pytest
import sqlalchemy as sa

from prdp_core.board import ledger_chain as C
from prdp_core.board import ledgers as L
from prdp_core.board import sessions as S
from prdp_core.board import store as B
from prdp_core.board.store import BoardStore
from prdp_core.commands.cli import EXIT_ERROR, EXIT_OK
from prdp_core.core.accounting import FlatLoss, LedgerEntry
from prdp_core.core.errors import StoreError
from prdp_core.core.splitting import as_thresholds
from prdp_core.core.workload import Query, SplittingPolicy, Workload
from tests.postgres import postgres_server  # noqa: F401 - fixture

from .test_cli import cli


@pytest.fixture(params=["sqlite", pytest.param("postgresql", marks=pytest.mark.xdist_group("postgres"))])
def url(request, tmp_path):
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path}/workshop/board.sqlite"
    return request.getfixturevalue("postgres_server").new_database()


@pytest.fixture(autouse=True)
def _workshop(tmp_path, monkeypatch):
    """The key file of a server database lives in the workshop folder: this test's own."""
    monkeypatch.setenv("PRDP_WORKSHOP_DIR", str(tmp_path / "workshop"))
    monkeypatch.delenv("PRDP_BOARD_URL", raising=False)
    monkeypatch.delenv(C.ENV_LEDGER_KEY, raising=False)


def _table() -> pd.DataFrame:
    rng = np.random.default_rng(3)
    return pd.DataFrame({"id": np.arange(300), "V": rng.lognormal(4, 1.5, 300)})


def _policy() -> LedgerEntry:
    wl = Workload((Query("count", rho=0.1), Query("sum", "V", rho=0.25, split=True)))
    return LedgerEntry("splitting", "unit_splitting.gaussian", SplittingPolicy(as_thresholds({"V": 100.0}), wl))


FP = L.data_fingerprint({"sample": "t", "n": 300, "seed": 3})


def _named(url: str) -> tuple[L.LedgerStore, int]:
    """The named ledger 'cbp' with three runs' entries a, b, c on one table."""
    led = L.LedgerStore(BoardStore(url))
    for uid in "abc":
        lid = led.append_named("cbp", [(uid, _policy())], fingerprint=FP, table=_table(), origin=f"run {uid}")
    return led, lid


# ---------------------------------------------------------------------------
# Changes made in the store (with the database's own tools, not through PrDP Explorer)
# ---------------------------------------------------------------------------


def _rows(conn, lid: int) -> list:
    return conn.execute(sa.select(L.ledger_entries).where(L.ledger_entries.c.ledger_id == lid)
                        .order_by(L.ledger_entries.c.id)).all()


def _lower_rho(conn, lid: int) -> None:
    """The second entry's query ρ lowered to 10⁻⁶ (its totals would shrink accordingly)."""
    r = _rows(conn, lid)[1]
    d = json.loads(r.entry)
    d["loss"]["workload"]["queries"][1]["rho"] = 1e-6
    conn.execute(L.ledger_entries.update().where(L.ledger_entries.c.id == r.id).values(entry=json.dumps(d)))


def _delete(pos: int) -> Callable:
    def tamper(conn, lid: int) -> None:
        conn.execute(L.ledger_entries.delete().where(L.ledger_entries.c.id == _rows(conn, lid)[pos].id))
    return tamper


def _swap_first_two(conn, lid: int) -> None:
    """Entries 1 and 2 change places (every column but the row id, which orders them, moves)."""
    a, b = _rows(conn, lid)[:2]
    cols = [c for c in L.ledger_entries.c.keys() if c not in ("id", "uid")]
    conn.execute(L.ledger_entries.update().where(L.ledger_entries.c.id == a.id).values(uid="tmp"))
    conn.execute(L.ledger_entries.update().where(L.ledger_entries.c.id == b.id)
                 .values(uid=a.uid, **{c: getattr(a, c) for c in cols}))
    conn.execute(L.ledger_entries.update().where(L.ledger_entries.c.id == a.id)
                 .values(uid=b.uid, **{c: getattr(b, c) for c in cols}))


def _edit_head(conn, lid: int) -> None:
    seal = json.loads(conn.execute(sa.select(L.ledgers.c.seal).where(L.ledgers.c.id == lid)).scalar_one())
    seal["head"] = ("0" if seal["head"][0] != "0" else "1") + seal["head"][1:]
    conn.execute(L.ledgers.update().where(L.ledgers.c.id == lid).values(seal=json.dumps(seal)))


#: Each change and what the refusal says (the first bad entry: its position and id).
TAMPERING = {
    "lowered rho": (_lower_rho, r"entry #2 of 3 \(id b\) does not match its seal"),
    "deleted middle entry": (_delete(1), r"entry #2 of 2 \(id c\) does not match its seal"),
    "deleted last entry": (_delete(2), r"entry #3 \(after entry #2, id b\) was removed"),
    "reordered pair": (_swap_first_two, r"entry #1 of 3 \(id b\) does not match its seal"),
    "edited head": (_edit_head, r"its seal \(the head kept with the ledger.*does not match"),
}


def _tamper(store: BoardStore, lid: int, how: str) -> None:
    with store.engine.begin() as conn:
        TAMPERING[how][0](conn, lid)


@pytest.mark.parametrize("how", TAMPERING)
def test_prdp_ledger_show_refuses_a_ledger_changed_in_the_store(url, how):
    led, lid = _named(url)
    code, out, err = cli("ledger", "show", "cbp", "--db", url)
    assert code == EXIT_OK and "over 3 release(s)" in out, err
    _tamper(led.store, lid, how)
    code, out, err = cli("ledger", "show", "cbp", "--db", url)
    assert code == EXIT_ERROR and out == ""
    assert "The ledger 'cbp' was changed in the store:" in err
    import re

    assert re.search(TAMPERING[how][1], err), err
    assert "Restore the database from a backup" in err
    code, _, err = cli("ledger", "show", "cbp", "--db", url, "--format", "json")
    assert code == EXIT_ERROR and "changed in the store" in err
    led.store.dispose()


@pytest.mark.parametrize("how", TAMPERING)
def test_a_run_appending_to_a_changed_ledger_is_refused_before_it_runs_and_adds_nothing(url, how):
    led, lid = _named(url)
    _tamper(led.store, lid, how)
    n = led.count(lid)
    with pytest.raises(C.TamperedLedger, match=TAMPERING[how][1]):
        led.check_named("cbp", FP)  # what prdp run --ledger asks before releasing anything
    with pytest.raises(C.TamperedLedger, match=TAMPERING[how][1]):
        led.append_named("cbp", [("d", _policy())], fingerprint=FP, table=_table())
    with pytest.raises(C.TamperedLedger, match=TAMPERING[how][1]):
        led.append_named("cbp", [("d", _policy())], fingerprint=FP, table=None)  # a table held by an engine
    with pytest.raises(C.TamperedLedger):  # moving it to new data does not launder it either
        led.append_named("cbp", [("d", _policy())], fingerprint=L.data_fingerprint({"sample": "u"}), table=None,
                         new_data=True)
    assert led.count(lid) == n
    led.store.dispose()


@pytest.mark.parametrize("how", TAMPERING)
def test_a_session_ledger_changed_in_the_store_is_refused_on_restore(url, tmp_path, how):
    ss = S.SessionStore(BoardStore(url), tmp_path / "uploads")
    key = S.new_key()
    lid = ss.ledger_id(key)
    for uid in "abc":
        ss.ledgers.append(lid, [(uid, _policy())], fingerprint=FP, table=_table())
    assert [s.uid for s in ss.ledgers.entries(lid)] == ["a", "b", "c"]
    _tamper(ss.store, lid, how)
    saved = ss.load(key)
    with pytest.raises(C.TamperedLedger, match="This session's privacy ledger was changed in the store") as err:
        ss.ledgers.entries(saved.ledger_id)  # what the app's restore reads first
    assert err.match(TAMPERING[how][1])
    with pytest.raises(C.TamperedLedger):  # and what the app's next release would append
        ss.ledgers.append(lid, [("d", _policy())], fingerprint=FP)
    ss.store.dispose()


def test_an_untouched_ledger_keeps_working_and_its_seal_follows_every_append(url):
    led, lid = _named(url)
    assert [s.uid for s in led.entries(lid)] == ["a", "b", "c"]
    code, out, err = cli("ledger", "show", "cbp", "--db", url)
    assert code == EXIT_OK and "Seal verified: 3 release(s), none changed, removed or reordered" in out, err
    assert led.seal(lid).entries == 3 and led.seal(lid).upgraded is None
    # moving to new data rewrites the data the ledger belongs to, which its seal covers: sealed again
    led.append_named("cbp", [("d", LedgerEntry("flat", "m", FlatLoss(0.5)))],
                     fingerprint=L.data_fingerprint({"sample": "u"}), table=None, new_data=True)
    assert [s.uid for s in led.entries(lid)] == ["a", "b", "c", "d"] and led.seal(lid).entries == 4
    empty = led.create()
    assert led.entries(empty) == [] and led.seal(empty).entries == 0
    with led.store.engine.begin() as conn:  # the data it belongs to, changed in the store
        conn.execute(L.ledgers.update().where(L.ledgers.c.id == lid).values(fingerprint=json.dumps(FP)))
    with pytest.raises(C.TamperedLedger, match="its seal .* does not match"):
        led.entries(lid)
    led.store.dispose()


def test_a_ledger_stored_before_sealing_is_sealed_once_by_the_upgrade_and_checked_from_then_on(url):
    if url.startswith("sqlite"):
        Path(sa.make_url(url).database).parent.mkdir(parents=True, exist_ok=True)
    eng = sa.create_engine(url)
    old_ledgers, old_entries = L.define_tables(sa.MetaData(), sealed=False)
    with eng.begin() as conn:  # a version-3 database, with a named ledger of two entries
        for step in range(3):
            B.MIGRATIONS[step](conn)
            conn.execute(sa.text("UPDATE schema_version SET version = :v"), {"v": step + 1})
        lid = conn.execute(old_ledgers.insert().values(name="old", fingerprint=B.canonical_json(FP), created_at=1.0)
                           ).inserted_primary_key[0]
        for i, uid in enumerate("xy"):
            conn.execute(old_entries.insert().values(ledger_id=lid, uid=uid, entry=L.pack_entry(_policy()),
                                                     fingerprint=B.canonical_json(FP), origin="v3", created_at=2.0 + i,
                                                     total_rho=0.35 * (i + 1)))
    eng.dispose()
    bs = BoardStore(url)
    assert bs.migrated_from == 3 and bs.version() == B.SCHEMA_VERSION == 7
    led = L.LedgerStore(bs)
    assert [s.uid for s in led.entries(lid)] == ["x", "y"]
    seal = led.seal(lid)
    assert (seal.entries, seal.upgraded) == (2, 2) and seal.upgraded_at is not None
    code, out, err = cli("ledger", "show", "old", "--db", url)
    assert code == EXIT_OK, err
    assert "releases #1–#2 were stored before ledgers were sealed and were sealed as found when the store was " \
           "upgraded" in out
    led.append_named("old", [("z", _policy())], fingerprint=FP, table=None)
    assert led.seal(lid).upgraded == 2 and led.seal(lid).entries == 3  # the upgrade stays recorded
    with bs.engine.begin() as conn:  # a removed seal is not a ledger from before sealing: it is never sealed again
        conn.execute(L.ledgers.update().where(L.ledgers.c.id == lid).values(seal=None))
    with pytest.raises(C.TamperedLedger, match="its seal .* was removed, so its 3 entries cannot be checked"):
        led.entries(lid)
    bs.dispose()
    assert BoardStore(url).migrated_from == B.SCHEMA_VERSION


def test_a_ledger_sealed_with_another_key_says_so(url, monkeypatch):
    led, lid = _named(url)
    monkeypatch.setenv(C.ENV_LEDGER_KEY, "another key, long enough")
    other = L.LedgerStore(led.store)
    with pytest.raises(C.TamperedLedger, match="sealed with another ledger key"):
        other.entries(lid)
    monkeypatch.setenv(C.ENV_LEDGER_KEY, "short")
    with pytest.raises(StoreError, match="PRDP_LEDGER_KEY is too short"):
        L.LedgerStore(led.store).entries(lid)
    led.store.dispose()


# ---------------------------------------------------------------------------
# Private files and folders
# ---------------------------------------------------------------------------


def _mode(p: Path) -> int:
    return stat.S_IMODE(os.stat(p).st_mode)


def test_a_new_store_is_private(tmp_path):
    db = tmp_path / "workshop" / "board.sqlite"
    bs = BoardStore(f"sqlite:///{db}")
    L.LedgerStore(bs).append_named("n", [("a", _policy())], fingerprint=FP, table=_table())
    assert _mode(db.parent) == 0o700 and _mode(db) == 0o600
    for side in ("board.sqlite-wal", "board.sqlite-shm"):
        assert (db.parent / side).exists() and _mode(db.parent / side) == 0o600
    assert _mode(db.parent / C.KEY_FILE) == 0o600
    bs.dispose()


def test_an_existing_store_with_looser_modes_is_tightened(tmp_path):
    folder = tmp_path / "workshop"
    url = f"sqlite:///{folder}/board.sqlite"
    bs = BoardStore(url)
    bs.submit(participant="p", name="n", config={}, summary={}, kind="k", dataset="d")
    for p in (folder / "board.sqlite", folder / "board.sqlite-wal"):
        os.chmod(p, 0o644)  # as a store created before this rule (or by hand) has it
    again = BoardStore(url)
    assert _mode(folder / "board.sqlite") == 0o600 and _mode(folder / "board.sqlite-wal") == 0o600
    bs.dispose()
    again.dispose()


def test_the_ledger_key_is_private_and_tightened(tmp_path):
    url = f"sqlite:///{tmp_path}/workshop/board.sqlite"
    led = L.LedgerStore(BoardStore(url))
    led.create()
    key = C.key_path(url)
    assert key == tmp_path / "workshop" / C.KEY_FILE and _mode(key) == 0o600
    os.chmod(key, 0o644)
    assert C.server_key(url) == led.key and _mode(key) == 0o600
    led.store.dispose()


def test_an_existing_uploads_folder_is_tightened(tmp_path):
    up = tmp_path / "data" / "uploads"
    up.mkdir(parents=True, mode=0o755)
    os.chmod(up, 0o755)
    loose = up / ("a" * 64)
    loose.write_bytes(b"id,v\n1,2\n")
    os.chmod(loose, 0o644)
    other = up / "notes.txt"  # not a name the store writes: left as it is
    other.write_text("x")
    os.chmod(other, 0o644)
    ss = S.SessionStore(BoardStore(f"sqlite:///{tmp_path}/workshop/board.sqlite"), up)
    ss.apply_retention()  # what the app and prdp app do when they open the store
    assert _mode(up) == 0o700 and _mode(loose) == 0o600 and _mode(other) == 0o644
    os.chmod(up, 0o755)
    sha = ss.put_upload(b"id,v\n1,3\n", "t.csv")
    assert _mode(up) == 0o700 and _mode(up / sha) == 0o600
    ss.store.dispose()


def test_the_duckdb_spill_folder_is_private(tmp_path, monkeypatch):
    from prdp_core.engines.duckdb_engine import DuckDBEngine

    data = tmp_path / "t.csv"
    data.write_text("id,v\n1,2\n2,3\n")
    spill = tmp_path / "spill"
    monkeypatch.setenv("PRDP_DUCKDB_TEMP_DIR", str(spill))
    DuckDBEngine.open(str(data))
    assert _mode(spill) == 0o700
    os.chmod(spill, 0o755)
    DuckDBEngine.open(str(data))
    assert _mode(spill) == 0o700
