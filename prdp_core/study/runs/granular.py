"""The granular-DP mechanism entry of a study: a histogram of attributes under per-attribute DP.

``kind: granular`` releases the histogram of one to ``MAX_ATTRIBUTES`` columns under granular
(per-attribute) DP (Ghazi, Kumar, Manurangsi, Steinke): the standard Laplace histogram or the
heavy-hitter histogram of Theorem 15, over declared public categories.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar, Literal, Mapping

from ...io.codegen import literal
from ..config.fields import _choice, _err, _name, _number, _scalar, _text
from .base import (
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
    from ..config.study import Study


def granular_domains(study: Study, m: Mapping[str, Any]) -> dict[str, Any]:
    """The declared public categories of a ``granular`` entry: a sample's documented ones, then the typed ones."""
    from ...mechanisms import granular

    out: dict[str, Any] = dict(granular.sample_domains(study.data.sample)) if study.data.sample else {}
    out.update(m.get("categories", {}))
    return {a: out[a] for a in m["attributes"] if a in out}


def _categories(cats: Any, attributes: list[str], path: str) -> dict[str, Any]:
    """The declared public categories: attribute → a list of values, or text with one per comma."""
    if not isinstance(cats, Mapping):
        raise _err(path, "must map an attribute to its declared public categories (a list or text).")
    decl: dict[str, Any] = {}
    for k, c in cats.items():
        key = f"{path}.{_name(k)}"
        if str(k) not in attributes:
            raise _err(key, "is not one of the attributes.")
        if isinstance(c, str):
            decl[str(k)] = _text(c, key, max_len=200_000)
        elif isinstance(c, list) and c:
            decl[str(k)] = [_scalar(x, key) for x in c]
        else:
            raise _err(key, "must be a non-empty list of categories or text with one per comma.")
    return decl


@register
@dataclass(frozen=True, eq=False, kw_only=True)
class GranularRun(RunConfig):
    """A histogram under granular DP: changing s attributes of a record costs about s·``eps``.

    ``histogram``: standard (Laplace counts over the declared cells, cells under ``threshold``
    suppressed) or heavy_hitter (Theorem 15: ``eps`` per attribute, cells found by PrivHeavyHitter
    with failure probability ``nu``, calibrated by the ``method`` exact or lemma28); ``attributes``:
    the histogram's columns; ``categories``: their declared public categories (cells outside them
    go to "(other)")."""

    kind: ClassVar[str] = "granular"
    ABOUT: ClassVar[str] = ("Per-attribute (granular) DP: a histogram of the declared categories, each "
                            "attribute charged ε0, and the whole-record loss that follows.")
    KEYS: ClassVar[tuple[str, ...]] = ("histogram", "attributes", "categories", "eps", "nu", "method", "threshold")
    REQUIRED: ClassVar[tuple[str, ...]] = ("attributes", "eps")
    IMPORTS: ClassVar[tuple[str, ...]] = ("from prdp_core.mechanisms import granular",)

    histogram: str = "standard"
    attributes: tuple[str, ...] = ()
    categories: Mapping[str, Any] | None = None
    eps: float = 1.0
    nu: float = 0.01  # heavy-hitter histogram only
    method: Literal["exact", "lemma28"] = "exact"  # heavy-hitter histogram only
    threshold: float | None = None  # standard histogram only

    @classmethod
    def parse_fields(cls, d: Mapping[str, Any], path: str, context: ParseContext) -> dict[str, Any]:
        from ...mechanisms.granular.data import MAX_ATTRIBUTES

        out: dict[str, Any] = {"histogram": _choice(d.get("histogram", "standard"), f"{path}.histogram",
                                                    ("standard", "heavy_hitter"))}
        attrs = d["attributes"]
        if isinstance(attrs, str):
            attrs = [attrs]
        if not isinstance(attrs, list) or not 1 <= len(attrs) <= MAX_ATTRIBUTES:
            raise _err(f"{path}.attributes", f"must list 1 to {MAX_ATTRIBUTES} columns (the histogram's attributes).")
        names = [_text(a, f"{path}.attributes[{j}]", max_len=500) for j, a in enumerate(attrs)]
        if len(set(names)) != len(names):
            raise _err(f"{path}.attributes", "lists a column twice.")
        out["attributes"] = tuple(names)
        decl = _categories(d.get("categories") or {}, names, f"{path}.categories")
        if decl:
            out["categories"] = decl
        out["eps"] = _number(d["eps"], f"{path}.eps", positive=True, hi=100.0)
        if out["histogram"] == "heavy_hitter":
            out["nu"] = _number(d.get("nu", 0.01), f"{path}.nu", lo=0.0, open_lo=True, hi=0.5)
            out["method"] = _choice(d.get("method", "exact"), f"{path}.method", ("exact", "lemma28"))
            if "threshold" in d:
                raise _err(f"{path}.threshold", "applies to the standard histogram only.")
        else:
            for k in ("nu", "method"):
                if k in d:
                    raise _err(f"{path}.{k}", "applies to the heavy-hitter histogram only.")
            if d.get("threshold") is not None:
                out["threshold"] = _number(d["threshold"], f"{path}.threshold")
        return out

    def config_fields(self) -> dict[str, Any]:
        out: dict[str, Any] = {"histogram": self.histogram, "attributes": list(self.attributes)}
        if self.categories is not None:
            out["categories"] = {k: list(v) if isinstance(v, list) else v for k, v in self.categories.items()}
        out["eps"] = self.eps
        if self.histogram == "heavy_hitter":
            out.update(nu=self.nu, method=self.method)
        elif self.threshold is not None:
            out["threshold"] = self.threshold
        return out

    def describe(self) -> str:
        """The label, else the histogram and its attributes (e.g. "standard histogram of STATE, NAICS2")."""
        return self.label or f"{self.histogram} histogram of {', '.join(self.attributes)}"

    def check_columns(self, need: ColumnCheck, path: str) -> None:
        for j, a in enumerate(self.attributes):
            need(a, f"{path}.attributes[{j}]")

    def run(self, study: Study, ds: Any, seed: int, reveal: bool) -> list[Output]:
        from ...mechanisms import granular

        needs_records(ds, "A granular-DP histogram")
        data = granular.encode_attributes(ds.table, list(self.attributes), granular_domains(study, self))
        how: dict[str, Any] = {"noise": mechanism_noise(self.secure, seed)}
        if self.histogram == "heavy_hitter":
            rel = granular.heavy_hitter_histogram(data, eps0=self.eps, nu=self.nu, method=self.method,
                                                  reveal=reveal, **how)
        else:
            rel = granular.standard_histogram(data, eps=self.eps, threshold=self.threshold, reveal=reveal, **how)
        return [("", rel)]

    def code(self, study: Study, i: int, table: str) -> list[str]:
        seed, label = self.noise_seed(study.seed, i), self.release_label(i)
        lines = [f"data = granular.encode_attributes(ds.table, {literal(list(self.attributes))}, "
                 f"{literal(granular_domains(study, self))})  # declared public categories"]
        lines += noise_lines(self.secure, seed)
        how = "noise=noise"
        if self.histogram == "heavy_hitter":
            lines.append(f"rel = granular.heavy_hitter_histogram(data, eps0={self.eps!r}, nu={self.nu!r}, "
                         f"method={self.method!r}, {how}, reveal=REVEAL)")
        else:
            lines.append(f"rel = granular.standard_histogram(data, eps={self.eps!r}, threshold={self.threshold!r}, "
                         f"{how}, reveal=REVEAL)")
        lines.append(f"releases.append(({label!r}, rel))")
        return lines
