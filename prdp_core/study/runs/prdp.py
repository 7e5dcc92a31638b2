"""The PrDP framework's mechanism entry of a study: budget-function PrDP, central or local (PrLDP).

``kind: prdp`` answers one query (count, sum, max, distinct) under the study's budget function
E(r) (policy.budget) by the algorithms compared side by side (Algorithm 1, Algorithm 2, the
Sec. 5.2 sum extension, the naive ε̌ baseline; Algorithms 3–5 in the local model).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar, Literal, Mapping

from ...io.codegen import literal
from ..config.fields import _choice, _err, _number, _text
from ..config.keys import PRDP_ALGORITHMS, PRDP_QUERIES, RECORD_ALGORITHMS
from .base import (
    ColumnCheck,
    Output,
    ParseContext,
    RunConfig,
    held_by_engine,
    mechanism_noise,
    needs_records,
    noise_lines,
    register,
)

if TYPE_CHECKING:
    from ...core.release import Release
    from ..config.study import Study

PRDP_LABELS = {"count": "PrDP count (Alg. 1)", "framework": "PrDP framework (Alg. 2)",
               "sum_extension": "PrDP extension (Sec. 5.2)", "naive": "naive ε̌"}
PRDP_LOCAL_LABELS = {"count": "PrLDP count (Alg. 3–4)", "framework": "PrLDP framework (Alg. 5)",
                     "naive": "naive ε̌ (local)"}


def prdp_query(m: Mapping[str, Any]) -> str:
    """The query string of a ``prdp`` mechanism entry (``"count"``, ``"sum:BALANCE"``, …)."""
    return m["query"] if m["query"] == "count" else f"{m['query']}:{m['column']}"


@register
@dataclass(frozen=True, eq=False, kw_only=True)
class PrdpRun(RunConfig):
    """The general PrDP framework: each record r pays at most its budget E(r) (pure ε).

    ``model``: central (a curator adds the noise) or local (PrLDP: each party randomises its own
    report); ``query`` and ``column``: what is asked; ``beta``: the failure probability of the
    domain selection (the framework's accuracy guarantee holds with probability 1 − β, the privacy
    guarantee always); ``threshold`` (local): the printed or the Bernstein selection thresholds;
    ``algorithms``: the releases compared side by side, each charged to every record within E(r)
    (the naive baseline charges everyone ε̌)."""

    kind: ClassVar[str] = "prdp"
    ABOUT: ClassVar[str] = ("The per-record DP framework: each record's budget E(r) from the budget function, "
                            "and the algorithms that charge each record at most it.")
    POLICY_PART: ClassVar[str | None] = "budget"
    KEYS: ClassVar[tuple[str, ...]] = ("model", "query", "column", "beta", "threshold", "algorithms")
    IMPORTS: ClassVar[tuple[str, ...]] = ("from prdp_core.mechanisms import prdp",
                                          "from prdp_core.mechanisms.prdp import local as prldp")

    model: str = "central"
    query: str = "sum"
    beta: float = 0.1
    column: str | None = None
    threshold: Literal["paper", "bernstein"] | None = None
    algorithms: tuple[str, ...] = ()

    @classmethod
    def parse_fields(cls, d: Mapping[str, Any], path: str, context: ParseContext) -> dict[str, Any]:
        if "budget" not in context.policy:
            raise _err(path, "the PrDP framework needs policy.budget (the budget function E).")
        model = _choice(d.get("model", "central"), f"{path}.model", ("central", "local"))
        query = _choice(d.get("query", "sum"), f"{path}.query", PRDP_QUERIES)
        if model == "local" and query not in ("count", "sum"):
            raise _err(f"{path}.query", "the local model answers count and sum only.")
        out: dict[str, Any] = {"model": model, "query": query,
                               "beta": _number(d.get("beta", 0.1), f"{path}.beta", lo=0.0, open_lo=True, hi=0.5)}
        if query != "count":
            if d.get("column") is None:
                raise _err(f"{path}.column", f"a {query} query needs a column.")
            out["column"] = _text(d["column"], f"{path}.column", max_len=500)
        if model == "local":
            out["threshold"] = _choice(d.get("threshold", "paper"), f"{path}.threshold", ("paper", "bernstein"))
        allowed = {"count": query == "count", "framework": True,
                   "sum_extension": query == "sum" and model == "central", "naive": True}
        default = [a for a in PRDP_ALGORITHMS if allowed[a]]
        if context.engine != "memory":  # the records stay in the engine: algorithms that need them are left out
            default = [a for a in default if a not in RECORD_ALGORITHMS]
        algs = d.get("algorithms", default)
        if isinstance(algs, str):
            algs = [algs]
        if not isinstance(algs, list) or not algs:
            raise _err(f"{path}.algorithms", f"must be a non-empty list from {', '.join(default)}.")
        for j, a in enumerate(algs):
            _choice(a, f"{path}.algorithms[{j}]", PRDP_ALGORITHMS)
            if not allowed[a]:
                raise _err(f"{path}.algorithms[{j}]", f"'{a}' does not apply to a {model} {query} query.",
                           hint=f"Use some of: {', '.join(default)}.")
        out["algorithms"] = tuple(algs)  # every model and algorithm has a secure path (secure: true)
        return out

    def config_fields(self) -> dict[str, Any]:
        out: dict[str, Any] = {"model": self.model, "query": self.query, "beta": self.beta}
        if self.column is not None:
            out["column"] = self.column
        if self.threshold is not None:
            out["threshold"] = self.threshold
        out["algorithms"] = list(self.algorithms)
        return out

    def check_columns(self, need: ColumnCheck, path: str) -> None:
        need(self.column, f"{path}.column", measure=self.query in ("sum", "max"))

    def run(self, study: Study, ds: Any, seed: int, reveal: bool) -> list[Output]:
        from ...mechanisms import prdp
        from ...mechanisms.prdp import local as prldp
        from ..config.study_data import data_columns

        E = study.budget_function()
        E.check_columns(data_columns(ds))
        if self.model == "local":
            needs_records(ds, "The local model (PrLDP)")
        for alg in self.algorithms:
            if alg == "sum_extension":
                needs_records(ds, "The Sec. 5.2 sum extension")
        t = ds if held_by_engine(ds) else ds.table
        q, beta = prdp_query(self), self.beta
        # one generator for the algorithms compared side by side; secure runs draw from OpenDP, unseeded
        run: dict[str, Any] = {"noise": mechanism_noise(self.secure, seed)}
        out = []
        for alg in self.algorithms:
            if self.model == "local":
                th = self.threshold or "paper"
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
                rel = prdp.sum_extension(t, E, column=self.column, beta=beta, reveal=reveal, **run)
            else:
                rel = prdp.naive(t, E, q, beta=beta, reveal=reveal, **run)
            out.append((PRDP_LABELS[alg], rel))
        return out

    def code(self, study: Study, i: int, table: str) -> list[str]:
        seed, label = self.noise_seed(study.seed, i), self.release_label(i)
        lines = [f"E = {_budget_code(study.policy['budget'])}", "print(E.describe())"]
        q, beta = prdp_query(self), self.beta
        lines += noise_lines(self.secure, seed)  # one noise source for the algorithms compared side by side
        run = "noise=noise"
        for alg in self.algorithms:
            if self.model == "local":
                th = self.threshold or "paper"
                call = {"count": f"prldp.count(E(ds.table), eps_min=E.eps_min, eps_max=E.eps_max, beta={beta!r}, "
                                 f"threshold={th!r}, reveal=REVEAL, {run})",
                        "framework": f"prldp.framework(ds.table, E, {q!r}, beta={beta!r}, threshold={th!r}, "
                                     f"reveal=REVEAL, {run})",
                        "naive": f"prldp.naive(ds.table, E, {q!r}, beta={beta!r}, reveal=REVEAL, {run})"}[alg]
                sub = PRDP_LOCAL_LABELS[alg]
            else:
                count = (f"prdp.count(E(ds.table), eps_min=E.eps_min, eps_max=E.eps_max, beta={beta!r}, "
                         f"reveal=REVEAL, {run})") if table == "ds.table" else \
                    f"prdp.count_of(ds, E, beta={beta!r}, reveal=REVEAL, {run})"
                call = {"count": count,
                        "framework": f"prdp.framework({table}, E, {q!r}, beta={beta!r}, reveal=REVEAL, {run})",
                        "sum_extension": f"prdp.sum_extension(ds.table, E, column={self.column!r}, "
                                         f"beta={beta!r}, reveal=REVEAL, {run})",
                        "naive": f"prdp.naive({table}, E, {q!r}, beta={beta!r}, reveal=REVEAL, {run})"}[alg]
                sub = PRDP_LABELS[alg]
            lines.append(f"releases.append(({label + ': ' + sub!r}, {call}))")
        return lines

    def unbounded_budget(self, rel: Release) -> float:
        """A loss bounded by the records' budgets: the budget function's cap ε̂."""
        return float(rel.params.get("eps_max", float("nan")))
def _budget_code(b: Mapping[str, Any]) -> str:
    """prdp_core code building the budget function (the calls of :func:`prdp_core.study.config.build_budget`)."""
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
        return f"prdp.step_table({s['column']!r}, {literal(s['bounds'])}, {literal(s['eps'])}, {kw})"
    g = b["groups"]
    return f"prdp.per_group({g['column']!r}, {literal(dict(g['parts']))}, default={g.get('default')!r}, {kw})"


