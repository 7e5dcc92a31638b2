"""The reproduction code of a study: a short Python file that reruns the study with ``prdp_core``
and writes the same results CSV, bit for bit (secure mechanisms rerun securely, unseeded).

The code comes in :class:`Section` s (imports, the study and its data, one per mechanism, the results):
:func:`reproduction_script` joins them into ``reproduce.py``, and :mod:`prdp_core.study.notebook` makes each a
cell of ``study.ipynb`` after a short explanation. User text reaches the code only as ``repr`` literals
(:func:`prdp_core.io.codegen.literal`), and never a section's heading.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping

from ..engines.spark_engine import is_uri
from ..io.codegen import literal
from .config import (
    Study,
)
from .runs import RUN_KINDS, ParseContext, RunConfig, parse_run


def _py(v: Any) -> str:
    """A value of the study as a Python literal (the only form user text takes in the script)."""
    return literal(v)


def _engine_mode(study: Study, data_file: str | None) -> bool:
    """The study's file is opened through prdp_core.engines (data.engine other than memory)."""
    return study.data.engine != "memory" and (data_file is not None or study.data.path is not None
                                              or study.data.table is not None)


#: The folder of the running script, in the code of a script.
SCRIPT_FOLDER = "Path(__file__).resolve().parent"
#: The folder of the notebook, in the code of a notebook (Jupyter starts its kernel there).
NOTEBOOK_FOLDER = "Path.cwd()"


def _data_code(study: Study, data_file: str | None, *, argv: bool = True, base_dir: str | None = None,
               here: str = SCRIPT_FOLDER) -> list[str]:
    """Lines building ``ds``, the study's dataset; with ``argv`` a file source's path may be replaced by the
    script's second argument (reproduce.py), else it is the literal path (a snippet pasted into a notebook).
    ``base_dir``: the folder an engine reads the path in, and may not leave (the app's data folder); ``here``:
    the code of the folder a relative data path is read in (the script's, or the notebook's)."""
    src = study.data
    opts = "".join(f", {k}={_py(v)}" for k, v in src.prepare.items())
    if data_file is not None or src.path is not None or src.table is not None:
        if data_file is not None:
            default = repr(str(data_file))
        elif src.table is not None:  # a table of the Spark catalog
            default = f"prdp_core.engines.CatalogTable({_py(src.table)})"
        elif is_uri(src.path):  # a URI Spark reads (hdfs://, s3a://, file://)
            default = _py(src.path)
        else:
            default = f"str({here} / {src.path!r})"
        data_line = f"DATA = sys.argv[2] if len(sys.argv) > 2 else {default}" if argv else f"DATA = {default}"
        if src.schema is not None:
            schema = f"prdp_core.Schema.from_dict({_py(src.schema)})"
        elif src.sample is not None:
            schema = f"prdp_core.data.samples.info({src.sample!r}).schema"
        else:
            schema = "None" if _engine_mode(study, data_file) else "prdp_core.guess_schema(df)"
        if _engine_mode(study, data_file):
            dd, sp = src.duckdb, src.spark
            options = ("" if not dd else ", options=prdp_core.engines.EngineOptions(memory_limit="
                       f"{dd.get('memory_limit')!r}, threads={dd.get('threads')!r})")
            if sp:
                options = (f", options=prdp_core.engines.EngineOptions(master={_py(sp.get('master'))}, "
                           f"remote={_py(sp.get('remote'))}, conf={_py(dict(sp.get('conf') or {}))})")
            name = "" if src.engine == "spark" else ", name=Path(DATA).name"
            where = "" if base_dir is None else ", base_dir=DATA_DIR, confine=True"
            folder = [] if base_dir is None else [f"DATA_DIR = {_py(base_dir)}  # the server's data folder"]
            return [*folder, data_line,
                    "# the records stay in the engine: statistics are computed there, noise is drawn here",
                    f"ds = prdp_core.engines.open_dataset(DATA, engine={src.engine!r}, schema={schema}"
                    f"{name}{where}{options}{opts})"]
        return [data_line,
                "df = prdp_core.load_table(DATA)",
                f"ds = prdp_core.prepare_dataset(df, {schema}, name=Path(DATA).name{opts})"]
    n = f", n={int(src.n)}" if src.n is not None else ""
    if src.schema is None and not src.prepare:
        return [f"ds = prdp_core.data.samples.load_dataset({src.sample!r}{n}, seed={int(src.sample_seed)})"]
    schema = (f"prdp_core.Schema.from_dict({_py(src.schema)})" if src.schema is not None
              else f"prdp_core.data.samples.info({src.sample!r}).schema")
    return [f"df = prdp_core.data.samples.load({src.sample!r}{n}, seed={int(src.sample_seed)})",
            f"ds = prdp_core.prepare_dataset(df, {schema}, name={src.sample!r}{opts})"]


#: The imports the code of each mechanism kind needs (:func:`mechanism_code`, :func:`policy_code`).
def import_lines(kinds: set[str]) -> list[str]:
    """The import lines the reproduction code of the mechanism kinds in ``kinds`` needs (once per kind,
    in the registry's order)."""
    lines = [line for kind, cls in RUN_KINDS.items() if kind in kinds for line in cls.IMPORTS]
    return ["from prdp_core.core.noise_source import Noise", *lines] if lines else []


def mechanism_imports(study: Study) -> list[str]:
    """The import lines the reproduction code of the study's mechanisms needs."""
    return import_lines({m.kind for m in study.mechanisms})


def mechanism_code(study: Study, i: int, m: Mapping[str, Any] | None = None, *, table: str = "ds.table"
                   ) -> list[str]:
    """The code of mechanism ``i`` of ``study``: the engine calls of :func:`prdp_core.study.runner.run_study`
    for it, each release appended to ``releases`` as (label, Release).

    ``m`` is the mechanism (default ``study.mechanisms[i]``): a :class:`~prdp_core.study.runs.RunConfig`,
    or an entry mapping, validated against the study's policy first (ConfigError naming the key).
    ``table`` is what the mechanisms read: ``ds.table`` (records in memory) or ``ds`` (a table held
    by an engine). The code uses the names the script defines before it (``ds``, ``np``, ``pd``,
    ``REVEAL``, ``releases`` and the imports of :func:`mechanism_imports`); user text appears only as
    ``repr`` literals."""
    if m is None:
        m = study.mechanisms[i]
    if not isinstance(m, RunConfig):
        m = parse_run(m, i, ParseContext(policy=study.policy, has_workload=study.workload is not None,
                                         engine=study.data.engine))
    return m.code(study, i, table)


@dataclass(frozen=True)
class Section:
    """One part of the reproduction code: ``heading``, a short explanation in the product's own words (never user
    text: the notebook shows it as Markdown), and its code ``lines``."""

    heading: str
    lines: tuple[str, ...]


def reproduction_sections(study: Study, *, data_file: str | None = None, notebook: bool = False) -> list[Section]:
    """The sections of the code that reruns ``study`` (:func:`reproduction_script`): the imports, the study and its
    dataset ``ds``, one section per mechanism (appending its releases to ``releases``) and the results written to
    ``OUT/results.csv``. ``notebook``: the code of ``study.ipynb``, which reads relative paths in the notebook's
    folder and takes no command-line arguments, and ends by showing the results table."""
    teaching = study.mode == "teaching"
    here = NOTEBOOK_FOLDER if notebook else SCRIPT_FOLDER
    out = (f"OUT = {here} / 'reproduced'" if notebook else
           f"OUT = Path(sys.argv[1]) if len(sys.argv) > 1 else {here} / 'reproduced'")
    imports = [*([] if notebook else ["import sys"]), "from pathlib import Path", "", "import numpy as np",
               "import pandas as pd", "",
               "import prdp_core", "from prdp_core.review.report import results_frame",
               "from prdp_core.io.export import to_csv_bytes", "from prdp_core.io.outputs import write_files"]
    kinds = mechanism_imports(study)
    sections = [Section("**Imports**: `prdp_core` and the modules of the study's mechanisms.",
                        tuple(imports + ([""] + kinds if kinds else [])))]
    data = ([f"TITLE, MODE, SEED = {_py(study.title or '(untitled)')}, {_py(study.mode)}, {int(study.seed)}"]
            + _data_code(study, data_file, argv=not notebook, here=here)
            + [out, f"REVEAL = {teaching!r}  # teaching mode: true values are attached (confidential)", "",
               "releases = []  # (label, Release)"])
    sections.append(Section("**The study and its data**: its title, mode and seed, the dataset `ds` with its column "
                            "roles, and the folder `OUT` the results go to. `REVEAL` attaches true values in "
                            "teaching mode only.", tuple(data)))
    table = "ds" if _engine_mode(study, data_file) else "ds.table"  # what the mechanisms read
    for i, m in enumerate(study.mechanisms):
        kind = RUN_KINDS[m["kind"]]  # a registered kind: its name and ABOUT are the product's text
        code = [f"# --- mechanism {i + 1} ---", *mechanism_code(study, i, m, table=table)]
        sections.append(Section(f"**Mechanism {i + 1}: {kind.kind.replace('_', ' ')}.** " + (kind.ABOUT + " " if
                                kind.ABOUT else "") + "Each release is appended to `releases`.", tuple(code)))
    results = ["results = results_frame(releases, teaching=REVEAL)",
               "# never through a symbolic link, never over a results.csv that prdp did not write",
               "write_files(OUT, {'results.csv': to_csv_bytes(results)})",
               "print(f'{len(releases)} release(s) written to {OUT / \"results.csv\"}')"]
    sections.append(Section("**The results**: every released answer in one table, written to `OUT/results.csv` — "
                            "the same file `prdp run` wrote, bit for bit, for a seeded study on the same data.",
                            tuple(results + (["results"] if notebook else []))))
    return sections


def reproduction_script(study: Study, *, data_file: str | None = None) -> str:
    """A short, readable Python script that reruns ``study`` with prdp_core alone.

    It makes the same engine calls with the same seeds as :func:`run_study` and writes
    ``results.csv`` (formula-safe) into the folder given as its first argument (default: a
    folder ``reproduced`` next to the script; for a file source a second argument replaces the
    data file); run on the same data it reproduces the CLI's results.csv bit for bit.

    The study's own text (title, labels, expressions, column names, group values, paths) is
    written only as Python literals (``repr``, :func:`prdp_core.io.codegen.literal`), never into the
    docstring or a comment, so running a shared study's script runs nothing but these calls. The code is that
    of :func:`reproduction_sections`, one section after the other."""
    L = ['"""Reproduce a PrDP Explorer study with prdp_core.',
         "",
         "Usage: python reproduce.py [OUT_DIR" + (" [DATA_FILE]]" if data_file or study.data.path else "]"),
         "Seeded runs are for teaching and review only, never for a real release.",
         '"""']
    for section in reproduction_sections(study, data_file=data_file):
        L += [*section.lines, ""]
    return "\n".join(L)
