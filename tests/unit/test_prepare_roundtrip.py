"""Every data preparation option round-trips: the options chosen for a table (on the Data page, or in a
config) are written to a study config's ``data.prepare`` and read back — from the YAML file the Study page
exports, and from a share link — as the same preparation, which prepares the same table."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as hst

from prdp_core.board import links
from prdp_core.core.errors import ConfigError, DataError
from prdp_core.data.dataset import MISSING_GROUP, Schema, prepare_dataset
from prdp_core.study.config import MAX_SHIFT, PREPARE_OPTIONS, DataSource, parse_config, parse_prepare, prepare_section

MEASURES = ("sales", "bal")

_measure_cell = hst.one_of(hst.floats(-1e6, 1e6, allow_nan=False), hst.just(float("nan")), hst.just(math.inf),
                           hst.sampled_from(["n/a", "", " 12 "]))
_group_cell = hst.one_of(hst.sampled_from(["A", "B", "C"]), hst.none(), hst.just(""), hst.just("  "))
_id_cell = hst.one_of(hst.integers(1, 12).map(lambda i: f"r{i}"), hst.none())


@hst.composite
def tables(draw: Any) -> tuple[pd.DataFrame, Schema]:
    """A small table with every kind of bad input preparation can fix, and its column roles."""
    n = draw(hst.integers(1, 12))
    df = pd.DataFrame({"id": draw(hst.lists(_id_cell, min_size=n, max_size=n)),
                       "region": draw(hst.lists(_group_cell, min_size=n, max_size=n)),
                       "firm": draw(hst.lists(hst.sampled_from(["f1", "f2"]), min_size=n, max_size=n))})
    for m in MEASURES:
        df[m] = draw(hst.lists(_measure_cell, min_size=n, max_size=n))
    measures = draw(hst.lists(hst.sampled_from(MEASURES), min_size=1, max_size=2, unique=True))
    schema = Schema(id_col=draw(hst.sampled_from(["id", None])), measures=tuple(measures),
                    groups=("region",) if draw(hst.booleans()) else (),
                    owner_col="firm" if draw(hst.booleans()) else None)
    return df, schema


@hst.composite
def preparations(draw: Any, measures: tuple[str, ...]) -> dict[str, Any]:
    """Preparation options as the Data page or a config chooses them: any value of every option (defaults
    written or not), and with a shift of negative values the public constants typed for some measures."""
    opts: dict[str, Any] = {}
    for k, values in PREPARE_OPTIONS.items():
        if draw(hst.booleans()):
            opts[k] = draw(hst.sampled_from(values))
    if opts.get("negative") == "shift":
        shifts = draw(hst.dictionaries(hst.sampled_from(measures), hst.one_of(
            hst.floats(0, MAX_SHIFT), hst.integers(0, 10**6)), max_size=len(measures)))
        if shifts or draw(hst.booleans()):
            opts["shift_by"] = shifts
    return opts


def _prepared(df: pd.DataFrame, schema: Schema, opts: dict[str, Any]) -> Any:
    """The prepared dataset's table, schema, notes and shifts, or the refusal's message."""
    try:
        ds = prepare_dataset(df, schema, name="t.csv", **opts)
    except DataError as err:
        return ("refused", str(err))
    return ds.table, ds.schema, ds.notes, ds.shifts


def _same(a: Any, b: Any) -> bool:
    if isinstance(a[0], str) or isinstance(b[0], str):
        return bool(a == b)
    return bool(a[0].equals(b[0]) and a[1:] == b[1:])


def _exported(schema: Schema, opts: dict[str, Any]) -> dict[str, Any]:
    """A study config on an uploaded file as the Study page exports it."""
    source = DataSource(path="t.csv", schema=schema.to_dict(), prepare=opts)
    return {"version": 1, "data": source.to_dict(), "policy": {"thresholds": {schema.measures[0]: 10}},
            "workload": {"queries": [{"kind": "count", "rho": 0.5}]}}


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=hst.data())
def test_every_preparation_round_trips_through_export_file_and_link(data):
    df, schema = data.draw(tables())
    opts = data.draw(preparations(schema.measures))
    cfg = _exported(schema, opts)
    from_file = parse_config(parse_config(cfg).to_yaml())  # the Study page's export, imported (a restore too)
    from_link = links.decode(links.encode(cfg))  # a share link, opened
    want = _prepared(df, schema, opts)
    for study in (from_file, from_link):
        assert Schema.from_dict(study.data.schema) == schema
        assert prepare_section(study.data.prepare) == prepare_section(opts)  # the same choices
        assert parse_prepare(prepare_section(study.data.prepare)) == study.data.prepare
        assert _same(_prepared(df, schema, study.data.prepare), want)  # the same prepared table


def test_missing_groups_is_a_data_prepare_key_written_and_read_back():
    df = pd.DataFrame({"id": [1, 2, 3], "sales": [1.0, 2.0, 3.0], "region": ["A", None, ""]})
    schema = Schema(id_col="id", measures=("sales",), groups=("region",))
    cfg = _exported(schema, {"missing_groups": "label"})
    assert cfg["data"]["prepare"] == {"missing_groups": "label"}
    study = parse_config(parse_config(cfg).to_yaml())
    ds = prepare_dataset(df, schema, **study.data.prepare)
    assert ds.table["region"].tolist() == ["A", MISSING_GROUP, MISSING_GROUP]
    assert parse_prepare({"missing_groups": "keep"}) == {}  # the default is not written
    with pytest.raises(ConfigError, match=r"^data\.prepare\.missing_groups: must be one of keep, label"):
        parse_prepare({"missing_groups": "drop"})


def test_a_shift_larger_than_the_config_accepts_is_refused_with_its_key():
    with pytest.raises(ConfigError, match=r"^data\.prepare\.shift_by\.bal: must be at most"):
        parse_prepare({"negative": "shift", "shift_by": {"bal": MAX_SHIFT * 10}})
    assert parse_prepare({"negative": "shift", "shift_by": {"bal": np.float64(MAX_SHIFT)}}) == \
        {"negative": "shift", "shift_by": {"bal": MAX_SHIFT}}
