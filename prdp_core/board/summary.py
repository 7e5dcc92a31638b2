"""The board row of a policy: what a study config means on a dataset, in two kinds of numbers.

A study config may hold several policy parts (splitting thresholds, a budget function, a
personalized specification, analyst tiers). A board entry is about one of them:
:func:`restrict` keeps that part, its workload and its mechanism. :func:`summarise` then
computes, with prdp_core's own functions, a JSON-ready mapping with two sections:

* ``public`` — quantities that follow from the policy alone and may be shown to anyone:
  the policy function (text), the base loss (what the least affected record pays), the
  budgets, and for every query its analytic noise σ and 95% half-width (unit splitting:
  σ = Δ/√(2ρ) with Δ the threshold or clamp; analyst tiers: each tier's σ from the plan);
* ``records`` — statistics of the records, **confidential** (shown in teaching mode only):
  the share of records above the base loss, the median / 99th percentile / largest record loss,
  the owners' 99th percentile (Lemma 4 for zCDP, the sum for pure ε), the loss CDFs (at most
  :data:`CDF_POINTS` steps), and the median relative error of the answers (the entry's own figure: closed form for
  unit splitting, :data:`ERROR_RUNS` seeded runs of the mechanism otherwise), with its figures by measure
  (``errors``: the closed form where one exists, and :data:`ERROR_RUNS` seeded runs for every kind, the number of
  runs stored) and the workload they were measured on (``error_workload``), so that the board compares every entry
  on the same measure and workload (:mod:`prdp_core.board.comparison`).

The error figures are teaching simulations (:func:`prdp_core.core.recorder.simulation`): the mechanism is run
on the records against their true answers, nothing is released. :func:`summarise` computes them only in
teaching mode (its ``teaching`` keyword: the session's mode in the app, the study's in ``prdp board
submit``); in review mode the summary has no error figure (``median_rel_error`` None, ``error_method``
saying why) and the per-record losses of personalized DP and analyst tiers are the public ones (each
user's Φ, the top tier's ε) instead of a seeded run's delivered loss.

Per-record losses are in the unit of the policy: ρ (zCDP) for unit splitting, ε (pure DP) for
the others. :func:`board_frame` turns many entries into the board's table, converting each
loss to ε at the workshop's δ so that kinds can be compared; :func:`pareto_front` marks the
policies no other beats on both privacy (99th-percentile loss) and accuracy.
"""

from __future__ import annotations

import math
from datetime import datetime, timezone
from typing import Any, Callable, Iterable, Mapping, Sequence

import numpy as np
import pandas as pd

from ..core.accounting import zcdp_to_approx_dp
from ..core.errors import ConfigError
from ..core.loss_profile import LossProfile, ecdf, format_loss, owner_losses
from ..core.provenance import PART_SOURCES
from ..core.recorder import simulation
from ..data import Dataset
from ..study.config import MAX_SEED, Study, parse_config
from .comparison import CLOSED_FORM, SEEDED_RUNS, board_errors, query_label

#: Policy parts of a study config: part → (kind shown on the board, mechanism kind, loss unit).
PARTS: dict[str, tuple[str, str, str]] = {
    "thresholds": ("unit splitting", "unit_splitting", "rho"),
    "budget": ("budget function", "prdp", "eps"),
    "specification": ("personalized DP", "personalized", "eps"),
    "tiers": ("analyst tiers", "multitier", "eps"),
}
#: Steps kept of a stored loss CDF.
CDF_POINTS = 300
#: Seeded runs behind the error of mechanisms without a closed form (every kind but unit splitting).
ERROR_RUNS = 30
#: What a review-mode summary says instead of its error figures.
REVIEW_ERRORS = "not computed in review mode (an error estimate runs the mechanism on the records)"
#: Layout of a stored summary (2: error figures by measure and the workload they were measured on).
SUMMARY_VERSION = 2
_Z95 = 1.959963984540054


def policy_parts(study: Study) -> list[str]:
    """The policy parts a study holds that can go on the board (thresholds need a workload)."""
    return [p for p in PARTS if p in study.policy and (p != "thresholds" or study.workload is not None)]


def restrict(study: Study, part: str | None = None) -> Study:
    """The study reduced to one policy part, its workload and the first mechanism of its kind.

    ``part`` None picks the only part; a study with several must name one (ConfigError). The
    pages' view settings (``app``) are left out: a board entry is a policy, not a screen."""
    parts = policy_parts(study)
    if not parts:
        raise ConfigError("policy: the study has no policy to put on the board.",
                          hint="Design one (splitting thresholds with a workload, a budget function, a personalized "
                               "specification or analyst tiers).")
    if part is None:
        if len(parts) > 1:
            raise ConfigError(f"policy: the study holds {len(parts)} policies ({', '.join(parts)}); name the one to "
                              "submit.", hint=f"Choose one of: {', '.join(parts)}.")
        part = parts[0]
    if part not in parts:
        raise ConfigError(f"policy.{part}: the study has no such policy.", hint=f"It has: {', '.join(parts)}.")
    d = study.to_dict()
    src = PART_SOURCES.get(part)  # where the part's parameters came from (typed, data, private) goes with it
    d["policy"] = {k: d["policy"][k] for k in (part, src) if k in d["policy"]}
    if part != "thresholds":
        d.pop("workload", None)
    mech = PARTS[part][1]
    d["mechanisms"] = [m for m in d.get("mechanisms", []) if m["kind"] == mech][:1]
    if part == "thresholds" and not d["mechanisms"]:
        d["mechanisms"] = [{"kind": "unit_splitting"}]
    d.pop("app", None)
    return parse_config(d)


def part_of(study: Study) -> str:
    """The one policy part of a restricted study."""
    parts = policy_parts(study)
    if len(parts) != 1:
        raise ConfigError("policy: a board entry holds exactly one policy.")
    return parts[0]


# ---------------------------------------------------------------------------
# One entry
# ---------------------------------------------------------------------------


def _cdf(values: np.ndarray) -> list[list[float]]:
    x, y = ecdf(values, max_points=CDF_POINTS)
    return [x.tolist(), y.tolist()]


def _sigma_row(query: str, sigma: float | None, sigma_max: float | None = None, note: str = "") -> dict[str, Any]:
    top = sigma if sigma_max is None else sigma_max
    return {"query": query, "sigma": sigma, "sigma_max": top,
            "half_width_95": None if top is None else _Z95 * top, "note": note}


#: What a part's summary function gives: its public quantities, each record's loss and the error figures.
PartSummary = tuple[dict[str, Any], np.ndarray, dict[str, Any]]


def _no_errors(why: str) -> dict[str, Any]:
    return {"median_rel_error": None, "error_method": why, "query_errors": []}


def _by_measure(own: dict[str, Any], workload: list[str], seeded: dict[str, Any], runs: int,
                closed: dict[str, Any] | None = None) -> dict[str, Any]:
    """The error figures of an entry: its own (``own``), and by measure — the closed form (``closed``, where one
    exists) and ``runs`` seeded runs (``seeded``) — with the workload they were measured on."""
    def fig(e: dict[str, Any]) -> dict[str, Any]:
        return {"median_rel_error": e["median_rel_error"], "query_errors": e["query_errors"]}

    errors = {SEEDED_RUNS: {**fig(seeded), "runs": int(runs)}}
    if closed is not None:
        errors[CLOSED_FORM] = fig(closed)
    return {**own, "errors": errors, "error_workload": list(workload)}


def error_workload(study: Study) -> list[str]:
    """The queries a one-policy study's error figures are measured on, in the board's canonical form
    (:func:`prdp_core.board.comparison.query_label`): the workload of unit splitting, the query of the other
    kinds' mechanism (none without one)."""
    part = part_of(study)
    if part == "thresholds":
        from ..core.workload import Workload

        assert study.workload is not None  # a splitting entry has a workload (policy_parts)
        return [query_label(q.kind, q.measure, by=q.group_by, where=None if q.filter is None else q.filter.describe())
                for q in Workload.from_dict(study.workload).queries]
    if not study.mechanisms:
        return []
    m = study.mechanisms[0]
    if part == "budget":
        return [query_label(m["query"], m.get("column"))]
    if part == "specification":
        q = m["query"]
        cond = f" ≥ {q['cutoff']:g}" if q["kind"] == "count" else f" in [{q['lo']:g}, {q.get('hi')}]"
        return [query_label(q["kind"], f"{q.get('column') or '*'}{cond}")]
    return [query_label(m.get("query", "count"), m.get("measure") if m.get("query") == "sum" else None,
                        where=None if not m.get("filter") else str(m["filter"]))]


def _splitting(study: Study, ds: Dataset, runs: int, teaching: bool) -> PartSummary:
    """Unit splitting: P(r) on every record, σ of every query from the thresholds, closed-form errors and, for the
    board's comparison with the other kinds, ``runs`` seeded runs (teaching mode)."""
    from ..mechanisms.analysis import workload_errors
    from ..mechanisms.preview import preview_policy

    pol = study.splitting_policy(ds.table)
    prev = preview_policy(ds, pol)
    wl = pol.workload
    rows = pol.thresholds.rows
    queries = []
    for i, q in enumerate(wl.queries):
        name = f"{i + 1}. {q.name()}"
        if q.kind == "count":
            queries.append(_sigma_row(name, 1.0 / math.sqrt(2.0 * q.rho)))
            continue
        if not q.split:
            deltas = [float(q.clamp)]
        else:
            deltas = [float(dict(r)[q.measure]) for _, r in rows if q.measure in dict(r)]
        note = "AVG: σ of its sum; its count has σ = 1/√(2ρ_count)" if q.kind == "avg" else ""
        queries.append(_sigma_row(name, min(deltas) / math.sqrt(2.0 * q.rho), max(deltas) / math.sqrt(2.0 * q.rho),
                                  note))
    public = {"base_loss": wl.total_rho, "policy": pol.describe(),
              "budgets": f"{wl.flat_rho:.4g}ρ flat + {wl.split_rho:.4g}ρ·m(r)² on split data",
              "queries": queries}
    if not teaching:
        return public, prev.records.values, _no_errors(REVIEW_ERRORS)
    m = study.mechanisms[0] if study.mechanisms else {}
    with simulation("the board's error estimate", teaching=teaching):  # AVG answers: a Monte Carlo of their noise
        errs = workload_errors(ds.table, pol, partition_delta=float(m.get("partition_delta", 1e-6)),
                               rng=np.random.default_rng(study.seed))
    per_query = [{"query": q, "median_rel_error": float(g["median_are"].median())}
                 for q, g in errs.groupby("query", sort=False)]
    err = {"median_rel_error": float(errs["median_are"].median()) if len(errs) else None,
           "error_method": "closed form (median over the answers of each answer's median relative error)",
           "query_errors": per_query}
    _, seeded = _seeded_runs(study, ds, runs, teaching)  # the measure every kind has, for the board to compare
    return public, prev.records.values, _by_measure(err, error_workload(study), seeded, runs, closed=err)


def _seeded_runs(study: Study, ds: Dataset, runs: int, teaching: bool) -> tuple[list[Any], dict[str, Any]]:
    """The study's mechanism run ``runs`` times (seeds study seed + k, teaching mode), as a teaching simulation:
    the releases of the first run and the median relative error of every answer of every run. In review mode
    nothing runs (no releases, no error figures)."""
    from ..study.runner import run_study

    if not study.mechanisms:
        return [], _no_errors("no mechanism in the study")
    if not teaching:
        return [], _no_errors(REVIEW_ERRORS)
    base = study.to_dict()
    base["mode"] = "teaching"
    m = base["mechanisms"][0]
    m.pop("secure", None)  # error figures are estimated from seeded runs, never from a real release
    if m["kind"] == "prdp":
        m["algorithms"] = ["framework"]  # the policy's mechanism, without the baselines run beside it
    first: list[Any] = []
    rel_err: dict[str, list[np.ndarray]] = {}
    for k in range(runs):
        m["seed"] = (study.seed + k) % (MAX_SEED + 1)
        with simulation("the board's error estimate", teaching=teaching):  # each run in a throwaway ledger
            run = run_study(parse_config(base), dataset=ds)
        if k == 0:
            first = [rel for _, _, rel in run.releases]
        for _, _, rel in run.releases:
            a = rel.answers
            if "estimate" not in a.columns or "true" not in a.columns:
                continue
            est, true = a["estimate"].to_numpy(float), a["true"].to_numpy(float)
            ok = np.isfinite(true) & (true != 0)
            labels = (a["tier"].astype(str) if "tier" in a.columns else a["query"].astype(str)).to_numpy()
            for lab in pd.unique(labels[ok]):
                sel = ok & (labels == lab)
                rel_err.setdefault(str(lab), []).append(np.abs(est[sel] - true[sel]) / np.abs(true[sel]))
    per_query = [{"query": q, "median_rel_error": float(np.median(np.concatenate(v)))} for q, v in rel_err.items()]
    every = np.concatenate([np.concatenate(v) for v in rel_err.values()]) if rel_err else np.array([])
    return first, {"median_rel_error": float(np.median(every)) if every.size else None,
                   "error_method": f"{runs} seeded runs of the mechanism (median over answers and runs)",
                   "query_errors": per_query}


def _measured(study: Study, err: dict[str, Any], runs: int) -> dict[str, Any]:
    """A kind without a closed form: its seeded runs are its own figure and its figure by measure (none when no
    run was made: review mode, no mechanism)."""
    return err if err["median_rel_error"] is None else _by_measure(err, error_workload(study), err, runs)


def _budget(study: Study, ds: Dataset, runs: int, teaching: bool) -> PartSummary:
    """Budget function: each record's requirement E(r) (the loss the policy allows it)."""
    E = study.budget_function()
    E.check_columns(ds.table.columns)
    values = E(ds.table)
    public = {"base_loss": E.eps_min, "policy": E.describe(),
              "budgets": f"ε̌ = {E.eps_min:.4g}, ε̂ = {E.eps_max:.4g}, U = {E.U:.4g}, {E.domains().L} domains",
              "queries": []}
    _, err = _seeded_runs(study, ds, runs, teaching)
    return public, values, _measured(study, err, runs)


def _specification(study: Study, ds: Dataset, runs: int, teaching: bool) -> PartSummary:
    """Personalized DP: the ε each user is delivered by the study's mechanism (Φ without one, and in review
    mode)."""
    spec = study.privacy_spec(ds.table)
    s = study.policy["specification"]
    how = ("generated tiers " + ", ".join(f"{k} = {v:g}" for k, v in s["tiers"].items()) if "tiers" in s
           else f"ε from column '{s['column']}' (default {s['default_eps']:g})")
    first, err = _seeded_runs(study, ds, runs, teaching)
    values = (np.asarray(first[0].loss, dtype=float) if first and first[0].loss is not None
              else np.asarray(spec.phi_for(ds.table), dtype=float))  # no run: the requested Φ
    desc = "each user's public ε Φ, no mechanism"
    if study.mechanisms:
        m = study.mechanisms[0]
        q = m["query"]
        what = q["kind"] + (f" of {q['column']}" if q.get("column") else "")
        what += f" ≥ {q['cutoff']:g}" if q["kind"] == "count" else f" in [{q['lo']:g}, {q.get('hi')}]"
        desc = f"{m['mechanism']} (t = {m['t']}) answering the {what}, each user's ε Φ public"
    public: dict[str, Any] = {"base_loss": None, "policy": desc, "budgets": f"Φ: {how}", "queries": []}
    return public, values, _measured(study, err, runs)


def _tiers(study: Study, ds: Dataset, runs: int, teaching: bool) -> PartSummary:
    """Analyst tiers: every record the query reads pays the top tier's ε (the whole hierarchy; without a run —
    review mode — every record)."""
    from ..mechanisms import multitier as mt
    from ..study.runs import multitier_filter

    tiers = study.tiers()
    desc = ", ".join(f"{t.name}: ε = {t.eps:g}" for t in tiers)
    queries = []
    if study.mechanisms:
        m = study.mechanisms[0]
        if m["model"] == "central":
            integer = m["family"] in ("geometric", "multiscale_geometric")
            q = mt.central_query(ds.table, m["query"], measure=m.get("measure"), clip=m.get("clip"),
                                 filter=multitier_filter(m), integer=integer)
            plan = mt.plan_central(tiers, m["family"], sensitivity=float(q.sensitivity), delta=m["delta"])
            for _, r in plan.table().iterrows():
                queries.append(_sigma_row(str(r["tier"]), math.sqrt(float(r["mse_multitier"])),
                                          note=f"ε = {r['eps']:g}"))
        else:
            plan_l = mt.plan_local(tiers, int(m["d"]), variant=m["variant"])
            for _, r in plan_l.table().iterrows():
                queries.append(_sigma_row(str(r["tier"]), None, note=f"ε = {r['eps']:g}; local model: per-user "
                                                                      f"variance {float(r['var_multitier']):.4g}"))
    first, err = _seeded_runs(study, ds, runs, teaching)
    values = (np.asarray(first[0].loss, dtype=float) if first and first[0].loss is not None
              else np.full(ds.n, max(t.eps for t in tiers)))
    public = {"base_loss": None, "policy": desc, "budgets": f"top tier ε = {max(t.eps for t in tiers):g}",
              "queries": queries}
    return public, values, _measured(study, err, runs)


#: Policy part → the function summarising it: (study, dataset, runs, teaching) → public, record losses, errors.
PART_SUMMARIES: dict[str, Callable[[Study, Dataset, int, bool], PartSummary]] = {
    "thresholds": _splitting, "budget": _budget, "specification": _specification, "tiers": _tiers}


def summarise(study: Study, ds: Dataset, *, teaching: bool, runs: int = ERROR_RUNS) -> dict[str, Any]:
    """The board summary of a one-policy study (see :func:`restrict`) on the dataset ``ds``.

    ``teaching``: the mode the summary is made in (the session's, or the study's for ``prdp board submit``);
    only teaching mode computes the error figures, which are teaching simulations on the records
    (:func:`prdp_core.core.recorder.simulation`). Raises ConfigError when the study does not fit the data, or
    another PrdpError of the engine. The ``records`` section is confidential; ``public`` holds only what
    follows from the policy."""
    part = part_of(study)
    kind, _, unit = PARTS[part]
    study.check_against(ds)
    public, values, err = PART_SUMMARIES[part](study, ds, runs, teaching)
    prof = LossProfile(values, unit, base=public["base_loss"])  # type: ignore[arg-type]  # PARTS' loss units are "rho" or "eps", typed str in the table
    records: dict[str, Any] = {"base": prof.base_loss, "share_above_base": prof.share_above(),
                               "p50": float(np.median(values)) if values.size else None,
                               "p99": float(np.quantile(values, 0.99)) if values.size else None,
                               "max": float(values.max()) if values.size else None, "owner_p99": None,
                               "cdf": _cdf(values), "owner_cdf": None, **err}
    owner = ds.schema.owner_col
    if owner and values.size:
        ol = owner_losses(values, ds.table[owner], measure=unit).to_numpy()  # type: ignore[arg-type]  # PARTS' loss units are "rho" or "eps", typed str in the table
        records.update(owner_p99=float(np.quantile(ol, 0.99)), owner_cdf=_cdf(ol))
    return {"version": SUMMARY_VERSION, "kind": kind, "part": part, "unit": unit, "dataset": study.data.describe(),
            "public": public, "records": records}


# ---------------------------------------------------------------------------
# Many entries
# ---------------------------------------------------------------------------


def eps_at(loss: float | None, unit: str, delta: float) -> float | None:
    """A per-record loss as ε at δ: zCDP converted with the Canonne–Kamath–Steinke bound, pure ε as is."""
    if loss is None or not math.isfinite(float(loss)):
        return None
    return zcdp_to_approx_dp(float(loss), delta) if unit == "rho" else float(loss)


def convert_cdf(cdf: Sequence[Sequence[float]], unit: str, delta: float) -> tuple[np.ndarray, np.ndarray]:
    """A stored loss CDF with its losses as ε at δ (see :func:`eps_at`)."""
    x = np.asarray(cdf[0], dtype=float)
    if unit == "rho":
        x = np.array([zcdp_to_approx_dp(float(v), delta) for v in x])
    return x, np.asarray(cdf[1], dtype=float)


def _sigmas(public: Mapping[str, Any]) -> str:
    parts = []
    for q in public.get("queries") or []:
        if q.get("sigma") is None:
            parts.append(f"{q['query']}: {q.get('note') or 'σ depends on the data'}")
        elif q.get("sigma_max") is not None and q["sigma_max"] > q["sigma"] * (1 + 1e-12):
            parts.append(f"{q['query']}: σ {q['sigma']:.4g}–{q['sigma_max']:.4g}")
        else:
            parts.append(f"{q['query']}: σ {q['sigma']:.4g}")
    return "; ".join(parts)


#: Columns of the board that describe records (hidden in review mode).
RECORD_COLUMNS = ("share above base", "median record loss", "p99 record loss", "max record loss", "owner p99",
                  "ε at δ, p99 record", "median rel. error", "error measure")
#: The columns of the compact table the Board page shows (the others are in each entry's details).
COMPACT_COLUMNS = ("#", "name", "yours", "kind", "ε at δ, base", "ε at δ, p99 record", "median rel. error",
                   "error measure")


def board_frame(entries: Iterable[Any], *, review: bool, delta: float, mine: set[int] | None = None,
                compact: bool = False) -> pd.DataFrame:
    """The board as a table, one row per entry (``store.Entry`` objects).

    Review mode keeps only public columns (name, kind, policy function, budgets, base loss and
    its ε at δ, σ of each query, dataset, time, rationale); teaching mode adds the statistics of
    the records (:data:`RECORD_COLUMNS`), the error of each entry measured like the others'
    (:func:`prdp_core.board.comparison.board_errors`; "error measure" says how, or that it is not
    comparable). Losses are shown with their unit (ρ or ε). ``compact``: the columns of
    :data:`COMPACT_COLUMNS` only (the Board page's table; the rest is in each entry's details)."""
    entries = list(entries)
    compared = {} if review else board_errors(entries)
    rows = []
    for e in entries:
        s = e.summary
        pub, rec, unit = s.get("public", {}), s.get("records", {}), s.get("unit", "rho")
        base = pub.get("base_loss")
        row: dict[str, Any] = {
            "#": e.id, "name": e.name, "kind": e.kind, "policy": pub.get("policy", ""),
            "budgets": pub.get("budgets", ""),
            "base loss": format_loss(base, unit) if base is not None else "–",
            "ε at δ, base": eps_at(base, unit, delta), "σ per query": _sigmas(pub), "dataset": e.dataset,
            "submitted": datetime.fromtimestamp(e.created_at, tz=timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
            "rationale": e.rationale}
        if mine is not None:
            row["yours"] = e.id in mine
        if not review:
            fmt = {k: format_loss(rec[k], unit) if rec.get(k) is not None else "–"
                   for k in ("p50", "p99", "max", "owner_p99")}
            row.update({"share above base": rec.get("share_above_base"), "median record loss": fmt["p50"],
                        "p99 record loss": fmt["p99"], "max record loss": fmt["max"], "owner p99": fmt["owner_p99"],
                        "ε at δ, p99 record": eps_at(rec.get("p99"), unit, delta),
                        "median rel. error": compared[e.id].error, "error measure": compared[e.id].basis})
        rows.append(row)
    cols = ["#", "name"] + (["yours"] if mine is not None else []) + ["kind", "base loss", "ε at δ, base"]
    if not review:
        cols += list(RECORD_COLUMNS)
    cols += ["σ per query", "policy", "budgets", "dataset", "submitted", "rationale"]
    if compact:
        cols = [c for c in cols if c in COMPACT_COLUMNS]
    return pd.DataFrame(rows, columns=cols)


def query_table(entry: Any, *, review: bool) -> pd.DataFrame:
    """One entry's queries: the analytic σ and 95% half-width of each (public) and, in teaching
    mode, the median relative error of its answers (a statistic of the records)."""
    pub = pd.DataFrame(entry.summary.get("public", {}).get("queries") or [],
                       columns=["query", "sigma", "sigma_max", "half_width_95", "note"])
    pub = pub.rename(columns={"sigma": "σ", "sigma_max": "largest σ", "half_width_95": "95% half-width"})
    if review:
        return pub
    errs = pd.DataFrame(entry.summary.get("records", {}).get("query_errors") or [],
                        columns=["query", "median_rel_error"]).rename(columns={"median_rel_error": "median rel. error"})
    if pub.empty:
        return errs
    return pub.merge(errs, on="query", how="outer") if not errs.empty else pub


def pareto_front(x: Sequence[float] | np.ndarray | pd.Series, y: Sequence[float] | np.ndarray | pd.Series
                 ) -> np.ndarray:
    """Mask of the points no other point beats on both (lower x and lower y; ties do not beat)."""
    xa, ya = np.asarray(x, dtype=float), np.asarray(y, dtype=float)
    out = np.zeros(xa.size, dtype=bool)
    for i in range(xa.size):
        if not (np.isfinite(xa[i]) and np.isfinite(ya[i])):
            continue
        dominated = (xa <= xa[i]) & (ya <= ya[i]) & ((xa < xa[i]) | (ya < ya[i]))
        out[i] = not dominated.any()
    return out


def tradeoff_points(entries: Iterable[Any], delta: float) -> pd.DataFrame:
    """Per comparable entry (:func:`prdp_core.board.comparison.board_errors`: the same error measure on the same
    workload; the others are kept off): name, the 99th-percentile record loss as ε at δ, the median relative error,
    and whether it is on the Pareto front (confidential: statistics of the records)."""
    entries = list(entries)
    compared = board_errors(entries)
    rows = []
    for e in entries:
        rec, unit = e.summary.get("records", {}), e.summary.get("unit", "rho")
        if not compared[e.id].comparable:
            continue
        x, y = eps_at(rec.get("p99"), unit, delta), compared[e.id].error
        if x is not None and y is not None:
            rows.append({"#": e.id, "name": e.name, "kind": e.kind, "eps_p99": x, "median_rel_error": float(y)})
    df = pd.DataFrame(rows, columns=["#", "name", "kind", "eps_p99", "median_rel_error"])
    df["pareto"] = pareto_front(df["eps_p99"], df["median_rel_error"]) if len(df) else []
    return df


UNIT_LABELS = {"rho": "ρ (zCDP)", "eps": "ε (pure DP)"}


def cdf_series(entries: Iterable[Any], *, owners: bool = False, delta: float
               ) -> tuple[dict[str, tuple[np.ndarray, np.ndarray]], str]:
    """The stored record (or owner) loss CDFs of the entries, for one chart, and the axis unit:
    the entries' own unit when they share one, else ε at ``delta`` for all (confidential)."""
    entries = list(entries)
    units = {e.summary.get("unit", "rho") for e in entries}
    common = len(units) <= 1
    key = "owner_cdf" if owners else "cdf"
    series = {}
    for e in entries:
        cdf = e.summary.get("records", {}).get(key)
        if not cdf or not cdf[0]:
            continue
        unit = e.summary.get("unit", "rho")
        xy = (np.asarray(cdf[0], float), np.asarray(cdf[1], float)) if common else convert_cdf(cdf, unit, delta)
        series[f"#{e.id} {e.name}"] = xy
    label = UNIT_LABELS.get(next(iter(units), "rho"), "ρ") if common else f"ε at δ = {delta:g}"
    return series, label


def splitting_policies(entries: Iterable[Any]) -> dict[str, Any]:
    """The unit-splitting policies among the entries (label → SplittingPolicy), for their public
    policy functions."""
    out = {}
    for e in entries:
        if e.summary.get("part") != "thresholds":
            continue
        study = parse_config(e.config)
        out[f"#{e.id} {e.name}"] = study.splitting_policy()
    return out


def measures_of(policies: Mapping[str, Any]) -> list[str]:
    """Measures with a threshold in every one of the policies (their functions can share an axis)."""
    sets = [set(p.thresholds.measures) for p in policies.values()]
    if not sets:
        return []
    first = list(next(iter(policies.values())).thresholds.measures)
    return [m for m in first if all(m in s for s in sets)]


__all__ = ["CDF_POINTS", "COMPACT_COLUMNS", "ERROR_RUNS", "PARTS", "PART_SUMMARIES", "RECORD_COLUMNS",
           "REVIEW_ERRORS", "board_frame", "cdf_series", "convert_cdf", "eps_at", "error_workload", "measures_of",
           "pareto_front", "part_of", "policy_parts", "query_table", "restrict", "splitting_policies", "summarise",
           "tradeoff_points"]
