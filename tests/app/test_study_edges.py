"""Study page: configs whose page settings are outside what the pages offer."""

from __future__ import annotations

from .conftest import open_page, texts

BASE = """version: 1
data: {sample: cbp_like, n: 2000, seed: 1}
policy:
  specification:
    tiers: {f_c: 0.54, f_m: 0.37, eps_c: 0.01, eps_m: 0.2, eps_l: 1.0}
mechanisms:
  - kind: personalized
    query: {kind: sum, column: EMP, hi: 50}
app:
"""


def _load(app: str):
    at = open_page("study")
    at.text_area(key="study_paste").set_value(BASE + app).run()
    at.button(key="study_load_paste").click().run()
    assert not at.exception, at.exception
    return at


def test_out_of_range_page_settings_are_left_out_with_a_note():
    at = _load("  concepts:\n    pa_d: 1000\n    pa_k: 3\n    cc_eps: 4.5\n")
    assert "app.concepts.pa_d = 1000 is not a value the page offers" in texts(at)
    at.switch_page("app_pages/concepts.py")
    at.run()
    assert not at.exception, at.exception
    assert at.slider(key="pa_k").value == 3 and at.number_input(key="cc_eps").value == 4.5


def test_numbers_written_as_text_are_read_and_others_refused():
    # YAML reads 1.0e2 (no sign in the exponent) as text
    at = _load("  personalized:\n    pdp_view: PDP vs PrDP\n    pdp_prdp_c: 1.0e2\n    pdp_prdp_emin: abc\n")
    assert "app.personalized.pdp_prdp_emin = 'abc'" in texts(at)
    at.switch_page("app_pages/personalized.py")
    at.run()
    assert not at.exception, at.exception
    assert at.number_input(key="pdp_prdp_c").value == 100.0


def test_settings_of_the_splitting_pages_outside_their_widgets_are_left_out():
    at = _load("  policy_designer:\n    sugg_pct: 10\n    sugg_share: 98\n  tradeoffs:\n    tr_gamma: 5\n"
               "    tr_pcts: [12.0, 90.0]\n    tr_rhos: [0.1, 1.0]\n  run:\n    run_min_records: 0\n"
               "  budget_functions:\n    bf_scale_trials: 100000\n")
    t = texts(at)
    for bad in ("app.policy_designer.sugg_pct = 10", "app.tradeoffs.tr_gamma = 5",
                "app.tradeoffs.tr_pcts = [12.0, 90.0]", "app.run.run_min_records = 0",
                "app.budget_functions.bf_scale_trials = 100000"):
        assert bad + " is not a value the page offers" in t, bad
    assert "tr_rhos" not in t
    for page in ("policy_designer", "tradeoffs", "run", "budget_functions"):
        at.switch_page(f"app_pages/{page}.py")
        at.run()
        assert not at.exception, (page, at.exception)
    at.switch_page("app_pages/policy_designer.py")
    at.run()
    # the config's mode is review (its default), where the suggestions computed on the records are hidden;
    # the imported setting waits in the session and shows in teaching mode
    assert "Hidden in review mode:** threshold suggestions" in texts(at)
    at.sidebar.radio(key="mode").set_value("teaching").run()
    at.sidebar.button(key="mode_confirm_teaching").click().run()  # leaving review mode is confirmed
    assert at.number_input(key="sugg_share").value == 98
