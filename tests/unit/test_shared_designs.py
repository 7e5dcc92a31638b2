"""Short share links and the facilitator's unlock kept for a session, in the workshop store (layout version 7), on
SQLite and on a real PostgreSQL server (tests/postgres.py): a design stored once under a short random id and read
back as shared input (the id's form, the stored size and the study import's allow-lists checked), the migration
of a version-6 database, and an unlock that only its session in its browser gets back, under the same key."""

from __future__ import annotations

import json

import pytest
import sqlalchemy as sa

from prdp_core.board import facilitator_unlocks as U
from prdp_core.board import links as L
from prdp_core.board import sessions as S
from prdp_core.board import shared_designs as D
from prdp_core.board import store as B
from prdp_core.board.store import BoardStore
from prdp_core.core.errors import AccessError, ConfigError
from tests.postgres import postgres_server  # noqa: F401 - fixture

KEY = "facilitator passphrase"
DESIGN = {"version": 1, "seed": 0, "mode": "teaching", "data": {"sample": "cbp_like", "n": 4000, "seed": 1},
          "policy": {"thresholds": {"EMP": 42}},
          "workload": {"queries": [{"kind": "count", "group_by": ["STATE"], "rho": 0.5}]},
          "mechanisms": [{"kind": "unit_splitting"}]}


@pytest.fixture(params=["sqlite", pytest.param("postgresql", marks=pytest.mark.xdist_group("postgres"))])
def url(request, tmp_path):
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path}/workshop/board.sqlite"
    return request.getfixturevalue("postgres_server").new_database()


@pytest.fixture
def store(url):
    s = BoardStore(url, facilitator_key=KEY)
    yield s
    s.dispose()


def test_a_design_is_stored_once_under_a_short_random_id_and_read_back(store):
    long = L.encode(DESIGN)
    short = D.put(store, long)
    assert D.valid_id(short) and len(short) == 16 and len(long) > 5 * len(short)
    assert D.put(store, long) == short  # the same design: the same id, one row
    other = D.put(store, L.encode({**DESIGN, "policy": {"thresholds": {"EMP": 43}}}))
    assert other != short
    with store.engine.connect() as conn:
        assert conn.execute(sa.text("SELECT COUNT(*) FROM shared_designs")).scalar() == 2
    study = D.get(store, short)
    assert study.policy["thresholds"]["EMP"] == 42 and study.data.n == 4000
    assert L.decode(long).to_dict() == study.to_dict()  # the short form opens the long form's design
    assert "mode" not in json.loads(_stored(store, short))  # a link carries no mode, as the long form


def _stored(store: BoardStore, design_id: str) -> str:
    with store.engine.connect() as conn:
        return conn.execute(sa.text("SELECT config FROM shared_designs WHERE id = :i"), {"i": design_id}).scalar()


@pytest.mark.parametrize("bad", ["", "short", "../../etc/passwd", "' OR '1'='1' --x", "A" * 17, None, 12345,
                                 "ĀĀĀĀĀĀĀĀĀĀĀĀĀĀĀĀ"])
def test_an_id_of_another_form_is_refused_before_any_look_up(store, bad):
    with pytest.raises(ConfigError, match="damaged"):
        D.get(store, bad)


def test_an_unknown_id_says_the_server_has_no_such_design(store):
    with pytest.raises(ConfigError, match="no design under the link's id"):
        D.get(store, "A" * 16)


def test_stored_designs_are_shared_input_checked_like_the_long_form(store):
    """A row written behind the app's back: damaged JSON, a list, unknown keys, a bad value, an oversized text —
    each is refused with a ConfigError, never evaluated."""
    rows = {"AAAAAAAAAAAAAAA1": "{not json", "AAAAAAAAAAAAAAA2": "[1, 2]",
            "AAAAAAAAAAAAAAA3": json.dumps({**DESIGN, "__class__": "os.system"}),
            "AAAAAAAAAAAAAAA4": json.dumps({**DESIGN, "policy": {"thresholds": {"EMP": -1}}}),
            "AAAAAAAAAAAAAAA5": json.dumps({**DESIGN, "title": "x" * (D.MAX_DESIGN_JSON + 1)}),
            "AAAAAAAAAAAAAAA6": "[" * 100_001 + "]" * 100_001}
    with store.engine.begin() as conn:
        for i, (did, text) in enumerate(rows.items()):
            conn.execute(sa.text("INSERT INTO shared_designs (id, digest, config, created_at) VALUES (:i, :d, :c, 1)"),
                         {"i": did, "d": f"{i:064d}", "c": text})
    for did, says in zip(rows, ["damaged", "not a study config", "__class__", "policy.thresholds.EMP", "larger than",
                                "larger than"]):
        with pytest.raises(ConfigError, match=says):
            D.get(store, did)


def test_what_cannot_be_a_design_is_not_stored(store):
    with pytest.raises(ConfigError, match="damaged"):
        D.put(store, "not*base64")
    with pytest.raises(ConfigError, match="policy.thresholds.EMP"):
        D.put(store, L.encode({**DESIGN, "policy": {"thresholds": {"EMP": -1}}}))
    with pytest.raises(ConfigError, match="unpacks to more than"):
        D.put(store, L.encode({**DESIGN, "seed": 1, "policy": {"thresholds": {"EMP": 42, "X" * 300_000: 1}}}))
    with store.engine.connect() as conn:
        assert conn.execute(sa.text("SELECT COUNT(*) FROM shared_designs")).scalar() == 0


def test_a_version_6_database_gets_the_tables_of_version_7(url):
    if url.startswith("sqlite"):
        from pathlib import Path

        Path(sa.make_url(url).database).parent.mkdir(parents=True, exist_ok=True)
    eng = sa.create_engine(url)
    with eng.begin() as conn:
        for step in range(6):
            B.MIGRATIONS[step](conn)
            conn.execute(sa.text("UPDATE schema_version SET version = :v"), {"v": step + 1})
        assert not sa.inspect(conn).has_table("shared_designs")
    eng.dispose()
    bs = BoardStore(url, facilitator_key=KEY)
    assert bs.migrated_from == 6 and bs.version() == B.SCHEMA_VERSION == 7
    assert {"shared_designs", "facilitator_unlocks"} <= set(sa.inspect(bs.engine).get_table_names())
    assert D.get(bs, D.put(bs, L.encode(DESIGN))).policy["thresholds"]["EMP"] == 42
    bs.dispose()


def test_an_unlock_is_kept_for_its_session_in_its_browser_under_the_same_key(url):
    bs = BoardStore(url, facilitator_key=KEY)
    session, mine, other = S.new_key(), S.browser_hash(S.new_browser_secret()), S.browser_hash("x" * 32)
    assert U.recall(bs, session, mine) is None
    with pytest.raises(AccessError):
        U.remember(bs, "wrong key", session, mine)
    U.remember(bs, KEY, session, mine)
    assert U.recall(bs, session, mine) == KEY  # a reload of the session in its browser
    assert U.recall(bs, session, other) is None  # the address opened in another browser
    assert U.recall(bs, S.new_key(), mine) is None and U.recall(bs, "not a key", mine) is None
    with bs.engine.connect() as conn:
        assert KEY not in json.dumps([list(r) for r in conn.execute(sa.text("SELECT * FROM facilitator_unlocks"))])
    bs.dispose()
    assert U.recall(BoardStore(url, facilitator_key="another key"), session, mine) is None  # a new key forgets
    assert U.recall(BoardStore(url), session, mine) is None  # facilitator actions off
    again = BoardStore(url, facilitator_key=KEY)
    assert U.recall(again, session, mine) == KEY
    U.forget(again, session)  # locked
    assert U.recall(again, session, mine) is None
    again.dispose()
