"""The Study page's report: built from the releases recorded in this session, never by running a mechanism again.

Each mechanism of the exported study is matched with the releases its page last recorded on the active dataset with
the same settings (:func:`ui.state.recorded`; a release of settings changed since is not the study's); a study whose
mechanisms have none recorded yet is run once through the session's recorder (:func:`run_and_record`): every release
charged to the session ledger, then kept as its page's recorded release, so building the report again renders the
same numbers and charges nothing.
"""

from __future__ import annotations

import json
from typing import Any, Mapping

from prdp_core.core.accounting import Ledger
from prdp_core.core.errors import PrdpError
from prdp_core.review import report as R
from prdp_core.study.config import Study
from prdp_core.study.runner import StudyRun
from prdp_core.study.runs import RUN_KINDS

from . import state, study_export

#: The page part that records the releases of each mechanism kind of a study (granular: the command line only).
PART_OF_KIND = {"unit_splitting": "run", "prdp": "budget_functions", "personalized": "personalized",
                "multitier": "analyst_tiers"}


#: The policy part each mechanism kind releases (:attr:`prdp_core.study.runs.RunConfig.POLICY_PART`).
POLICY_OF_KIND = {k: c.POLICY_PART for k, c in RUN_KINDS.items() if c.POLICY_PART is not None}


def settings_of(cfg: Mapping[str, Any], kind: str) -> str:
    """What a release of ``kind`` is made with, read from a study config: its policy part, the workload (unit
    splitting), its mechanism entries and the mode (as JSON, to compare)."""
    part = POLICY_OF_KIND.get(kind, "")
    pol = (cfg.get("policy") or {}).get(part)
    workload = cfg.get("workload") if part == "thresholds" else None  # the workload goes with the thresholds
    mechanisms = [dict(m) for m in cfg.get("mechanisms", []) if m.get("kind") == kind]
    return json.dumps([pol, workload, mechanisms, cfg.get("mode")], sort_keys=True, default=str)


def part_settings(part: str) -> str | None:
    """The settings of page ``part`` as the study exports them now (None: not a study's mechanism, or settings
    that make no valid study)."""
    kind = next((k for k, p in PART_OF_KIND.items() if p == part), None)
    if kind is None:
        return None
    try:
        return settings_of(study_export.export_study().to_dict(), kind)
    except PrdpError:
        return None


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
