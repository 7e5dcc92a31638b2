"""The Study page's report: built from the releases recorded in this session, never by running a mechanism again.

Each mechanism of the exported study is matched with the releases its page last recorded on the active dataset
(:func:`ui.state.recorded`); a study whose mechanisms have none recorded yet is run once through the session's
recorder (:func:`run_and_record`): every release charged to the session ledger, then kept as its page's recorded
release, so building the report again renders the same numbers and charges nothing.
"""

from __future__ import annotations

from typing import Any

from prdp_core import report as R
from prdp_core.accounting import Ledger
from prdp_core.config import Study
from prdp_core.runner import StudyRun

from . import state

#: The page part that records the releases of each mechanism kind of a study (granular: the command line only).
PART_OF_KIND = {"unit_splitting": "run", "prdp": "budget_functions", "personalized": "personalized",
                "multitier": "analyst_tiers"}


def recorded_run(study: Study) -> tuple[StudyRun, list[str]]:
    """The study's recorded releases as a :class:`~prdp_core.runner.StudyRun` (its ledger: their entries), and the
    labels of the study's mechanisms with no recorded release on the active dataset."""
    releases: list[tuple[str, Any, Any]] = []
    missing: list[str] = []
    for i, m in enumerate(study.mechanisms):
        label = study.mechanism_label(i)
        got = state.recorded(PART_OF_KIND.get(m.kind, ""))
        if not got:
            missing.append(label)
        releases += [(f"{label}: {sub}" if sub else label, m, rel) for sub, rel in got]
    led = Ledger().extend(e for _, _, rel in releases for e in rel.entries)
    return StudyRun(study=study, dataset=state.active_dataset(), releases=releases, ledger=led), missing


def release_ids(run: StudyRun) -> tuple[int, ...]:
    """Which recorded releases a report renders (a report of other releases is out of date)."""
    return tuple(id(rel) for _, _, rel in run.releases)


def run_and_record(study: Study, progress: R.Progress | None = None) -> StudyRun:
    """Run every mechanism of the study once as recorded releases of the session (charged to its ledger) and keep
    them as their pages' recorded releases."""
    run = R.run_study(study, dataset=state.active_dataset(), progress=progress, recorder=state.recorder())
    by_part: dict[str, list[tuple[str | None, Any]]] = {}
    for i, m in enumerate(study.mechanisms):
        label = study.mechanism_label(i)
        mine = [(lab[len(label) + 2:] or None, rel) for lab, mm, rel in run.releases if mm is m]
        by_part.setdefault(PART_OF_KIND.get(m.kind, m.kind), []).extend(mine)
    for part, rels in by_part.items():
        state.keep_recorded(part, rels)
    return run
