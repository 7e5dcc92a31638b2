"""The schema: the roles of a table's columns (record id, measures, groups, owner).

A dataset for PrDP Explorer is a table of *records* (the privacy units: an establishment, an
account, a person). Its columns play one of four roles:

* **record id** – identifies a record; generated from the row number when absent.
* **measures** – non-negative numbers the privacy loss is about (employment,
  payroll, balance). Per-record policies are functions of these values, so they
  are confidential.
* **groups** – conditional attributes used in filters and group-by keys (county,
  industry). In unit splitting they are copied to every split piece.
* **owner** – optional id of an entity owning several records (a firm owning
  establishments); owner-level losses follow from group privacy.

:func:`guess_schema` proposes roles from the names and values; :func:`validate_schema` and
:func:`validate_roles` check a chosen one.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Callable, Hashable, Iterable

import numpy as np
import pandas as pd

from ..core.errors import DataError, SchemaError


@dataclass(frozen=True)
class Schema:
    """Roles of the columns of a table.

    Attributes
    ----------
    id_col:
        Record id column (the privacy unit). ``None`` means "generate one from the row number".
    measures:
        Numeric, non-negative columns the privacy policy is about. Their per-record
        values are confidential; policies such as splitting thresholds act on them.
    groups:
        Conditional attributes (filters, group-by keys); copied to every split piece.
    owner_col:
        Optional id of an owner of several records (a firm owning establishments);
        owner-level losses follow from group privacy.
    """

    id_col: str | None = None
    measures: tuple[str, ...] = ()
    groups: tuple[str, ...] = ()
    owner_col: str | None = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "measures", tuple(self.measures))
        object.__setattr__(self, "groups", tuple(self.groups))

    def columns(self) -> list[str]:
        cols = [c for c in (self.id_col, self.owner_col) if c]
        return cols + list(self.measures) + [g for g in self.groups if g not in cols]

    def to_dict(self) -> dict[str, Any]:
        return {"id_col": self.id_col, "measures": list(self.measures), "groups": list(self.groups),
                "owner_col": self.owner_col}

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> "Schema":
        return cls(id_col=d.get("id_col"), measures=tuple(d.get("measures") or ()),
                   groups=tuple(d.get("groups") or ()), owner_col=d.get("owner_col"))


_ID_NAME = re.compile(r"(^|[_\s.-])(id|key|uid|record|recid|estab_?id)$|^id[_\s]", re.IGNORECASE)
_OWNER_NAME = re.compile(r"firm|owner|company|employer|parent|household|hh_?id|user|customer|agency|org", re.IGNORECASE)
#: Short id names (EID, PID, SID, …): an id when the column holds unique whole numbers; words that end in "id" but
#: name amounts or places (paid, aid, grid, …) are not among them.
_SHORT_ID_NAME = re.compile(r"^(?!(?:paid|maid|raid|laid|said|void|grid|acid|arid|kid|bid|lid|mid|did|aid|rid)$)"
                            r"[a-z]{1,2}id$|^(ein|ssn|tin|duns)$", re.IGNORECASE)
_CODE_NAME = re.compile(r"code|naics|fips|zip|postal|year|month|cat|class|type|level|state|county|region|sector",
                        re.IGNORECASE)


def _numeric_share(s: pd.Series) -> float:
    if pd.api.types.is_numeric_dtype(s) and not pd.api.types.is_bool_dtype(s):
        return 1.0
    sample = s.dropna()
    if len(sample) == 0:
        return 0.0
    sample = sample.iloc[:2000]
    conv = pd.to_numeric(sample, errors="coerce")
    return float(conv.notna().mean())


def numeric_columns(df: pd.DataFrame, *, min_share: float = 0.5) -> list[str]:
    """Columns whose (non-missing) values are mostly numbers — the candidates for measures.

    ``min_share`` is the share of numeric cells a column needs; a column with a few cells that
    are not numbers still counts (the Data page offers to treat those as missing)."""
    return [c for c in df.columns
            if not pd.api.types.is_bool_dtype(df[c]) and _numeric_share(df[c]) >= min_share]


#: Names that R, pandas and spreadsheets give a column of row numbers ("" is read as "Unnamed: 0").
_ROW_NUMBER_NAME = re.compile(r"^(rownames|row[._ ]?names|row[._ ]?(num|number|no)|index|unnamed: ?0|\.\.\.1)$",
                              re.IGNORECASE)
#: A table with more measure candidates than this starts with only its most skewed non-negative ones
#: selected as measures (the others are offered in the role editor, not chosen for the user).
MAX_GUESSED_MEASURES = 3


def _is_row_number(name: str, s: pd.Series) -> bool:
    """A row-number column: a row-number name and unique consecutive integers, none missing."""
    if not _ROW_NUMBER_NAME.match(str(name).strip()) or len(s) == 0 or s.isna().any():
        return False
    if not pd.api.types.is_numeric_dtype(s) or pd.api.types.is_bool_dtype(s):
        return False
    v = s.to_numpy(dtype="float64")
    return bool(np.isfinite(v).all() and (v == np.floor(v)).all() and s.is_unique
                and v.max() - v.min() == len(v) - 1)


def _unique_whole_numbers(s: pd.Series, distinct: int) -> bool:
    """Every value present, a whole number, and different from the others."""
    if distinct != len(s) or len(s) == 0 or s.isna().any():
        return False
    if not pd.api.types.is_numeric_dtype(s) or pd.api.types.is_bool_dtype(s):
        return False
    v = s.to_numpy(dtype="float64")
    return bool(np.isfinite(v).all() and (v == np.floor(v)).all())


def _most_skewed(df: pd.DataFrame, candidates: list[str], k: int) -> list[str]:
    """The ``k`` most skewed candidates without negative values (in table order); the single most
    skewed candidate when every one has negative values (check_table then offers a shift)."""
    skew: dict[str, float] = {}
    nonneg: list[str] = []
    for c in candidates:
        v = pd.to_numeric(df[c], errors="coerce").dropna()
        sk = float(v.skew()) if len(v) > 2 else float("nan")  # type: ignore[arg-type]  # numbers: a float
        skew[c] = sk if np.isfinite(sk) else -np.inf
        if len(v) and float(v.min()) >= 0:
            nonneg.append(c)
    pool = nonneg or candidates
    chosen = set(sorted(pool, key=lambda c: -skew[c])[: k if nonneg else 1])
    return [c for c in candidates if c in chosen]


def _distinct_counts(df: pd.DataFrame) -> dict[str, int]:
    """The number of distinct non-missing values of each column. Columns whose values cannot be
    compared (lists, mappings, arrays: nested data, which no role can use) are refused with a
    :class:`DataError` naming them and the type of their values."""
    counts: dict[str, int] = {}
    bad: list[str] = []
    for c in df.columns:
        binary = df[c].dtype == object and next(
            (type(v).__name__ for v in df[c].dropna().head(1000)
             if isinstance(v, (bytes, bytearray, memoryview))), None)
        if binary:
            bad.append(f"{str(c)[:60]} ({binary} values)")
            continue
        try:
            counts[c] = int(df[c].nunique(dropna=True))
        except TypeError:
            kind = next((type(v).__name__ for v in df[c].to_numpy() if not isinstance(v, Hashable)), "object")
            bad.append(f"{str(c)[:60]} ({kind} values)")
    if bad:
        raise DataError(f"Columns of a type the app cannot use: {', '.join(bad[:8])}"
                        f"{f' and {len(bad) - 8} more' if len(bad) > 8 else ''}.",
                        hint="Keep columns of numbers, text, booleans or dates: flatten or drop nested columns.")
    return counts


def id_like_columns(df: pd.DataFrame) -> list[str]:
    """Columns that identify rows and are no measure, whatever the record id is: a short id name (EID, PID, …)
    holding unique whole numbers, or a row-number column (:func:`guess_schema` never guesses them as measures;
    the role editor of a large table does not offer them as measures unless its roles name one). Refuses nested
    columns as :func:`guess_schema` does."""
    distinct = _distinct_counts(df)
    return [c for c in df.columns if _is_row_number(c, df[c]) or (
        _SHORT_ID_NAME.match(str(c).strip()) and _unique_whole_numbers(df[c], distinct[c]))]


def guess_schema(df: pd.DataFrame) -> Schema:
    """Guess column roles from names and content; every guess is editable in the UI.

    * id: an id-like name with unique values (a short one — EID, PID — with unique whole numbers, and then
      never a measure); else a row-number column (``rownames``, ``index``,
      ``Unnamed: 0``… holding unique consecutive integers); else none → generated row ids. A
      row-number column is never a measure;
    * owner: an owner-like name (firm, company, user, …) with repeated values;
    * measures: numeric columns that are not ids/codes (negative values are flagged by
      :func:`check_table`, not guessed away); on a wide table (more than
      :data:`MAX_GUESSED_MEASURES` candidates) only the most skewed non-negative ones;
    * groups: the remaining columns with few distinct values (≤ 5,000 or ≤ 50% of rows).

    A table with columns of lists, records or binary values (Parquet list, struct, map, binary)
    is refused with a :class:`DataError` naming them: they can play no role.
    """
    n = len(df)
    distinct = _distinct_counts(df)
    id_col: str | None = None
    owner_col: str | None = None
    row_numbers = [c for c in df.columns if _is_row_number(c, df[c])]
    short_ids = [c for c in df.columns if _SHORT_ID_NAME.match(str(c).strip())
                 and _unique_whole_numbers(df[c], distinct[c])]  # never a measure, whatever is the id
    for c in df.columns:
        s = df[c]
        if id_col is None and (_ID_NAME.search(c) or c in short_ids) and not _OWNER_NAME.search(c):
            if s.notna().all() and distinct[c] == n:
                id_col = c
                continue
        if owner_col is None and _OWNER_NAME.search(c) and n > 1:
            nun = distinct[c]
            if 1 < nun < n:
                owner_col = c
    if id_col is None and row_numbers:
        id_col = row_numbers[0]
    candidates: list[str] = []
    groups: list[str] = []
    for c in df.columns:
        if c in (id_col, owner_col) or c in row_numbers or c in short_ids:
            continue
        s = df[c]
        nun = distinct[c]
        is_num = _numeric_share(s) >= 0.99
        codeish = bool(_CODE_NAME.search(c))
        if is_num and not codeish and not pd.api.types.is_bool_dtype(s) and nun > 2:
            candidates.append(c)  # negative values are flagged later by check_table, with fixes offered
            continue
        if nun <= max(2, min(5000, n // 2)) and nun >= 1:
            groups.append(c)
    measures = candidates if len(candidates) <= MAX_GUESSED_MEASURES else \
        _most_skewed(df, candidates, MAX_GUESSED_MEASURES)
    return Schema(id_col=id_col, measures=tuple(measures), groups=tuple(groups), owner_col=owner_col)


def validate_schema(df: pd.DataFrame, schema: Schema) -> None:
    """Check that the schema fits the table; raise :class:`SchemaError` naming the fix."""
    validate_roles(df.columns, schema, lambda: bool(numeric_columns(df)))


def validate_roles(columns: Iterable[Any], schema: Schema, has_numeric: Callable[[], bool]) -> None:
    """:func:`validate_schema` on a table's column names (``has_numeric()``: does some column hold
    numbers?) — for tables held by an engine too."""
    cols = set(columns)
    named = [("record id", schema.id_col), ("owner", schema.owner_col)]
    named += [("measure", m) for m in schema.measures] + [("group", g) for g in schema.groups]
    missing = [f"{role} '{c}'" for role, c in named if c is not None and c not in cols]
    if missing:
        raise SchemaError(f"Columns not in the table: {', '.join(missing)}.", hint="Pick columns that exist.")
    if not schema.measures:
        if not has_numeric():
            raise SchemaError(
                "The table has no numeric column: a measure (the values the privacy policy is about) must hold "
                "numbers.",
                hint="Upload a table with at least one numeric column; if the numbers are there, check the "
                     "delimiter and write them without thousands separators or units (1234.5, not 1,234.50 €).")
        raise SchemaError("Choose at least one measure column (the numeric values the privacy policy is about).")
    seen: dict[str, str] = {}
    for role, c in named:
        if c is None:
            continue
        # an owner (e.g. a state owning counties) may also be a group-by key; other roles are exclusive
        if c in seen and {seen[c], role} != {"owner", "group"}:
            raise SchemaError(f"Column '{c}' is both {seen[c]} and {role}.", hint="Give each column one role.")
        seen[c] = role
    if len(set(schema.measures)) != len(schema.measures):
        raise SchemaError("A measure column is listed twice.")
    if len(set(schema.groups)) != len(schema.groups):
        raise SchemaError("A group column is listed twice.")
