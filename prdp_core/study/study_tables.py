"""The tables of a study run: every released answer in one table (truth columns only in teaching
mode), the SafeTab-style budget table (release × group × ρ or ε), the ledger as a table and as JSON,
(ε, δ) equivalents and the error summary."""

from __future__ import annotations

import json
import math
from typing import Any, Iterable

import numpy as np
import pandas as pd

from ..core.accounting import Ledger, LedgerEntry, _plain, conversion_table, zcdp_to_approx_dp
from ..core.provenance import DATA_DERIVED_COLUMN, data_derived, stamp_answers
from ..core.release import Release
from .runner import StudyRun


def _answers(rel: Release, teaching: bool) -> pd.DataFrame:
    a = rel.answers if teaching else rel.for_review().answers
    a = a.copy()
    for c in a.columns:
        if isinstance(a[c].dtype, pd.CategoricalDtype):
            a[c] = a[c].astype(object)
    return a


def labelled_answers(rel: Release, teaching: bool) -> pd.DataFrame:
    """One release's answers as the Run page shows and exports them: truth columns only when ``teaching``
    (review mode reads :meth:`Release.for_review`), the group keys joined into one readable ``label``."""
    a = _answers(rel, teaching)
    key_cols = [c for c in a.columns if c not in ("query", "estimate", "sigma", "ci_low", "ci_high", "true",
                                                  "n_records", "error", "rel_error")]
    lab = pd.Series([""] * len(a), index=a.index, dtype=object)
    for c in key_cols:
        v = a[c].astype(object)
        present = v.notna()
        lab[present] = lab[present] + np.where(lab[present] == "", "", " | ") + v[present].astype(str)
    a.insert(1, "label", lab.replace("", "all records"))
    return a.drop(columns=key_cols)


def answers_export(rel: Release, teaching: bool) -> pd.DataFrame:
    """One release's answers download: :func:`labelled_answers` plus the app mode, secure marker, seed and
    data-derived parameters (:func:`prdp_core.core.provenance.stamp_answers`)."""
    return stamp_answers(labelled_answers(rel, teaching), teaching=teaching, secure=rel.secure, seed=rel.seed,
                         derived=data_derived(rel.params))


def results_frame(releases: Iterable[tuple[str, Any, Release]] | Iterable[tuple[str, Release]], *,
                  teaching: bool) -> pd.DataFrame:
    """Every released answer, one row each, with the release label and mechanism first.

    Truth columns (true value, error, record counts) only when ``teaching``; review mode uses
    :meth:`Release.for_review`. Columns of different mechanisms are united (blank where a
    mechanism has no such column). The last columns say how each answer was made: the app mode,
    ``secure``, the ``seed`` and the parameters computed from the confidential data
    (:func:`prdp_core.core.provenance.stamp_answers`)."""
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


def adopted_entries(run: StudyRun) -> list[LedgerEntry]:
    """The ledger entries of the private suggestions the study adopted — its policy's ``threshold_source`` and
    each mechanism's ``param_source`` (``private: …``; :func:`prdp_core.mechanisms.dp_quantile.adopted_suggestions`):
    charged when they were drawn, listed with the run's releases in its budget table and ledger."""
    from ..mechanisms.dp_quantile import adopted_suggestions

    out = adopted_suggestions(run.study.policy.get("threshold_source"))
    for i, m in enumerate(run.study.mechanisms):
        out += adopted_suggestions(m.get("param_source"), part=f"mechanisms[{i}].param_source",
                                   what=f"{m['kind']} parameter",
                                   name=f"{m['kind']} parameter {{}}")
    return out


def charged_ledger(run: StudyRun) -> Ledger:
    """What the study charged: its adopted private suggestions, then its releases (``run.ledger``)."""
    return Ledger().extend(adopted_entries(run)).extend(run.ledger.entries)


def budget_table(run: StudyRun) -> pd.DataFrame:
    """The budget table, SafeTab style: one row per release × query × group level (or tier),
    with its budget in its own unit (ρ for zCDP, ε for pure DP), how a record is charged, and
    the ρ equivalent (ε²/2 for pure ε) so rows can be compared and added, and the release's parameters
    computed from the confidential data (empty when all were typed in). Adopted private suggestions of
    public parameters come first, one row each (:func:`adopted_entries`). Only public forms: no
    per-record number."""
    rows: list[dict[str, Any]] = []
    for entry in adopted_entries(run):
        eps = entry.loss.supremum()
        rows.append({"release": entry.label, "query": "private suggestion (dp_quantile)", "group level": "(all)",
                     "unit": "ε (pure DP)", "budget": eps, "charged to a record": entry.loss.describe(),
                     "ρ equivalent": _rho_of(eps, "eps"), DATA_DERIVED_COLUMN: ""})
    for label, m, rel in run.releases:  # each kind says how its releases are charged (RunConfig.budget_rows)
        derived = "; ".join(data_derived(rel.params))
        for query, group, measure, budget, charged in m.budget_rows(run.study, rel):
            rows.append({"release": label, "query": query, "group level": group,
                         "unit": "ρ (zCDP)" if measure == "rho" else "ε (pure DP)", "budget": float(budget),
                         "charged to a record": charged, "ρ equivalent": _rho_of(float(budget), measure),
                         DATA_DERIVED_COLUMN: derived})
    return pd.DataFrame(rows, columns=["release", "query", "group level", "unit", "budget", "charged to a record",
                                       "ρ equivalent", DATA_DERIVED_COLUMN])


def ledger_frame(run: StudyRun) -> pd.DataFrame:
    """One row per ledger entry of :func:`charged_ledger` (public forms only; data-dependent minima left out
    in review), with the app mode the run was made in."""
    return public_ledger_table(charged_ledger(run), teaching=run.teaching)


def public_ledger_table(ledger: Ledger, *, teaching: bool) -> pd.DataFrame:
    """:func:`ledger_table`, and in review mode without the *base loss* of a data-dependent entry (a
    per-record loss without public form: its smallest loss is that of the records actually present)."""
    s = ledger_table(ledger, teaching=teaching)
    return s if teaching else without_data_dependent_minima(s, ledger)


def without_data_dependent_minima(frame: pd.DataFrame, ledger: Ledger) -> pd.DataFrame:
    """A ledger table (one row per entry of ``ledger``) as review mode shows it: the *base loss* of a
    data-dependent entry (a per-record loss without public form, :class:`~prdp_core.core.accounting.RecordLoss`)
    left blank — its smallest loss is that of the records actually present."""
    from ..core.accounting import RecordLoss

    out = frame.copy()
    if len(out) and "base loss" in out.columns:
        data_dep = pd.Series([isinstance(e.loss, RecordLoss) for e in ledger.entries], index=out.index)
        out["base loss"] = out["base loss"].astype(float).where(~data_dep)
    return out


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
    """The ledger as JSON-ready data (:func:`charged_ledger`: data-dependent losses as summaries, never their
    values; in review mode without record counts)."""
    d = _plain(charged_ledger(run).to_dict())
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
            from ..mechanisms.preview import preview_policy

            prev = preview_policy(run.dataset, pol)
            for name, v in prev.levels().items():
                if name.startswith("base"):
                    continue
                levels[f"unit splitting: {name} (teaching)"] = v
    out = conversion_table(levels, delta) if levels else pd.DataFrame()
    if pol is not None and pol.workload.partition_rho > 0 and len(out):
        # partition selection adds an approximate term: these records have (ε, δ + δ(r))
        from ..mechanisms.unit_splitting import partition_record_delta

        ps_delta = next((float(m["partition_delta"]) for _, m, rel in run.releases
                         if m.splitting_policy(rel) is not None), 1e-6)
        out["plus δ(r) of partition selection"] = [
            float(partition_record_delta(pol, pieces_of[lv], ps_delta)) if lv in pieces_of else float("nan")
            for lv in out[out.columns[0]]]
    extra = []
    for label, m, rel in run.releases:
        for e in rel.entries:
            bound = e.loss.supremum()
            if not math.isfinite(bound) or m.LOSS_FROM_POLICY:  # policy losses: the levels above
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


def _policy(run: StudyRun) -> Any:
    for _, m, rel in run.releases:
        if (pol := m.splitting_policy(rel)) is not None:
            return pol
    if "thresholds" in run.study.policy and run.study.workload is not None:
        return run.study.dataset_policy(run.dataset)
    return None
