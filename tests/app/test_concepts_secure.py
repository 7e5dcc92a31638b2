"""The Concepts page's histogram lab in secure mode: exact discrete Laplace, unseeded, or a clear refusal."""

from __future__ import annotations

from prdp_core.core.secure import SECURE_LABEL

from .conftest import open_page, texts
from .test_concepts import _run


def test_histogram_lab_secure_release():
    at = open_page("concepts")
    at.radio(key="hl_source").set_value("dataset")
    _run(at)
    at.toggle(key="hl_secure").set_value(True)
    _run(at)
    n0 = len(at.session_state["ledger"].entries)
    at.button(key="hl_run").click()  # the sample's three attributes, declared categories
    _run(at)
    assert not at.error
    t = texts(at)
    assert f"Mode: **{SECURE_LABEL}**" in t and "Seeded run" not in t
    new = at.session_state["ledger"].entries[n0:]
    assert len(new) == 2 and all(e.secure and e.seed is None for e in new)
    code = [c.value for c in at.code if "granular.standard_histogram(" in c.value][-1]
    assert "noise=Noise.secure()" in code and "unseeded" in code
