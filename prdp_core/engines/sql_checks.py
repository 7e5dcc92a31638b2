"""The checks of a table's roles in SQL (:meth:`TableChecks.check`: non-numeric, missing, infinite and negative
measures, missing and duplicate ids, missing groups), each a few aggregates over the relation. A mixin of
:class:`~prdp_core.engines.sql_engine.SQLEngine` (it uses the engine's ``_exec``, ``column_kinds`` and
``n_rows``).

Privacy meaning: the counts and the few examples quoted in messages are statistics of confidential records, shown
to the table's owner when a file needs fixing, never released."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..data.dataset import MeasureIssue, Schema, TableCheck, validate_roles

if TYPE_CHECKING:
    from . import sql as sqlgen
    from .base import ColumnKind


class TableChecks:
    """The row checks of :func:`prdp_core.engines.prepare`, for SQL engines."""

    if TYPE_CHECKING:  # provided by SQLEngine, the class this one is mixed into
        d: sqlgen.Dialect
        relation: str
        #: Per measure, as the last :meth:`check` found over its finite values (a superset of the records a
        #: preparation keeps): whether all are whole numbers, and the largest magnitude — what a prepared view's
        #: exact-division test needs, counted in the check's pass instead of one more scan per measure.
        finite_integral: dict[str, tuple[bool, float]]
        _n: int | None

        def column_kinds(self) -> dict[str, ColumnKind]: ...
        def n_rows(self) -> int: ...
        def _exec(self, sql: str) -> list[tuple]: ...

    def check(self, schema: Schema) -> TableCheck:
        d = self.d
        kinds = self.column_kinds()
        validate_roles(kinds, schema, lambda: any(k == "number" for k in kinds.values()))
        aggs: list[str] = []
        row_missing, row_bad = [], []
        for m in schema.measures:
            num, present = self._measure_parts(m, kinds)
            bad = f"({present} AND {num} IS NULL)"
            nan = f"(NOT {bad} AND ({num} IS NULL OR {d.isnan(num)}))"
            inf = f"COALESCE({d.isinf(num)}, false)"
            fin = f"FILTER (WHERE {d.isfinite(num)})"
            aggs += [d.count_if(bad), d.count_if(nan), d.count_if(inf), d.count_if(f"COALESCE({num} < 0, false)"),
                     f"min({num}) {fin}", f"bool_and({num} = {d.floor(num)}) {fin}", f"max(abs({num})) {fin}"]
            row_missing.append(f"{nan} OR {inf}")
            row_bad.append(f"{nan} OR {inf} OR {bad}")
        aggs.append(d.count_if(" OR ".join(f"({x})" for x in row_missing)) if row_missing else "0")
        aggs.append(d.count_if(" OR ".join(f"({x})" for x in row_bad)) if row_bad else "0")
        if schema.id_col:
            i = d.ident(schema.id_col)
            miss = f"{i} IS NULL" + (f" OR {d.isnan(d.as_double(i))}" if kinds.get(schema.id_col) == "number" else "")
            aggs.append(d.count_if(miss))
        for g in schema.groups:
            aggs.append(d.count_if(self._missing_cell(g, kinds)))
        aggs.append("count(*)")  # the rows, in the same pass
        row = self._exec(f"SELECT {', '.join(aggs)} FROM {self.relation}")[0]
        self._n = int(row[-1])
        it = iter(row)
        issues = []
        for m in schema.measures:
            non_num, miss, inf, neg, mn, whole, top = (next(it) for _ in range(7))
            self.finite_integral[m] = (bool(whole), float(top) if top is not None else 0.0)
            examples: tuple[str, ...] = ()
            if non_num:
                num, present = self._measure_parts(m, kinds)
                ex = self._exec(f"SELECT DISTINCT {d.ident(m)} FROM {self.relation} WHERE {present} AND {num} IS NULL "
                                "LIMIT 3")
                examples = tuple(str(r[0])[:40] for r in ex)
            issues.append(MeasureIssue(column=m, non_numeric=int(non_num), non_numeric_examples=examples,
                                       missing=int(miss), infinite=int(inf), negative=int(neg),
                                       minimum=float(mn) if mn is not None else float("nan")))
        rows_missing, rows_bad = int(next(it)), int(next(it))
        dup = missing_ids = 0
        dup_ex: tuple[str, ...] = ()
        if schema.id_col:
            missing_ids = int(next(it))
            dup, dup_ex = self.duplicate_values(schema.id_col)
        missing_groups = {g: int(next(it)) for g in schema.groups}
        return TableCheck(n_rows=self.n_rows(), measures=tuple(issues), rows_with_missing=rows_missing,
                          rows_with_bad=rows_bad, duplicate_ids=dup, duplicate_id_examples=dup_ex,
                          missing_ids=missing_ids, missing_groups={g: k for g, k in missing_groups.items() if k})

    def duplicate_values(self, column: str, source: str | None = None) -> tuple[int, tuple[str, ...]]:
        """How many present values of ``column`` repeat another (its count minus its distinct count) and up to three
        of them, over ``source`` (default: the relation). Counted with a GROUP BY, which spills to disk beyond the
        engine's memory limit where ``count(DISTINCT …)`` cannot (10⁸ distinct ids under the default limit)."""
        i = self.d.ident(column)
        src = source or self.relation
        surplus = self._exec(f"SELECT coalesce(sum(c - 1), 0) FROM (SELECT count(*) AS c FROM {src} WHERE {i} IS NOT "
                             f"NULL GROUP BY {i} HAVING count(*) > 1) AS dups")[0][0]
        if not surplus:
            return 0, ()
        ex = self._exec(f"SELECT {i} FROM {src} WHERE {i} IS NOT NULL GROUP BY {i} HAVING count(*) > 1 ORDER BY {i} "
                        "LIMIT 3")
        return int(surplus), tuple(str(r[0])[:40] for r in ex)

    def _measure_parts(self, m: str, kinds: dict[str, ColumnKind]) -> tuple[str, str]:
        """(the column as DOUBLE, NULL when not a number; "the cell holds something")."""
        i = self.d.ident(m)
        if kinds.get(m) == "text":
            return self.d.try_double(i), f"({i} IS NOT NULL AND trim({i}) <> '')"
        if kinds.get(m) == "bool":
            return self.d.as_double(i), f"({i} IS NOT NULL)"
        if kinds.get(m) == "number":
            return self.d.as_double(i), f"({i} IS NOT NULL)"
        return self.d.try_double(self.d.as_text(i)), f"({i} IS NOT NULL)"

    def _missing_cell(self, g: str, kinds: dict[str, ColumnKind]) -> str:
        i = self.d.ident(g)
        if kinds.get(g) == "text":
            return f"{i} IS NULL OR trim({i}) = ''"
        if kinds.get(g) == "number":
            return f"{i} IS NULL OR {self.d.isnan(self.d.as_double(i))}"
        return f"{i} IS NULL"


    # -- statistics ----------------------------------------------------------------------


__all__ = ["TableChecks"]
