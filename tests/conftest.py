"""Shared test configuration.

Hypothesis profiles: ``ci`` (fewer examples, no deadline) is used when CI=true, so
property tests keep their power but stay quick; ``dev`` is the default. ``spark``: the one local
Spark session of the test process (:mod:`tests.spark`), stopped when the run ends.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest
from hypothesis import HealthCheck, settings

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

settings.register_profile("dev", max_examples=100, deadline=None,
                          suppress_health_check=[HealthCheck.too_slow])
settings.register_profile("ci", max_examples=60, deadline=None, derandomize=True,
                          suppress_health_check=[HealthCheck.too_slow])
settings.load_profile("ci" if os.environ.get("CI", "").lower() in ("1", "true", "yes") else "dev")
#: Engines' results of unchanged files are not kept across tests (a test that makes a query fail must see it run);
#: tests/unit/engines/test_result_cache.py turns the cache on for itself.
os.environ.setdefault("PRDP_CACHE_DIR", "off")


@pytest.fixture(scope="session")
def spark():
    """The shared local[2] SparkSession (skipped locally, failing under CI=true, without Spark)."""
    from tests import spark as spark_tests

    yield spark_tests.session()
    spark_tests.stop()

