"""The Run page says which mode produced which numbers: secure releases vs seeded teaching runs."""

from __future__ import annotations

import numpy as np

from prdp_core.core.secure import SECURE_LABEL, TEACHING_LABEL
from tests.app.conftest import _own_workshop_folder, open_page, texts  # noqa: F401 (autouse fixture)


def test_run_page_secure_toggle_labels_results_and_ledger():
    at = open_page("run")
    at.button(key="run_go").click()
    at.run()
    assert not at.exception, at.exception
    assert f"Mode: **{TEACHING_LABEL}**" in texts(at)
    at.toggle(key="run_secure").set_value(True)
    at.run()
    at.button(key="run_go").click()
    at.run()
    # the default workload groups by county with keys taken from the data: a secure run refuses
    assert "cannot take its group keys from the data" in at.error[0].value
    at.switch_page("app_pages/policy_designer.py")
    at.run()
    at.number_input(key="policy_partition_rho").set_value(0.1)
    at.run()
    at.switch_page("app_pages/run.py")
    at.run()
    at.toggle(key="run_secure").set_value(True)
    at.run()
    at.button(key="run_go").click()
    at.run()
    assert not at.exception, at.exception
    rel = at.session_state["run_release"]
    assert rel.secure and rel.seed is None and rel.entries[0].secure
    t = texts(at)
    assert f"Mode: **{SECURE_LABEL}**" in t and "Seeded run" not in t
    grids = rel.extras["grid"]
    for q, g in grids.items():
        est = rel.answers.loc[rel.answers["query"] == q, "estimate"].to_numpy()
        if "AVG" not in q:
            assert np.all(np.mod(est, g) == 0)
    ledger = [df.value for df in at.dataframe if "mode" in df.value.columns][-1]
    assert list(ledger["mode"]) == [TEACHING_LABEL, SECURE_LABEL]
    code = [c.value for c in at.code][-1]
    assert "noise = Noise.secure()" in code and "default_rng" not in code.split("from prdp_core.mechanisms")[-1]
    assert "Noise.teaching" not in code


def test_personalized_page_secure_toggle_labels_the_answer_and_ledger():
    at = open_page("personalized")
    at.radio(key="pdp_view").set_value("Run a release").run()
    at.button(key="pdp_run").click().run()
    assert not at.exception, at.exception
    assert TEACHING_LABEL in texts(at)
    at.toggle(key="pdp_secure").set_value(True).run()
    at.button(key="pdp_run").click().run()
    assert not at.exception, at.exception
    rel = at.session_state["pdp_last_release"]
    assert rel.secure and rel.seed is None and rel.entries[0].secure
    t = texts(at)
    assert SECURE_LABEL in t and "Seeded run" not in t
    modes = list(at.session_state["ledger"].summary()["mode"])
    assert modes[-2:] == [TEACHING_LABEL, SECURE_LABEL]


def test_analyst_tiers_page_secure_toggle_labels_every_tier_and_ledger():
    at = open_page("analyst_tiers")
    at.toggle(key="mt_secure").set_value(True).run()
    at.button(key="mt_release_btn").click().run()
    assert not at.exception, at.exception
    rel = at.session_state["mt_release"]["release"]
    assert rel.secure and rel.seed is None and all(e.secure for e in rel.entries)
    assert set(rel.params["certified"]) == set(rel.answers["tier"])
    t = texts(at)
    assert f"Mode: **{SECURE_LABEL}**" in t and "Seeded run" not in t
    assert list(at.session_state["ledger"].summary()["mode"])[-1] == SECURE_LABEL
    at.radio(key="mt_model").set_value("local").run()
    at.button(key="mt_release_btn").click().run()
    assert not at.exception, at.exception
    assert at.session_state["mt_release"]["release"].secure
