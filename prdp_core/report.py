"""Review-ready outputs of a study: re-loadable configs, HTML reports, reproduction scripts.

The public entry point of the study tooling (the ``prdp`` command line and the app's Study
page use it):

* :func:`load_config` / :func:`parse_config` — read and validate a study config (YAML,
  schema version 1, every key in docs/config.md); errors are
  :class:`~prdp_core.errors.ConfigError` naming the offending key (``policy.thresholds.EMP:
  must be a positive number``). The schema itself lives in :mod:`prdp_core.config`.
* :func:`run_study` — load the data and run every mechanism of the study with its seed;
  returns a :class:`StudyRun` (releases, ledger).
* :func:`results_frame` — every released answer in one table (truth columns only in
  teaching mode); :func:`budget_table` — the SafeTab-style budget table (release × group ×
  ρ or ε); :func:`conversion_rows` — (ε, δ) equivalents.
* :func:`render_html` — a self-contained HTML report (Plotly inlined: viewing it needs no
  network). In review mode it holds no true value and no per-record loss: answers come from
  :meth:`Release.for_review`, and loss CDFs stop before the last ``REVIEW_TAIL`` records.
* :func:`reproduction_script` — a short Python file that reruns the study with ``prdp_core``
  and writes the same results CSV, bit for bit.
* :func:`write_outputs` — results.csv, ledger.csv, ledger.json, report.html, reproduce.py and
  study.yaml in one folder (what ``prdp run`` writes).

Seeded runs are for teaching and review; a real release needs the secure mode.
"""

from __future__ import annotations

import html
import json
import math
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterable, Mapping

import numpy as np
import pandas as pd

from .accounting import Ledger, _plain, conversion_table, zcdp_to_approx_dp
from .codegen import literal
from .config import (SCHEMA_VERSION, ConfigError, DataSource, Study, load_config, load_data, parse_config,
                     resolve_data_path, safe_data_path, study_from_dict)
from .data import Dataset
from .engines.spark_engine import is_uri
from .errors import PolicyError, PrdpError
from .export import to_csv_bytes
from .provenance import DATA_DERIVED_COLUMN, data_derived, is_data_derived, stamp_answers
from .release import Release

#: In review mode, loss CDFs stop where fewer than this many records lie above (so no single
#: record's loss — the largest ones above all — can be read off a report).
REVIEW_TAIL = 10

#: A progress callback: (steps done, steps in all, what is being done).
Progress = Callable[[int, int, str], None]


# ---------------------------------------------------------------------------
# Running a study
# ---------------------------------------------------------------------------


@dataclass
class StudyRun:
    """The outcome of :func:`run_study`: the dataset, every release (label, mechanism config,
    Release) and the ledger of the run."""

    study: Study
    dataset: Dataset
    releases: list[tuple[str, dict[str, Any], Release]] = field(default_factory=list)
    ledger: Ledger = field(default_factory=Ledger)
    data_file: str | None = None

    @property
    def teaching(self) -> bool:
        return self.study.mode == "teaching"


def prdp_query(m: Mapping[str, Any]) -> str:
    """The query string of a ``prdp`` mechanism entry (``"count"``, ``"sum:BALANCE"``, …)."""
    return m["query"] if m["query"] == "count" else f"{m['query']}:{m['column']}"


PRDP_LABELS = {"count": "PrDP count (Alg. 1)", "framework": "PrDP framework (Alg. 2)",
               "sum_extension": "PrDP extension (Sec. 5.2)", "naive": "naive ε̌"}
PRDP_LOCAL_LABELS = {"count": "PrLDP count (Alg. 3–4)", "framework": "PrLDP framework (Alg. 5)",
                     "naive": "naive ε̌ (local)"}


def _run_unit_splitting(study: Study, ds: Dataset, m: Mapping[str, Any], seed: int, reveal: bool
                        ) -> list[tuple[str, Release]]:
    from .mechanisms import unit_splitting

    policy = study.validate_policy(ds)
    # owners' realized losses are not part of the outputs: a table held by an engine skips computing them
    own = {"owner_realized": False} if _held_by_engine(ds) else {}
    if m.get("secure"):  # review mode refuses thresholds computed from the data (teaching runs may use them)
        rel = unit_splitting.release(ds, policy, rng=None, secure=True, reveal=reveal,
                                     partition_delta=m["partition_delta"], allow_data_derived=reveal, **own)
    else:
        rel = unit_splitting.release(ds, policy, rng=np.random.default_rng(seed), reveal=reveal, seed=seed,
                                     partition_delta=m["partition_delta"], **own)
    return [("", rel)]


def _held_by_engine(ds: Any) -> bool:
    return getattr(ds, "engine", None) is not None


def _needs_records(ds: Any, what: str) -> None:
    """Refuse a mechanism that works on the records themselves for a table held by an engine."""
    if _held_by_engine(ds) and ds.engine.name != "memory":
        raise PolicyError(f"{what} works on the records themselves; this table is held by the {ds.engine.name} engine.",
                          hint="Use data.engine: memory (or a sample of the table) for this mechanism.")


def _run_prdp(study: Study, ds: Dataset, m: Mapping[str, Any], seed: int, reveal: bool) -> list[tuple[str, Release]]:
    from .mechanisms import prdp
    from .mechanisms.prdp import local as prldp

    from .config import data_columns

    E = study.budget_function()
    E.check_columns(data_columns(ds))
    engine = _held_by_engine(ds)
    if m["model"] == "local":
        _needs_records(ds, "The local model (PrLDP)")
    for alg in m["algorithms"]:
        if alg == "sum_extension":
            _needs_records(ds, "The Sec. 5.2 sum extension")
    t = ds if engine else ds.table
    q, beta = prdp_query(m), m["beta"]
    # one generator for the algorithms compared side by side; secure runs draw from OpenDP, unseeded
    sec = bool(m.get("secure"))
    run: dict[str, Any] = {"secure": True} if sec else {"rng": np.random.default_rng(seed), "seed": seed}
    out = []
    for alg in m["algorithms"]:
        if m["model"] == "local":
            th = m.get("threshold", "paper")
            if alg == "count":
                rel = prldp.count(E(t), eps_min=E.eps_min, eps_max=E.eps_max, beta=beta, threshold=th,
                                  reveal=reveal, **run)
            elif alg == "framework":
                rel = prldp.framework(t, E, q, beta=beta, threshold=th, reveal=reveal, **run)
            else:
                rel = prldp.naive(t, E, q, beta=beta, reveal=reveal, **run)
            out.append((PRDP_LOCAL_LABELS[alg], rel))
            continue
        if alg == "count":
            rel = prdp.count_of(t, E, beta=beta, reveal=reveal, **run)
        elif alg == "framework":
            rel = prdp.framework(t, E, q, beta=beta, reveal=reveal, **run)
        elif alg == "sum_extension":
            rel = prdp.sum_extension(t, E, column=m["column"], beta=beta, reveal=reveal, **run)
        else:
            rel = prdp.naive(t, E, q, beta=beta, reveal=reveal, **run)
        out.append((PRDP_LABELS[alg], rel))
    return out


def pdp_mechanism(m: Mapping[str, Any]) -> Any:
    """The personalized DP mechanism object of a ``personalized`` entry."""
    from .mechanisms import personalized

    name, t = m["mechanism"], m["t"]
    if name == "minimum":
        return personalized.Minimum()
    if name == "threshold":
        return personalized.Threshold(t)
    if name == "sample":
        return personalized.Sample(t, rescale=m["rescale"])
    if name == "pe":
        return personalized.PE()
    return personalized.Stretching(rescale=m["rescale"])


def _run_personalized(study: Study, ds: Dataset, m: Mapping[str, Any], seed: int, reveal: bool
                      ) -> list[tuple[str, Release]]:
    from .mechanisms import personalized

    _needs_records(ds, "Personalized DP")
    spec = study.privacy_spec(ds.table)
    q = personalized.PersonalizedQuery(**m["query"])
    if m.get("secure"):
        if not reveal:  # review mode: bounds computed from the data are refused (teaching runs flag them)
            personalized.require_public_bounds(m.get("design_defaults", ()))
        rel = pdp_mechanism(m).release(ds.table, spec, q, rng=None, reveal=reveal, secure=True)
    else:
        rel = pdp_mechanism(m).release(ds.table, spec, q, rng=np.random.default_rng(seed), seed=seed, reveal=reveal)
    return [("", personalized.flag_design_defaults(rel, m.get("design_defaults", ())))]


def multitier_filter(m: Mapping[str, Any]) -> Any:
    from .mechanisms import multitier as mt

    f = m.get("filter")
    return None if f is None else mt.RecordFilter(f["column"], f["op"], f["value"])


def _run_multitier(study: Study, ds: Dataset, m: Mapping[str, Any], seed: int, reveal: bool
                   ) -> list[tuple[str, Release]]:
    from .mechanisms import multitier as mt

    _needs_records(ds, "A multi-tier release")
    tiers = study.tiers()
    f = multitier_filter(m)
    secure = bool(m.get("secure"))
    # a secure release is unseeded: exact samplers and a system random source
    mode: dict[str, Any] = {"rng": None, "secure": True} if secure else {"rng": np.random.default_rng(seed),
                                                                          "seed": seed}
    if m["model"] == "central":
        integer = m["family"] in ("geometric", "multiscale_geometric")
        q = mt.central_query(ds.table, m["query"], measure=m.get("measure"), clip=m.get("clip"), filter=f,
                             integer=integer)
        plan = mt.plan_central(tiers, m["family"], sensitivity=float(q.sensitivity), delta=m["delta"])
        if secure:
            mode["contributions"] = q.contributions
        rel = mt.release_central(plan, q.value, reveal=reveal, records=q.mask, query=q.label, **mode)
        return [("", rel)]
    codes, labels = mt.local_categories(ds.table, m["measure"], m["d"], scale=m["scale"], top=m.get("top"), filter=f)
    plan = mt.plan_local(tiers, len(labels), variant=m["variant"])
    rel = mt.release_local(plan, codes, reveal=reveal, labels=labels, **mode)
    return [("", rel)]


def granular_domains(study: Study, m: Mapping[str, Any]) -> dict[str, Any]:
    """The declared public categories of a ``granular`` entry: a sample's documented ones, then the typed ones."""
    from .mechanisms import granular

    out: dict[str, Any] = dict(granular.sample_domains(study.data.sample)) if study.data.sample else {}
    out.update(m.get("categories", {}))
    return {a: out[a] for a in m["attributes"] if a in out}


def _run_granular(study: Study, ds: Dataset, m: Mapping[str, Any], seed: int, reveal: bool
                  ) -> list[tuple[str, Release]]:
    from .mechanisms import granular

    _needs_records(ds, "A granular-DP histogram")
    data = granular.encode_attributes(ds.table, list(m["attributes"]), granular_domains(study, m))
    how: dict[str, Any] = {"secure": True} if m.get("secure") else {"rng": np.random.default_rng(seed), "seed": seed}
    if m["histogram"] == "heavy_hitter":
        rel = granular.heavy_hitter_histogram(data, eps0=m["eps"], nu=m["nu"], method=m["method"], reveal=reveal,
                                              **how)
    else:
        rel = granular.standard_histogram(data, eps=m["eps"], threshold=m.get("threshold"), reveal=reveal, **how)
    return [("", rel)]


_RUNNERS = {"unit_splitting": _run_unit_splitting, "prdp": _run_prdp, "personalized": _run_personalized,
            "multitier": _run_multitier, "granular": _run_granular}


def run_study(study: Study, data: str | os.PathLike | None = None, *, dataset: Dataset | None = None,
              progress: Progress | None = None) -> StudyRun:
    """Load the study's data and run each of its mechanisms with its seed.

    ``data`` replaces the config's data file (the config's column roles still apply);
    ``dataset`` skips loading altogether (the app passes its active dataset). Mechanism i
    draws its noise from ``numpy.random.default_rng(study.mechanism_seed(i))``: seeded runs
    are for teaching and review only. True answers are attached in teaching mode only.
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
    for i, m in enumerate(study.mechanisms):
        label = study.mechanism_label(i)
        say(i + 1, total, f"running {label}")
        try:
            outs = _RUNNERS[m["kind"]](study, ds, m, study.mechanism_seed(i), reveal)
        except ConfigError:
            raise
        except PrdpError as err:
            raise type(err)(f"mechanisms[{i}] ({m['kind']}): {err.message}", hint=err.hint) from None
        for sub, rel in outs:
            run.releases.append((f"{label}: {sub}" if sub else label, dict(m), rel))
            run.ledger.extend(rel.entries)
    say(total, total, "done")
    return run


# ---------------------------------------------------------------------------
# Tables
# ---------------------------------------------------------------------------


def _answers(rel: Release, teaching: bool) -> pd.DataFrame:
    a = rel.answers if teaching else rel.for_review().answers
    a = a.copy()
    for c in a.columns:
        if isinstance(a[c].dtype, pd.CategoricalDtype):
            a[c] = a[c].astype(object)
    return a


def results_frame(releases: Iterable[tuple[str, Any, Release]] | Iterable[tuple[str, Release]], *,
                  teaching: bool) -> pd.DataFrame:
    """Every released answer, one row each, with the release label and mechanism first.

    Truth columns (true value, error, record counts) only when ``teaching``; review mode uses
    :meth:`Release.for_review`. Columns of different mechanisms are united (blank where a
    mechanism has no such column). The last columns say how each answer was made: the app mode,
    ``secure``, the ``seed`` and the parameters computed from the confidential data
    (:func:`prdp_core.provenance.stamp_answers`)."""
    frames = []
    for item in releases:
        label, rel = item[0], item[-1]
        a = _answers(rel, teaching)
        a.insert(0, "release", label)
        a.insert(1, "mechanism", rel.mechanism)
        frames.append(stamp_answers(a, teaching=teaching, secure=rel.secure, seed=rel.seed,
                                    derived=data_derived(rel.params)))
    if not frames:
        return pd.DataFrame(columns=["release", "mechanism"])
    return pd.concat(frames, ignore_index=True, sort=False)


def _rho_of(value: float, measure: str) -> float:
    return value if measure == "rho" else value * value / 2.0


def budget_table(run: StudyRun) -> pd.DataFrame:
    """The budget table, SafeTab style: one row per release × query × group level (or tier),
    with its budget in its own unit (ρ for zCDP, ε for pure DP), how a record is charged, and
    the ρ equivalent (ε²/2 for pure ε) so rows can be compared and added, and the release's parameters
    computed from the confidential data (empty when all were typed in). Only public forms: no
    per-record number."""
    rows: list[dict[str, Any]] = []
    derived = ""

    def add(release: str, query: str, group: str, measure: str, budget: float, charged: str) -> None:
        rows.append({"release": release, "query": query, "group level": group,
                     "unit": "ρ (zCDP)" if measure == "rho" else "ε (pure DP)", "budget": float(budget),
                     "charged to a record": charged, "ρ equivalent": _rho_of(float(budget), measure),
                     DATA_DERIVED_COLUMN: derived})

    for label, m, rel in run.releases:
        kind = m["kind"]
        derived = "; ".join(data_derived(rel.params))
        if kind == "unit_splitting":
            pol = rel.entries[0].loss
            wl = pol.workload
            for q in wl.queries:
                group = ", ".join(q.group_by) or "(all records)"
                split = q.split and q.kind != "count"
                add(label, q.name(), group, "rho", q.rho, "ρ·m(r)² (on split data)" if split else "ρ (flat)")
                if q.kind == "avg":
                    add(label, f"{q.name()} — COUNT DISTINCT part", group, "rho", q.rho_count, "ρ (flat)")
            sets = list(dict.fromkeys(q.group_by for q in wl.queries if q.group_by))
            if wl.partition_rho > 0 and sets:
                for gb in sets:
                    add(label, "partition selection (finding the group keys)", ", ".join(gb), "rho",
                        wl.partition_rho / len(sets), "ρ·m(r)² (on split data) + δ(r)")
            add(label, "total: base loss of a record never split", "(all records)", "rho", wl.total_rho,
                pol.describe())
            continue
        if kind == "multitier":
            e = rel.entries[0]
            for t in run.study.tiers():
                add(label, f"tier '{t.name}'", "(all records)" if "filter" not in m or m["model"] == "local" else
                    f"records with {multitier_filter(m).describe()}", "eps", t.eps,
                    "ε of this tier's answer (derived from the top tier's)")
            for e in rel.entries:
                add(label, f"total over all tiers ({e.label})", "(all records)", e.measure, e.loss.supremum(),
                    e.loss.describe())
            continue
        for e in rel.entries:
            bound = e.loss.supremum()
            if not math.isfinite(bound):
                bound = float(rel.params.get("eps_max", np.nan)) if kind == "prdp" else float("nan")
            q = str(rel.answers["query"].iloc[0]) if "query" in rel.answers.columns and len(rel.answers) else e.label
            add(label, q, "(all records)", e.measure, bound, e.loss.describe())
    return pd.DataFrame(rows, columns=["release", "query", "group level", "unit", "budget", "charged to a record",
                                       "ρ equivalent", DATA_DERIVED_COLUMN])


def ledger_frame(run: StudyRun) -> pd.DataFrame:
    """One row per ledger entry (public forms only; data-dependent minima left out in review), with the
    app mode the run was made in."""
    s = ledger_table(run.ledger, teaching=run.teaching)
    if not run.teaching and len(s):
        from .accounting import RecordLoss

        data_dep = [isinstance(e.loss, RecordLoss) for e in run.ledger.entries]
        s.loc[data_dep, "base loss"] = np.nan
    return s


def ledger_table(ledger: Ledger, *, teaching: bool) -> pd.DataFrame:
    """The ledger summary as exported: one row per entry, its seed, secure marker and mode
    (``Ledger.summary``), the parameters computed from the data, and the ``app mode`` (teaching or
    review) of the session or study that exports it."""
    s = ledger.summary()
    s.insert(1, "app mode", "teaching" if teaching else "review")
    return s


def _scrub(obj: Any) -> Any:
    """Drop record counts (key ``n``) from ledger data: in review mode the number of records is a
    true value too (a COUNT(*) answer)."""
    if isinstance(obj, dict):
        return {k: _scrub(v) for k, v in obj.items() if k not in ("n", "n_records", "n_users")}
    if isinstance(obj, list):
        return [_scrub(v) for v in obj]
    return obj


def ledger_dict(run: StudyRun) -> dict[str, Any]:
    """The ledger as JSON-ready data (data-dependent losses as summaries, never their values;
    in review mode without record counts)."""
    d = _plain(run.ledger.to_dict())
    return d if run.teaching else _scrub(d)


def ledger_json(ledger: Ledger, *, teaching: bool) -> str:
    """A ledger as JSON text (public forms; in review mode without record counts)."""
    d = _plain(ledger.to_dict())
    return json.dumps(d if teaching else _scrub(d), indent=2, default=str, ensure_ascii=False) + "\n"


def conversion_rows(run: StudyRun) -> pd.DataFrame:
    """(ε, δ) equivalents of the policy's loss levels and of every release's worst case."""
    delta = float(run.study.report.get("delta", 1e-6))
    levels: dict[str, float] = {}
    pol = _policy(run)
    if pol is not None:
        wl = pol.workload
        levels["unit splitting: base loss (record never split)"] = wl.total_rho
        for k in (2, 5, 10):
            levels[f"unit splitting: record cut into {k} pieces"] = wl.flat_rho + wl.split_rho * k * k
        pieces_of = {"unit splitting: base loss (record never split)": 1, "unit splitting: record cut into 2 pieces": 2,
                     "unit splitting: record cut into 5 pieces": 5, "unit splitting: record cut into 10 pieces": 10}
        if run.teaching:
            from .preview import preview_policy

            prev = preview_policy(run.dataset, pol)
            for name, v in prev.levels().items():
                if name.startswith("base"):
                    continue
                levels[f"unit splitting: {name} (teaching)"] = v
    out = conversion_table(levels, delta) if levels else pd.DataFrame()
    if pol is not None and pol.workload.partition_rho > 0 and len(out):
        # partition selection adds an approximate term: these records have (ε, δ + δ(r))
        from .mechanisms.unit_splitting import partition_record_delta

        ps_delta = next((float(m.get("partition_delta", 1e-6)) for _, m, _ in run.releases
                         if m.get("kind") == "unit_splitting"), 1e-6)
        out["plus δ(r) of partition selection"] = [
            float(partition_record_delta(pol, pieces_of[lv], ps_delta)) if lv in pieces_of else float("nan")
            for lv in out[out.columns[0]]]
    extra = []
    for label, m, rel in run.releases:
        for e in rel.entries:
            bound = e.loss.supremum()
            if not math.isfinite(bound) or m["kind"] == "unit_splitting":
                continue
            if e.measure == "eps":
                extra.append({"level": f"{label}: worst case, pure ε-DP", "ρ (zCDP)": bound * bound / 2.0,
                              "ε at δ (CKS)": bound, "ε at δ (textbook)": bound})
            else:
                extra.append({"level": f"{label}: worst case", "ρ (zCDP)": bound,
                              "ε at δ (CKS)": zcdp_to_approx_dp(bound, delta),
                              "ε at δ (textbook)": zcdp_to_approx_dp(bound, delta, method="textbook")})
    if extra:
        first = out.columns[0] if len(out.columns) else "level"
        ex = pd.DataFrame(extra).rename(columns={"level": first})
        out = pd.concat([out, ex], ignore_index=True) if len(out) else ex
    return out


def error_summary(answers: pd.DataFrame, *, min_records: int = 1) -> pd.DataFrame:
    """Per release and query: answers, median noise scale and 95% half-width; in teaching mode
    also the median absolute and relative error and how often the interval held the truth."""
    if answers.empty:
        return pd.DataFrame()
    a = answers
    if "n_records" in a.columns and min_records > 1:
        a = a[(a["n_records"].isna()) | (a["n_records"] >= min_records)]
    keys = ["release", "query"] if "query" in a.columns else ["release"]
    a = a.assign(query=a["query"].fillna("(answer)")) if "query" in a.columns else a
    rows = []
    for key, g in a.groupby(keys, sort=False, dropna=False):
        key = key if isinstance(key, tuple) else (key,)
        row: dict[str, Any] = dict(zip(keys, key))
        row["answers"] = len(g)
        for c in ("sigma", "sd", "scale"):
            if c in g.columns and g[c].notna().any():
                row["median noise sd"] = float(g[c].median())
                break
        if {"ci_low", "ci_high"} <= set(g.columns) and g["ci_low"].notna().any():
            row["median 95% half-width"] = float(((g["ci_high"] - g["ci_low"]) / 2).median())
        if "error" in g.columns and g["error"].notna().any():
            row["median |error|"] = float(g["error"].abs().median())
            if "rel_error" in g.columns and g["rel_error"].notna().any():
                row["median relative error"] = float(g["rel_error"].median())
            if {"ci_low", "ci_high", "true"} <= set(g.columns) and g["ci_low"].notna().any():
                inside = (g["true"] >= g["ci_low"]) & (g["true"] <= g["ci_high"])
                row["interval held the truth"] = float(inside.mean())
        rows.append(row)
    return pd.DataFrame(rows)


# ---------------------------------------------------------------------------
# HTML report
# ---------------------------------------------------------------------------


def _policy(run: StudyRun) -> Any:
    for _, m, rel in run.releases:
        if m["kind"] == "unit_splitting":
            return rel.entries[0].loss
    if "thresholds" in run.study.policy and run.study.workload is not None:
        return run.study.dataset_policy(run.dataset)
    return None


def review_cdf(x: np.ndarray, y: np.ndarray, n: int, tail: int = REVIEW_TAIL) -> tuple[np.ndarray, np.ndarray]:
    """A CDF cut where fewer than ``tail`` records lie at or above a level (review mode): the
    largest losses — those of single records — are not shown."""
    x = np.asarray(x, dtype=float)
    y = np.asarray(y, dtype=float)
    prev = np.concatenate(([0.0], y[:-1]))
    keep = n * (1.0 - prev) >= tail - 1e-9
    return x[keep], y[keep]


def _cdf(losses: Any, teaching: bool) -> tuple[np.ndarray, np.ndarray]:
    """The CDF of per-record (or per-owner) losses: an array, a LossProfile or a LossDistribution."""
    from .distribution import LossDistribution

    dist = losses if isinstance(losses, LossDistribution) else \
        LossDistribution.from_values(getattr(losses, "values", losses))
    x, y = dist.ecdf()
    return (x, y) if teaching else review_cdf(x, y, dist.n)


def _fig_html(fig: Any, first: list[bool]) -> str:
    import plotly.io as pio

    inline = first[0]
    first[0] = False
    return pio.to_html(_listify(fig.to_plotly_json()), include_plotlyjs=True if inline else False, full_html=False,
                       config={"displaylogo": False, "responsive": True}, validate=False)


def _listify(obj: Any) -> Any:
    """Figure data with plain lists (no binary arrays), so every number in the report is readable text."""
    if isinstance(obj, dict):
        return {k: _listify(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [_listify(v) for v in obj]
    if isinstance(obj, np.ndarray):
        return [_listify(v) for v in obj.tolist()] if obj.dtype == object else obj.tolist()
    if isinstance(obj, np.generic):
        return obj.item()
    return obj


def _table(df: pd.DataFrame, *, max_rows: int = 200, floatfmt: str = "{:,.6g}") -> str:
    if df is None or df.empty:
        return "<p class='muted'>(nothing to show)</p>"
    shown = df.head(max_rows)
    out = shown.to_html(index=False, escape=True, border=0, classes="tbl", na_rep="",
                        float_format=lambda v: floatfmt.format(v))
    if len(df) > max_rows:
        out += f"<p class='muted'>First {max_rows:,} of {len(df):,} rows; results.csv has them all.</p>"
    return out


def _label_column(a: pd.DataFrame) -> pd.Series:
    skip = {"release", "mechanism", "query", "estimate", "sigma", "sd", "scale", "ci_low", "ci_high", "true",
            "n_records", "error", "abs_error", "rel_error", "are", "eps_tau", "ell"}
    keys = [c for c in a.columns if c not in skip and a[c].notna().any() and a[c].dtype == object
            or c in ("tier", "category")]
    if not keys:
        return a["query"].astype(str) if "query" in a.columns else pd.Series(a.index.astype(str), index=a.index)
    lab = a[keys].astype(str).where(a[keys].notna(), "").agg(" | ".join, axis=1).str.strip(" |")
    return lab.replace("", "all records")


_CSS = """
body{font-family:system-ui,-apple-system,Segoe UI,Roboto,sans-serif;margin:2rem auto;max-width:1150px;color:#222;
line-height:1.45;padding:0 1rem}
h1{margin-bottom:.2rem}h2{border-bottom:2px solid #0072B2;padding-bottom:.2rem;margin-top:2.2rem}
.muted{color:#666;font-size:.9rem}.banner{padding:.6rem 1rem;border-radius:6px;margin:1rem 0}
.review{background:#e8f4fb;border:1px solid #0072B2}.teaching{background:#fff4e5;border:1px solid #E69F00}
table.tbl{border-collapse:collapse;font-size:.85rem;margin:.5rem 0}
table.tbl th,table.tbl td{border-bottom:1px solid #ddd;padding:.25rem .6rem;text-align:right}
table.tbl th{background:#f3f3f3}table.tbl td:first-child,table.tbl th:first-child{text-align:left}
pre{background:#f7f7f7;padding:.8rem;border-radius:6px;overflow-x:auto;font-size:.8rem}
"""


def render_html(run: StudyRun, *, config_text: str | None = None) -> str:
    """The study report as one self-contained HTML page (Plotly inlined; no network needed).

    Teaching mode adds true values, errors and full loss CDFs. Review mode leaves out every
    true value and per-record loss (answers from :meth:`Release.for_review`; CDFs cut before
    the last :data:`REVIEW_TAIL` records; no record count)."""
    from .charts.policy import loss_cdf_figure, public_function_figure
    from .charts.report import answers_ci_figure, delivered_cdf_figure

    st, ds, teaching = run.study, run.dataset, run.teaching
    e = html.escape
    first = [True]
    parts: list[str] = []
    title = st.report.get("title") or st.title or "PrDP Explorer study"
    parts.append(f"<h1>{e(title)}</h1>")
    parts.append("<p class='muted'>Study report of PrDP Explorer (config schema version "
                 f"{SCHEMA_VERSION}). Seed {st.seed}: seeded runs are reproducible and meant for teaching and "
                 "review, never for a real release.</p>")
    if teaching:
        parts.append("<div class='banner teaching'><b>Teaching mode.</b> This report shows true values, errors and "
                     "per-record loss distributions computed from the real records: it is <b>confidential</b> and "
                     "for the policy designer only.</div>")
    else:
        parts.append("<div class='banner review'><b>Review mode.</b> No true value and no per-record loss is in "
                     f"this report: answers are the released (noisy) ones, and loss distributions stop before the "
                     f"last {REVIEW_TAIL} records.</div>")

    # data
    parts.append("<h2>Data</h2>")
    src = st.data.describe() if run.data_file is None else f"file '{Path(run.data_file).name}'"
    sch = ds.schema
    parts.append(f"<p>Source: {e(src)}. Dataset <b>{e(ds.name)}</b>"
                 + (f", {ds.n:,} records" if teaching else "") + ".</p>")
    parts.append("<ul>" + f"<li>record id: {e(str(sch.id_col))}</li><li>measures: {e(', '.join(sch.measures))}</li>"
                 + f"<li>groups: {e(', '.join(sch.groups) or '(none)')}</li>"
                 + f"<li>owner: {e(str(sch.owner_col or '(none)'))}</li></ul>")
    for note in ds.notes:
        parts.append(f"<p class='muted'>{e(note)}</p>")

    # policy
    parts.append("<h2>Policy</h2>")
    pol = _policy(run)
    if pol is not None:
        parts.append(f"<p><b>Unit splitting (per-record zCDP).</b> {e(pol.describe())}</p>")
        from_data = {m: s for m, s in pol.threshold_sources().items() if is_data_derived(s)}
        if from_data:
            parts.append("<div class='banner teaching'><b>Computed from the data.</b> "
                         + e(", ".join(f"T({m}) ({s})" for m, s in from_data.items()))
                         + ": design aids computed from the confidential records, not public facts. A real release "
                         "must fix its thresholds from public knowledge (a secure release in review mode refuses "
                         "these).</div>")
        for meas in pol.thresholds.measures[:4]:
            thr_rows = pol.thresholds.rows[:6]
            t_min = min(dict(r)[meas] for _, r in thr_rows if meas in dict(r))
            grid = np.unique(np.concatenate((np.logspace(np.log10(t_min / 10), np.log10(t_min * 300), 600),
                                             t_min * np.arange(1, 201))))
            curves = {}
            for g, row in thr_rows:
                if meas not in dict(row):
                    continue
                lab = "every record" if pol.thresholds.group_col is None else (
                    "other groups (*)" if g == "*" else f"{pol.thresholds.group_col} = {g}")
                curves[lab] = pol.public_function(meas, grid, group=g)
            parts.append(_fig_html(public_function_figure(grid, curves, measure=meas), first))
        parts.append("<p class='muted'>The public policy function: the loss P of a record as a function of one "
                     "measure's value (other measures at most their thresholds, record in every filter). This form, "
                     "not any record's value, is what an agency publishes.</p>")
    if "budget" in st.policy:
        from .charts.budget import budget_curve_figure

        E = st.budget_function()
        parts.append(f"<p><b>Budget function (general PrDP framework, pure ε).</b> {e(E.describe())}</p>")
        if E.value_column is not None:
            parts.append(_fig_html(budget_curve_figure(E, measure=E.value_column, values=None,
                                                       vmax=max(E.U, 1.0)), first))
    if "specification" in st.policy and not (_held_by_engine(ds) and ds.engine.name != "memory"):
        spec = st.privacy_spec(ds.table)
        s = st.policy["specification"]
        how = "generated tiers (paper Sec. V)" if "tiers" in s else f"column '{s['column']}'"
        parts.append(f"<p><b>Personalized DP specification Φ</b> ({e(how)}; public under PDP): min Φ "
                     f"{spec.min_eps:.4g}, mean {spec.mean_eps:.4g}, max {spec.max_eps:.4g}.</p>")
        tt = spec.tier_table()
        if not teaching:
            tt = tt.drop(columns=[c for c in tt.columns if c in ("users",)])
        parts.append(_table(tt))
    if "tiers" in st.policy:
        tiers = st.tiers()
        parts.append("<p><b>Analyst tiers (multi-tier release).</b> "
                     + e(", ".join(f"{t.name}: ε = {t.eps:g}" for t in tiers))
                     + ". Every lower tier is derived from a higher one; any coalition pays its top budget.</p>")

    # budget table
    parts.append("<h2>Budget table</h2>")
    parts.append("<p class='muted'>One row per release, query and group level (or tier), in the unit of the "
                 "mechanism; ρ equivalent = ε²/2 for pure ε, so rows of one record add up (sequential "
                 "composition; rows of different group levels of one query do not add: group-bys partition the "
                 "records).</p>")
    parts.append(_table(budget_table(run)))

    # CDFs
    parts.append("<h2>Policy-loss distributions</h2>")
    cut = "" if teaching else f" (cut before the last {REVIEW_TAIL} records)"
    if pol is not None:
        from .preview import preview_policy

        prev = preview_policy(ds, pol)
        x, y = prev.record_cdf()
        if not teaching:
            x, y = review_cdf(x, y, ds.n)
        series = {"records": (x, y)}
        if prev.owners is not None:
            series[f"owners ({ds.schema.owner_col}, Lemma 4)"] = _cdf(prev.owners, teaching)
        parts.append(_fig_html(loss_cdf_figure(series, title="Policy-loss CDF, unit splitting" + cut,
                                               base=pol.workload.total_rho, view="zoom"), first))
        parts.append(_fig_html(loss_cdf_figure(series, title="Share of records paying more than x" + cut,
                                               base=pol.workload.total_rho, view="tail"), first))
        if teaching:
            parts.append(f"<p>{e(prev.records.plain_language())}</p>")
    for label, m, rel in run.releases:
        if m["kind"] in ("unit_splitting",) or (rel.loss is None and rel.loss_distribution is None):
            continue
        unit = "ρ" if rel.measure == "rho" else "ε"
        series = {"delivered": _cdf(rel.loss if rel.loss is not None else rel.loss_distribution, teaching)}
        if rel.requested is not None:
            series["requested"] = _cdf(rel.requested, teaching)
        elif rel.extras.get("private_requested_distribution") is not None:
            series["requested (by domain)"] = _cdf(rel.extras["private_requested_distribution"], teaching)
        parts.append(_fig_html(delivered_cdf_figure(series, title=f"{label}: per-record loss CDF{cut}", unit=unit),
                               first))

    # conversions
    parts.append("<h2>(ε, δ) equivalents</h2>")
    parts.append(f"<p class='muted'>ρ-zCDP implies (ε, δ)-DP for every δ; here δ = "
                 f"{st.report.get('delta', 1e-6):g}. CKS: Canonne–Kamath–Steinke (tight); textbook: "
                 "ρ + 2√(ρ ln 1/δ).</p>")
    parts.append(_table(conversion_rows(run)))

    # answers and errors
    parts.append("<h2>Released answers and their errors</h2>")
    res = results_frame(run.releases, teaching=teaching)
    summ = error_summary(res, min_records=int(st.report.get("min_records", 1)))
    parts.append("<p class='muted'>Per query: the number of answers, the median noise standard deviation and the "
                 "median half-width of the 95% intervals (public: they depend on the parameters only)"
                 + ("; in teaching mode also the median absolute and relative error against the true answers and "
                    "how often the interval held the truth." if teaching else ".") + "</p>")
    parts.append(_table(summ))
    for label, m, rel in run.releases:
        a = _answers(rel, teaching)
        if a.empty or "estimate" not in a.columns:
            continue
        a = a.assign(label=_label_column(a))
        if "query" in a.columns and a["query"].nunique() > 1 and m["kind"] == "unit_splitting":
            for q, g in list(a.groupby("query", sort=False))[:8]:
                g = g.sort_values("estimate", ascending=False)
                parts.append(_fig_html(answers_ci_figure(g, title=f"{label}: {q} (largest 60 answers)"), first))
        else:
            parts.append(_fig_html(answers_ci_figure(a, title=f"{label}: released answers"), first))
        parts.append(_table(a.drop(columns=["label"]), max_rows=30))

    # ledger and parameters
    parts.append("<h2>Ledger</h2>")
    parts.append(_table(ledger_frame(run)))
    parts.append("<h2>Parameters and seeds</h2>")
    seeds = [{"release": label, "mechanism": rel.mechanism, "app mode": "teaching" if teaching else "review",
              "seed": rel.seed, "secure": bool(getattr(rel, "secure", False)),
              DATA_DERIVED_COLUMN: "; ".join(data_derived(rel.params))} for label, _, rel in run.releases]
    parts.append(_table(pd.DataFrame(seeds)))
    if any(r[DATA_DERIVED_COLUMN] for r in seeds):
        parts.append("<p>Parameters listed as <b>data-derived</b> were computed from the confidential records (a "
                     "design aid): the release leaks through them, whatever its noise. Fix them from public "
                     "knowledge before publishing.</p>")
    if any(r["secure"] for r in seeds):
        parts.append("<p>Releases marked <b>secure</b> used exact samplers with a system random source: they have no "
                     "seed, and a rerun gives other numbers (the reproduction script reruns them, not bit for bit).</p>")
    parts.append("<p>The study config (reload it in the app's Study page or run <code>prdp run</code>):</p>")
    parts.append(f"<pre>{e(config_text if config_text is not None else st.to_yaml())}</pre>")
    parts.append("<p class='muted'>reproduce.py (written next to this report by <code>prdp run</code>) reruns the "
                 "study with prdp_core and writes the same results, bit for bit.</p>")
    body = "\n".join(parts)
    return (f"<!DOCTYPE html>\n<html lang='en'><head><meta charset='utf-8'><title>{e(title)}</title>"
            f"<meta name='viewport' content='width=device-width, initial-scale=1'><style>{_CSS}</style></head>"
            f"<body>\n{body}\n</body></html>\n")


# ---------------------------------------------------------------------------
# Reproduction script
# ---------------------------------------------------------------------------


def _py(v: Any) -> str:
    """A value of the study as a Python literal (the only form user text takes in the script)."""
    return literal(v)


def _engine_mode(study: Study, data_file: str | None) -> bool:
    """The study's file is opened through prdp_core.engines (data.engine other than memory)."""
    return study.data.engine != "memory" and (data_file is not None or study.data.path is not None
                                              or study.data.table is not None)


def _data_code(study: Study, data_file: str | None) -> list[str]:
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
            return [f"DATA = sys.argv[2] if len(sys.argv) > 2 else {default}",
                    "# the records stay in the engine: statistics are computed there, noise is drawn here",
                    f"ds = prdp_core.engines.open_dataset(DATA, engine={src.engine!r}, schema={schema}"
                    f"{name}{options}{opts})"]
        return [f"DATA = sys.argv[2] if len(sys.argv) > 2 else {default}",
                "df = prdp_core.load_table(DATA)",
                f"ds = prdp_core.prepare_dataset(df, {schema}, name=Path(DATA).name{opts})"]
    n = f", n={int(src.n)}" if src.n is not None else ""
    if src.schema is None and not src.prepare:
        return [f"ds = prdp_core.samples.load_dataset({src.sample!r}{n}, seed={int(src.sample_seed)})"]
    schema = (f"prdp_core.Schema.from_dict({_py(src.schema)})" if src.schema is not None
              else f"prdp_core.samples.info({src.sample!r}).schema")
    return [f"df = prdp_core.samples.load({src.sample!r}{n}, seed={int(src.sample_seed)})",
            f"ds = prdp_core.prepare_dataset(df, {schema}, name={src.sample!r}{opts})"]


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
    kinds = {m["kind"] for m in study.mechanisms}
    if "unit_splitting" in kinds:
        L.append("from prdp_core.mechanisms import unit_splitting")
        L.append("from prdp_core.splitting import as_thresholds, thresholds_from_frame")
        L.append("from prdp_core.workload import SplittingPolicy, Workload")
    if "prdp" in kinds:
        L.append("from prdp_core.mechanisms import prdp")
        L.append("from prdp_core.mechanisms.prdp import local as prldp")
    if "personalized" in kinds:
        L.append("from prdp_core.mechanisms import personalized")
    if "multitier" in kinds:
        L.append("from prdp_core.mechanisms import multitier as mt")
    if "granular" in kinds:
        L.append("from prdp_core.mechanisms import granular")
    L += ["", f"TITLE, MODE, SEED = {_py(study.title or '(untitled)')}, {_py(study.mode)}, {int(study.seed)}"]
    L += _data_code(study, data_file)
    L += ["OUT = Path(sys.argv[1]) if len(sys.argv) > 1 else Path(__file__).resolve().parent / 'reproduced'",
          f"REVEAL = {teaching!r}  # teaching mode: true values are attached (confidential)", "",
          "releases = []  # (label, Release)"]
    pol = study.policy
    T = "ds" if _engine_mode(study, data_file) else "ds.table"  # what the mechanisms read
    for i, m in enumerate(study.mechanisms):
        seed, label = study.mechanism_seed(i), study.mechanism_label(i)
        L += ["", f"# --- mechanism {i + 1} ---"]
        k = m["kind"]
        if k == "unit_splitting":
            t = pol["thresholds"]
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
    L += ["",
          "OUT.mkdir(parents=True, exist_ok=True)",
          "(OUT / 'results.csv').write_bytes(to_csv_bytes(results_frame(releases, teaching=REVEAL)))",
          "print(f'{len(releases)} release(s) written to {OUT / \"results.csv\"}')", ""]
    return "\n".join(L)


# ---------------------------------------------------------------------------
# Writing everything
# ---------------------------------------------------------------------------

OUTPUT_FILES = ("results.csv", "ledger.csv", "ledger.json", "budget.csv", "report.html", "reproduce.py",
                "study.yaml")


def write_outputs(run: StudyRun, out_dir: str | os.PathLike, *, progress: Progress | None = None,
                  force: bool = False) -> dict[str, Path]:
    """Write the study's outputs into ``out_dir`` (created if needed); returns name → path.

    results.csv (every answer), budget.csv (the budget table), ledger.csv / ledger.json (the
    ledger, public forms), report.html, reproduce.py and study.yaml (the normalised config).
    CSVs are formula-safe (:func:`prdp_core.export.to_csv_bytes`). Files are written as
    :func:`prdp_core.outputs.write_files` does: never through a symbolic link, and over an
    existing file only if prdp wrote it there (its manifest) — else :class:`OutputError`,
    unless ``force``."""
    from .outputs import write_files

    say = progress or (lambda *_: None)
    files: dict[str, bytes] = {}
    say(0, 3, "writing tables")
    files["results.csv"] = to_csv_bytes(results_frame(run.releases, teaching=run.teaching))
    files["budget.csv"] = to_csv_bytes(budget_table(run))
    files["ledger.csv"] = to_csv_bytes(ledger_frame(run))
    files["ledger.json"] = (json.dumps(ledger_dict(run), indent=2, default=str, ensure_ascii=False) + "\n").encode()
    yaml_text = run.study.to_yaml()
    files["study.yaml"] = yaml_text.encode("utf-8")
    say(1, 3, "writing the report")
    files["report.html"] = render_html(run, config_text=yaml_text).encode("utf-8")
    say(2, 3, "writing the reproduction script")
    files["reproduce.py"] = reproduction_script(run.study, data_file=run.data_file).encode("utf-8")
    written = write_files(out_dir, files, force=force)
    say(3, 3, "done")
    return written


__all__ = ["ConfigError", "DataSource", "OUTPUT_FILES", "REVIEW_TAIL", "SCHEMA_VERSION", "Study", "StudyRun",
           "budget_table", "conversion_rows", "error_summary", "ledger_dict", "ledger_frame", "ledger_json", "ledger_table",
           "load_config",
           "load_data", "parse_config", "render_html", "reproduction_script", "resolve_data_path", "results_frame",
           "review_cdf", "run_study", "safe_data_path", "study_from_dict", "write_outputs"]
