"""The Concepts page's worked example, exercises and plain explanations; the Glossary page and each page's terms.

Teaching mode: the worked example follows a real record (by default the one with the largest loss) and its firm,
with numbers computed from the active policy and extreme values explained. Review mode never shows a real record's
loss: the example follows a record typed in. The exercises check the reader's answers."""

from __future__ import annotations

import numpy as np

from prdp_core.core import interpret
from prdp_core.core.loss_profile import format_loss
from prdp_core.core.splitting import split_counts

from .conftest import open_page


def _text(at) -> str:
    return "\n".join([m.value for m in at.markdown] + [c.value for c in at.caption])


def test_the_worked_example_follows_the_record_with_the_largest_loss_and_its_firm():
    at = open_page("concepts")
    assert at.radio(key="cc_we_pick").value == "largest"
    ds, pol = at.session_state["dataset"], at.session_state["policy"]
    losses = pol(ds.table)
    i = int(np.argmax(losses))
    row = ds.table.iloc[[i]]
    m = int(split_counts(row, pol.thresholds)[0])
    text = _text(at)
    assert f"So **m(r) = {m:,}**" in text and f"So **P(r) = {format_loss(float(losses[i]))}**" in text
    assert interpret.loss_guidance(float(losses[i]), 1e-6, pieces=m) in text  # the extreme value explained
    firm = ds.table[ds.table[ds.schema.owner_col] == row[ds.schema.owner_col].iloc[0]]
    assert f"holds {len(firm):,} record(s)" in text
    assert "Confidential" in text
    at.radio(key="cc_we_pick").set_value("row").run()
    at.number_input(key="cc_we_row").set_value(1).run()
    assert f"So **P(r) = {format_loss(float(losses[1]))}**" in _text(at)


def test_review_mode_follows_a_typed_record_and_never_a_real_one():
    at = open_page("concepts")
    at.session_state["mode"] = "review"
    at.run()
    assert not at.exception, at.exception
    assert not [r for r in at.radio if r.key == "cc_we_pick"]
    at.number_input(key="cc_we_EMP").set_value(100.0).run()
    at.number_input(key="cc_we_owner_n").set_value(2).run()
    pol = at.session_state["policy"]
    t = pol.thresholds.default()
    import pandas as pd

    row = pd.DataFrame([{**{c: "" for c in at.session_state["dataset"].schema.groups},
                         **{m: at.number_input(key=f"cc_we_{m}").value for m in t}}])
    p = float(pol(row)[0])
    text = _text(at)
    assert f"So **P(r) = {format_loss(p)}**" in text and "hypothetical owner** holds 2 record(s)" in text
    assert f"**{format_loss(2 * 2 * p)}**" in text  # J × the sum of the J records' losses


def test_the_exercises_check_answers_and_the_calculators_explain_their_numbers():
    at = open_page("concepts")
    at.number_input(key="ex_pieces").set_value(7).run()
    at.number_input(key="ex_guess").set_value(50).run()
    assert [s.value.split(".")[0] for s in at.success] == ["Right"]
    assert any("Not yet: 50" in w.value for w in at.warning)
    at.number_input(key="cc_rec_value").set_value(1.0).run()
    text = _text(at)
    g = interpret.record_guarantee(1.0, delta=1e-6, prior=0.01)
    assert "Why both numbers hold" in text and interpret.percent(g.accuracy) in text  # 85.36% beside 95.97%
    assert interpret.percent(g.posterior) in text and "is **not** an (ε, δ) promise" in text


def test_the_glossary_page_finds_terms_and_every_page_lists_its_own():
    at = open_page("glossary")
    assert any("**P(r)**" in m.value for m in at.markdown)
    at.text_input(key="glossary_find").set_value("Canonne").run()
    assert [m.value for m in at.markdown if m.value.startswith("- **")] == [
        m.value for m in at.markdown if "**CKS**" in m.value]
    at.switch_page("app_pages/run.py").run()
    terms = [e for e in at.sidebar.expander if e.label.startswith("Terms on this page")]
    assert terms and "**Φ̄**" in "\n".join(m.value for m in terms[0].markdown)
