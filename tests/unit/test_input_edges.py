"""Edge inputs of the designer's engine calls: overflowing losses, missing group values, undefined errors."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from prdp_core.core.errors import PolicyError
from prdp_core.core.splitting import as_thresholds
from prdp_core.core.workload import Query, SplittingPolicy, Workload
from prdp_core.data.dataset import MISSING_GROUP, Schema, check_table, prepare_dataset
from prdp_core.mechanisms import sweeps
from prdp_core.mechanisms.preview import preview_policy


def _ds(groups=("g",), owner=True):
    df = pd.DataFrame({"id": range(6), "owner": [1, 1, 2, 2, 3, 3], "g": list("aabbcc"),
                       "x": [1.0, 2.0, 3.0, 40.0, 5.0, 600.0]})
    return prepare_dataset(df, Schema(id_col="id", measures=("x",), groups=groups,
                                      owner_col="owner" if owner else None))


def test_overflowing_losses_are_a_policy_error_naming_the_fix():
    ds = _ds()
    pol = SplittingPolicy(as_thresholds({"x": 1.0}),
                          Workload((Query("sum", "x", rho=1e308, split=True, group_by=("g",)),)))
    prev = preview_policy(ds, pol)
    with pytest.raises(PolicyError, match="too large to compute") as err:
        prev.summary()
    assert "Lower the budgets" in err.value.hint


def test_missing_group_values_are_counted_and_can_be_labelled():
    df = pd.DataFrame({"id": [1, 2, 3, 4], "g": ["a", None, " ", "b"], "y": [2009.0, np.nan, 2010.0, 2009.0],
                       "x": [1.0, 2.0, 3.0, 4.0]})
    schema = Schema(id_col="id", measures=("x",), groups=("g", "y"))
    chk = check_table(df, schema)
    assert chk.missing_groups == {"g": 2, "y": 1} and not chk.ok
    kept = prepare_dataset(df, schema)  # default: kept as they are
    assert kept.table["g"].isna().sum() == 1
    ds = prepare_dataset(df, schema, missing_groups="label")
    assert list(ds.table["g"]) == ["a", MISSING_GROUP, MISSING_GROUP, "b"]
    assert list(ds.table["y"]) == ["2009", MISSING_GROUP, "2010", "2009"]
    assert any("put in the group" in n for n in ds.notes)


def test_group_by_a_column_with_missing_values_is_refused_at_design_time():
    df = pd.DataFrame({"id": [1, 2, 3], "g": ["a", None, "b"], "x": [1.0, 2.0, 3.0]})
    ds = prepare_dataset(df, Schema(id_col="id", measures=("x",), groups=("g",)))
    pol = SplittingPolicy(as_thresholds({"x": 2.0}), Workload((Query("count", group_by=("g",)),)))
    with pytest.raises(PolicyError, match="missing value") as err:
        pol.validate(ds.table, ds.schema.measures)
    assert "Column roles" in err.value.hint
    # a filter on it (no group-by) is fine
    SplittingPolicy(as_thresholds({"x": 2.0}), Workload((Query("count"),))).validate(ds.table)


def test_best_settings_with_undefined_errors():
    losses = pd.DataFrame({"setting": ["p90", "p99", "p90", "p99"], "base_rho": [0.1, 0.1, 1.0, 1.0],
                           "share_above_base": [0.0, 0.0, 0.5, 0.0],
                           "median ARE SUM": [np.nan, np.nan, 0.2, 0.1]})
    out = sweeps.best_settings(losses, "SUM")
    assert out[0] == {"base_rho": 0.1, "status": "undefined"}
    assert out[1]["status"] == "best" and out[1]["setting"] == "p99" and out[1]["median_are"] == 0.1
    losses.loc[3, "share_above_base"] = 0.5
    assert sweeps.best_settings(losses, "SUM")[1]["status"] == "none_within_share"
    assert sweeps.best_settings(losses, "AVG") == []


def test_a_blank_row_just_added_to_the_workload_editor_is_skipped():
    from prdp_core.core.workload import workload_from_frame

    df = pd.DataFrame([{"kind": "count", "measure": None, "group_by": "g", "rho": 0.5},
                       {"kind": np.nan, "measure": np.nan, "group_by": np.nan, "rho": np.nan}])
    wl = workload_from_frame(df)
    assert len(wl.queries) == 1 and wl.queries[0].kind == "count"


def test_workload_rows_that_would_be_silently_reinterpreted_are_refused():
    from prdp_core.core.errors import PolicyError
    from prdp_core.core.workload import workload_from_frame

    base = {"kind": "count", "measure": None, "group_by": "g", "rho": 0.5}
    with pytest.raises(PolicyError, match="without a filter column"):
        workload_from_frame(pd.DataFrame([{**base, "filter_column": "", "filter_values": "a; b"}]))
    with pytest.raises(PolicyError, match="names no column"):
        workload_from_frame(pd.DataFrame([{**base, "group_by": " , ,, "}]))
    # empty cells still mean "no filter" and "no group-by"
    wl = workload_from_frame(pd.DataFrame([{**base, "group_by": "", "filter_column": np.nan, "filter_values": np.nan}]))
    assert wl.queries[0].group_by == () and wl.queries[0].filter is None
