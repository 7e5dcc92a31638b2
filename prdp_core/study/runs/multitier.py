"""The multi-tier release entry of a study: one query answered to analyst tiers (Wang et al.).

``kind: multitier`` releases one count or sum (central model) or a categorised measure (local
model) to the study's analyst tiers (policy.tiers), each tier at its own ε, any coalition of
tiers learning no more than its top tier.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar, Mapping, cast

from ...core.provenance import mark_sources, param_sources
from ...io.codegen import literal
from ..config.fields import _choice, _err, _int, _mapping, _number, _scalar, _text
from ..config.keys import MT_FAMILIES, MT_OPS
from .base import (
    BudgetRow,
    ColumnCheck,
    Output,
    ParseContext,
    RunConfig,
    mechanism_noise,
    needs_records,
    noise_lines,
    register,
)

if TYPE_CHECKING:
    from ...core.release import Release
    from ..config.study import Study

#: Keys of the central model and of the local model (each refused in the other).
CENTRAL_KEYS: tuple[str, ...] = ("query", "clip", "family", "delta", "param_source")
LOCAL_KEYS: tuple[str, ...] = ("d", "scale", "top", "variant")


def multitier_filter(m: Mapping[str, Any]) -> Any:
    """The record filter of a ``multitier`` entry (None: every record)."""
    from ...mechanisms import multitier as mt

    f = m.get("filter")
    return None if f is None else mt.RecordFilter(f["column"], f["op"], f["value"])


def _filter(v: Any, path: str) -> dict[str, Any]:
    f = _mapping(v, path, ("column", "op", "value"), required=("column", "value"))
    return {"column": _text(f["column"], f"{path}.column", max_len=500),
            "op": _choice(f.get("op", "=="), f"{path}.op", MT_OPS),
            "value": _scalar(f["value"], f"{path}.value")}


@register
@dataclass(frozen=True, eq=False, kw_only=True)
class MultitierRun(RunConfig):
    """A multi-tier release: analyst tier k sees an answer at its ε_k; the tiers' answers are
    correlated so that any coalition pays only its top tier's ε (pure DP, or (ε, δ) for Gaussian noise).

    Central model: ``query`` (count or sum of ``measure`` clipped at ``clip``, the sensitivity),
    ``family`` (the noise), ``delta`` (Gaussian only), ``param_source`` (``clip: "private: DP p99, ε = 0.1"`` when a
    private suggestion released the clipping bound; said in the release's params as ``clip_source``); local
    model: each user reports ``measure``
    cut into ``d`` public bins (``scale``, up to ``top``) through the ``variant`` of the Subset
    mechanism. ``filter`` restricts the records read (a public condition)."""

    kind: ClassVar[str] = "multitier"
    ABOUT: ClassVar[str] = ("A multi-tier release: one answer for several analyst tiers, lower tiers derived "
                            "from higher ones, so that any coalition pays its top budget.")
    POLICY_PART: ClassVar[str | None] = "tiers"
    KEYS: ClassVar[tuple[str, ...]] = ("model", "query", "measure", "clip", "family", "delta", "filter", "d",
                                       "scale", "top", "variant", "param_source")
    IMPORTS: ClassVar[tuple[str, ...]] = ("from prdp_core.mechanisms import multitier as mt",)

    model: str = "central"
    filter: Mapping[str, Any] | None = None
    measure: str | None = None  # central sums and the local model
    # the central model's keys
    query: str = "count"
    family: str = "geometric"
    clip: float | None = None  # sums only
    param_source: Mapping[str, str] = field(default_factory=dict)  # clip: "private: …" when privately suggested
    delta: float = 1e-6
    # the local model's keys
    d: int = 16
    scale: str = "log"
    top: float = 1e6
    variant: str = "subset2"

    @classmethod
    def parse_fields(cls, d: Mapping[str, Any], path: str, context: ParseContext) -> dict[str, Any]:
        if "tiers" not in context.policy:
            raise _err(path, "a multi-tier release needs policy.tiers (each analyst's ε).")
        model = _choice(d.get("model", "central"), f"{path}.model", ("central", "local"))
        out: dict[str, Any] = {"model": model}
        if d.get("filter") is not None:
            out["filter"] = _filter(d["filter"], f"{path}.filter")
        if model == "central":
            out["query"] = _choice(d.get("query", "count"), f"{path}.query", ("count", "sum"))
            fams = MT_FAMILIES if out["query"] == "sum" else MT_FAMILIES[:3]
            out["family"] = _choice(d.get("family", "geometric"), f"{path}.family", fams)
            if out["query"] == "sum":
                if d.get("measure") is None:
                    raise _err(f"{path}.measure", "a sum needs a measure.")
                out["measure"] = _text(d["measure"], f"{path}.measure", max_len=500)
                from ...mechanisms.multitier.noise_families import MAX_SENSITIVITY

                out["clip"] = _number(d.get("clip", 100.0), f"{path}.clip", positive=True, hi=MAX_SENSITIVITY)
                out["param_source"] = param_sources(d.get("param_source"), f"{path}.param_source", ("clip",))
            out["delta"] = _number(d.get("delta", 1e-6), f"{path}.delta", positive=True, hi=0.1)
            wrong = LOCAL_KEYS
        else:
            if d.get("measure") is None:
                raise _err(f"{path}.measure", "the local model categorises a measure: name it.")
            out["measure"] = _text(d["measure"], f"{path}.measure", max_len=500)
            out["d"] = _int(d.get("d", 16), f"{path}.d", lo=2, hi=256)
            out["scale"] = _choice(d.get("scale", "log"), f"{path}.scale", ("log", "linear"))
            out["top"] = _number(d.get("top", 1e6), f"{path}.top", positive=True, hi=1e300)  # public top of the bins
            out["variant"] = _choice(d.get("variant", "subset2"), f"{path}.variant", ("subset2", "subset1"))
            wrong = CENTRAL_KEYS
        for k in wrong:
            if k in d:
                raise _err(f"{path}.{k}", f"applies to the {'local' if model == 'central' else 'central'} model only.")
        return out

    def config_fields(self) -> dict[str, Any]:
        out: dict[str, Any] = {"model": self.model}
        if self.filter is not None:
            out["filter"] = dict(self.filter)
        if self.model == "local":
            out.update(measure=self.measure, d=self.d, scale=self.scale, top=self.top, variant=self.variant)
            return out
        out.update(query=self.query, family=self.family)
        if self.measure is not None:
            out.update(measure=self.measure, clip=self.clip)
        if self.param_source:
            out["param_source"] = dict(self.param_source)
        out["delta"] = self.delta
        return out

    def check_columns(self, need: ColumnCheck, path: str) -> None:
        need(self.measure, f"{path}.measure", measure=True)
        if self.filter is not None:
            need(self.filter["column"], f"{path}.filter.column")

    def run(self, study: Study, ds: Any, seed: int, reveal: bool) -> list[Output]:

        from ...mechanisms import multitier as mt

        needs_records(ds, "A multi-tier release")
        tiers = study.tiers()
        f = multitier_filter(self)
        # a secure release is unseeded: exact samplers and a system random source
        mode: dict[str, Any] = {"noise": mechanism_noise(self.secure, seed)}
        if self.model == "central":
            integer = self.family in ("geometric", "multiscale_geometric")
            q = mt.central_query(ds.table, self.query, measure=self.measure, clip=self.clip, filter=f,
                                 integer=integer)
            plan = mt.plan_central(tiers, self.family, sensitivity=float(q.sensitivity), delta=self.delta)
            if self.secure:
                mode["contributions"] = q.contributions
            rel = mt.release_central(plan, q.value, reveal=reveal, records=q.mask, query=q.label, **mode)
            return [("", mark_sources(rel, self.param_source))]
        codes, labels = mt.local_categories(ds.table, cast(str, self.measure), self.d, scale=self.scale, top=self.top,
                                            filter=f)
        local_plan = mt.plan_local(tiers, len(labels), variant=self.variant)
        rel = mt.release_local(local_plan, codes, reveal=reveal, labels=labels, **mode)
        return [("", rel)]

    def code(self, study: Study, i: int, table: str) -> list[str]:
        seed, label = self.noise_seed(study.seed, i), self.release_label(i)
        lines = [f"tiers = mt.tiers_from({literal(study.policy['tiers'])})"]
        f = self.filter
        ftxt = "None" if f is None else f"mt.RecordFilter({f['column']!r}, {f['op']!r}, {f['value']!r})"
        lines += noise_lines(self.secure, seed)
        mode = "noise=noise"
        if self.model == "central":
            integer = self.family in ("geometric", "multiscale_geometric")
            lines.append(f"q = mt.central_query(ds.table, {self.query!r}, measure={self.measure!r}, "
                         f"clip={self.clip!r}, filter={ftxt}, integer={integer!r})")
            lines.append(f"plan = mt.plan_central(tiers, {self.family!r}, sensitivity=float(q.sensitivity), "
                         f"delta={self.delta!r})")
            lines.append(f"rel = mt.release_central(plan, q.value, {mode}, reveal=REVEAL, records=q.mask, "
                         "query=q.label" + (", contributions=q.contributions)" if self.secure else ")"))
        else:
            lines.append(f"codes, labels = mt.local_categories(ds.table, {self.measure!r}, {self.d!r}, "
                         f"scale={self.scale!r}, top={self.top!r}, filter={ftxt})")
            lines.append(f"plan = mt.plan_local(tiers, len(labels), variant={self.variant!r})")
            lines.append(f"rel = mt.release_local(plan, codes, {mode}, reveal=REVEAL, labels=labels)")
        lines.append(f"releases.append(({label!r}, rel))")
        return lines

    def budget_rows(self, study: Study, rel: Release) -> list[BudgetRow]:
        """One row per tier (its ε), then the total over all tiers of each ledger entry."""
        group = "(all records)" if self.filter is None or self.model == "local" else \
            f"records with {multitier_filter(self).describe()}"
        rows: list[BudgetRow] = [(f"tier '{t.name}'", group, "eps", t.eps,
                                  "ε of this tier's answer (derived from the top tier's)") for t in study.tiers()]
        rows += [(f"total over all tiers ({e.label})", "(all records)", e.measure, e.loss.supremum(),
                  e.loss.describe()) for e in rel.entries]
        return rows
