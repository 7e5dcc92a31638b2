"""The facilitator's pin of the workshop dataset: a sample, or a table of the data folder with its column roles
(id, owner, measures) and a typed public shift for each measure with negative values — the fixes of the Data page
(:func:`prdp_core.data.prepare_dataset`'s ``negative="shift"`` with ``shift_by``), stored with the pin
(:func:`prdp_core.board.workshop.file_pin`) so that every participant gets the same prepared table.

A pin that fails (a file the checks refuse, a measure left negative) says why right beside the *Pin* button.

Keys in ``st.session_state``: ``board_pin_kind``, ``board_pin_sample``, ``board_pin_n``, ``board_pin_seed``,
``board_pin_file``; per file (:func:`_key`): ``board_pin_id``, ``board_pin_owner``, ``board_pin_measures`` and
``board_pin_shift`` of each measure; ``board_pin_error`` (why the last pin failed, shown beside the button).
"""

from __future__ import annotations

from typing import Any

import streamlit as st

import prdp_core
from prdp_core.board import workshop as W
from prdp_core.core.errors import DataError, PrdpError
from prdp_core.data.dataset import Schema, check_table, guess_schema, require_shifts
from prdp_core.data.schema import numeric_columns

from . import board as ub
from . import review
from .common import md_escape

ERROR = "board_pin_error"
#: What an id or owner selector shows for "none".
NONE_LABEL = "(none)"


def _key(what: str, name: str, measure: str = "") -> str:
    """The session key of a role or shift control of the data-folder file ``name``."""
    return f"board_pin_{what}_{name}" + (f"_{measure}" if measure else "")


def controls(where: Any) -> None:
    """The pin's controls in the container ``where``: what to pin and, for a data-folder file, its roles and the
    public shift of each measure with negative values; then the *Pin* button and, beside it, why the last pin
    failed."""
    ss = st.session_state
    c1, c2, c3, c4 = where.columns([1, 2, 1, 1])
    kind = c1.radio("Pin", ["none", "sample", "file"], key="board_pin_kind",
                    format_func={"none": "nothing", "sample": "a sample", "file": "a data-folder file"}.get)
    if kind == "sample":
        c2.selectbox("Sample", prdp_core.data.samples.names(), key="board_pin_sample",
                     format_func=lambda n: prdp_core.data.samples.info(n).title)
        c3.number_input("Records (0 = default)", min_value=0, step=1000, key="board_pin_n")
        c4.number_input("Seed", min_value=0, step=1, key="board_pin_seed")
    elif kind == "file":
        files = W.data_files(W.data_dir())
        c2.selectbox("File", files, key="board_pin_file")
        c3.caption(f"Data folder: {md_escape(W.data_dir())} ({len(files)} table(s)).")
        if ss.get("board_pin_file"):
            _roles(where, str(ss["board_pin_file"]))
    b1, b2 = where.columns([1, 4])
    b1.button("Pin", key="board_pin", on_click=on_pin)
    if ss.get(ERROR):
        b2.error(ss[ERROR], icon=":material/error:")


def _roles(where: Any, name: str) -> None:
    """The role selectors of a data-folder file and a shift input for each chosen measure with negative values."""
    ss = st.session_state
    try:
        raw, _ = ub.workshop_raw(name)
        guess = guess_schema(raw)
    except PrdpError as err:
        where.error(f"**{err.title}.** {md_escape(err)}")
        return
    cols = [str(c) for c in raw.columns]
    can_measure = set(numeric_columns(raw)) | set(guess.measures)
    numeric = [c for c in cols if c in can_measure]
    r1, r2, r3 = where.columns([1, 1, 2])
    label = {None: NONE_LABEL}
    ss.setdefault(_key("id", name), guess.id_col)
    ss.setdefault(_key("owner", name), guess.owner_col)
    ss.setdefault(_key("measures", name), list(guess.measures))
    r1.selectbox("Id column", [None, *cols], key=_key("id", name), format_func=lambda c: label.get(c, c),
                 help="(none): each row is a record of its own, numbered.")
    r2.selectbox("Owner column", [None, *cols], key=_key("owner", name), format_func=lambda c: label.get(c, c),
                 help="Who owns several records (a firm, a household).")
    r3.multiselect("Measures", numeric, key=_key("measures", name))
    try:
        negative = check_table(raw, _schema(name, guess)).negative
    except PrdpError as err:
        where.error(f"**{err.title}.** {md_escape(err)}")
        return
    if negative:
        where.caption("Measures with negative values: per-record policies need non-negative measures. Type a "
                      "**public** constant for each (a documented lower bound with its sign reversed): it is added to "
                      "every value, so sums and thresholds are on the shifted scale.")
        shifts = where.columns(min(len(negative), 4))
        for i, (m, count) in enumerate(negative.items()):
            text = f"Shift of {md_escape(m)} ({review.count(count, 'negative')})"  # a column name: shown, not rendered
            shifts[i % len(shifts)].number_input(text, min_value=0.0, value=None, key=_key("shift", name, m),
                                                 placeholder="public constant")


def _schema(name: str, guess: Schema) -> Schema:
    """The roles chosen for the file ``name``; the other columns keep their guessed group role (``guess``)."""
    ss = st.session_state
    id_col, owner = ss.get(_key("id", name)), ss.get(_key("owner", name))
    measures = tuple(ss.get(_key("measures", name)) or ())
    groups = tuple(g for g in guess.groups if g not in {id_col, owner, *measures})
    return Schema(id_col=id_col, measures=measures, groups=groups, owner_col=owner)


def _file_pin(name: str) -> dict[str, Any]:
    """The pin of the data-folder file ``name`` with the roles and shifts chosen; the table is prepared with them
    (it passes the checks before everyone is sent to it). DataError when a measure is left negative."""
    ss = st.session_state
    raw, _ = ub.workshop_raw(name)
    schema = _schema(name, guess_schema(raw))
    negative = check_table(raw, schema).negative
    shifts = {m: float(ss[_key("shift", name, m)]) for m in negative if ss.get(_key("shift", name, m)) is not None}
    require_shifts(negative, shifts)
    options = {"negative": "shift", "shift_by": shifts} if shifts else {}
    ub.workshop_file(name, schema, options)
    return W.file_pin(name, schema, options)


def on_pin() -> None:
    """Callback of *Pin*: pin the chosen sample or data-folder file (with its roles and shifts), or unpin."""
    ss = st.session_state
    ss.pop(ERROR, None)
    how = ss.get("board_pin_kind", "none")
    pin: dict[str, Any] | None = None
    try:
        if how == "sample":
            n = int(ss.get("board_pin_n") or 0)
            pin = {"sample": ss.get("board_pin_sample"), "n": n or None, "seed": int(ss.get("board_pin_seed") or 0)}
        elif how == "file":
            if not ss.get("board_pin_file"):
                raise DataError("The data folder has no table to pin.", hint=f"Put one in {W.data_dir()}.")
            pin = _file_pin(str(ss["board_pin_file"]))
        key = ub.facilitator_key()
        ub.store().pin_dataset(pin, key=key)
    except PrdpError as err:
        ss[ERROR] = f"**{err.title}.** {md_escape(err)}"  # messages may quote a file's or a column's name
        return
    ub.say("success", f"Workshop dataset: {md_escape(W.describe_pin(pin))}." if pin
           else "No workshop dataset is pinned.")
