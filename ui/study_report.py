"""The Study page's report: built from the releases recorded in this session, never by running a mechanism again.

Each mechanism of the exported study is matched with the releases its page last recorded on the active dataset with
the same settings (:func:`ui.state.recorded`; a release of settings changed since is not the study's); a study whose
mechanisms have none recorded yet is run once through the session's recorder (:func:`run_and_record`): every release
charged to the session ledger, then kept as its page's recorded release, so building the report again renders the
same numbers and charges nothing. The settings a release is made with, read from a study config, are
:mod:`ui.study_export`'s (:func:`~ui.study_export.settings_of`, :func:`~ui.study_export.part_settings`).
"""

from __future__ import annotations

from typing import Any

from prdp_core.core.accounting import Ledger
from prdp_core.review import report as R
from prdp_core.study.config import Study
from prdp_core.study.runner import StudyRun

from . import state
from .study_export import PART_OF_KIND, settings_of


def recorded_run(study: Study) -> tuple[StudyRun, list[str]]:
    """The study's recorded releases as a :class:`~prdp_core.study.runner.StudyRun` (its ledger: their entries), and the
    labels of the study's mechanisms with no recorded release on the active dataset made with the study's
    settings (a release of settings changed since is not the study's)."""
    releases: list[tuple[str, Any, Any]] = []
    missing: list[str] = []
    cfg = study.to_dict()
    for i, m in enumerate(study.mechanisms):
        label = study.mechanism_label(i)
        got, settings = state.recorded(PART_OF_KIND.get(m.kind, ""))
        if not got or settings != settings_of(cfg, m.kind):
            missing.append(label)
            continue
        releases += [(f"{label}: {sub}" if sub else label, m, rel) for sub, rel in got]
    led = Ledger().extend(e for _, _, rel in releases for e in rel.entries)
    return StudyRun(study=study, dataset=state.active_dataset(), releases=releases, ledger=led), missing


def release_ids(run: StudyRun) -> tuple[tuple[str, ...], ...]:
    """Which recorded releases a report renders, by the ids of their ledger entries (a report of other releases is
    out of date; an object's ``id`` is not a name for it: it is reused once the object is gone)."""
    return tuple(state.recorded_uids(rel) for _, _, rel in run.releases)


def run_and_record(study: Study, progress: R.Progress | None = None) -> StudyRun:
    """Run every mechanism of the study once as recorded releases of the session (charged to its ledger) and keep
    them as their pages' recorded releases."""
    written: list[tuple[Any, str]] = []
    run = R.run_study(study, dataset=state.active_dataset(), progress=progress,
                      recorder=state.recorder(written=written))
    by_kind: dict[str, list[tuple[str | None, Any]]] = {}
    for i, m in enumerate(study.mechanisms):
        label = study.mechanism_label(i)
        by_kind.setdefault(m.kind, []).extend((lab[len(label) + 2:] or None, rel)
                                              for lab, mm, rel in run.releases if mm is m)
    cfg = study.to_dict()
    for kind, rels in by_kind.items():
        state.keep_recorded(PART_OF_KIND.get(kind, kind), rels, settings_of(cfg, kind), written=written)
    return run
