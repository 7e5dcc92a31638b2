"""Datasets: a table checked against its schema, ready for the engine.

:func:`check_table` counts what is wrong with the measures (missing, non-numeric, negative values,
duplicate ids, with examples) without changing anything; :func:`prepare_dataset` applies the chosen
fixes and returns the immutable :class:`Dataset` the rest of the engine uses.

Files are read by :mod:`prdp_core.data.loading` and roles given by :mod:`prdp_core.data.schema`; their entry
points (:func:`load_table`, :func:`preview`, :class:`Schema`, :func:`guess_schema`, …) are also
importable from here, as they always were.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from functools import partial
from typing import Any, Callable, Iterable, Literal, Mapping

import numpy as np
import pandas as pd

from ..core.errors import DataError
from .codes import code_fixed_width
from .loading import GENERATED_ID, SUPPORTED_EXTENSIONS, load_table, preview
from .schema import Schema, guess_schema, numeric_columns, validate_roles, validate_schema


@dataclass(frozen=True)
class MeasureIssue:
    """What is wrong with one measure column."""

    column: str
    non_numeric: int = 0
    non_numeric_examples: tuple[str, ...] = ()
    missing: int = 0  # NaN / empty cells
    infinite: int = 0
    negative: int = 0
    minimum: float = float("nan")


@dataclass(frozen=True)
class TableCheck:
    """Everything :func:`prepare_dataset` would refuse, counted, so a UI can offer fixes."""

    n_rows: int
    measures: tuple[MeasureIssue, ...]
    rows_with_missing: int  # rows with a NaN/empty/inf value in some measure
    rows_with_bad: int  # rows that would be dropped if non-numeric cells were treated as missing too
    duplicate_ids: int
    duplicate_id_examples: tuple[str, ...] = ()
    missing_ids: int = 0
    missing_groups: dict[str, int] = field(default_factory=dict)  # group column → missing cells

    @property
    def non_numeric(self) -> dict[str, int]:
        return {m.column: m.non_numeric for m in self.measures if m.non_numeric}

    @property
    def negative(self) -> dict[str, int]:
        return {m.column: m.negative for m in self.measures if m.negative}

    @property
    def ok(self) -> bool:
        return (self.rows_with_missing == 0 and not self.negative and not self.non_numeric
                and self.duplicate_ids == 0 and self.missing_ids == 0 and not self.missing_groups)


def _coerce_measure(s: pd.Series) -> tuple[np.ndarray, np.ndarray]:
    """Return float values and a mask of cells that were present but not numbers."""
    if pd.api.types.is_bool_dtype(s):
        vals = s.astype("float64").to_numpy()
        return vals, np.zeros(len(s), dtype=bool)
    if pd.api.types.is_numeric_dtype(s):
        return s.to_numpy(dtype="float64", na_value=np.nan), np.zeros(len(s), dtype=bool)
    conv = pd.to_numeric(s, errors="coerce")
    vals = conv.to_numpy(dtype="float64", na_value=np.nan)
    present = s.notna().to_numpy().copy()
    if s.dtype == object or pd.api.types.is_string_dtype(s):
        blank = s.astype("string").str.strip().eq("").fillna(False).to_numpy(dtype=bool)
        present &= ~blank
    bad = present & np.isnan(vals)
    return vals, bad


def require_shifts(negative: Mapping[str, int], shift_by: Mapping[str, float]) -> None:
    """Refuse (DataError) a measure with negative values (``negative``: column → count, :attr:`TableCheck.negative`)
    that has no public constant in ``shift_by``: a shift read off the data would make its values' minimum public."""
    untyped = [c for c in negative if c not in shift_by]
    if untyped:
        raise DataError(f"No public constant is typed for {', '.join(repr(c) for c in untyped)}, which has "
                        "negative values.", hint="Type the constant to add to every value (a documented lower bound "
                                                 "of the measure, with its sign reversed), or fix the file.")


def check_table(df: pd.DataFrame, schema: Schema) -> TableCheck:
    """Count the problems that would stop this table from being used with ``schema``."""
    validate_schema(df, schema)
    issues = []
    row_bad = np.zeros(len(df), dtype=bool)
    row_bad_any = np.zeros(len(df), dtype=bool)
    for m in schema.measures:
        vals, bad = _coerce_measure(df[m])
        nan = np.isnan(vals) & ~bad
        inf = np.isinf(vals)
        neg = vals < 0
        examples = tuple(str(x)[:40] for x in pd.unique(df[m][bad])[:3]) if bad.any() else ()
        finite = vals[np.isfinite(vals)]
        issues.append(MeasureIssue(
            column=m, non_numeric=int(bad.sum()), non_numeric_examples=examples,
            missing=int(nan.sum()), infinite=int(inf.sum()), negative=int(neg.sum()),
            minimum=float(finite.min()) if finite.size else float("nan"),
        ))
        row_bad |= nan | inf
        row_bad_any |= nan | inf | bad
    dup = 0
    dup_examples: tuple[str, ...] = ()
    missing_ids = 0
    if schema.id_col and not strictly_increasing(df[schema.id_col]):  # sorted ids are unique: no hashing
        ids = df[schema.id_col]
        missing_ids = int(ids.isna().sum())
        d = ids.duplicated(keep="first") & ids.notna()
        dup = int(d.sum())
        if dup:
            dup_examples = tuple(str(x)[:40] for x in pd.unique(ids[d])[:3])
    missing_groups = {g: int(_missing_cells(df[g]).sum()) for g in schema.groups}
    return TableCheck(n_rows=len(df), measures=tuple(issues), rows_with_missing=int(row_bad.sum()),
                      rows_with_bad=int(row_bad_any.sum()),
                      duplicate_ids=dup, duplicate_id_examples=dup_examples, missing_ids=missing_ids,
                      missing_groups={g: k for g, k in missing_groups.items() if k})


#: The label given to missing group values by ``prepare_dataset(..., missing_groups="label")``.
MISSING_GROUP = "(missing)"


def strictly_increasing(s: pd.Series) -> bool:
    """True when the values of ``s`` are strictly increasing (so unique and never missing).

    An O(n) comparison of neighbours: the usual sorted id column of a large table is known to be
    unique without hashing every value (hashing ten million text ids takes seconds). Text compares
    by its UTF-8 bytes, numbers as numbers; anything else (or any missing value) answers False,
    and the caller falls back to the full check."""
    n = len(s)
    if n < 2:
        return bool(n == 0 or s.notna().all())
    dt = s.dtype
    if isinstance(dt, pd.StringDtype) and dt.storage == "pyarrow":
        import pyarrow as pa
        import pyarrow.compute as pc

        arr = pa.array(s.array)
        if isinstance(arr, pa.ChunkedArray):
            arr = arr.combine_chunks()
        if arr.null_count:
            return False
        return not pc.any(pc.less_equal(arr[1:], arr[:-1])).as_py()
    if pd.api.types.is_numeric_dtype(dt) and not pd.api.types.is_bool_dtype(dt):
        v = s.to_numpy()
        if v.dtype.kind not in "iuf":
            return False
        return bool(np.all(v[1:] > v[:-1]))  # NaN compares False
    return False


def _column_values(col: pd.Series) -> Any:
    """A column's values for a new table: text columns keep their (Arrow) array, others become numpy.

    Converting ten million Arrow strings to Python objects and back takes seconds; the values and
    the resulting column dtype are the same either way."""
    if isinstance(col.dtype, pd.StringDtype):
        return col.array
    return col.to_numpy()


def _missing_cells(s: pd.Series) -> np.ndarray:
    """Cells of a group column that are missing (NaN/None) or blank text."""
    miss = s.isna().to_numpy()
    if s.dtype == object or pd.api.types.is_string_dtype(s):
        miss = miss | s.astype("string").str.strip().eq("").fillna(False).to_numpy(dtype=bool)
    return miss


@dataclass(frozen=True)
class Dataset:
    """A checked table ready for the engine.

    ``table`` has the record-id column (``schema.id_col``, generated as ``row_id``
    when the source had none), float64 measures that are finite and non-negative,
    and the group/owner columns as loaded. ``notes`` lists every transformation
    applied (rows dropped, shifts), so reports can say what was done.
    """

    name: str
    table: pd.DataFrame
    schema: Schema
    notes: tuple[str, ...] = field(default_factory=tuple)
    shifts: dict[str, float] = field(default_factory=dict)

    @property
    def n(self) -> int:
        return len(self.table)

    def measure(self, name: str) -> np.ndarray:
        return self.table[name].to_numpy()

    def describe(self) -> str:
        return f"{self.name}: {self.n:,} records, measures {', '.join(self.schema.measures)}"


def shift_text(measure: str, constant: float, *, public: bool = True) -> str:
    """How a shifted measure is described everywhere (notes, the Data page's profile):
    ``"SALES shifted by +1,000 (public constant)"``, or ``"… (smallest record: confidential)"`` for the
    shift −min that :func:`prepare_dataset` takes from the data when no constant is declared."""
    how = "public constant" if public else "smallest record: confidential"
    return f"{measure} shifted by +{float(constant):,.15g} ({how})"


def prepare_dataset(
    df: pd.DataFrame,
    schema: Schema,
    *,
    name: str = "dataset",
    non_numeric: Literal["error", "missing"] = "error",
    missing: Literal["error", "drop"] = "error",
    negative: Literal["error", "shift"] = "error",
    duplicate_ids: Literal["error", "regenerate"] = "error",
    shift_by: Mapping[str, float] | None = None,
    missing_groups: Literal["keep", "label"] = "keep",
) -> Dataset:
    """Validate ``df`` against ``schema`` and return a :class:`Dataset`.

    Parameters choose what to do with each kind of bad input (the default refuses):

    * ``non_numeric="missing"`` treats cells that are not numbers as missing;
    * ``missing="drop"`` drops rows with a missing or infinite measure (count noted);
    * ``negative="shift"`` adds a constant to each measure with negative values — the
      papers assume non-negative measures; sums and thresholds are then on the shifted
      scale (the shift is recorded in ``Dataset.shifts``). The constant should be
      **public** (``shift_by={measure: c}``, e.g. a documented lower bound; a declared constant
      is applied to its measure whether or not the data hold a negative value, so the shift
      never depends on a record): a shift
      derived from the data (the default, −min) depends on the smallest record, so removing
      that record would change every released sum — fine for exploring, not for a release;
    * ``duplicate_ids="regenerate"`` replaces the id column by row numbers (if the
      id really names an owner of several records, map it as owner instead);
    * ``missing_groups="label"`` puts missing or blank values of group columns in a group of
      their own, ``"(missing)"`` (kept as missing by default: such a column can filter, but a
      release grouped by it is refused).
    """
    validate_schema(df, schema)
    chk = check_table(df, schema)
    fix = Preparation(non_numeric=non_numeric, missing=missing, negative=negative, duplicate_ids=duplicate_ids,
                      shift_by=shift_by, missing_groups=missing_groups)
    fix.check_non_numeric(chk)
    out = pd.DataFrame(index=df.index)
    bad_rows = np.zeros(len(df), dtype=bool)
    for m in schema.measures:
        vals, bad = _coerce_measure(df[m])
        if bad.any():
            fix.treated_missing(m, int(bad.sum()))
            vals = vals.copy()
            vals[bad] = np.nan
        out[m] = vals
        bad_rows |= ~np.isfinite(vals)
    n_bad = int(bad_rows.sum())
    fix.drop_rows(n_bad, len(df))
    keep = ~bad_rows
    if n_bad:  # copying every column of a large table only to keep all of its rows costs seconds
        base = df.loc[keep]
        out = out.loc[keep]
    else:
        base = df
    for m in schema.measures:
        c = fix.shift(m, float(out[m].min()), partial(_negatives, out[m]))
        if c:
            out[m] = out[m] + c
    id_col = fix.id_column(schema, df.columns, chk, lambda: _bad_ids(base[schema.id_col]))
    if fix.generate_ids:
        ids = pd.Series(np.arange(1, len(base) + 1), index=base.index, name=id_col)
    else:
        ids = base[id_col]
    table = pd.DataFrame({id_col: _column_values(ids)})
    if schema.owner_col:
        table[schema.owner_col] = _column_values(base[schema.owner_col])
    for g in schema.groups:
        if g not in table.columns:
            col = base[g]
            if missing_groups == "label":
                miss = _missing_cells(col)
                if miss.any():
                    if pd.api.types.is_numeric_dtype(col) and not pd.api.types.is_bool_dtype(col):
                        # numbers become text ("2009", not "2009.0") so a filter typed as text still matches
                        col = col.map(lambda v: f"{v:g}" if isinstance(v, float) and v.is_integer() and
                                      abs(v) < 1e15 else str(v))
                    col = col.astype(object).where(~miss, MISSING_GROUP)
                    fix.labelled(g, int(miss.sum()))
            table[g] = _column_values(col)
    for m in schema.measures:
        table[m] = out[m].to_numpy(dtype="float64")
    final_schema = replace(schema, id_col=id_col)
    if schema.owner_col:
        code_fixed_width(table, schema.owner_col)  # owner ids coded once, with the table (fast path only)
    return Dataset(name=name, table=table, schema=final_schema, notes=tuple(fix.notes), shifts=fix.shifts)


def _negatives(values: pd.Series) -> int:
    """How many of ``values`` are negative."""
    return int((values < 0).sum())


def _bad_ids(ids: pd.Series) -> tuple[int, tuple[str, ...]]:
    """Duplicate or missing ids (count, up to three duplicated ids as text)."""
    if not (ids.isna().any() or ids.duplicated().any()):
        return 0, ()
    n_dup = int(ids.duplicated().sum()) + int(ids.isna().sum())
    return n_dup, tuple(str(x) for x in pd.unique(ids[ids.duplicated()])[:3])


class Preparation:
    """The decisions of :func:`prepare_dataset`, shared with the engines (which compute the same
    counts where the data lives): each method checks one kind of bad input against the chosen
    option and either raises the :class:`DataError` the user sees or records the fix in ``notes``
    (and ``shifts``), in the order :func:`prepare_dataset` reports them."""

    def __init__(self, *, non_numeric: str = "error", missing: str = "error", negative: str = "error",
                 duplicate_ids: str = "error", shift_by: Mapping[str, float] | None = None,
                 missing_groups: str = "keep") -> None:
        self.non_numeric, self.missing, self.negative = non_numeric, missing, negative
        self.duplicate_ids, self.shift_by, self.missing_groups = duplicate_ids, shift_by, missing_groups
        self.notes: list[str] = []
        self.shifts: dict[str, float] = {}
        self.generate_ids = False

    def check_non_numeric(self, chk: TableCheck) -> None:
        if chk.non_numeric and self.non_numeric == "error":
            first = next(m for m in chk.measures if m.non_numeric)
            ex = ", ".join(repr(x) for x in first.non_numeric_examples)
            raise DataError(
                f"Measure '{first.column}' has {first.non_numeric:,} value(s) that are not numbers (e.g. {ex}).",
                hint="Fix them in the file, pick another measure, or treat them as missing and drop those rows.",
            )

    def treated_missing(self, m: str, count: int) -> None:
        self.notes.append(f"{count:,} non-numeric value(s) in '{m}' treated as missing.")

    def drop_rows(self, n_bad: int, n_rows: int) -> None:
        """Rows with a missing or infinite measure: refused, or dropped (noted); none may be left."""
        if n_bad:
            if self.missing == "error":
                raise DataError(
                    f"{n_bad:,} row(s) have a missing, empty or infinite value in a measure column.",
                    hint="Drop those rows (their count is shown) or fix the file.",
                )
            self.notes.append(f"Dropped {n_bad:,} row(s) with missing or infinite measure values.")
        if n_bad >= n_rows:
            raise DataError("No row is left after dropping rows with missing measure values.",
                            hint="Check the measure columns: they look empty.")

    def shift(self, m: str, mn: float, negatives: Callable[[], int]) -> float:
        """The constant added to measure ``m`` (minimum ``mn`` over the rows kept; ``negatives()``
        counts its negative values), 0 for none."""
        if self.shift_by is not None and m in self.shift_by:
            # a declared public constant is applied whatever the data hold, so whether (and by how
            # much) a measure moves never depends on a record
            c = float(self.shift_by[m])
            hint = "Use a public lower bound of the measure, with the opposite sign."
            if not (np.isfinite(c) and c >= 0):
                raise DataError(f"The shift of '{m}' ({c:g}) must be a finite constant ≥ 0.", hint=hint)
            if c < -mn:
                raise DataError(f"The shift of '{m}' ({c:g}) is too small: some values stay negative.", hint=hint)
            self.shifts[m] = c
            self.notes.append(f"{shift_text(m, c)}: every value of '{m}' has {c:,.15g} added (sums are on the "
                              f"shifted scale: subtract n × {c:,.15g} to return to the original scale).")
            return c
        if mn < 0:
            if self.negative == "error":
                raise DataError(
                    f"Measure '{m}' has {negatives():,} negative value(s) (minimum {mn:g}); per-record policies "
                    "assume non-negative measures.",
                    hint="Reject the file and fix it, or shift the measure by a constant so its minimum is 0.",
                )
            self.shifts[m] = -mn
            self.notes.append(f"{shift_text(m, -mn, public=False)}: its minimum is now 0 (sums are on the shifted "
                              f"scale: subtract n × {-mn:,.15g} to return to the original scale). This shift comes "
                              "from the smallest record and is itself confidential: for a release, shift by a public "
                              "constant.")
            return -mn
        return 0.0

    def id_column(self, schema: Schema, columns: Iterable[Any], chk: TableCheck,
                  bad_ids: Callable[[], tuple[int, tuple[str, ...]]]) -> str:
        """The record id column, and whether ids are generated from row numbers (``generate_ids``).
        ``bad_ids()`` counts duplicate or missing ids among the rows kept (asked only when the whole
        table has some)."""
        id_col = schema.id_col
        if id_col is None:
            self.generate_ids = True
            self.notes.append("Record ids generated from the row number.")
            return GENERATED_ID if GENERATED_ID not in set(map(str, columns)) else "_prdp_row_id"
        if chk.duplicate_ids or chk.missing_ids:  # none in the whole table: none among the rows kept
            n_dup, examples = bad_ids()
            if n_dup:
                if self.duplicate_ids == "error":
                    ex = ", ".join(repr(str(x)) for x in examples)
                    raise DataError(
                        f"The record id column '{id_col}' has {n_dup:,} duplicate or missing value(s)"
                        + (f" (e.g. {ex})." if ex else "."),
                        hint="Choose a unique id, generate ids from row numbers, or — if the column names an owner "
                             "of several records — map it as the owner column instead.",
                    )
                self.generate_ids = True
                self.notes.append(f"Duplicate ids in '{id_col}' replaced by row numbers.")
        return id_col

    def labelled(self, g: str, count: int) -> None:
        self.notes.append(f"{count:,} missing value(s) of group column '{g}' put in the group '{MISSING_GROUP}'.")


def dataset_from_frame(df: pd.DataFrame, schema: Schema | None = None, *, name: str = "dataset",
                       **options: Any) -> Dataset:
    """Shortcut: guess the schema when not given, then :func:`prepare_dataset`."""
    return prepare_dataset(df, schema or guess_schema(df), name=name, **options)


def as_measure_array(values: Iterable[float] | pd.Series | np.ndarray, *, name: str = "values") -> np.ndarray:
    """Return finite, non-negative float values or raise :class:`DataError` naming the problem."""
    try:
        arr = np.asarray(values, dtype="float64")
    except (TypeError, ValueError):
        raise DataError(f"'{name}' must be numbers.") from None
    if arr.ndim != 1:
        arr = arr.reshape(-1)
    if arr.size and not np.isfinite(arr).all():
        raise DataError(f"'{name}' contains missing or infinite values.", hint="Drop those records first.")
    if arr.size and (arr < 0).any():
        raise DataError(f"'{name}' contains negative values.", hint="Shift the measure so its minimum is 0.")
    return arr


__all__ = ["GENERATED_ID", "MISSING_GROUP", "SUPPORTED_EXTENSIONS", "Dataset", "MeasureIssue", "Preparation", "Schema",
           "TableCheck", "as_measure_array", "check_table", "dataset_from_frame", "guess_schema", "load_table",
           "numeric_columns", "prepare_dataset", "preview", "require_shifts", "shift_text", "strictly_increasing",
           "validate_roles", "validate_schema"]
