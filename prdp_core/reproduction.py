"""The reproduction script of a study: a short Python file that reruns the study with ``prdp_core``
and writes the same results CSV, bit for bit (secure mechanisms rerun securely, unseeded).

User text reaches the script only as ``repr`` literals (:func:`prdp_core.codegen.literal`).
"""

from __future__ import annotations

from typing import Any, Mapping

from .codegen import literal
from .config import (
    Study,
)
from .engines.spark_engine import is_uri
from .runner import PRDP_LABELS, PRDP_LOCAL_LABELS, granular_domains, prdp_query


def _py(v: Any) -> str:
    """A value of the study as a Python literal (the only form user text takes in the script)."""
    return literal(v)


def _engine_mode(study: Study, data_file: str | None) -> bool:
    """The study's file is opened through prdp_core.engines (data.engine other than memory)."""
    return study.data.engine != "memory" and (data_file is not None or study.data.path is not None
                                              or study.data.table is not None)


def _data_code(study: Study, data_file: str | None, *, argv: bool = True, base_dir: str | None = None) -> list[str]:
    """Lines building ``ds``, the study's dataset; with ``argv`` a file source's path may be replaced by the
    script's second argument (reproduce.py), else it is the literal path (a snippet pasted into a notebook).
    ``base_dir``: the folder an engine reads the path in, and may not leave (the app's data folder)."""
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
            default = f"str(Path(__file__).resolve().parent / {src.path!r})"
        data_line = f"DATA = sys.argv[2] if len(sys.argv) > 2 else {default}" if argv else f"DATA = {default}"
        if src.schema is not None:
            schema = f"prdp_core.Schema.from_dict({_py(src.schema)})"
        elif src.sample is not None:
            schema = f"prdp_core.samples.info({src.sample!r}).schema"
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
        return [f"ds = prdp_core.samples.load_dataset({src.sample!r}{n}, seed={int(src.sample_seed)})"]
    schema = (f"prdp_core.Schema.from_dict({_py(src.schema)})" if src.schema is not None
              else f"prdp_core.samples.info({src.sample!r}).schema")
    return [f"df = prdp_core.samples.load({src.sample!r}{n}, seed={int(src.sample_seed)})",
            f"ds = prdp_core.prepare_dataset(df, {schema}, name={src.sample!r}{opts})"]


#: The imports the code of each mechanism kind needs (:func:`mechanism_code`, :func:`policy_code`).
KIND_IMPORTS = {
    "unit_splitting": ("from prdp_core.mechanisms import unit_splitting",
                       "from prdp_core.splitting import as_thresholds, thresholds_from_frame",
                       "from prdp_core.workload import SplittingPolicy, Workload"),
    "prdp": ("from prdp_core.mechanisms import prdp", "from prdp_core.mechanisms.prdp import local as prldp"),
    "personalized": ("from prdp_core.mechanisms import personalized",),
    "multitier": ("from prdp_core.mechanisms import multitier as mt",),
    "granular": ("from prdp_core.mechanisms import granular",),
}


def import_lines(kinds: set[str]) -> list[str]:
    """The import lines of the mechanism kinds in ``kinds``, in a fixed order."""
    return [line for k, lines in KIND_IMPORTS.items() if k in kinds for line in lines]


def _budget_code(b: Mapping[str, Any]) -> str:
    """prdp_core code building the budget function (the calls of :func:`prdp_core.config.build_budget`)."""
    kw = f"eps_min={b.get('eps_min')!r}, eps_max={b.get('eps_max')!r}, U={b.get('U')!r}"
    if "preset" in b:
        if b["preset"] == "constant":
            return f"prdp.constant({b['eps']!r}, U={b.get('U')!r})"
        k = f", k={b['k']!r}" if b["preset"] == "log" else ""
        return f"prdp.preset({b['preset']!r}, {b['column']!r}, {kw}, alpha={b['alpha']!r}{k})"
    if "expression" in b:
        return f"prdp.parse_budget({b['expression']!r}, {kw})"
    if "steps" in b:
        s = b["steps"]
        return f"prdp.step_table({s['column']!r}, {_py(s['bounds'])}, {_py(s['eps'])}, {kw})"
    g = b["groups"]
    return f"prdp.per_group({g['column']!r}, {_py(dict(g['parts']))}, default={g.get('default')!r}, {kw})"


def policy_code(study: Study, T: str = "ds.table") -> list[str]:
    """Lines building ``policy``, the study's unit-splitting policy (thresholds, workload, where the
    thresholds came from); ``T`` names what group values are matched against (``ds.table``, or ``ds`` held
    by an engine)."""
    pol = study.policy
    t = pol["thresholds"]
    L = []
    if "rows" in t:
        rows = [{"group": g, **row} for g, row in t["rows"].items()]
        values = "ds.table" if T == "ds.table" else f"ds.engine.distinct([{t['group_column']!r}])"
        L.append(f"thresholds = thresholds_from_frame(pd.DataFrame({_py(rows)}), "
                 f"group_col={t['group_column']!r}, table={values})")
    else:
        L.append(f"thresholds = as_thresholds({_py(t)})")
    L.append(f"workload = Workload.from_dict({_py(study.workload)})")
    src = pol.get("threshold_source")
    L.append("policy = SplittingPolicy(thresholds, workload" + (
        f", threshold_source={_py(src)})" if src else ")"))
    return L


def mechanism_code(study: Study, i: int, m: Mapping[str, Any], T: str = "ds.table") -> list[str]:
    """Lines running mechanism ``i`` (``m``) of ``study`` and appending ``(label, Release)`` to ``releases``,
    with the mechanism's seed (or securely, unseeded) and ``reveal=REVEAL``; ``T`` is what the mechanisms
    read: ``ds.table`` in memory, ``ds`` for a dataset held by an engine. Needs the names ``ds``, ``REVEAL``
    and ``releases``, and the imports of :func:`import_lines`."""
    pol = study.policy
    L: list[str] = []
    seed, label = study.mechanism_seed(i), study.mechanism_label(i)
    L += ["", f"# --- mechanism {i + 1} ---"]
    k = m["kind"]
    if k == "unit_splitting":
        L += policy_code(study, T)
        src = pol.get("threshold_source")
        own = "" if T == "ds.table" else ", owner_realized=False"  # not among the outputs
        if m.get("secure"):
            L.append("# secure mode: exact samplers and a system random source — unseeded, so every run differs")
            L.append(f"rel = unit_splitting.release(ds, policy, rng=None, secure=True, reveal=REVEAL, "
                     f"partition_delta={m['partition_delta']!r}{own}"
                     + (", allow_data_derived=REVEAL)" if src else ")"))
        else:
            L.append(f"rel = unit_splitting.release(ds, policy, rng=np.random.default_rng({seed}), "
                     f"reveal=REVEAL, seed={seed}, partition_delta={m['partition_delta']!r}{own})")
        L.append(f"releases.append(({label!r}, rel))")
    elif k == "prdp":
        L.append(f"E = {_budget_code(pol['budget'])}")
        L.append("print(E.describe())")
        q, beta = prdp_query(m), m["beta"]
        if m.get("secure"):
            L.append("# secure mode: unseeded exact samplers, so every run differs")
            run = "secure=True"
        else:
            L.append(f"rng = np.random.default_rng({seed})")
            run = f"rng=rng, seed={seed}"
        for alg in m["algorithms"]:
            if m["model"] == "local":
                th = m.get("threshold", "paper")
                call = {"count": f"prldp.count(E(ds.table), eps_min=E.eps_min, eps_max=E.eps_max, beta={beta!r}, "
                                 f"threshold={th!r}, reveal=REVEAL, {run})",
                        "framework": f"prldp.framework(ds.table, E, {q!r}, beta={beta!r}, threshold={th!r}, "
                                     f"reveal=REVEAL, {run})",
                        "naive": f"prldp.naive(ds.table, E, {q!r}, beta={beta!r}, reveal=REVEAL, {run})"}[alg]
                sub = PRDP_LOCAL_LABELS[alg]
            else:
                count = (f"prdp.count(E(ds.table), eps_min=E.eps_min, eps_max=E.eps_max, beta={beta!r}, "
                         f"reveal=REVEAL, {run})") if T == "ds.table" else \
                    f"prdp.count_of(ds, E, beta={beta!r}, reveal=REVEAL, {run})"
                call = {"count": count,
                        "framework": f"prdp.framework({T}, E, {q!r}, beta={beta!r}, reveal=REVEAL, {run})",
                        "sum_extension": f"prdp.sum_extension(ds.table, E, column={m.get('column')!r}, "
                                         f"beta={beta!r}, reveal=REVEAL, {run})",
                        "naive": f"prdp.naive({T}, E, {q!r}, beta={beta!r}, reveal=REVEAL, {run})"}[alg]
                sub = PRDP_LABELS[alg]
            L.append(f"releases.append(({label + ': ' + sub!r}, {call}))")
    elif k == "granular":
        L.append(f"data = granular.encode_attributes(ds.table, {_py(list(m['attributes']))}, "
                 f"{_py(granular_domains(study, m))})  # declared public categories")
        how = "secure=True" if m.get("secure") else f"rng=np.random.default_rng({seed}), seed={seed}"
        if m.get("secure"):
            L.append("# secure mode: unseeded exact samplers, so every run differs")
        if m["histogram"] == "heavy_hitter":
            L.append(f"rel = granular.heavy_hitter_histogram(data, eps0={m['eps']!r}, nu={m['nu']!r}, "
                     f"method={m['method']!r}, {how}, reveal=REVEAL)")
        else:
            L.append(f"rel = granular.standard_histogram(data, eps={m['eps']!r}, threshold={m.get('threshold')!r}, "
                     f"{how}, reveal=REVEAL)")
        L.append(f"releases.append(({label!r}, rel))")
    elif k == "personalized":
        s = pol["specification"]
        if "tiers" in s:
            L.append(f"spec = personalized.generate_tiers_for(ds.table, "
                     f"personalized.TierConfig(**{_py(s['tiers'])}), "
                     f"rng=np.random.default_rng({int(s['seed'])}), user_col={s['user']!r})")
        elif s["labels"]:
            L.append(f"tab = ds.table[[{s['column']!r}]].astype(str)" + (
                f".assign(**{{{s['user']!r}: ds.table[{s['user']!r}].to_numpy()}})" if s["user"] else ""))
            L.append(f"spec = personalized.spec_from_labels(tab, {s['column']!r}, {_py(s['labels'])}, "
                     f"user_col={s['user']!r}, default_eps={s['default_eps']!r})")
        else:
            L.append(f"spec = personalized.spec_from_column(ds.table, {s['column']!r}, user_col={s['user']!r}, "
                     f"default_eps={s['default_eps']!r})")
        mech = {"minimum": "personalized.Minimum()", "threshold": f"personalized.Threshold({m['t']!r})",
                "sample": f"personalized.Sample({m['t']!r}, rescale={m['rescale']!r})", "pe": "personalized.PE()",
                "stretching": f"personalized.Stretching(rescale={m['rescale']!r})"}[m["mechanism"]]
        L.append(f"query = personalized.PersonalizedQuery(**{_py(m['query'])})")
        if m.get("secure"):
            L.append("# secure mode: exact samplers and a system random source — unseeded, so every run differs")
            L.append(f"rel = {mech}.release(ds.table, spec, query, rng=None, reveal=REVEAL, secure=True)")
        else:
            L.append(f"rel = {mech}.release(ds.table, spec, query, rng=np.random.default_rng({seed}), "
                     f"seed={seed}, reveal=REVEAL)")
        L.append(f"releases.append(({label!r}, rel))")
    else:
        L.append(f"tiers = mt.tiers_from({_py(pol['tiers'])})")
        f = m.get("filter")
        ftxt = "None" if f is None else f"mt.RecordFilter({f['column']!r}, {f['op']!r}, {f['value']!r})"
        secure = bool(m.get("secure"))
        if secure:
            L.append("# secure mode: exact samplers and a system random source — unseeded, so every run differs")
        else:
            L.append(f"rng = np.random.default_rng({seed})")
        mode = "rng=None, secure=True" if secure else f"rng=rng, seed={seed}"
        if m["model"] == "central":
            integer = m["family"] in ("geometric", "multiscale_geometric")
            L.append(f"q = mt.central_query(ds.table, {m['query']!r}, measure={m.get('measure')!r}, "
                     f"clip={m.get('clip')!r}, filter={ftxt}, integer={integer!r})")
            L.append(f"plan = mt.plan_central(tiers, {m['family']!r}, sensitivity=float(q.sensitivity), "
                     f"delta={m['delta']!r})")
            L.append(f"rel = mt.release_central(plan, q.value, {mode}, reveal=REVEAL, records=q.mask, "
                     "query=q.label" + (", contributions=q.contributions)" if secure else ")"))
        else:
            L.append(f"codes, labels = mt.local_categories(ds.table, {m['measure']!r}, {int(m['d'])}, "
                     f"scale={m['scale']!r}, top={m.get('top')!r}, filter={ftxt})")
            L.append(f"plan = mt.plan_local(tiers, len(labels), variant={m['variant']!r})")
            L.append(f"rel = mt.release_local(plan, codes, {mode}, reveal=REVEAL, labels=labels)")
        L.append(f"releases.append(({label!r}, rel))")
    return L


def reproduction_script(study: Study, *, data_file: str | None = None) -> str:
    """A short, readable Python script that reruns ``study`` with prdp_core alone.

    It makes the same engine calls with the same seeds as :func:`run_study` and writes
    ``results.csv`` (formula-safe) into the folder given as its first argument (default: a
    folder ``reproduced`` next to the script; for a file source a second argument replaces the
    data file); run on the same data it reproduces the CLI's results.csv bit for bit.

    The study's own text (title, labels, expressions, column names, group values, paths) is
    written only as Python literals (``repr``, :func:`prdp_core.codegen.literal`), never into the
    docstring or a comment, so running a shared study's script runs nothing but these calls."""
    teaching = study.mode == "teaching"
    L = ['"""Reproduce a PrDP Explorer study with prdp_core.',
         "",
         "Usage: python reproduce.py [OUT_DIR" + (" [DATA_FILE]]" if data_file or study.data.path else "]"),
         "Seeded runs are for teaching and review only, never for a real release.",
         '"""',
         "import sys",
         "from pathlib import Path",
         "",
         "import numpy as np",
         "import pandas as pd",
         "",
         "import prdp_core",
         "from prdp_core.report import results_frame",
         "from prdp_core.export import to_csv_bytes",
         ""]
    L += import_lines({m["kind"] for m in study.mechanisms})
    L += ["", f"TITLE, MODE, SEED = {_py(study.title or '(untitled)')}, {_py(study.mode)}, {int(study.seed)}"]
    L += _data_code(study, data_file)
    L += ["OUT = Path(sys.argv[1]) if len(sys.argv) > 1 else Path(__file__).resolve().parent / 'reproduced'",
          f"REVEAL = {teaching!r}  # teaching mode: true values are attached (confidential)", "",
          "releases = []  # (label, Release)"]
    T = "ds" if _engine_mode(study, data_file) else "ds.table"  # what the mechanisms read
    for i, m in enumerate(study.mechanisms):
        L += mechanism_code(study, i, m, T)
    L += ["",
          "OUT.mkdir(parents=True, exist_ok=True)",
          "(OUT / 'results.csv').write_bytes(to_csv_bytes(results_frame(releases, teaching=REVEAL)))",
          "print(f'{len(releases)} release(s) written to {OUT / \"results.csv\"}')", ""]
    return "\n".join(L)
