"""The Budget functions page's secure toggle: exact OpenDP samplers, unseeded, marked beside the answers and in
the ledger."""

from __future__ import annotations

from prdp_core.core.secure import SECURE_LABEL, TEACHING_LABEL

from .conftest import texts
from .test_budget_functions import _open


def test_secure_toggle_runs_every_mechanism_secure_central_and_local():
    at = _open()
    at.button(key="bf_run").click()
    at.run()
    assert f"Mode: **{TEACHING_LABEL}**" in texts(at)
    at.toggle(key="bf_secure").set_value(True)
    at.run()
    at.button(key="bf_run").click()
    at.run()
    assert not at.exception and not at.error, (at.exception, at.error)
    res = at.session_state["bf_result"]
    assert res["secure"] and res["seed"] is None
    assert [label for label, _ in res["releases"]] == ["PrDP framework (Alg. 2)", "PrDP extension (Sec. 5.2)",
                                                       "naive ε̌"]
    assert all(r.secure and r.seed is None and r.entries[0].secure for _, r in res["releases"])
    t = texts(at)
    assert f"Mode: **{SECURE_LABEL}**" in t and "Seeded run" not in t
    ledger = at.session_state["ledger"].summary()
    assert list(ledger["mode"]) == [TEACHING_LABEL] * 3 + [SECURE_LABEL] * 3
    code = [c.value for c in at.code if "prdp.framework(" in c.value][-1]
    assert "noise = Noise.secure()" in code and "noise=noise" in code and "Noise.teaching" not in code
    # the local model (every party's report drawn exactly)
    at.radio(key="bf_model").set_value("local")
    at.run()
    at.selectbox(key="bf_query").set_value("count")
    at.button(key="bf_run").click()
    at.run()
    assert not at.exception and not at.error, (at.exception, at.error)
    res = at.session_state["bf_result"]
    assert [label for label, _ in res["releases"]] == ["PrLDP count (Alg. 3–4)", "PrLDP framework (Alg. 5)",
                                                       "naive ε̌ (local)"]
    assert all(r.secure and r.seed is None for _, r in res["releases"])
    assert list(at.session_state["ledger"].summary()["mode"])[-3:] == [SECURE_LABEL] * 3
