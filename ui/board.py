"""Board page helpers: the server's board store, the participant's code, the workshop dataset,
submissions, loading a design into the session, and the facilitator's actions.

Keys in ``st.session_state``:

* ``board_participant`` – the participant's random code: their identity on the board for this
  session (stored hashed with their entries; typing it again after a reconnect restores it);
* ``board_key`` – the facilitator key typed in this session, once it was checked (or recalled: an unlock is kept
  for the durable session in its browser, :mod:`prdp_core.board.facilitator_unlocks`); ``board_locked`` – the
  facilitator locked this session again;
* ``board_msg`` – the outcome of the last action, shown by :func:`message`;
* ``board_export`` – the last export built (CSV and HTML bytes).

The store (:func:`store`, from :mod:`ui.board_store`) and the workshop's tables are server resources
(``st.cache_resource``): one database engine, and each table of the data folder loaded once for every session.
"""

from __future__ import annotations

import json
from dataclasses import replace
from typing import Any, Mapping

import streamlit as st

from prdp_core.board import facilitator_unlocks as U
from prdp_core.board import summary as S
from prdp_core.board import workshop as W
from prdp_core.board.store import BoardStore, Entry, new_participant_code
from prdp_core.core.errors import AccessError, DataError, PrdpError, StoreError
from prdp_core.core.provenance import with_part_sources
from prdp_core.data.dataset import Schema
from prdp_core.study.config import parse_config

from . import state, study_export, study_import
from .board_store import store
from .common import md_escape

PART_LABELS = {"thresholds": "Splitting thresholds (Policy designer)", "budget": "Budget function",
               "specification": "Personalized DP specification", "tiers": "Analyst tiers"}


# ---------------------------------------------------------------------------
# Server resources
# ---------------------------------------------------------------------------


@st.cache_resource(show_spinner="Reading the workshop table…", max_entries=4)
def _workshop_raw(path: str, size: int, mtime: int, name: str) -> tuple[Any, str]:
    return W.read_file(W.data_dir(), name)


@st.cache_resource(show_spinner="Preparing the workshop table…", max_entries=8)
def _workshop_file(path: str, size: int, mtime: int, name: str, schema_json: str, options_json: str
                   ) -> W.WorkshopFile:
    schema = json.loads(schema_json)
    return W.load_file(W.data_dir(), name, None if schema is None else Schema.from_dict(schema),
                       json.loads(options_json), raw=_workshop_raw(path, size, mtime, name))


def workshop_raw(name: str) -> tuple[Any, str]:
    """A table of the data folder as read (before roles and fixes) and its content hash, read once per server (and
    again when the file changes)."""
    return _workshop_raw(*W.file_stamp(W.data_dir(), name), name)


def workshop_file(name: str, schema: Schema | None = None, options: Mapping[str, Any] | None = None
                  ) -> W.WorkshopFile:
    """A table of the data folder with the column roles ``schema`` (default: guessed) and the fixes ``options``,
    prepared once per server (and again when the file changes)."""
    path, size, mtime = W.file_stamp(W.data_dir(), name)
    return _workshop_file(path, size, mtime, name, json.dumps(None if schema is None else schema.to_dict()),
                          json.dumps(dict(options or {}), sort_keys=True))


# ---------------------------------------------------------------------------
# Participant and mode
# ---------------------------------------------------------------------------


def participant() -> str:
    """This session's participant code (created on first use)."""
    ss = st.session_state
    if not ss.get("board_participant"):
        ss["board_participant"] = new_participant_code()
    return str(ss["board_participant"])


def on_use_code() -> None:
    """Callback: adopt an earlier participant code (after a reconnect), to withdraw its entries."""
    ss = st.session_state
    code = str(ss.get("board_code_input") or "").strip()
    if not (6 <= len(code) <= 64) or not all(c.isalnum() or c in "-_" for c in code):
        say("error", "That is not a participant code (6–64 letters, digits, - or _).")
        return
    ss["board_participant"] = code
    ss["board_code_input"] = ""
    say("success", "Your earlier participant code is in use: its entries are yours again.")


def review_mode(settings: Mapping[str, Any]) -> bool:
    """The board shows public quantities only when the facilitator set review mode or this session
    is in review mode: the stricter of the two wins."""
    return settings.get("mode") == "review" or not state.teaching()


def mine(entries: list[Entry]) -> set[int]:
    code = participant()
    return {e.id for e in entries if e.owned_by(code)}


def say(kind: str, text: str) -> None:
    """Keep the outcome of a board action (``kind``: error, success or info), shown by :func:`message`."""
    st.session_state["board_msg"] = {"kind": kind, "text": text}


def message() -> None:
    """Show the outcome of the last board action."""
    m = st.session_state.get("board_msg")
    if m:
        {"error": st.error, "success": st.success, "info": st.info}[m["kind"]](m["text"])


def _fail(err: PrdpError) -> None:
    say("error", f"**{err.title}.** {md_escape(err)}")  # messages may quote names, files or a link's values


# ---------------------------------------------------------------------------
# The board's table
# ---------------------------------------------------------------------------

#: How the board's numbers are written, by column.
FORMATS = {"ε at δ, base": "{:.4g}", "ε at δ, p99 record": "{:.4g}", "share above base": "{:.2%}",
           "median rel. error": "{:.2%}"}
#: Widths (pixels) of the compact table's columns: together they fit a 1280-pixel screen beside the sidebar.
WIDTHS = {"#": 40, "name": 170, "yours": 50, "kind": 110, "ε at δ, base": 90, "ε at δ, p99 record": 90,
          "median rel. error": 90, "error measure": 150}


def styled(frame: Any) -> Any:
    """A board table with its numbers formatted (missing: –)."""
    return frame.style.format({k: v for k, v in FORMATS.items() if k in frame.columns}, na_rep="–")


def table_columns(frame: Any) -> dict[str, Any]:
    """The compact table's column settings: fixed widths (long names are cut on screen, whole in *Details*)."""
    cfg: dict[str, Any] = {c: st.column_config.Column(c, width=w) for c, w in WIDTHS.items() if c in frame.columns}
    if "yours" in frame.columns:
        cfg["yours"] = st.column_config.CheckboxColumn("yours", help="submitted by you", width=WIDTHS["yours"])
    return cfg


def extreme_note(entry: Any, review: bool) -> str | None:
    """Plain-language guidance beside an entry's largest record loss when it is extreme
    (:func:`prdp_core.core.interpret.loss_guidance`; a pure ε counts as the ρ = ε²/2 it implies); None in review
    mode (the records' losses are not shown there) or when the largest loss is moderate."""
    from prdp_core.core.interpret import loss_guidance

    if review:
        return None
    s = getattr(entry, "summary", {}) or {}
    worst = (s.get("records") or {}).get("max")
    if worst is None:
        return None
    rho = float(worst) if s.get("unit", "rho") == "rho" else float(worst) ** 2 / 2
    return loss_guidance(rho)


def details(full: Any, entry_id: int) -> Any:
    """One entry's row of the full board table as a two-column table (field, value), numbers formatted."""
    import pandas as pd

    row = full[full["#"] == entry_id].iloc[0]
    out = []
    for col, v in row.items():
        if v is None or (isinstance(v, float) and v != v):
            text = "–"
        elif col in FORMATS and isinstance(v, (int, float)):
            text = FORMATS[col].format(v)
        else:
            text = str(v)
        out.append({"field": str(col), "value": text})
    return pd.DataFrame(out, columns=["field", "value"])


# ---------------------------------------------------------------------------
# The workshop dataset and designs
# ---------------------------------------------------------------------------


def uses_pin(pin: Mapping[str, Any]) -> bool:
    """Whether the session's active dataset is the pinned workshop dataset."""
    active = W.pin_of_source(state.source())
    if active is None:
        return False
    norm = lambda p: ({**p, "n": p.get("n") or None, "seed": int(p.get("seed", 0) or 0)} if "sample" in p  # noqa: E731
                      else {"file": p["file"], "prepare": dict(p.get("prepare") or {})})
    return norm(active) == norm(pin)


def on_use_workshop_dataset() -> None:
    """Callback: make the pinned workshop dataset the session's active dataset."""
    try:
        pin = store().settings()["dataset"]
        if not pin:
            raise DataError("No workshop dataset is pinned.")
        use_pinned(pin)
        from .data import describe  # no record count in review mode

        say("success", f"The workshop dataset is active: {md_escape(describe(state.dataset()))}.")
    except PrdpError as err:
        _fail(err)


def use_pinned(pin: Mapping[str, Any]) -> None:
    """Make a pinned dataset active (and the Data page's role editor show it)."""
    from . import data as udata

    if "sample" in pin:
        n, seed = pin.get("n"), int(pin.get("seed", 0) or 0)
        state.set_dataset(state.sample_dataset(pin["sample"], n, seed),  # asks the memory guard first
                          {"kind": "sample", "name": pin["sample"], "n": n, "seed": seed})
        udata.raw_from_sample(pin["sample"], n, seed)
        return
    _use_file(workshop_file(pin["file"], *W.pin_roles(pin)))


def _use_file(f: W.WorkshopFile) -> None:
    """A data-folder table, prepared with its roles and fixes, as the active dataset."""
    import uuid

    ds, src = f.dataset, dict(f.source)
    # the roles of the file's columns: an id generated from the row number is no column of it (as for an upload)
    roles = ds.schema if ds.schema.id_col in set(map(str, f.raw.columns)) else replace(ds.schema, id_col=None)
    src["schema"] = roles.to_dict()
    state.set_dataset(ds, src)
    st.session_state["raw"] = {"df": f.raw, "name": f.name, "schema": roles,
                               "source": {"kind": "file", "filename": f.name, "shared": f.sha256},
                               "id": uuid.uuid4().hex[:8]}


def ensure_data(data: Mapping[str, Any]) -> None:
    """Before a design that reads a file is loaded: make that file the active dataset when the
    server's data folder has it; say so when the server does not have it."""
    if "path" not in data or data.get("engine", "memory") != "memory":
        return  # samples, and large datasets of the data folder (read in place): the study import loads them
    name = str(data["path"])
    src = state.source()
    if src.get("kind") == "file" and src.get("filename") == name and not src.get("shared"):
        return  # the participant's own upload of that file: the import checks its roles
    if name not in W.data_files(W.data_dir()):
        raise DataError(f"This design reads the file '{name}', which this server does not have.",
                        hint="Upload that file on the Data page (same name), then open the link or load the "
                             "policy again.")
    _use_file(workshop_file(name, *W.pin_roles(data)))


def load_design(config: Mapping[str, Any]) -> list[str]:
    """Load a design (a study config's policy parts) into this session; returns the import's notes.

    On the active dataset the design's parts replace the session's parts of the same kind and the
    other pages keep theirs; a design on another dataset is loaded as a whole study. The session
    keeps its mode and its privacy ledger. Raises PrdpError, leaving the session unchanged."""
    cfg = parse_config(dict(config)).to_dict()  # validated before anything changes
    cfg["mode"] = st.session_state.get("mode", "teaching")
    ensure_data(cfg["data"])
    current = study_export.export_state()
    same = parse_config(current).data == parse_config(cfg).data
    if not same:
        return study_import.import_state(cfg)
    merged = dict(current)
    # the design's parts come with their sources: typed thresholds never take the reader's "computed from the data"
    merged["policy"] = with_part_sources(current.get("policy", {}), cfg.get("policy", {}))
    if "thresholds" in cfg.get("policy", {}):
        merged["workload"] = cfg.get("workload")
    kinds = {m["kind"] for m in cfg.get("mechanisms", [])}
    merged["mechanisms"] = [m for m in current.get("mechanisms", []) if m["kind"] not in kinds] + \
        list(cfg.get("mechanisms", []))
    merged["seed"] = cfg.get("seed", current.get("seed", 0))
    return study_import.import_state(merged)


# ---------------------------------------------------------------------------
# Participants' actions
# ---------------------------------------------------------------------------


def parts_available() -> list[str]:
    """The policy parts of this session that can be submitted."""
    try:
        return S.policy_parts(study_export.export_study())
    except PrdpError:
        return []


def on_submit() -> None:
    """Callback: summarise the chosen policy of this session on the active dataset and submit it."""
    ss = st.session_state
    try:
        bs = store()
        study = S.restrict(study_export.export_study(), ss.get("board_part"))
        settings = bs.settings()
        pin = settings["dataset"]
        if pin and not W.matches_pin(study.data.to_dict(), pin):
            raise StoreError(f"The facilitator pinned the workshop dataset ({W.describe_pin(pin)}); your design is on "
                             f"{study.data.describe()}.",
                             hint="Press 'Use the workshop dataset', design your policy on it, then submit.")
        with st.spinner("Computing the policy's summary…"):  # error figures: teaching simulations, never in review
            summary = S.summarise(study, state.dataset(), teaching=not review_mode(settings))
        entry, created = bs.submit(participant=participant(), name=ss.get("board_name", ""),
                                   rationale=ss.get("board_rationale", ""), config=study.to_dict(), summary=summary,
                                   kind=summary["kind"], dataset=study.data.describe())
    except PrdpError as err:
        _fail(err)
        return
    if created:
        say("success", f"Submitted **#{entry.id} {md_escape(entry.name)}** ({entry.kind}) to the board.")
    else:
        say("info", f"This policy is already on the board as **#{entry.id} {md_escape(entry.name)}**.")


def _picked() -> int | None:
    v = st.session_state.get("board_pick")
    return None if v is None else int(v)


def on_withdraw() -> None:
    """Callback: withdraw the picked entry (the store refuses someone else's)."""
    eid = _picked()
    if eid is None:
        return
    try:
        store().withdraw(eid, participant())
    except PrdpError as err:
        _fail(err)
        return
    st.session_state.pop("board_pick", None)
    say("success", f"Entry #{eid} was withdrawn.")


def on_load() -> None:
    """Callback: load the picked entry's design into this session."""
    eid = _picked()
    if eid is None:
        return
    try:
        entry = store().entry(eid)
        notes = load_design(entry.config)
    except PrdpError as err:
        _fail(err)
        return
    page = {"thresholds": "Policy designer", "budget": "Budget functions", "specification": "Personalized DP",
            "tiers": "Analyst tiers"}.get(entry.summary.get("part", ""), "Study")
    extra = "".join(f" {md_escape(n)}" for n in notes)
    say("success", f"Loaded **#{entry.id} {md_escape(entry.name)}** into your session: open the **{page}** "
                    f"page.{extra}")


# ---------------------------------------------------------------------------
# The facilitator
# ---------------------------------------------------------------------------


def facilitator_key() -> str | None:
    """The facilitator key this session unlocked with, if it still matches; after a reload (or a reconnect) of a
    durable session unlocked in this browser, the key that unlock was made with (:func:`_recalled`)."""
    k = st.session_state.get("board_key")
    if k and store().is_facilitator(k):
        return str(k)
    k = _recalled()
    if k is not None:
        st.session_state["board_key"] = k
    return k


def _recalled() -> str | None:
    """The facilitator key kept for this durable session in this browser
    (:func:`prdp_core.board.facilitator_unlocks.recall`), or None (also when the store cannot say)."""
    from . import durable

    browser = durable.browser()
    if browser is None or st.session_state.get("board_locked"):
        return None
    try:
        return U.recall(store(), durable.key(), browser)
    except PrdpError:
        return None


def on_unlock() -> None:
    """Callback: check the typed facilitator key; it unlocks this session, and stays unlocked when the session is
    reloaded in this browser (kept in the store for its durable session)."""
    from . import durable

    ss = st.session_state
    typed = str(ss.get("board_key_input") or "")
    ss["board_key_input"] = ""
    try:
        bs = store()
    except PrdpError as err:
        _fail(err)
        return
    if not bs.is_facilitator(typed):
        _fail(AccessError("That is not the facilitator key."))
        return
    ss["board_key"] = typed
    ss.pop("board_locked", None)
    browser, key = durable.browser(), durable.key()
    try:
        if browser is None or key is None or ss.get("durable_readonly"):
            raise StoreError("this session is not saved.")
        U.remember(bs, typed, key, browser)
    except PrdpError as err:
        say("success", "Facilitator actions unlocked for this session, but not kept for a reload: "
                       f"{md_escape(err.message)}")
        return
    say("success", "Facilitator actions unlocked for this session (a reload in this browser keeps them unlocked).")


def on_lock() -> None:
    """Callback: lock the facilitator actions again (also for a reload of this session)."""
    from . import durable

    ss = st.session_state
    ss.pop("board_key", None)
    ss.pop("board_export", None)
    ss["board_locked"] = True
    try:
        U.forget(store(), durable.key())
    except PrdpError as err:
        say("error", f"Locked here, but the store still keeps the unlock for a reload: {md_escape(err.message)}")


def _facilitator(action: Any, done: str) -> None:
    try:
        action(store(), st.session_state.get("board_key"))
    except PrdpError as err:
        _fail(err)
        return
    st.session_state.pop("board_export", None)
    say("success", done)


def on_settings() -> None:
    ss = st.session_state

    def act(bs: BoardStore, key: str | None) -> None:
        bs.set_mode(ss.get("board_set_mode", "teaching"), key=key)
        bs.set_delta(float(ss.get("board_set_delta", 1e-6)), key=key)

    _facilitator(act, "Board settings saved.")


def on_clear() -> None:
    if not st.session_state.get("board_clear_confirm"):
        say("error", "Tick the box to confirm: clearing deletes every entry of the board.")
        return
    st.session_state["board_clear_confirm"] = False
    _facilitator(lambda bs, key: bs.clear(key=key), "The board was cleared.")


def on_archive() -> None:
    title = st.session_state.get("board_archive_title") or "Workshop board"
    _facilitator(lambda bs, key: bs.archive(key=key, title=title),
                 "The board was archived (its entries are kept) and a new, empty board is open.")


def on_remove() -> None:
    eid = _picked()
    if eid is not None:
        _facilitator(lambda bs, key: bs.remove(eid, key=key), f"Entry #{eid} was removed.")


def on_export(review: bool) -> None:
    """Callback: build the board's CSV and HTML report (the board's mode decides what they hold)."""
    from prdp_core.review.review_boundary import produce

    try:
        bs = store()
        if facilitator_key() is None:
            raise AccessError("Exporting the board is a facilitator action.")
        settings = bs.settings()
        entries = bs.entries()
        delta = float(settings["delta"])
        st.session_state["board_export"] = {
            "csv": produce("board.csv", entries, teaching=not review, delta=delta),
            "html": produce("board.html", entries, teaching=not review, delta=delta,
                            dataset=W.describe_pin(settings["dataset"])), "review": review, "n": len(entries)}
    except PrdpError as err:
        _fail(err)
