"""Review-ready outputs of a study: re-loadable configs, HTML reports, reproduction scripts.

This module holds the HTML report and the writing of every output; running a study is
:mod:`prdp_core.study.runner`, its tables :mod:`prdp_core.study.study_tables` and the reproduction script
:mod:`prdp_core.study.reproduction`, whose names are re-exported here.

The public entry point of the study tooling (the ``prdp`` command line and the app's Study
page use it):

* :func:`load_config` / :func:`parse_config` — read and validate a study config (YAML,
  schema version 1, every key in docs/config.md); errors are
  :class:`~prdp_core.core.errors.ConfigError` naming the offending key (``policy.thresholds.EMP:
  must be a positive number``). The schema itself lives in :mod:`prdp_core.study.config`.
* :func:`run_study` — load the data and run every mechanism of the study with its seed;
  returns a :class:`StudyRun` (releases, ledger).
* :func:`results_frame` — every released answer in one table (truth columns only in
  teaching mode); :func:`budget_table` — the SafeTab-style budget table (release × group ×
  ρ or ε); :func:`conversion_rows` — (ε, δ) equivalents.
* :func:`render_html` — a self-contained HTML report (Plotly inlined: viewing it needs no
  network). In review mode it holds no true value, record count or per-record loss: answers come from
  :meth:`Release.for_review`, and no loss distribution is drawn.
* :func:`reproduction_script` — a short Python file that reruns the study with ``prdp_core``
  and writes the same results CSV, bit for bit.
* :func:`write_outputs` — results.csv, ledger.csv, ledger.json, report.html, reproduce.py, study.ipynb
  (the same code as a notebook) and study.yaml in one folder (what ``prdp run`` writes).

Seeded runs are for teaching and review; a real release needs the secure mode.
"""

from __future__ import annotations

import html
import os
from pathlib import Path
from typing import Any, Callable

import numpy as np
import pandas as pd

from ..core.provenance import DATA_DERIVED_COLUMN, data_derived, is_data_derived, is_private, source_detail
from ..core.release import Release
from ..core.secure import mode_label
from ..io.html_parts import _CSS, _fig_html, _table
from ..study.config import (
    SCHEMA_VERSION,
    ConfigError,
    DataSource,
    Study,
    load_config,
    load_data,
    parse_config,
    resolve_data_path,
    safe_data_path,
    study_from_dict,
)
from ..study.reproduction import reproduction_script
from ..study.runner import StudyRun, run_study
from ..study.runs import held_by_engine
from ..study.study_tables import (
    _answers,
    _policy,
    budget_table,
    conversion_rows,
    error_summary,
    ledger_dict,
    ledger_frame,
    ledger_json,
    ledger_table,
    results_frame,
)
from .review_boundary import names, produce, register

#: A progress callback: (steps done, steps in all, what is being done).
Progress = Callable[[int, int, str], None]


# ---------------------------------------------------------------------------
# HTML report
# ---------------------------------------------------------------------------


def _cdf(losses: Any) -> tuple[np.ndarray, np.ndarray]:
    """The CDF of per-record (or per-owner) losses: an array, a LossProfile or a LossDistribution (teaching-mode
    reports only: a review-mode report shows no distribution of losses)."""
    from ..core.distribution import LossDistribution

    dist = losses if isinstance(losses, LossDistribution) else \
        LossDistribution.from_values(getattr(losses, "values", losses))
    return dist.ecdf()


def _label_column(a: pd.DataFrame) -> pd.Series:
    skip = {"release", "mechanism", "query", "estimate", "sigma", "sd", "scale", "ci_low", "ci_high", "true",
            "n_records", "error", "abs_error", "rel_error", "are", "eps_tau", "ell"}
    keys = [c for c in a.columns if c not in skip and a[c].notna().any() and a[c].dtype == object
            or c in ("tier", "category")]
    if not keys:
        return a["query"].astype(str) if "query" in a.columns else pd.Series(a.index.astype(str), index=a.index)
    lab = a[keys].astype(str).where(a[keys].notna(), "").agg(" | ".join, axis=1).str.strip(" |")
    return lab.replace("", "all records")


def _modes(releases: list[tuple[str, Any, Release]]) -> tuple[list[str], list[int]]:
    """The labels of the secure releases and the seeds of the seeded ones."""
    secure = [label for label, _, rel in releases if rel.secure]
    return secure, sorted({int(rel.seed) for _, _, rel in releases if not rel.secure and rel.seed is not None})


def mode_summary(releases: list[tuple[str, Any, Release]]) -> str:
    """:func:`mode_text` in a few words (the command line's summary): "2 secure (unseeded), seeds 4, 5"."""
    secure, seeds = _modes(releases)
    parts = ([f"{len(secure)} secure (unseeded)"] if secure else []) + (
        [f"seed{'s' if len(seeds) > 1 else ''} {', '.join(map(str, seeds))}"] if seeds else [])
    return ", ".join(parts) or "no release"


def mode_text(releases: list[tuple[str, Any, Release]]) -> str:
    """How the releases were made, read from the recorded releases themselves (never from the study's
    settings): secure (unseeded), seeded with their seeds, or which are which."""
    secure, seeds = _modes(releases)
    seeded = (f"Seeded run (seed{'s' if len(seeds) > 1 else ''} {', '.join(map(str, seeds))}): reproducible and "
              "meant for teaching and review, never for a real release.")
    if secure and len(secure) == len(releases):
        return f"Secure release{'s' if len(secure) > 1 else ''}: {mode_label(True)}; not reproducible."
    if secure:
        return f"Secure releases ({mode_label(True)}): {', '.join(secure)}. The others: {seeded}"
    return seeded if seeds else "No release."


def render_html(run: StudyRun, *, config_text: str | None = None) -> str:
    """The study report as one self-contained HTML page (Plotly inlined; no network needed).

    Teaching mode adds true values, errors and the loss CDFs of the records and owners. Review mode
    leaves out every true value, record count and per-record or per-owner loss (answers from
    :meth:`Release.for_review`; no loss distribution, quantile or share). Callers go through
    :func:`prdp_core.review.review_boundary.produce`, which hands a review-mode run already stripped."""
    from ..charts.policy import loss_cdf_figure, public_function_figure
    from ..charts.report import answers_ci_figure, delivered_cdf_figure

    st, ds, teaching = run.study, run.dataset, run.teaching
    e = html.escape
    first = [True]
    parts: list[str] = []
    title = st.report.get("title") or st.title or "PrDP Explorer study"
    parts.append(f"<h1>{e(title)}</h1>")
    parts.append("<p class='muted'>Study report of PrDP Explorer (config schema version "
                 f"{SCHEMA_VERSION}). {e(mode_text(run.releases))}</p>")
    if teaching:
        parts.append("<div class='banner teaching'><b>Teaching mode.</b> This report shows true values, errors and "
                     "per-record loss distributions computed from the real records: it is <b>confidential</b> and "
                     "for the policy designer only.</div>")
    else:
        parts.append("<div class='banner review'><b>Review mode.</b> No true value, no record count and no "
                     "per-record or per-owner loss (no distribution, quantile or share) is in this report: answers "
                     "are the released (noisy) ones.</div>")

    # data
    parts.append("<h2>Data</h2>")
    src = st.data.describe() if run.data_file is None else f"file '{Path(run.data_file).name}'"
    sch = ds.schema
    parts.append(f"<p>Source: {e(src)}. Dataset <b>{e(ds.name)}</b>"
                 + (f", {ds.n:,} records" if teaching else "") + ".</p>")
    parts.append("<ul>" + f"<li>record id: {e(str(sch.id_col))}</li><li>measures: {e(', '.join(sch.measures))}</li>"
                 + f"<li>groups: {e(', '.join(sch.groups) or '(none)')}</li>"
                 + f"<li>owner: {e(str(sch.owner_col or '(none)'))}</li></ul>")
    for note in ds.notes if teaching else ():
        parts.append(f"<p class='muted'>{e(note)}</p>")
    if ds.notes and not teaching:  # they count fixed rows and may quote a record's value (a shift −min)
        parts.append("<p class='muted'>The preparation notes (counts of the rows fixed, shifts taken from the "
                     "records) are hidden in review mode.</p>")

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
        private = {m: source_detail(s) for m, s in pol.threshold_sources().items() if is_private(s)}
        if private:
            parts.append("<p><b>Private suggestions.</b> " + e(", ".join(f"T({m}) ({s})" for m, s in private.items()))
                         + ": released by a differentially private suggestion charged to the ledger, used as "
                         "released (public once released).</p>")
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
        from ..charts.budget import budget_curve_figure

        E = st.budget_function()
        parts.append(f"<p><b>Budget function (general PrDP framework, pure ε).</b> {e(E.describe())}</p>")
        if E.value_column is not None:
            parts.append(_fig_html(budget_curve_figure(E, measure=E.value_column, values=None,
                                                       vmax=max(E.U, 1.0)), first))
    if "specification" in st.policy and not (held_by_engine(ds) and ds.engine.name != "memory"):
        spec = st.privacy_spec(ds.table)
        s = st.policy["specification"]
        how = "generated tiers (paper Sec. V)" if "tiers" in s else f"column '{s['column']}'"
        spread = (f": min Φ {spec.min_eps:.4g}, mean {spec.mean_eps:.4g}, max {spec.max_eps:.4g}" if teaching
                  else "")  # statistics of the records' budgets: teaching only
        parts.append(f"<p><b>Personalized DP specification Φ</b> ({e(how)}; public under PDP){spread}.</p>")
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
    if not teaching:  # statistics of the records: none in review, not even a cut distribution
        parts.append("<p class='muted'>Hidden in review mode: the distributions of per-record and per-owner losses, "
                     "their quantiles and shares are statistics of the records. The public policy function above "
                     "says what a record with given values pays.</p>")
    if pol is not None and teaching:
        from ..mechanisms.preview import preview_policy

        prev = preview_policy(ds, pol)
        series = {"records": prev.record_cdf()}
        if prev.owners is not None:
            series[f"owners ({ds.schema.owner_col}, Lemma 4)"] = _cdf(prev.owners)
        parts.append(_fig_html(loss_cdf_figure(series, title="Policy-loss CDF, unit splitting",
                                               base=pol.workload.total_rho, view="zoom"), first))
        parts.append(_fig_html(loss_cdf_figure(series, title="Share of records paying more than x",
                                               base=pol.workload.total_rho, view="tail"), first))
        parts.append(f"<p>{e(prev.records.plain_language())}</p>")
    for label, m, rel in run.releases if teaching else ():
        if m.LOSS_FROM_POLICY or (rel.loss is None and rel.loss_distribution is None):  # policy CDFs: above
            continue
        unit = "ρ" if rel.measure == "rho" else "ε"
        series = {"delivered": _cdf(rel.loss if rel.loss is not None else rel.loss_distribution)}
        if rel.requested is not None:
            series["requested"] = _cdf(rel.requested)
        elif rel.extras.get("private_requested_distribution") is not None:
            series["requested (by domain)"] = _cdf(rel.extras["private_requested_distribution"])
        parts.append(_fig_html(delivered_cdf_figure(series, title=f"{label}: per-record loss CDF", unit=unit),
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
        if "query" in a.columns and a["query"].nunique() > 1 and m.FIGURE_PER_QUERY:
            for q, g in list(a.groupby("query", sort=False))[:8]:
                g = g.sort_values("estimate", ascending=False)
                parts.append(_fig_html(answers_ci_figure(g, title=f"{label}: {q} (largest 60 answers)"), first))
        else:
            parts.append(_fig_html(answers_ci_figure(a, title=f"{label}: released answers"), first))
        if rel.extras.get("bias"):  # a mechanism whose answer is biased says by how much (expected_bias column)
            parts.append(f"<div class='banner teaching'>{e(label)}: {e(rel.extras['bias'])}</div>")
        parts.append(_table(a.drop(columns=["label"]), max_rows=30))

    # today's methods beside the policy
    compared = [t for label, m, rel in run.releases for t in m.comparison(run, label, rel, teaching)]
    if compared:
        parts.append("<h2>Today's methods beside the policy</h2>")
        parts.append("<p class='muted'>Cell suppression (the p% and dominance rules, with complementary cells) and "
                     "noise infusion, computed on the same table as the policy's answers. Neither has a formal "
                     "privacy guarantee and neither adds to the ledger; the policy's loss above is a bound whatever "
                     "else is published."
                     + (" Which cells the rules withhold is itself a statistic of the confidential records: review "
                        "mode shows only how many." if not teaching else "") + "</p>")
        for title, frame in compared:
            parts.append(f"<h3>{e(title)}</h3>")
            parts.append(_table(frame, max_rows=30))

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
                     "seed, and a rerun gives other numbers (the reproduction script reruns them, not bit for "
                     "bit).</p>")
    parts.append("<p>The study config (reload it in the app's Study page or run <code>prdp run</code>):</p>")
    parts.append(f"<pre>{e(config_text if config_text is not None else st.to_yaml())}</pre>")
    parts.append("<p class='muted'>reproduce.py (written next to this report by <code>prdp run</code>) reruns the "
                 "study with prdp_core and writes the same results, bit for bit; study.ipynb is the same code as a "
                 "Jupyter notebook.</p>")
    body = "\n".join(parts)
    return (f"<!DOCTYPE html>\n<html lang='en'><head><meta charset='utf-8'><title>{e(title)}</title>"
            f"<meta name='viewport' content='width=device-width, initial-scale=1'><style>{_CSS}</style></head>"
            f"<body>\n{body}\n</body></html>\n")


# ---------------------------------------------------------------------------
# The outputs built here, registered with the review boundary (below this module)
# ---------------------------------------------------------------------------


@register("report.html", "study file", "run", "the HTML report")
def _report(run: StudyRun, teaching: bool, *, config_text: str | None = None) -> str:
    return render_html(run, config_text=config_text)


@register("prdp run (terminal)", "cli", "run", "what prdp run prints when it has written its outputs")
def _cli_run(run: StudyRun, teaching: bool, *, config: str = "study.yaml", out: str = "study-results",
             files: tuple[str, ...] = ()) -> str:
    written = ", ".join(sorted(files)) or "(nothing)"
    return (f"{len(run.releases)} release(s) of {config} ({'teaching' if teaching else 'review'} mode; "
            f"{mode_summary(run.releases)}) written to {out}: {written}\n")


# ---------------------------------------------------------------------------
# Writing everything
# ---------------------------------------------------------------------------

#: The files ``prdp run`` writes: the review boundary's ``study file`` outputs.
OUTPUT_FILES = tuple(names("study file"))


def write_outputs(run: StudyRun, out_dir: str | os.PathLike, *, progress: Progress | None = None,
                  force: bool = False) -> dict[str, Path]:
    """Write the study's outputs into ``out_dir`` (created if needed); returns name → path.

    results.csv (every answer), budget.csv (the budget table), ledger.csv / ledger.json (the
    ledger, public forms), report.html, reproduce.py, study.ipynb and study.yaml (the normalised config), each made by
    :func:`prdp_core.review.review_boundary.produce` in the study's mode (:data:`OUTPUT_FILES`: its ``study file``
    outputs). CSVs are formula-safe (:func:`prdp_core.io.export.to_csv_bytes`). Files are written as
    :func:`prdp_core.io.outputs.write_files` does: never through a symbolic link, and over an
    existing file only if prdp wrote it there (its manifest) — else :class:`OutputError`,
    unless ``force``."""
    from ..io.outputs import write_files

    say = progress or (lambda *_: None)
    files: dict[str, bytes] = {}
    yaml_text = run.study.to_yaml()
    context: dict[str, dict[str, Any]] = {"study.yaml": {"config_text": yaml_text},
                                          "report.html": {"config_text": yaml_text}}
    study_files = names("study file")
    for i, name in enumerate(study_files):  # every file through the review boundary, in the run's mode
        say(i, len(study_files), f"writing {name}")
        files[name] = produce(name, run, teaching=run.teaching, **context.get(name, {}))
    written = write_files(out_dir, files, force=force)
    say(len(study_files), len(study_files), "done")
    return written


__all__ = ["ConfigError", "DataSource", "OUTPUT_FILES", "SCHEMA_VERSION", "Study", "StudyRun",
           "budget_table", "conversion_rows", "error_summary", "ledger_dict", "ledger_frame", "ledger_json",
           "ledger_table", "load_config",
           "load_data", "parse_config", "render_html", "reproduction_script", "resolve_data_path", "results_frame",
           "run_study", "safe_data_path", "study_from_dict", "write_outputs"]
