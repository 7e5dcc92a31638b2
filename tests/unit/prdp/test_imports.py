"""The engines import the framework's policy layer and its mechanisms import the engines: every entry
module must import on its own, in a fresh interpreter, whichever is imported first."""

from __future__ import annotations

import subprocess
import sys

import pytest

FIRST = ["prdp_core.engines", "prdp_core.engines.memory", "prdp_core.engines.sql", "prdp_core.engines.dataset",
         "prdp_core.mechanisms.prdp", "prdp_core.mechanisms.prdp.budget", "prdp_core.mechanisms.prdp.central",
         "prdp_core.mechanisms.prdp.local", "prdp_core.mechanisms.prdp.forecast", "prdp_core.study.config",
         "prdp_core.mechanisms.multitier", "prdp_core.mechanisms.granular"]


@pytest.mark.parametrize("module", FIRST)
def test_module_imports_first_in_a_fresh_interpreter(module):
    done = subprocess.run([sys.executable, "-c", f"import {module}; import prdp_core.review.report"],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]


def test_the_package_reexports_the_central_api_and_not_the_local_one():
    from prdp_core.mechanisms import prdp
    from prdp_core.mechanisms.prdp import central, local

    assert prdp.count is central.count and prdp.framework is central.framework
    assert local.count is not central.count and "local" not in prdp.__all__
