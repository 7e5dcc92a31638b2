"""Engine-backed releases promise what the in-memory ones promise: the same noise, the same losses.

A table held by an engine is released from aggregates computed there; the mechanisms draw the same
noise at the same scales (so the audits of the in-memory releases cover them), and charge every
record the same loss. These checks tie the entry points that take engine datasets to those audits.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from prdp_core import engines
from prdp_core.data.dataset import Schema, prepare_dataset
from prdp_core.mechanisms.prdp.budget import inverse
from prdp_core.mechanisms.prdp.central import count, count_of

pytestmark = pytest.mark.xdist_group("engines")


@pytest.fixture(scope="module")
def tables(tmp_path_factory):
    rng = np.random.default_rng(3)
    df = pd.DataFrame({"id": np.arange(20_000), "bal": np.floor(rng.lognormal(7, 2, 20_000))})
    path = tmp_path_factory.mktemp("audit") / "t.parquet"
    df.to_parquet(path)
    schema = Schema(id_col="id", measures=("bal",))
    ds = prepare_dataset(df, schema)
    return ds, [engines.as_engine_dataset(ds), engines.open_dataset(str(path), engine="duckdb", schema=schema)]


def test_count_of_draws_the_noise_of_count_and_charges_the_same_losses(tables):
    ds, held = tables
    E = inverse(1e4, "bal", U=1e9)
    for seed in range(20):
        ref = count(E(ds.table), eps_min=E.eps_min, eps_max=E.eps_max, beta=0.1, rng=np.random.default_rng(seed))
        for data in [ds, ds.table, *held]:
            got = count_of(data, E, beta=0.1, rng=np.random.default_rng(seed))
            assert got.answers["estimate"].iloc[0] == ref.answers["estimate"].iloc[0]
            assert np.array_equal(got.extras["scales"], ref.extras["scales"])
            assert np.array_equal(got.extras["noisy_counts"], ref.extras["noisy_counts"])
            d = got.distribution()
            e = ref.distribution()
            assert np.array_equal(d.values, e.values) and np.array_equal(d.counts, e.counts)
            assert got.entries[0].loss.supremum() == ref.entries[0].loss.supremum() == E.eps_max
    # every record is charged 2^{i−1}ε̌ ≤ its budget: the largest charge is below the largest budget
    assert held[1].engine.domain_stats(E).counts.sum() == ds.n
