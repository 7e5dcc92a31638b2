"""Granular DP attribute data: encoding with public domains, synthetic binary data, the true histogram."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from prdp_core.core.errors import ParameterError, ResourceLimitError
from prdp_core.mechanisms.granular.data import MAX_DOMAIN, encode_attributes, synthetic_attribute_data, true_histogram

# ---------------------------------------------------------------------------
# Data and the algorithms
# ---------------------------------------------------------------------------


def test_encode_attributes():
    df = pd.DataFrame({"state": ["A", "B", None, "C"], "emp": [0.0, 5.0, 250.0, 2e10], "x": [1, 2, 3, 4],
                       "flag": [True, False, True, True]})
    data = encode_attributes(df, ["state", "emp"], {"state": ["A", "B"], "unused": ["z"]})
    assert data.names == ("state", "emp") and data.n == 4 and data.public_domains
    assert data.domains[0] == ("A", "B", "(other)")  # missing and undeclared values: "(other)"
    assert [data.domains[0][c] for c in data.codes[:, 0]] == ["A", "B", "(other)", "(other)"]
    assert [data.domains[1][c] for c in data.codes[:, 1]] == ["<1", "1–9", "100–999", "≥1B"]
    assert data.cells == 3 * 11
    assert data.notes[0] == "state: 2 declared public categories + (other)"
    # text declarations, numbers declared as categories, booleans, "(missing)" declared
    d2 = encode_attributes(df, ["x", "state", "flag"], {"x": "1, 2,\n3", "state": ["A", "(missing)"]})
    assert d2.domains == (("1", "2", "3", "(other)"), ("A", "(missing)", "(other)"), ("False", "True", "(other)"))
    assert d2.codes[:, 0].tolist() == [0, 1, 2, 3] and d2.codes[:, 1].tolist() == [0, 2, 1, 2]
    assert d2.codes[:, 2].tolist() == [1, 0, 1, 1]
    # an undeclared text column is refused; from the data only for exploration
    with pytest.raises(ParameterError, match="Declare the public categories of 'state'"):
        encode_attributes(df, ["state"])
    ex = encode_attributes(df, ["state"], from_data=True)
    assert ex.domains[0] == ("(missing)", "A", "B", "C") and not ex.public_domains
    assert "teaching only" in ex.notes[0] and "teaching only" in ex.domain_source
    with pytest.raises(ParameterError, match="at least one category"):
        encode_attributes(df, ["state"], {"state": " , "})
    with pytest.raises(ParameterError, match="No column"):
        encode_attributes(df, ["nope"])
    with pytest.raises(ParameterError, match="at least one"):
        encode_attributes(df, [])
    big = pd.DataFrame({"id": [f"r{i}" for i in range(MAX_DOMAIN + 1)]})
    with pytest.raises(ResourceLimitError):
        encode_attributes(big, ["id"], from_data=True)
    with pytest.raises(ResourceLimitError):
        encode_attributes(big, ["id"], {"id": big["id"].tolist()})


def test_synthetic_data():
    data = synthetic_attribute_data(10_000, 40, patterns=5, heavy_share=0.6, rng=np.random.default_rng(0))
    assert data.codes.shape == (10_000, 40) and data.codes.flags.f_contiguous
    truth = true_histogram(data)
    assert truth.counts.max() > 0.6 * 10_000 / 5  # the top Zipf pattern
    assert (truth.counts == 1).sum() > 3_000  # the sparse tail
    with pytest.raises(ResourceLimitError):
        synthetic_attribute_data(10**7, 1000, rng=np.random.default_rng(0))
