"""Records as d categorical attributes with public domains, and their exact histogram.

:class:`AttributeData` (codes per attribute, each attribute's public domain X_j),
:func:`encode_attributes` (declared categories plus "(other)", decade size classes for
numbers; categories read from the data are flagged teaching-only), the synthetic binary data
(public by construction) and the confidential true histogram used for teaching comparisons.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Mapping, Sequence

import numpy as np
import pandas as pd

from ...core.errors import ParameterError, ResourceLimitError
from ...core.validate import whole_number as _int_param
from .domains import DOMAIN_FROM_DATA, DOMAIN_PUBLIC, MISSING, OTHER, SIZE_CLASS_EDGES, SIZE_CLASS_LABELS

#: Largest domain of one categorical attribute in the histogram lab.
MAX_DOMAIN: int = 5_000
#: Largest number of attributes of a histogram.
MAX_ATTRIBUTES: int = 1_024


@dataclass(frozen=True)
class AttributeData:
    """Records as d categorical attributes: ``codes[i, j]`` ∈ {0, …, |X_j|−1}.

    ``domains[j]`` lists the values of attribute j (its public domain X_j); binary data
    has domains (0, 1). ``codes`` is column-major (one contiguous column per attribute).
    """

    codes: np.ndarray
    names: tuple[str, ...]
    domains: tuple[tuple[Any, ...], ...]
    notes: tuple[str, ...] = ()
    #: False when some domain was read from the data (exploration only: see :func:`encode_attributes`).
    public_domains: bool = True

    @property
    def domain_source(self) -> str:
        return DOMAIN_PUBLIC if self.public_domains else DOMAIN_FROM_DATA

    def __post_init__(self) -> None:
        c = self.codes
        if c.ndim != 2 or c.shape[1] != len(self.names) or len(self.names) != len(self.domains):
            raise ParameterError("Attribute codes, names and domains do not match.")
        if c.shape[1] == 0:
            raise ParameterError("Pick at least one attribute.")

    @property
    def n(self) -> int:
        return int(self.codes.shape[0])

    @property
    def d(self) -> int:
        return int(self.codes.shape[1])

    @property
    def domain_sizes(self) -> tuple[int, ...]:
        return tuple(len(x) for x in self.domains)

    @property
    def cells(self) -> int:
        """Number of cells of the full histogram, Π_j |X_j| (a Python int; may be huge)."""
        return math.prod(self.domain_sizes)

    def labels(self, codes: np.ndarray) -> pd.DataFrame:
        """Cell codes (rows) → a table of attribute values."""
        codes = np.asarray(codes)
        if self.d > 64 and all(s == 2 for s in self.domain_sizes):
            return pd.DataFrame({"pattern": ["".join(map(str, r)) for r in codes.astype(np.uint8)]})
        return pd.DataFrame({nm: np.asarray(dom, dtype=object)[codes[:, j]] if len(codes) else []
                             for j, (nm, dom) in enumerate(zip(self.names, self.domains))})


def _category_strings(s: pd.Series) -> np.ndarray:
    """A column's values as category strings (integral numbers without ".0"; missing → "(missing)")."""
    if pd.api.types.is_numeric_dtype(s) and not pd.api.types.is_bool_dtype(s):
        v = pd.to_numeric(s, errors="coerce").to_numpy(dtype=float, na_value=np.nan)
        out = np.full(v.size, MISSING, dtype=object)
        ok = np.isfinite(v)
        integral = ok & (np.abs(v) < 2**53)
        integral[integral] = v[integral] == np.round(v[integral])
        out[integral] = v[integral].astype(np.int64).astype(str)
        rest = ok & ~integral
        out[rest] = v[rest].astype(str)
        return out
    return s.astype("string").fillna(MISSING).to_numpy(dtype=object).astype(str)


def _category_string(x: Any) -> str:
    if isinstance(x, (bool, np.bool_)):
        return str(bool(x))
    if isinstance(x, (int, np.integer)):
        return str(int(x))
    if isinstance(x, (float, np.floating)):
        if not math.isfinite(float(x)):
            return MISSING if math.isnan(float(x)) else str(float(x))
        return str(int(x)) if float(x) == round(float(x)) and abs(float(x)) < 2**53 else str(float(x))
    return str(x)


def declared_domain(categories: Sequence[Any] | str, column: str = "attribute") -> tuple[str, ...]:
    """A declared public domain as category strings, duplicates dropped, with "(other)" last.

    ``categories`` is a list, or a text with one category per comma or line. "(other)" is always
    part of the domain (it receives every value outside the list), so the number of categories
    depends on the declaration only.
    """
    if isinstance(categories, str):
        items = [c.strip() for part in categories.splitlines() for c in part.split(",")]
        items = [c for c in items if c]
    else:
        items = [_category_string(c) for c in categories]
    dom = [c for c in dict.fromkeys(items) if c != OTHER]
    if not dom:
        raise ParameterError(f"Declare at least one category of '{column}'.",
                             hint="List its possible values (from a code list or the questionnaire), separated "
                                  "by commas; every other value goes to \"(other)\".")
    if len(dom) + 1 > MAX_DOMAIN:
        raise ResourceLimitError(f"'{column}' has {len(dom):,} declared categories; the lab takes at most "
                                 f"{MAX_DOMAIN - 1:,} per attribute.", hint="Declare a coarser list.")
    return tuple(dom) + (OTHER,)


def encode_attributes(table: pd.DataFrame, columns: Sequence[str],
                      domains: Mapping[str, Sequence[Any] | str] | None = None, *,
                      from_data: bool = False) -> AttributeData:
    """Turn columns of a table into categorical attributes with public domains X_j (§5).

    A histogram's cells, its default threshold and (for one attribute) the list of cells the
    heavy-hitter histogram publishes are functions of the domains, so the domains must not
    depend on the data:

    * ``domains[c]`` — the declared public categories of column c (a list, or text with one
      category per comma): values outside the list, and missing values unless "(missing)" is
      declared, go to the extra public category "(other)" (:func:`declared_domain`);
    * numeric columns without a declaration become public decade size classes (<1, 1–9, 10–99,
      …, ≥1B; :data:`SIZE_CLASS_EDGES`), boolean ones the categories False/True/(other);
    * any other column needs a declaration. With ``from_data=True`` its categories are read
      from the data instead — **for exploration only**: the set of categories is then not
      protected (one record with a new value adds a category, changes K and the threshold and
      is listed), the result's ``public_domains`` is False and the histograms' releases say they
      are teaching-only.
    """
    cols = list(dict.fromkeys(columns))
    if not cols:
        raise ParameterError("Pick at least one attribute.")
    if len(cols) > MAX_ATTRIBUTES:
        raise ResourceLimitError(f"At most {MAX_ATTRIBUTES} attributes are supported (got {len(cols)}).")
    missing = [c for c in cols if c not in table.columns]
    if missing:
        raise ParameterError(f"No column named {', '.join(map(repr, missing))} in the active dataset.")
    declared = dict(domains or {})  # declarations of other columns are ignored (a catalogue may list more)
    n = len(table)
    if n == 0:
        raise ParameterError("The table has no records.")
    codes = np.empty((n, len(cols)), dtype=np.int32, order="F")
    doms: list[tuple[Any, ...]] = []
    notes: list[str] = []
    public = True
    for j, c in enumerate(cols):
        s = table[c]
        if c in declared:
            dom = declared_domain(declared[c], c)
            pos = {v: i for i, v in enumerate(dom)}
            other = len(dom) - 1
            vals = _category_strings(s)
            uniq, inv = np.unique(vals, return_inverse=True)
            codes[:, j] = np.array([pos.get(u, other) for u in uniq], dtype=np.int32)[inv]
            doms.append(dom)
            notes.append(f"{c}: {len(dom) - 1} declared public categories + {OTHER}")
        elif pd.api.types.is_bool_dtype(s):
            dom = ("False", "True", OTHER)
            vals = _category_strings(s)
            codes[:, j] = np.where(vals == "False", 0, np.where(vals == "True", 1, 2))
            doms.append(dom)
            notes.append(f"{c}: public categories False / True")
        elif pd.api.types.is_numeric_dtype(s):
            v = pd.to_numeric(s, errors="coerce").to_numpy(dtype=float, na_value=np.nan)
            codes[:, j] = np.digitize(np.nan_to_num(v, nan=0.0), SIZE_CLASS_EDGES)
            doms.append(SIZE_CLASS_LABELS)
            notes.append(f"{c}: public decade size classes")
        elif from_data:
            vals = _category_strings(s)
            seen, inv = np.unique(vals, return_inverse=True)
            if seen.size > MAX_DOMAIN:
                raise ResourceLimitError(f"'{c}' has {seen.size:,} distinct values; the lab takes at most "
                                         f"{MAX_DOMAIN:,} per attribute.", hint="Pick a coarser column.")
            codes[:, j] = inv
            doms.append(tuple(seen.tolist()))
            public = False
            notes.append(f"{c}: {seen.size} categories read from the data — teaching only, not differentially "
                         "private for the set of categories (declare them for a release)")
        else:
            raise ParameterError(f"Declare the public categories of '{c}'.",
                                 hint="A histogram's cells must not depend on the data: list the possible values "
                                      "(every other value goes to \"(other)\"), or read them from the data for "
                                      "exploration only.")
    small = codes.astype(np.uint16 if max(len(x) for x in doms) > 255 else np.uint8, order="F")
    return AttributeData(small, tuple(cols), tuple(doms), tuple(notes), public)


def synthetic_attribute_data(n: int = 100_000, d: int = 64, *, patterns: int = 20, heavy_share: float = 0.5,
                             zipf: float = 1.0, rng: np.random.Generator) -> AttributeData:
    """Binary records for the histogram lab: a few frequent patterns plus a sparse tail.

    ``heavy_share`` of the n records copy one of ``patterns`` random d-bit patterns (Zipf
    weights with exponent ``zipf``); the others are uniform random strings — for d ≳ 30
    each is unique, the sparse "count-1 cells" the paper's rounding attack targets (§5).
    """
    n = _int_param("The number of records", n, 1, 10_000_000)
    d = _int_param("The number of attributes", d, 1, MAX_ATTRIBUTES)
    patterns = _int_param("The number of frequent patterns", patterns, 0, 10_000)
    if not 0 <= heavy_share <= 1:
        raise ParameterError("The share of records in frequent patterns must be between 0 and 1.")
    if n * d > 200_000_000:
        raise ResourceLimitError(f"n × d = {n * d:,} attribute values is too many for the lab (max 200,000,000).")
    codes = np.empty((n, d), dtype=np.uint8, order="F")
    n_heavy = int(round(heavy_share * n)) if patterns else 0
    if n_heavy:
        pat = rng.integers(0, 2, size=(patterns, d), dtype=np.uint8)
        w = 1.0 / np.arange(1, patterns + 1) ** float(zipf)
        which = rng.choice(patterns, size=n_heavy, p=w / w.sum())
        codes[:n_heavy] = pat[which]
    codes[n_heavy:] = rng.integers(0, 2, size=(n - n_heavy, d), dtype=np.uint8)
    codes = np.asfortranarray(codes[rng.permutation(n)])
    width = len(str(d))
    return AttributeData(codes, tuple(f"a{j + 1:0{width}d}" for j in range(d)), tuple((0, 1) for _ in range(d)),
                         (f"synthetic: {patterns} patterns hold {heavy_share:.0%} of the records",))


def _row_keys(codes: np.ndarray, sizes: Sequence[int]) -> np.ndarray:
    """One sortable key per row of cell codes (int64 mixed radix, or packed bytes)."""
    codes = np.asarray(codes)
    if math.prod(sizes) < 2**62:
        strides = np.ones(len(sizes), dtype=np.int64)
        for j in range(len(sizes) - 2, -1, -1):
            strides[j] = strides[j + 1] * int(sizes[j + 1])
        if codes.shape[0] == 0:
            return np.zeros(0, dtype=np.int64)
        return codes.astype(np.int64) @ strides
    if max(sizes) <= 2:
        arr = np.packbits(codes.astype(bool), axis=1)
    elif max(sizes) <= 256:
        arr = codes.astype(np.uint8)
    else:
        arr = codes.astype(np.uint16)
    arr = np.ascontiguousarray(arr)
    return arr.view(np.dtype((np.void, arr.shape[1] * arr.itemsize))).ravel()


@dataclass(frozen=True)
class TrueHistogram:
    """The occupied cells of the exact histogram (confidential)."""

    codes: np.ndarray
    counts: np.ndarray
    keys: np.ndarray


def true_histogram(data: AttributeData) -> TrueHistogram:
    """Occupied cells and their exact counts (confidential: for teaching comparisons)."""
    keys = _row_keys(data.codes, data.domain_sizes)
    uk, first, counts = np.unique(keys, return_index=True, return_counts=True)
    return TrueHistogram(np.asarray(data.codes[first]), counts.astype(np.int64), uk)
