"""PDP → PrDP reduction (general framework paper, Sec. 3.4): E(r) = c·v_bud, and the side-by-side comparison.

Each tuple carries its Φ as an attribute v_bud and the budget function is E(r) = c·v_bud;
unlike PDP the choices stay private (only E and its public bounds ε̌, ε̂ are published).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from ...core.errors import ParameterError, PolicyError
from ...core.neighbours import AddRemove
from ...core.release import Release
from .mechanisms import paper_mechanisms
from .query import PersonalizedQuery
from .spec import PrivacySpec, _check_eps

#: The range of choices used in the paper's experiments (Sec. V); the public fallback for the PrDP
#: reduction's ε̌ and ε̂ when a specification declares no range of its own.
PAPER_CHOICE_RANGE = (0.01, 1.0)

BUDGET_COLUMN = "v_bud"


@dataclass(frozen=True)
class PrdpReduction:
    """The same users under PrDP: each tuple carries its ε as an attribute v_bud and the
    budget function is E(r) = c·v_bud. Unlike PDP, the choices stay private (only E is
    published). ε̌ and ε̂ are published with E, so they come from public values — c times
    the range of choices offered (:attr:`PrivacySpec.choice_range`) or declared bounds —
    never from the smallest and largest Φ in the table; ``bounds_source`` says which."""

    table: pd.DataFrame
    expression: str
    c: float
    eps_min: float
    eps_max: float
    column: str = BUDGET_COLUMN
    bounds_source: str = ""


def public_choice_range(spec: PrivacySpec) -> tuple[tuple[float, float], str]:
    """The public range of ε users could choose, and where it comes from.

    The specification's declared range (:attr:`PrivacySpec.choice_range`: a generated tier
    config, an expert label table) when there is one; otherwise the paper's range
    [0.01, 1] widened to include ε_def. Never the smallest or largest Φ actually chosen.
    """
    if spec.choice_range is not None:
        return spec.choice_range, "the specification's public range of choices"
    lo, hi = PAPER_CHOICE_RANGE
    return ((min(lo, spec.default_eps), max(hi, spec.default_eps)),
            "the paper's range of choices [0.01, 1] with ε_def (no range was declared)")


def to_prdp(table: pd.DataFrame, spec: PrivacySpec, *, c: float = 1.0, column: str = BUDGET_COLUMN,
            eps_min: float | None = None, eps_max: float | None = None) -> PrdpReduction:
    """Reduce a PDP problem to PrDP: add the budget column and the expression ``c * v_bud``.

    ``eps_min``/``eps_max`` (ε̌, ε̂): public bounds of the possible budgets, published with E.
    By default c times the public range of choices (:func:`public_choice_range`) — never
    the smallest and largest Φ in the table, which under PrDP are private.
    """
    cc = _check_eps(c, "The constant c")
    if column in table.columns:
        raise ParameterError(f"The table already has a column '{column}'.", hint="Name the budget column differently.")
    phi = spec.phi_for(table)
    out = table.copy()
    out[column] = phi
    (r_lo, r_hi), where = public_choice_range(spec)
    lo = cc * r_lo if eps_min is None else _check_eps(eps_min, "ε̌")
    hi = cc * r_hi if eps_max is None else _check_eps(eps_max, "ε̂")
    if lo > hi:
        raise ParameterError("ε̌ must not exceed ε̂.")
    declared = [name for name, v in (("ε̌", eps_min), ("ε̂", eps_max)) if v is not None]
    src = f"c × {where}" if not declared else (
        f"{' and '.join(declared)} declared" + (f"; otherwise c × {where}" if len(declared) < 2 else ""))
    return PrdpReduction(out, f"{cc:g} * {column}", cc, lo, hi, column, src)


def prdp_available() -> bool:
    """Whether the PrDP framework (:mod:`prdp_core.mechanisms.prdp`) and budget functions can be imported."""
    try:
        from .. import prdp  # noqa: F401
        from ..prdp import budget  # noqa: F401
    except ImportError:
        return False
    return True


def run_prdp(table: pd.DataFrame, spec: PrivacySpec, query: PersonalizedQuery, *, c: float = 1.0,
             beta: float = 0.1, rng: np.random.Generator, seed: int | None = None, reveal: bool = False,
             eps_min: float | None = None, eps_max: float | None = None) -> Release:
    """Answer ``query`` with the PrDP framework (Algorithm 2) under E(r) = c·v_bud.

    The table gets the budget column v_bud = Φ (:func:`to_prdp`); the budget function is
    parsed with the public ε̌, ε̂ of :func:`to_prdp` (declared, or c times the public range of
    choices) and U = the query's public upper bound. A tuple whose c·Φ is below ε̌ cannot be
    honoured: declare a smaller ε̌ (the smallest choice offered). A count
    with a cut-off runs on the tuples meeting it (a per-tuple filter: a tuple failing it
    never influences the answer, so each tuple's guarantee is unchanged); a sum uses the
    framework's clipped sum on the value column. Neighbours: add/remove, like PDP's
    Sample; the users' choices stay private (only E is public).
    """
    if query.kind not in ("count", "sum"):
        raise ParameterError("The PDP vs PrDP comparison covers count and sum.",
                             hint="The PrDP framework has no median; pick count or sum.")
    try:
        from .. import prdp as _prdp
        from ..prdp import budget as _budget
    except ImportError:
        raise ParameterError("The PrDP framework is not available in this installation.") from None
    red = to_prdp(table, spec, c=c, eps_min=eps_min, eps_max=eps_max)
    low = int((red.table[red.column].to_numpy() * red.c < red.eps_min * (1 - 1e-9)).sum())
    if low:
        raise PolicyError(f"{low:,} user(s) chose an ε below the public ε̌ = {red.eps_min:.4g} of the PrDP budget "
                          f"function ({red.bounds_source}).",
                          hint="Declare ε̌ as the smallest choice offered to users (a public value), not one read "
                               "from the data.")
    t = red.table
    if query.kind == "count" and query.column is not None:
        t = t.loc[query.prepare(query.raw(t)) > 0]
    U = float(query.hi) if query.hi is not None else max(1.0, float(query.cutoff))
    bud = _budget.parse_budget(red.expression, eps_min=red.eps_min, eps_max=red.eps_max, U=U)
    q = "count" if query.kind == "count" else f"sum:{query.column}"
    return _prdp.framework(t, bud, q, beta=beta, rng=rng, reveal=reveal, seed=seed)


def compare_with_prdp(table: pd.DataFrame, spec: PrivacySpec, query: PersonalizedQuery, *, c: float = 1.0,
                      beta: float = 0.1, rng: np.random.Generator, reveal: bool = False,
                      runs: int = 1, eps_min: float | None = None, eps_max: float | None = None,
                      made: list[Release] | None = None) -> pd.DataFrame:
    """The same users and query under PDP (Minimum, Sample with t = max and mean Φ, PE/Stretching)
    and under PrDP (the framework with E(r) = c·v_bud and public ε̌, ε̂), one seeded run each (or
    the RMSE over ``runs`` runs when ``reveal``).

    Columns: mechanism, model, estimate (first run), are the users' choices public, the
    neighbour notion (PDP: substitution when the roster was read from the table), the largest
    delivered ε and whether every tuple got at most its request; with ``reveal`` also the true
    answer, the error and the RMSE. Every release made is appended to ``made`` (the app records them all in its
    ledger: each is a release on the records).
    """
    if query.kind not in ("count", "sum"):
        raise ParameterError("The PDP vs PrDP comparison covers count and sum.")
    raw = query.raw(table)
    truth = query.truth(raw)
    pdp_mechs = {k: v for k, v in paper_mechanisms(query.kind).items() if k in ("M", "S", "S-avg", "PE", "Alag")}
    rows = []
    R = max(1, int(runs)) if reveal else 1
    for m in pdp_mechs.values():
        rels = [m.release(table, spec, query, rng=rng, reveal=reveal) for _ in range(R)]
        (made if made is not None else []).extend(rels)
        rows.append(_compare_row(f"PDP · {m.label(spec)}", "PDP", rels, truth, "public (published)",
                                 m.neighbours_for(spec).name, reveal))
    rels = [run_prdp(table, spec, query, c=c, beta=beta, rng=rng, reveal=reveal, eps_min=eps_min, eps_max=eps_max)
            for _ in range(R)]
    (made if made is not None else []).extend(rels)
    rows.append(_compare_row(f"PrDP framework · E(r) = {c:g}·v_bud", "PrDP", rels, truth, "private", AddRemove.name,
                             reveal))
    return pd.DataFrame(rows)


def _compare_row(label: str, model: str, rels: list[Release], truth: float, choices: str, neighbours: str,
                 reveal: bool) -> dict[str, Any]:
    first = rels[0]
    row: dict[str, Any] = {"mechanism": label, "model": model, "estimate": float(first.answers["estimate"].iloc[0]),
                           "users' ε": choices, "neighbours": neighbours}
    if first.loss is not None and first.requested is not None:
        row["largest delivered ε"] = float(np.max(first.loss)) if first.loss.size else 0.0
        row["within request"] = bool(first.check_delivered_within_requested())
    if reveal:
        est = np.array([float(r.answers["estimate"].iloc[0]) for r in rels])
        row.update({"true": truth, "error": row["estimate"] - truth,
                    "rmse": float(np.sqrt(np.mean((est - truth) ** 2))), "runs": est.size})
    return row
