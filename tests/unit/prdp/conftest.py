"""Shared fixtures of the PrDP framework's unit tests: Normal balances."""

from __future__ import annotations

import pandas as pd
import pytest

import prdp_core


@pytest.fixture(scope="module")
def normal() -> pd.DataFrame:
    return prdp_core.data.samples.load("bank_normal_50k", n=50_000, seed=3)
