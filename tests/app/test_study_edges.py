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
    at.switch_page("pages/concepts.py")
    at.run()
    assert not at.exception, at.exception
    assert at.slider(key="pa_k").value == 3 and at.number_input(key="cc_eps").value == 4.5


def test_numbers_written_as_text_are_read_and_others_refused():
    # YAML reads 1.0e2 (no sign in the exponent) as text
    at = _load("  personalized:\n    pdp_view: PDP vs PrDP\n    pdp_prdp_c: 1.0e2\n    pdp_prdp_emin: abc\n")
    assert "app.personalized.pdp_prdp_emin = 'abc'" in texts(at)
    at.switch_page("pages/personalized.py")
    at.run()
    assert not at.exception, at.exception
    assert at.number_input(key="pdp_prdp_c").value == 100.0
