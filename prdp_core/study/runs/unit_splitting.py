"""The unit-splitting mechanism entry of a study: per-record zCDP by splitting large records.

``kind: unit_splitting`` answers the study's workload on split data with Gaussian noise under
per-record zCDP (policy.thresholds), state keys found by partition selection.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar, Mapping

from ...io.codegen import literal
from ..config.fields import _err, _number
from .base import BudgetRow, Output, ParseContext, RunConfig, held_by_engine, mechanism_noise, noise_lines, register

if TYPE_CHECKING:
    from ...core.release import Release
    from ..config.study import Study


@register
@dataclass(frozen=True, eq=False, kw_only=True)
class UnitSplittingRun(RunConfig):
    """Unit splitting (per-record zCDP): the study's workload answered on split data.

    ``partition_delta`` is the δ of partition selection (finding the group keys): a record cut into
    m pieces is (ε, δ(r))-private with δ(r) growing with m from this δ; the policy's ρ-zCDP losses
    (ρ·m(r)² on split data, flat ρ otherwise) come from the study's thresholds and workload."""

    kind: ClassVar[str] = "unit_splitting"
    ABOUT: ClassVar[str] = ("Per-record zCDP with unit splitting: records above the thresholds are cut into "
                            "pieces, the workload is answered with Gaussian noise on the split data.")
    POLICY_PART: ClassVar[str | None] = "thresholds"
    KEYS: ClassVar[tuple[str, ...]] = ("partition_delta",)
    IMPORTS: ClassVar[tuple[str, ...]] = ("from prdp_core.mechanisms import unit_splitting",
                                          "from prdp_core.core.splitting import as_thresholds, thresholds_from_frame",
                                          "from prdp_core.core.workload import SplittingPolicy, Workload")
    LOSS_FROM_POLICY: ClassVar[bool] = True
    FIGURE_PER_QUERY: ClassVar[bool] = True

    partition_delta: float = 1e-6

    @classmethod
    def parse_fields(cls, d: Mapping[str, Any], path: str, context: ParseContext) -> dict[str, Any]:
        if "thresholds" not in context.policy or not context.has_workload:
            raise _err(path, "unit splitting needs policy.thresholds and a workload.")
        return {"partition_delta": _number(d.get("partition_delta", 1e-6), f"{path}.partition_delta", positive=True,
                                           hi=0.1)}

    def config_fields(self) -> dict[str, Any]:
        return {"partition_delta": self.partition_delta}

    def run(self, study: Study, ds: Any, seed: int, reveal: bool) -> list[Output]:
        from ...mechanisms import unit_splitting

        policy = study.validate_policy(ds)
        # owners' realized losses are not part of the outputs: a table held by an engine skips computing them
        own: dict[str, Any] = {"owner_realized": False} if held_by_engine(ds) else {}
        # review mode refuses thresholds computed from the data in a secure release (teaching runs may use them)
        rel = unit_splitting.release(ds, policy, noise=mechanism_noise(self.secure, seed), reveal=reveal,
                                     partition_delta=self.partition_delta, allow_data_derived=reveal, **own)
        return [("", rel)]

    def code(self, study: Study, i: int, table: str) -> list[str]:
        seed, label = self.noise_seed(study.seed, i), self.release_label(i)
        lines = policy_code(study, table)
        src = study.policy.get("threshold_source")
        own = "" if table == "ds.table" else ", owner_realized=False"  # not among the outputs
        lines += noise_lines(self.secure, seed)
        lines.append(f"rel = unit_splitting.release(ds, policy, noise=noise, reveal=REVEAL, "
                     f"partition_delta={self.partition_delta!r}{own}"
                     + (", allow_data_derived=REVEAL)" if src and self.secure else ")"))
        lines.append(f"releases.append(({label!r}, rel))")
        return lines

    def budget_rows(self, study: Study, rel: Release) -> list[BudgetRow]:
        """One row per query × group level (its split or flat ρ), partition selection, and the base loss."""
        pol: Any = rel.entries[0].loss  # the SplittingPolicy
        wl = pol.workload
        rows: list[BudgetRow] = []
        for q in wl.queries:
            group = ", ".join(q.group_by) or "(all records)"
            split = q.split and q.kind != "count"
            rows.append((q.name(), group, "rho", q.rho, "ρ·m(r)² (on split data)" if split else "ρ (flat)"))
            if q.kind == "avg":
                rows.append((f"{q.name()} — COUNT DISTINCT part", group, "rho", q.rho_count, "ρ (flat)"))
        sets = list(dict.fromkeys(q.group_by for q in wl.queries if q.group_by))
        if wl.partition_rho > 0 and sets:
            for gb in sets:
                rows.append(("partition selection (finding the group keys)", ", ".join(gb), "rho",
                             wl.partition_rho / len(sets), "ρ·m(r)² (on split data) + δ(r)"))
        rows.append(("total: base loss of a record never split", "(all records)", "rho", wl.total_rho,
                     pol.describe()))
        return rows

    def splitting_policy(self, rel: Release) -> Any:
        return rel.entries[0].loss


def policy_code(study: Study, table: str = "ds.table") -> list[str]:
    """Lines building ``policy``, the study's unit-splitting policy (thresholds, workload, where the
    thresholds came from); ``table`` names what group values are matched against (``ds.table``, or
    ``ds`` held by an engine). User text only as literals."""
    t = study.policy["thresholds"]
    lines = []
    if "rows" in t:
        rows = [{"group": g, **row} for g, row in t["rows"].items()]
        values = "ds.table" if table == "ds.table" else f"ds.engine.distinct([{literal(t['group_column'])}])"
        lines.append(f"thresholds = thresholds_from_frame(pd.DataFrame({literal(rows)}), "
                     f"group_col={literal(t['group_column'])}, table={values})")
    else:
        lines.append(f"thresholds = as_thresholds({literal(t)})")
    lines.append(f"workload = Workload.from_dict({literal(study.workload)})")
    src = study.policy.get("threshold_source")
    lines.append("policy = SplittingPolicy(thresholds, workload" + (
        f", threshold_source={literal(src)})" if src else ")"))
    return lines
