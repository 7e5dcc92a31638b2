"""The personalized-DP mechanism entry of a study: each user's own ε (Jorgensen, Yu, Cormode).

``kind: personalized`` answers one query under the study's specification Φ (policy.specification)
by Minimum, Threshold, Sample, PE or Stretching; each user's delivered ε is at most their Φ.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar, Mapping

from ...core.provenance import mark_sources, param_sources
from ...io.codegen import literal
from ..config.fields import _bool, _choice, _err, _mapping, _number, _text, _wrap
from ..config.keys import PDP_MECHANISMS, PDP_QUERIES
from .base import ColumnCheck, Output, ParseContext, RunConfig, mechanism_noise, needs_records, noise_lines, register

if TYPE_CHECKING:
    from ..config.study import Study

#: The keys of the entry's ``query`` (a :class:`~prdp_core.mechanisms.personalized.PersonalizedQuery`).
QUERY_KEYS = ("kind", "column", "cutoff", "lo", "hi", "median_score", "integer")


def pdp_mechanism(m: Mapping[str, Any]) -> Any:
    """The personalized DP mechanism object of a ``personalized`` entry."""
    from ...mechanisms import personalized

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


def _query(d: Any, path: str) -> dict[str, Any]:
    """The entry's ``query``, normalised (every key present) and checked by PersonalizedQuery."""
    q = _mapping(d or {}, path, QUERY_KEYS)
    qn: dict[str, Any] = {"kind": _choice(q.get("kind", "count"), f"{path}.kind", PDP_QUERIES),
                          "column": None if q.get("column") is None else _text(q["column"], f"{path}.column",
                                                                                max_len=500),
                          "cutoff": _number(q.get("cutoff", 1.0), f"{path}.cutoff"),
                          "lo": _number(q.get("lo", 0.0), f"{path}.lo"),
                          "hi": None if q.get("hi") is None else _number(q["hi"], f"{path}.hi"),
                          "median_score": _choice(q.get("median_score", "rank"), f"{path}.median_score",
                                                  ("rank", "changes")),
                          "integer": _bool(q.get("integer", False), f"{path}.integer")}
    from ...mechanisms.personalized import PersonalizedQuery

    _wrap(path, lambda: PersonalizedQuery(**qn))
    return qn


@register
@dataclass(frozen=True, eq=False, kw_only=True)
class PersonalizedRun(RunConfig):
    """Personalized DP: user u's loss is at most Φ(u), the ε they chose.

    ``mechanism``: how the query is answered (Minimum: everyone at the smallest Φ; Threshold and
    Sample at ``t`` — users below t are sampled with probability (e^Φ − 1)/(e^t − 1), ``max``/``mean``
    of Φ or a number; PE; Stretching); ``rescale`` scales a sampled answer back up; ``query``: what is
    asked and its public bounds; ``design_defaults``: the query bounds (hi, cutoff) that were computed
    from the data — a design aid that leaks, flagged in the outputs and refused in a secure review run;
    ``param_source``: the bounds released by a private suggestion (``hi: "private: DP p99, ε = 0.1"``), said in
    the release's params (``hi_source``)."""

    kind: ClassVar[str] = "personalized"
    ABOUT: ClassVar[str] = ("Personalized DP: every user's public ε, and the mechanism delivering at most it to "
                            "each user.")
    POLICY_PART: ClassVar[str | None] = "specification"
    KEYS: ClassVar[tuple[str, ...]] = ("mechanism", "t", "rescale", "query", "design_defaults", "param_source")
    IMPORTS: ClassVar[tuple[str, ...]] = ("from prdp_core.mechanisms import personalized",)

    mechanism: str = "sample"
    t: str | float = "max"
    rescale: bool = False
    design_defaults: tuple[str, ...] = ()
    param_source: Mapping[str, str] = field(default_factory=dict)
    query: Mapping[str, Any] = field(default_factory=dict)

    @classmethod
    def parse_fields(cls, d: Mapping[str, Any], path: str, context: ParseContext) -> dict[str, Any]:
        if "specification" not in context.policy:
            raise _err(path, "personalized DP needs policy.specification (each user's ε).")
        out: dict[str, Any] = {"mechanism": _choice(d.get("mechanism", "sample"), f"{path}.mechanism",
                                                    PDP_MECHANISMS)}
        t = d.get("t", "max")
        out["t"] = t if t in ("max", "mean") else _number(t, f"{path}.t", positive=True)
        out["rescale"] = _bool(d.get("rescale", False), f"{path}.rescale")
        dd = d.get("design_defaults") or []
        if not isinstance(dd, list) or any(x not in ("hi", "cutoff") for x in dd):
            raise _err(f"{path}.design_defaults", "must list the query parameters whose value is a design default "
                       "computed from the data: hi and/or cutoff.", hint="e.g. design_defaults: [hi]")
        out["design_defaults"] = tuple(sorted(set(dd)))
        out["param_source"] = param_sources(d.get("param_source"), f"{path}.param_source", ("hi", "cutoff"))
        out["query"] = _query(d.get("query"), f"{path}.query")
        return out

    def config_fields(self) -> dict[str, Any]:
        out: dict[str, Any] = {"mechanism": self.mechanism, "t": self.t, "rescale": self.rescale}
        if self.design_defaults:
            out["design_defaults"] = list(self.design_defaults)
        if self.param_source:
            out["param_source"] = dict(self.param_source)
        out["query"] = dict(self.query)
        return out

    def check_columns(self, need: ColumnCheck, path: str) -> None:
        need(self.query.get("column"), f"{path}.query.column")

    def run(self, study: Study, ds: Any, seed: int, reveal: bool) -> list[Output]:

        from ...mechanisms import personalized

        needs_records(ds, "Personalized DP")
        spec = study.privacy_spec(ds.table)
        q = personalized.PersonalizedQuery(**self.query)
        if self.secure and not reveal:  # review mode: bounds computed from the data are refused (teaching: flagged)
            personalized.require_public_bounds(self.design_defaults)
        rel = pdp_mechanism(self).release(ds.table, spec, q, noise=mechanism_noise(self.secure, seed), reveal=reveal)
        return [("", mark_sources(personalized.flag_design_defaults(rel, self.design_defaults), self.param_source))]

    def code(self, study: Study, i: int, table: str) -> list[str]:
        seed, label = self.noise_seed(study.seed, i), self.release_label(i)
        s = study.policy["specification"]
        lines = []
        if "tiers" in s:
            lines.append(f"spec = personalized.generate_tiers_for(ds.table, "
                         f"personalized.TierConfig(**{literal(s['tiers'])}), "
                         f"rng=np.random.default_rng({int(s['seed'])}), user_col={s['user']!r})")
        elif s["labels"]:
            lines.append(f"tab = ds.table[[{s['column']!r}]].astype(str)" + (
                f".assign(**{{{s['user']!r}: ds.table[{s['user']!r}].to_numpy()}})" if s["user"] else ""))
            lines.append(f"spec = personalized.spec_from_labels(tab, {s['column']!r}, {literal(s['labels'])}, "
                         f"user_col={s['user']!r}, default_eps={s['default_eps']!r})")
        else:
            lines.append(f"spec = personalized.spec_from_column(ds.table, {s['column']!r}, user_col={s['user']!r}, "
                         f"default_eps={s['default_eps']!r})")
        mech = {"minimum": "personalized.Minimum()", "threshold": f"personalized.Threshold({self.t!r})",
                "sample": f"personalized.Sample({self.t!r}, rescale={self.rescale!r})", "pe": "personalized.PE()",
                "stretching": f"personalized.Stretching(rescale={self.rescale!r})"}[self.mechanism]
        lines.append(f"query = personalized.PersonalizedQuery(**{literal(dict(self.query))})")
        lines += noise_lines(self.secure, seed)
        lines.append(f"rel = {mech}.release(ds.table, spec, query, noise=noise, reveal=REVEAL)")
        lines.append(f"releases.append(({label!r}, rel))")
        return lines
