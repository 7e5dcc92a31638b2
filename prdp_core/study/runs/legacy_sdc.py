"""The legacy-methods entry of a study: today's cell suppression and noise infusion beside the policy.

``kind: legacy_sdc`` computes, on the table of one workload query (a SUM by at most two columns), the primary
suppression of the p% and (n, k) rules with complementary suppression, and — in teaching mode — noise infusion
(:mod:`prdp_core.mechanisms.legacy_sdc`). It releases nothing under a privacy policy and adds no ledger entry;
the report sets its cells beside the DP answers of the same query from the study's other entries, with a
summary per method (:meth:`LegacySdcRun.comparison`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar, Mapping

import pandas as pd

from ...core.errors import PolicyError
from ...io.codegen import literal
from ..config.fields import _bool, _err, _int, _number
from .base import Output, ParseContext, RunConfig, noise_lines, register

if TYPE_CHECKING:
    from ...core.release import Release
    from ...core.workload import Query
    from ..config.study import Study
    from ..runner import StudyRun


@register
@dataclass(frozen=True, eq=False, kw_only=True)
class LegacySdcRun(RunConfig):
    """Cell suppression and noise infusion on one query's table, compared with the policy's answers.

    ``query`` — the workload query (0-based position; default the first SUM) whose table is protected;
    ``p`` — the p% rule's percentage (null: off); ``n``, ``k`` — the (n, k)-dominance rule (``k`` null: off);
    ``min_frequency`` — fewest contributors a published cell needs (0: off); ``complementary`` — withhold further
    cells so that no suppressed cell can be recovered from the margins; ``noise_infusion`` with ``noise_low`` and
    ``noise_high`` — each owner's values moved by a share between the two (teaching mode only). None of these
    is a privacy guarantee; the entry adds nothing to the ledger."""

    kind: ClassVar[str] = "legacy_sdc"
    ABOUT: ClassVar[str] = ("Today's methods beside the policy: cell suppression by the p% and (n, k) rules with "
                            "complementary cells, and noise infusion, on one SUM query's table — no privacy guarantee "
                            "and nothing added to the ledger.")
    KEYS: ClassVar[tuple[str, ...]] = ("query", "p", "n", "k", "min_frequency", "complementary", "noise_infusion",
                                       "noise_low", "noise_high")
    IMPORTS: ClassVar[tuple[str, ...]] = ("from prdp_core.mechanisms import legacy_sdc",
                                          "from prdp_core.core.workload import Workload")

    query: int | None = None
    p: float | None = 10.0
    n: int = 2
    k: float | None = 85.0
    min_frequency: int = 3
    complementary: bool = True
    noise_infusion: bool = True
    noise_low: float = 0.10
    noise_high: float = 0.15

    @classmethod
    def parse(cls, entry: Mapping[str, Any], path: str, context: ParseContext) -> RunConfig:
        run = super().parse(entry, path, context)
        if run.secure:
            raise _err(f"{path}.secure", "cell suppression and noise infusion are no DP release: they have no secure "
                                         "form (drop the flag).")
        return run

    @classmethod
    def parse_fields(cls, d: Mapping[str, Any], path: str, context: ParseContext) -> dict[str, Any]:
        from ...core.errors import ParameterError
        from ...mechanisms.legacy_sdc import NoiseInfusion, Rules

        if not context.has_workload:
            raise _err(path, "the legacy comparison needs a workload with a SUM query.")
        out: dict[str, Any] = {
            "query": None if d.get("query") is None else _int(d["query"], f"{path}.query", hi=999),
            "p": None if "p" in d and d["p"] is None else _number(d.get("p", 10.0), f"{path}.p", positive=True,
                                                                  hi=99.999),
            "n": _int(d.get("n", 2), f"{path}.n", lo=1, hi=100),
            "k": None if "k" in d and d["k"] is None else _number(d.get("k", 85.0), f"{path}.k", positive=True,
                                                                  hi=100),
            "min_frequency": _int(d.get("min_frequency", 3), f"{path}.min_frequency", hi=1000),
            "complementary": _bool(d.get("complementary", True), f"{path}.complementary"),
            "noise_infusion": _bool(d.get("noise_infusion", True), f"{path}.noise_infusion"),
            "noise_low": _number(d.get("noise_low", 0.10), f"{path}.noise_low", nonneg=True, hi=0.99),
            "noise_high": _number(d.get("noise_high", 0.15), f"{path}.noise_high", nonneg=True, hi=0.99),
        }
        try:
            Rules(p=out["p"], n=out["n"], k=out["k"], min_frequency=out["min_frequency"])
            NoiseInfusion(out["noise_low"], out["noise_high"])
        except ParameterError as err:
            raise _err(path, err.message, hint=err.hint) from None
        return out

    def config_fields(self) -> dict[str, Any]:
        out: dict[str, Any] = {} if self.query is None else {"query": self.query}
        out.update({"p": self.p, "n": self.n, "k": self.k, "min_frequency": self.min_frequency,
                    "complementary": self.complementary, "noise_infusion": self.noise_infusion,
                    "noise_low": self.noise_low, "noise_high": self.noise_high})
        return out

    def describe(self) -> str:
        return self.label or "cell suppression and noise infusion (today's methods)"

    # -- the query and the run ---------------------------------------------------------------

    def query_index(self, study: Study) -> int:
        """The position of the workload query whose table the entry protects (a SUM)."""
        queries = list(study.workload.get("queries", ())) if study.workload else []
        if self.query is None:
            for i, q in enumerate(queries):
                if q.get("kind") == "sum":
                    return i
            raise PolicyError("The legacy comparison needs a SUM query in the workload.",
                              hint="Add e.g. {kind: sum, measure: EMP, group_by: [STATE]} to the workload.")
        if self.query >= len(queries) or queries[self.query].get("kind") != "sum":
            raise PolicyError(f"mechanisms: legacy_sdc's query {self.query} is not a SUM query of the workload.",
                              hint="Give the position (from 0) of a SUM query.")
        return self.query

    def workload_query(self, study: Study) -> Query:
        from ...core.workload import Workload

        return Workload.from_dict(study.workload or {}).queries[self.query_index(study)]

    def query_name(self, study: Study) -> str:
        """The query's name as the study's releases answer it ("2. SUM(EMP) BY STATE")."""
        return f"{self.query_index(study) + 1}. {self.workload_query(study).name()}"

    def _parts(self) -> tuple[Any, Any]:
        from ...mechanisms.legacy_sdc import NoiseInfusion, Rules

        return (Rules(p=self.p, n=self.n, k=self.k, min_frequency=self.min_frequency),
                NoiseInfusion(self.noise_low, self.noise_high) if self.noise_infusion else None)

    def run(self, study: Study, ds: Any, seed: int, reveal: bool) -> list[Output]:
        from ...core.noise_source import Noise
        from ...mechanisms import legacy_sdc

        q, name = self.workload_query(study), self.query_name(study)
        rules, infusion = self._parts()
        return [("", legacy_sdc.release(ds, measure=str(q.measure), group_by=q.group_by, query=name, rules=rules,
                                        infusion=infusion, complementary=self.complementary, where=q.filter,
                                        noise=Noise.teaching(seed), reveal=reveal))]

    def code(self, study: Study, i: int, table: str) -> list[str]:
        seed, label = self.noise_seed(study.seed, i), self.release_label(i)
        lines = noise_lines(False, seed)
        lines.append(f"q = Workload.from_dict({literal(study.workload)}).queries[{self.query_index(study)}]")
        infusion = (f"legacy_sdc.NoiseInfusion({self.noise_low!r}, {self.noise_high!r})" if self.noise_infusion
                    else "None")
        lines.append(f"rel = legacy_sdc.release(ds, measure=q.measure, group_by=q.group_by, "
                     f"query={str(self.query_index(study) + 1) + '. '!r} + q.name(), "
                     f"rules=legacy_sdc.Rules(p={self.p!r}, n={self.n!r}, k={self.k!r}, "
                     f"min_frequency={self.min_frequency!r}), infusion={infusion}, "
                     f"complementary={self.complementary!r}, where=q.filter, noise=noise, reveal=REVEAL)")
        lines.append(f"releases.append(({label!r}, rel))")
        return lines

    def budget_rows(self, study: Study, rel: Release) -> list[Any]:
        """None: the entry releases nothing under a privacy policy (no ledger entry, no budget)."""
        return []

    # -- the comparison in the report -----------------------------------------------------------

    def comparison(self, run: StudyRun, label: str, rel: Release, teaching: bool) -> list[tuple[str, pd.DataFrame]]:
        """The report's tables for this entry: in teaching mode the summary per method — with the DP answers of
        the same query from the study's first other release that answered it — and the cells; in review mode
        the number of cells each method withholds."""
        from ...mechanisms.legacy_sdc import beside

        if not teaching or "private_legacy" not in rel.extras:
            return [(f"{label}: cells withheld by each method (counts only in review mode)", rel.answers)]
        query = str(rel.answers["query"].iloc[0]) if len(rel.answers) else ""
        dp, dp_label = None, "DP policy"
        for other_label, other, other_rel in run.releases:  # the first other release that answered the query
            a = other_rel.answers
            if other is not self and {"query", "estimate"} <= set(a.columns) and (a["query"] == query).any():
                dp, dp_label = a, f"DP: {other_label}"
                break
        cmp = beside(rel, dp, dp_label)
        summary = cmp.summary.rename(columns={"share_cells": "share of cells", "share_total": "share of the total",
                                              "median_rel_error": "median relative error",
                                              "p90_rel_error": "90th-percentile relative error"})
        cells = cmp.cells[cmp.cells["kind"] == "interior"].sort_values("true", ascending=False)
        return [(f"{label}: {query} — each method's published cells and errors", summary),
                (f"{label}: the cells (largest first; confidential)", cells)]
