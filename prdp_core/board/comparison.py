"""Like with like on the board: every entry's error figure from the same measure on the same workload.

A board summary (version 2, :mod:`.summary`) keeps, beside its own error figure, its error figures by measure —
``errors``: the ``closed form`` where the policy has one (unit splitting) and ``seeded runs`` for every kind (the
same number of seeded runs of the policy's mechanism, a teaching simulation), each with the median relative error
of the answers and, for seeded runs, the number of runs — and the workload they were measured on
(``error_workload``: the queries answered, in the canonical form of :func:`query_label`).

:func:`board_errors` compares the entries of a board: the board's workload is the one most entries were measured on
(ties: the earliest entry's); on it, the board's measure is the closed form when every entry there has one, else
the seeded runs, with the number of runs most of them used. Every entry measured that way gets that figure. An
entry measured on another workload, with another number of runs, or stored before the board compared like with like
(a summary without ``errors``) is *not comparable*: the board marks it so and keeps it off the Pareto front.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from typing import Any, Iterable, Mapping

#: The measures an error figure can come from, by preference (the closed form is exact).
CLOSED_FORM = "closed form"
SEEDED_RUNS = "seeded runs"


def query_label(kind: str, measure: str | None = None, *, by: Iterable[str] = (), where: str | None = None) -> str:
    """A query in the canonical form the board compares workloads in: ``COUNT(*)``, ``SUM(EMP) BY STATE``,
    ``COUNT(EMP ≥ 10)`` (the label a participant gave a query plays no part)."""
    core = "COUNT(*)" if kind == "count" and not measure else f"{kind.upper()}({measure})"
    by = list(by)
    if by:
        core += f" BY {', '.join(by)}"
    if where:
        core += f" WHERE {where}"
    return core


@dataclass(frozen=True)
class Compared:
    """An entry's error on the board: the figure shown (None: none), the measure it came from (``basis``, in
    words) and whether it is comparable with the board's other entries."""

    error: float | None
    basis: str
    comparable: bool


def _figure(errors: Mapping[str, Any], measure: str) -> float | None:
    v = (errors.get(measure) or {}).get("median_rel_error")
    return None if v is None else float(v)


def _workload(records: Mapping[str, Any]) -> tuple[str, ...] | None:
    wl = records.get("error_workload")
    return tuple(str(q) for q in wl) if isinstance(wl, list) and wl and records.get("errors") else None


def reference(entries: Iterable[Any]) -> tuple[tuple[str, ...] | None, str | None, int | None]:
    """The board's workload, measure and number of seeded runs (None for a closed form); (None, None, None) when no
    entry has error figures by measure."""
    rows = [(_workload(e.summary.get("records") or {}), e.summary.get("records") or {}) for e in entries]
    rows = [(wl, rec) for wl, rec in rows if wl is not None]
    if not rows:
        return None, None, None
    counts = Counter(wl for wl, _ in rows)
    top = max(counts.values())
    workload = next(wl for wl, _ in rows if counts[wl] == top)  # ties: the earliest entry's
    same = [rec["errors"] for wl, rec in rows if wl == workload]
    if all(_figure(err, CLOSED_FORM) is not None for err in same):
        return workload, CLOSED_FORM, None
    runs = Counter(int((err.get(SEEDED_RUNS) or {}).get("runs") or 0) for err in same)
    return workload, SEEDED_RUNS, max(runs, key=lambda r: (runs[r], r))


def board_errors(entries: Iterable[Any]) -> dict[int, Compared]:
    """Each entry's error on the board (by entry id), measured like the board's other entries (see the module
    docstring); an entry that is not comparable keeps its own figure, marked."""
    entries = list(entries)
    workload, measure, runs = reference(entries)
    out: dict[int, Compared] = {}
    for e in entries:
        rec = e.summary.get("records") or {}
        own = rec.get("median_rel_error")
        own = None if own is None else float(own)
        wl = _workload(rec)
        if own is None and wl is None:
            out[e.id] = Compared(None, "no error figure", False)
            continue
        if wl is None:
            out[e.id] = Compared(own, "not comparable: measured before the board compared like with like", False)
            continue
        if wl != workload:
            out[e.id] = Compared(own, f"not comparable: measured on {'; '.join(wl)}", False)
            continue
        err = rec["errors"]
        got = (err.get(SEEDED_RUNS) or {}).get("runs")
        if measure == SEEDED_RUNS and int(got or 0) != runs:
            out[e.id] = Compared(own, f"not comparable: {got or 'no'} seeded runs, the board's have {runs}", False)
            continue
        fig = _figure(err, str(measure))
        basis = CLOSED_FORM if measure == CLOSED_FORM else f"{runs} {SEEDED_RUNS}"
        out[e.id] = Compared(fig, basis, fig is not None)
    return out


def describe_reference(entries: Iterable[Any]) -> str | None:
    """The board's error measure in words ("median relative error, 30 seeded runs, on SUM(EMP)"), or None."""
    workload, measure, runs = reference(entries)
    if workload is None:
        return None
    how = CLOSED_FORM if measure == CLOSED_FORM else f"{runs} {SEEDED_RUNS} of each policy's mechanism"
    return f"median relative error of the answers ({how}) on the workload {'; '.join(workload)}"


__all__ = ["CLOSED_FORM", "Compared", "SEEDED_RUNS", "board_errors", "describe_reference", "query_label",
           "reference"]
