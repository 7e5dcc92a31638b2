"""A stored session's data and design made active again, when :func:`ui.durable.start` restores the session
(app.py gives it :func:`restore_design`): the data source (an upload kept in the store, a table of the server's data
folder through :func:`ui.board.ensure_data`, another kind through ``ui.durable.RESTORERS``), then the study config
through the Study import (:func:`ui.study_import.import_state`), both above :mod:`ui.durable`."""

from __future__ import annotations

from prdp_core.board.sessions import SavedSession, SessionStore
from prdp_core.core.errors import DataError
from prdp_core.data import memory

from . import board, durable, state, study_import


def restore_design(sessions: SessionStore, saved: SavedSession) -> list[str]:
    """Make the stored data source active and import the stored study config; the import's notes. Raises PrdpError
    (:func:`ui.durable.start` says so, the ledger being restored already)."""
    src = dict(saved.source or {})
    if saved.config is None:
        return []
    data_bytes: bytes | None = None
    data_name: str | None = None
    notes: list[str] = []
    kind = src.get("kind")
    if kind == "file" and src.get("upload"):
        kept = sessions.upload_path(str(src["upload"]))
        if kept is not None:  # the memory guard of every route into a table, before reading
            memory.guard_table(file_bytes=kept.stat().st_size)
        data_bytes = sessions.read_upload(str(src["upload"]))
        if data_bytes is None:
            raise DataError(f"the table '{src.get('filename')}' is no longer on the server "
                            f"({sessions.retention.describe()}).",
                            hint="Upload it again on the Data page: the ledger's releases on it count again once it "
                                 "is active with the same roles.")
        data_name = str(src.get("filename") or "data.csv")
    elif kind == "file" and src.get("shared"):
        board.ensure_data(saved.config.get("data") or {})
        if state.source().get("shared") != src.get("shared"):
            notes.append(f"The data folder's file '{src.get('filename')}' changed since this session used it: its "
                         "earlier releases are not counted in the totals on the new file.")
    elif kind == "large":  # read in place again: the study config's data section names its path in the data folder
        pass
    elif kind not in (None, "sample", "file"):
        restorer = durable.RESTORERS.get(str(kind))
        if restorer is None:
            raise DataError(f"this server cannot reopen a data source of kind '{kind}'.")
        data_bytes, data_name = restorer(src, sessions)
    return notes + study_import.import_state(saved.config, data_bytes=data_bytes, data_name=data_name)
