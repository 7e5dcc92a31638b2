"""One local Spark session for the Spark tests of a test process (each xdist worker has its own).

:func:`session` starts ``local[2]`` once, with the UI off, 4 shuffle partitions and 1 GB of driver
memory; the tests that use it carry :data:`MARKS` (the ``spark`` marker and ``xdist_group("spark")``,
so that ``--dist loadgroup`` runs them all in one worker and only one JVM starts; xdist joins an
item's groups, so every Spark test module also carries ``xdist_group("engines")``, as the parity
suite does: all of them land in the group ``engines_spark``). Without PySpark
or Java the tests are skipped locally and FAIL under CI=true (``.ci/run`` installs Java; PySpark is
in the dev lock).
"""

from __future__ import annotations

import os
import tempfile
from typing import Any

import pytest

IN_CI = os.environ.get("CI", "").lower() in ("1", "true", "yes")

#: Settings of the shared session: small and quiet.
CONF = {
    "spark.ui.enabled": "false",
    "spark.ui.showConsoleProgress": "false",
    "spark.sql.shuffle.partitions": "4",
    "spark.default.parallelism": "2",
    "spark.driver.memory": "1g",
    "spark.driver.host": "127.0.0.1",
    "spark.driver.bindAddress": "127.0.0.1",
    "spark.sql.session.timeZone": "UTC",
}

#: Marks of every test that runs Spark.
MARKS = (pytest.mark.spark, pytest.mark.xdist_group("spark"))

_session: Any = None


def missing() -> str | None:
    """Why Spark cannot run here (the engine's own one-sentence message), or None."""
    from prdp_core.core.errors import EngineError
    from prdp_core.engines.spark_engine import require_spark

    try:
        require_spark()
    except EngineError as err:
        return str(err)
    return None


def session() -> Any:
    """The shared local[2] session (started on first use); skip or, under CI, fail without Spark."""
    global _session
    if _session is None:
        reason = missing()
        if reason is not None:
            if IN_CI:
                pytest.fail(f"Spark cannot run under CI: {reason}")
            pytest.skip(f"Spark is not available here ({reason}); these tests run under CI.")
        from prdp_core.engines import EngineOptions
        from prdp_core.engines.spark_engine import spark_session

        # tables the tests save go to a temporary folder, never into the working folder
        conf = {**CONF, "spark.sql.warehouse.dir": tempfile.mkdtemp(prefix="prdp-spark-warehouse-")}
        _session = spark_session(EngineOptions(master="local[2]", conf=conf))
    return _session


def stop() -> None:
    """Stop the shared session (end of the test process)."""
    global _session
    if _session is not None:
        _session.stop()
        _session = None
