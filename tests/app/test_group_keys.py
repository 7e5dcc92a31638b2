"""AppTest of the Run page's public group keys: the secure release's refusal of keys taken from the data
offers them and goes away once the keys are listed or chosen by partition selection; listed keys are
released (absent cells as noisy zeros), kept by the Policy designer, exported and reproduced."""

from __future__ import annotations

from prdp_core.study.config import parse_config

from .conftest import open_page

REFUSAL = "cannot take its group keys from the data"


def _secure_review_refusal():
    at = open_page("run")
    at.session_state["mode"] = "review"
    at.run()
    at.toggle(key="run_secure").set_value(True).run()
    at.button(key="run_go").click().run()
    assert not at.exception, at.exception
    return at


def test_the_refusal_offers_the_key_lists_the_app_and_the_config_have():
    at = _secure_review_refusal()
    errors = "\n".join(e.value for e in at.error)
    assert REFUSAL in errors
    # the message names what the app and the config offer: the editor on this page and workload.group_keys
    assert "Public group keys" in errors and "workload.group_keys" in errors
    assert any(e.label == "Public group keys" for e in at.expander)


def test_the_refusal_goes_once_partition_selection_is_set():
    at = _secure_review_refusal()
    assert REFUSAL in "\n".join(e.value for e in at.error)
    at.switch_page("app_pages/policy_designer.py")
    at.run()
    at.number_input(key="policy_partition_rho").set_value(0.1).run()
    at.switch_page("app_pages/run.py")
    at.run()
    assert not at.exception, at.exception
    assert REFUSAL not in "\n".join(e.value for e in at.error)  # the error was about the earlier policy
    at.button(key="run_go").click().run()
    assert not at.exception and not at.error
    assert at.session_state["run_release"].secure


def test_listed_keys_make_the_secure_release_and_survive_the_designer_and_the_export():
    at = _secure_review_refusal()
    pol = at.session_state["policy"]
    cols = list(dict.fromkeys(c for q in pol.workload.queries for c in q.group_by))
    assert cols, "the default workload groups by a column"
    col = cols[0]
    at.text_area(key=f"run_keys_{col}").input("01001\n01003, NOT-A-KEY").run()
    at.button(key="run_keys_apply").click().run()
    assert not at.exception, at.exception
    wl = at.session_state["policy"].workload
    assert dict(wl.group_keys) == {col: ("01001", "01003", "NOT-A-KEY")}
    assert REFUSAL not in "\n".join(e.value for e in at.error)  # the policy changed: the old error is gone
    at.button(key="run_go").click().run()
    assert not at.exception and not at.error, [e.value for e in at.error]
    rel = at.session_state["run_release"]
    assert rel.secure and rel.params["keys"] == "public (a listed key set)"
    assert rel.params["group_keys_source"] == "typed"
    for q in rel.answers["query"].unique():
        assert list(rel.answers.loc[rel.answers["query"] == q, col]) == ["01001", "01003", "NOT-A-KEY"]
    entry = at.session_state["ledger"].entries[-1]
    assert entry.params["group_keys_source"] == "typed"
    assert entry.loss.workload.group_keys == wl.group_keys
    # the Policy designer rebuilds the workload from its editors: the lists stay
    at.switch_page("app_pages/policy_designer.py")
    at.run()
    at.switch_page("app_pages/run.py")
    at.run()
    assert dict(at.session_state["policy"].workload.group_keys) == {col: ("01001", "01003", "NOT-A-KEY")}
    assert at.text_area(key=f"run_keys_{col}").value == "01001\n01003\nNOT-A-KEY"
    # the Study page's export carries them; importing it in a fresh session restores them
    at.switch_page("app_pages/study.py").run()
    exported = next(c.value for c in at.code if c.language == "yaml")
    assert parse_config(exported).workload["group_keys"] == {col: ["01001", "01003", "NOT-A-KEY"]}
    b = open_page("study")
    b.text_area(key="study_paste").set_value(exported).run()
    b.button(key="study_load_paste").click().run()
    assert not b.exception, b.exception
    assert dict(b.session_state["policy"].workload.group_keys) == {col: ("01001", "01003", "NOT-A-KEY")}
    at.switch_page("app_pages/run.py").run()
    # cleared: keys come from the data again, and the secure release refuses them again
    at.button(key="run_keys_clear").click().run()
    assert at.session_state["policy"].workload.group_keys == ()
    at.button(key="run_go").click().run()
    assert REFUSAL in "\n".join(e.value for e in at.error)


def test_the_reproduce_snippet_carries_the_lists_and_gives_the_same_answers():
    at = open_page("run")
    col = at.session_state["policy"].workload.queries[0].group_by[0]
    at.text_area(key=f"run_keys_{col}").input("01001, ZZZZZ").run()
    at.button(key="run_keys_apply").click().run()
    at.button(key="run_go").click().run()
    assert not at.exception and not at.error
    rel = at.session_state["run_release"]
    code = [c.value for c in at.code if c.language == "python"][-1]
    assert "'group_keys': {" in code and "'ZZZZZ'" in code
    ns: dict = {}
    exec(compile(code, "<snippet>", "exec"), ns)
    assert list(ns["rel"].answers[col]) == list(rel.answers[col])
    assert list(ns["rel"].answers["estimate"]) == list(rel.answers["estimate"])
