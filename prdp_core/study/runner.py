"""Running a study: load its data and run every mechanism of its config, each with its seed (or
securely, unseeded), into a :class:`StudyRun` (the releases and the session's ledger).

Each mechanism runs through its typed run configuration (:meth:`prdp_core.study.runs.RunConfig.run`, one
class per kind in :data:`prdp_core.study.runs.RUN_KINDS`); records a mechanism needs that an engine does
not hand over are refused with a message.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Callable

from ..core.accounting import Ledger
from ..core.errors import PrdpError
from ..core.recorder import Recorder
from ..core.release import Release
from ..data.dataset import Dataset
from ..engines.spark_engine import is_uri
from .config import (
    ConfigError,
    Study,
    load_data,
    resolve_data_path,
)
from .runs import RunConfig

#: A progress callback: (steps done, steps in all, what is being done).
Progress = Callable[[int, int, str], None]


@dataclass
class StudyRun:
    """The outcome of :func:`run_study`: the dataset, every release (label, the mechanism's run
    configuration, Release) and the ledger of the run."""

    study: Study
    dataset: Dataset
    releases: list[tuple[str, RunConfig, Release]] = field(default_factory=list)
    ledger: Ledger = field(default_factory=Ledger)
    data_file: str | None = None

    @property
    def teaching(self) -> bool:
        return self.study.mode == "teaching"


def run_study(study: Study, data: str | os.PathLike | None = None, *, dataset: Dataset | None = None,
              progress: Progress | None = None, recorder: Recorder | None = None) -> StudyRun:
    """Load the study's data and run each of its mechanisms with its seed.

    ``data`` replaces the config's data file (the config's column roles still apply);
    ``dataset`` skips loading altogether (the app passes its active dataset). Mechanism i
    draws its noise from ``numpy.random.default_rng(study.mechanism_seed(i))``: seeded runs
    are for teaching and review only. True answers are attached in teaching mode only.

    Each mechanism runs as a recorded release (:meth:`prdp_core.core.recorder.Recorder.release`) of ``recorder``
    (the app passes the session's) or, by default, of a recorder of the run's own ledger; ``run.ledger``
    holds the entries of this run's releases either way.
    Raises ConfigError (the study does not fit the data), DataError/SchemaError (data
    problems) or another PrdpError.
    """
    total = len(study.mechanisms) + 1
    say = progress or (lambda *_: None)
    say(0, total, "loading the data")
    ds = dataset if dataset is not None else load_data(study, data)
    data_file = None
    if dataset is None and data is not None:
        data_file = str(data) if is_uri(data) else str(Path(data))
    elif dataset is None and study.data.path is not None and not is_uri(study.data.path):
        data_file = str(resolve_data_path(study))
    study.check_against(ds)
    run = StudyRun(study=study, dataset=ds, data_file=data_file)
    reveal = study.mode == "teaching"
    rec = recorder if recorder is not None else Recorder(run.ledger)
    for i, m in enumerate(study.mechanisms):
        label = study.mechanism_label(i)
        say(i + 1, total, f"running {label}")
        try:
            outs = rec.release(partial(m.run, study, ds, study.mechanism_seed(i), reveal), label=label)
        except ConfigError:
            raise
        except PrdpError as err:
            raise type(err)(f"mechanisms[{i}] ({m.kind}): {err.message}", hint=err.hint) from None
        for sub, rel in outs:
            run.releases.append((f"{label}: {sub}" if sub else label, m, rel))
            if recorder is not None:  # recorded in the given ledger; the run's own ledger lists them too
                run.ledger.extend(rel.entries)
    say(total, total, "done")
    return run
