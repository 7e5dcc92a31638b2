"""The recorded releases of a durable session in the workshop store (prdp_core.board.session_releases), on SQLite and
on a real PostgreSQL server: a stored release reads back with the same answers (types included), parameters, seed,
flags and delivered-loss distribution, its entries the restored ledger's; the size cap leaves out the parts kept
longest ago; hostile stored payloads (wrong types, unknown or missing keys, huge, not JSON) are refused with a
StoreError saying what is wrong; only the session's own browser writes them."""

from __future__ import annotations

import copy
import json
import math

import numpy as np
import pandas as pd
import pytest

from prdp_core.board import session_releases as SR
from prdp_core.board import sessions as S
from prdp_core.core.accounting import FlatLoss, LedgerEntry
from prdp_core.core.errors import AccessError, StoreError
from prdp_core.core.release import Release
from tests.postgres import postgres_server  # noqa: F401 - fixture
from tests.unit.test_durable_store import sessions, url  # noqa: F401 - fixtures (SQLite and PostgreSQL)

UIDS = ("a" * 32, "b" * 32)


def _entries() -> dict[str, LedgerEntry]:
    return {UIDS[0]: LedgerEntry("sum", "unit_splitting.gaussian", FlatLoss(0.25), seed=3),
            UIDS[1]: LedgerEntry("count", "unit_splitting.gaussian", FlatLoss(0.5), seed=3)}


def _release(entries: dict[str, LedgerEntry]) -> Release:
    answers = pd.DataFrame({"query": ["sum", "sum", "count"], "region": ["A", None, "=cmd"],
                            "estimate": [1.5, np.nan, -2.0], "n_records": [3, 4, 5],
                            "covered": [True, False, True], "level": pd.Series([1, "x", 2.5], dtype=object)})
    return Release(mechanism="unit_splitting.gaussian", answers=answers, measure="rho",
                   loss=np.array([0.25, 0.75, 0.75, 1.0]), entries=tuple(entries.values()),
                   params={"thresholds": {"sales": math.inf}, "delta": 1e-6, "grid": np.arange(3)}, seed=3,
                   secure=False, truth_included=True, extras={"bias": "biased by 1%", "private_x": np.zeros(2)})


def _payload(at: float = 1.0) -> tuple[str, Release]:
    rel = _release(_entries())
    text, dropped = SR.encode({"run": {"settings": "[1]", "at": at, "releases": [SR.release_record("r", rel, UIDS)]}})
    assert dropped == []
    return text, rel


def test_a_stored_release_reads_back_with_its_answers_parameters_flags_and_the_ledgers_entries(sessions):  # noqa: F811
    text, rel = _payload()
    key = S.new_key()
    sessions.save_releases(key, text, browser=S.browser_hash("me"))
    assert sessions.load_releases(key) == text and sessions.load_releases(S.new_key()) is None
    parts = SR.decode(sessions.load_releases(key))
    entries = _entries()
    ((label, back),) = SR.releases_of(parts["run"], entries)
    assert label == "r" and parts["run"]["settings"] == "[1]"
    pd.testing.assert_frame_equal(back.answers, rel.answers.assign(region=["A", np.nan, "=cmd"]))
    assert back.answers["n_records"].dtype == np.int64 and back.answers["covered"].dtype == bool
    assert back.params == {"thresholds": {"sales": math.inf}, "delta": 1e-6, "grid": [0, 1, 2]}
    assert (back.seed, back.secure, back.truth_included, back.measure) == (3, False, True, "rho")
    assert back.extras == {"bias": "biased by 1%"} and back.loss is None  # no per-record array is stored
    assert all(a is b for a, b in zip(back.entries, entries.values()))  # the restored ledger's entries
    x, y = back.loss_distribution.ecdf()
    x0, y0 = rel.distribution().ecdf()
    assert np.array_equal(x, x0) and np.array_equal(y, y0)
    sessions.save_releases(key, SR.encode({})[0], browser=S.browser_hash("me"))  # a later save replaces them
    assert SR.decode(sessions.load_releases(key)) == {}


def test_only_the_sessions_own_browser_saves_its_releases(sessions):  # noqa: F811
    key = S.new_key()
    sessions.ledger_id(key, browser=S.browser_hash("me"))
    with pytest.raises(AccessError):
        sessions.save_releases(key, _payload()[0], browser=S.browser_hash("someone else"))
    assert sessions.load_releases(key) is None


def test_a_release_whose_entries_are_not_in_the_restored_ledger_is_not_restored():
    parts = SR.decode(_payload()[0])
    entries = _entries()
    del entries[UIDS[1]]
    with pytest.raises(StoreError, match="not in the restored ledger"):
        SR.releases_of(parts["run"], entries)


def test_over_the_size_cap_the_parts_kept_longest_ago_are_left_out():
    rec = SR.release_record("r", _release(_entries()), UIDS)
    one = len(SR.encode({"a": {"settings": None, "at": 1.0, "releases": [rec]}})[0])
    parts = {p: {"settings": None, "at": at, "releases": [rec]} for p, at in (("new", 3.0), ("old", 1.0), ("mid", 2.0))}
    text, dropped = SR.encode(parts, limit=2 * one + 50)
    assert dropped == ["old"] and set(SR.decode(text)) == {"new", "mid"}
    text, dropped = SR.encode(parts, limit=10)
    assert dropped == ["old", "mid", "new"] and SR.decode(text) == {}


def test_an_answer_that_is_not_a_scalar_is_not_stored():
    rel = _release(_entries())
    bad = Release(**{**rel.__dict__, "answers": rel.answers.assign(level=[(1, 2), "x", 2.5])})
    with pytest.raises(StoreError, match="cannot be stored"):
        SR.release_record("r", bad, UIDS)


def _mutations():
    """(what, change to the decoded payload, words of the message)."""
    r = ("parts", "run", "releases", 0)

    def at(path, value):
        def change(d):
            obj = d
            for k in path[:-1]:
                obj = obj[k]
            obj[path[-1]] = value
        return change

    def add(path, key, value):
        def change(d):
            obj = d
            for k in path:
                obj = obj[k]
            obj[key] = value
        return change

    return [
        ("unknown top key", add((), "code", "import os"), "unknown or missing fields (code)"),
        ("unknown part key", add(("parts", "run"), "pickle", "gASV"), "unknown or missing fields (pickle)"),
        ("unknown release key", add(r, "loss", [1.0]), "unknown or missing fields (loss)"),
        ("missing release key", lambda d: d["parts"]["run"]["releases"][0].pop("uids"), "missing fields (uids)"),
        ("seed as text", at((*r, "seed"), "3"), "seed of release 1 of run is not a whole number"),
        ("secure as text", at((*r, "secure"), "yes"), "flag that is not true or false"),
        ("unknown measure", at((*r, "measure"), "delta"), "unknown loss measure"),
        ("uids not ids", at((*r, "uids"), [1, 2]), "does not name its ledger entries"),
        ("params a list", at((*r, "params"), [1]), "parameters of release 1 of run are not a record"),
        ("label too long", at((*r, "label"), "x" * 10_000), "not a text of at most"),
        ("column type", at((*r, "answers", "columns", 0, "type"), "pickle"), "has an unknown type"),
        ("cell of another type", at((*r, "answers", "rows", 0, 2), "1.5"), "not of its type (float)"),
        ("cell an object", at((*r, "answers", "rows", 0, 5), {"a": 1}), "not of its type (object)"),
        ("short row", at((*r, "answers", "rows", 0), [1]), "one value per column"),
        ("counts negative", at((*r, "delivered", "counts"), [-1, 1, 1]), "whole number ≥ 0"),
        ("bad part name", lambda d: d["parts"].update({"../x": d["parts"]["run"]}), "is not one the app names"),
        ("other format", at(("format",), 99), "another form"),
    ]


@pytest.mark.parametrize("what,change,words", _mutations(), ids=[m[0] for m in _mutations()])
def test_hostile_stored_releases_are_refused_saying_what_is_wrong(what, change, words):
    d = json.loads(_payload()[0])
    change(d)
    with pytest.raises(StoreError) as err:
        SR.decode(json.dumps(d))
    assert words in err.value.message, err.value.message
    assert "damaged" in err.value.message and "Its ledger is kept" in (err.value.hint or "")


@pytest.mark.parametrize("text,words", [("{not json", "not JSON"), ("[" * 100_000 + "]" * 100_000, "not JSON"),
                                        ("[]", "not a record"), ("x" * (SR.MAX_RELEASES_JSON + 1), "larger than")])
def test_stored_releases_that_are_not_json_or_too_large_are_refused(text, words):
    with pytest.raises(StoreError, match=words):
        SR.decode(text)


def test_the_store_refuses_a_payload_over_the_cap(sessions):  # noqa: F811
    with pytest.raises(StoreError, match="larger than"):
        sessions.save_releases(S.new_key(), json.dumps({"x": "y" * SR.MAX_RELEASES_JSON}))


def test_decoding_leaves_the_stored_form_unchanged():
    text = _payload()[0]
    before = json.loads(text)
    SR.decode(text)
    assert copy.deepcopy(before) == json.loads(text)
