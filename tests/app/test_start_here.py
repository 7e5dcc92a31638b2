"""The Start here page walks Data → Policy → Preview → Run → Review with "Next" only, on the default sample: the Run
step's Next makes one recorded release (charged to the ledger), the Review step offers the report of that release,
and the worked example behind the Preview step's "Learn more" follows a real record in teaching mode only."""

from __future__ import annotations

from .conftest import open_page


def _next(at, i: int):
    at.button(key=f"guide_next_{i}").click().run()
    assert not at.exception, at.exception
    return at


def _markdown(at) -> str:
    return "\n".join(m.value for m in at.markdown)


def test_next_alone_walks_from_the_data_to_the_report_of_one_recorded_release():
    at = open_page("start_here")
    assert "cbp_like" in _markdown(at) and "100,000 records" in _markdown(at)
    assert [b.label for b in at.button if b.key and b.key.startswith("guide_next")] == ["Next"]
    _next(at, 0)
    assert "P(r) =" in _markdown(at) and "T(EMP)" in _markdown(at)
    _next(at, 1)
    assert [m.label for m in at.metric] == ["Base loss", "Records split", "Largest record loss"]
    _next(at, 2)
    assert len(at.session_state["ledger"]) == 0  # nothing is released before the Run step's Next
    _next(at, 3)
    assert len(at.session_state["ledger"]) == 1  # one recorded release
    rel = at.session_state["run_release"]
    assert f"**{len(rel.answers):,}** noisy answers" in _markdown(at)
    captions = "\n".join(c.value for c in at.caption)
    assert "worst case ρ = unbounded" in _markdown(at) and "**Unbounded** means" in captions  # explained beside it
    key, html = at.session_state["guide_report"]
    assert html.startswith(b"<!DOCTYPE html") or b"<html" in html[:500]
    assert not [b for b in at.button if b.key and b.key.startswith("guide_next")]  # the last step has no Next
    at.run()  # the report is built once per release: a rerun builds nothing and charges nothing
    assert at.session_state["guide_report"][0] == key and len(at.session_state["ledger"]) == 1


def test_back_then_next_on_the_run_step_does_not_release_again():
    at = open_page("start_here")
    for i in range(4):
        _next(at, i)
    assert len(at.session_state["ledger"]) == 1
    at.button(key="guide_back_4").click().run()
    assert "seeded teaching run" in _markdown(at) and "Released already with these settings" in _markdown(at)
    _next(at, 3)
    assert len(at.session_state["ledger"]) == 1  # the same release: nothing charged twice


def test_the_preview_step_shows_public_levels_in_review_mode_and_a_typed_record_in_its_worked_example():
    at = open_page("start_here")
    at.session_state["mode"] = "review"
    at.session_state["guide_step"] = 2
    at.run()
    assert not at.exception, at.exception
    text = _markdown(at)
    assert "From the public formula" in text and not at.metric  # no real record's loss
    assert "m(r) =" in text and "P(r) =" in text  # the worked example, on a hypothetical record
    assert not [r for r in at.radio if r.key == "guide_we_pick"]  # no choice of a real record
    at.number_input(key="guide_we_EMP").set_value(1_000_000.0).run()
    assert "promises nothing useful" in "\n".join(c.value for c in at.caption)


def test_a_refused_release_keeps_the_run_step_and_says_what_to_fix():
    from .conftest import upload

    at = open_page("data")
    csv = ("acct,balance\n" + "".join(f"a{i},{i}\n" for i in range(1, 301))).encode()
    upload(at, "accounts.csv", csv)
    at.session_state["mode"] = "review"  # a secure release in review mode refuses thresholds computed from the data
    at.session_state["run_secure"] = True
    at.switch_page("app_pages/start_here.py").run()
    at.session_state["guide_step"] = 0
    at.run()
    assert "The table in use is **accounts.csv**: some records." in _markdown(at)  # review mode: no count
    assert "imitate the US Census" not in _markdown(at)
    at.session_state["guide_step"] = 3
    at.run()
    assert "A secure release: exact noise, unseeded." in _markdown(at)
    _next(at, 3)
    assert at.session_state["guide_step"] == 3 and len(at.session_state["ledger"]) == 0
    assert at.error and "threshold" in at.error[0].value.lower()
