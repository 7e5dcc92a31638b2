"""Board: the room's policies side by side — submit yours, compare, load another's, and (for the
facilitator) pin the workshop dataset, set the board's mode, clear, archive and export it."""

from __future__ import annotations

from typing import Any

import streamlit as st

from prdp_core.board import summary as S
from prdp_core.board import workshop as W
from prdp_core.board.comparison import describe_reference
from prdp_core.charts.board import board_cdf_figure, public_functions_figure, tradeoff_figure
from prdp_core.core.errors import PrdpError
from prdp_core.review.review_boundary import produce, screen_frame
from ui import board as ub
from ui import board_pin, links, options, state
from ui.common import confidential, download_button, learn, md_escape, show_error
from ui.figures import show

st.title("Board")
st.caption("Every participant's policy for the same table, side by side: submit yours with a name and a reason, "
           "compare what each costs the records and buys in accuracy, and load any of them into your session.")
learn("**The board** holds each submitted policy as a study config (no data values) and a summary computed when it "
      "was submitted. Public columns follow from the policy alone (its function, budgets, the noise σ of each "
      "answer); the others are statistics of the records and are shown in teaching mode only.")

try:
    bs = ub.store()
    settings = bs.settings()
    entries = bs.entries()
except PrdpError as err:
    show_error(err)
    st.caption("The board's database is set by PRDP_BOARD_URL (or prdp app --board); by default it is "
               "board.sqlite in the workshop folder (PRDP_WORKSHOP_DIR).")
    st.stop()

review = ub.review_mode(settings)
delta = float(settings["delta"])
pin = settings["dataset"]
ub.message()

# --- the workshop dataset -----------------------------------------------------------------
if pin:
    if ub.uses_pin(pin):
        st.caption(f":material/push_pin: Workshop dataset: **{md_escape(W.describe_pin(pin))}** (your active dataset).")
    else:
        c1, c2 = st.columns([3, 1])
        c1.info(f"The facilitator pinned the workshop dataset: **{md_escape(W.describe_pin(pin))}**. Your active "
                f"dataset is **{md_escape(state.dataset().name)}**: switch to design and submit on the same records "
                "as everyone.")
        c2.button("Use the workshop dataset", key="board_use_pin", type="primary", on_click=ub.on_use_workshop_dataset)

# --- submit ---------------------------------------------------------------------------------
st.subheader("Submit your policy")
parts = ub.parts_available()
if not parts:
    st.info("You have no policy yet: design one on the Policy designer (or the Budget functions, Personalized DP "
            "or Analyst tiers page), then come back.")
else:
    c1, c2, c3 = st.columns([2, 3, 2])
    c1.text_input("Name", key="board_name", max_chars=120, placeholder="e.g. Cautious on big firms")
    c2.text_input("Why (one line)", key="board_rationale", max_chars=300,
                  placeholder="e.g. small firms pay the base loss; the largest 1% pay at most 20ρ")
    c3.selectbox("Policy", parts, key="board_part", format_func=lambda p: ub.PART_LABELS[p])
    st.button("Submit to the board", key="board_submit", type="primary", icon=":material/send:",
              on_click=ub.on_submit)
    st.caption(f"Submitted on your active dataset, **{md_escape(state.dataset().name)}**. Submitting the same policy "
               "again under the same name adds nothing.")
    if review:
        st.info("Review mode: a submission carries no error figures — they come from seeded runs of the mechanism on "
                "the records, a simulation made in teaching mode only.")

# --- the board --------------------------------------------------------------------------------
st.subheader(f"The board ({len(entries)} polic{'y' if len(entries) == 1 else 'ies'})")
if review:
    why = "the facilitator's setting" if settings.get("mode") == "review" else "your session"
    st.caption(f":material/visibility_off: Review mode ({why}): only public quantities — each policy's function, "
               "budgets and the analytic noise of its answers. No statistic of the records is shown.")
else:
    confidential("Loss quantiles, shares above the base loss, owner losses and errors describe the real records.")
if not entries:
    st.caption("No policy on the board yet.")
else:
    own = ub.mine(entries)
    shown: dict[str, Any] = {"delta": delta, "mine": own}
    frame = screen_frame(produce("board table (screen)", entries, teaching=not review, compact=True, **shown))
    st.dataframe(ub.styled(frame), hide_index=True, key="board_table", width="stretch",
                 column_config=ub.table_columns(frame))
    st.caption(f"(ε, δ) columns convert zCDP losses at the workshop's δ = {delta:g} (Canonne–Kamath–Steinke); "
               "pure-ε policies are shown as they are. Each policy's function, budgets, σ and rationale: under "
               "*Details* below.")
    if not review and (basis := describe_reference(entries)):
        st.caption(f"Errors compared like with like: the {md_escape(basis)}. A policy measured otherwise is marked "
                   "*not comparable* and kept off the Pareto front.")
    ids = [e.id for e in entries]
    names = {e.id: f"#{e.id} {e.name}" + (" (yours)" if e.id in own else "") for e in entries}
    if st.session_state.get("board_pick") not in ids:
        st.session_state["board_pick"] = ids[-1]
    c1, c2, c3 = st.columns([3, 1, 1])
    c1.selectbox("Policy", ids, key="board_pick", format_func=lambda i: names[i], label_visibility="collapsed")
    c2.button("Load this policy", key="board_load", icon=":material/download:", on_click=ub.on_load,
              help="Into your own session: the other pages keep their settings; your ledger is kept.")
    c3.button("Withdraw", key="board_withdraw", icon=":material/delete:", on_click=ub.on_withdraw,
              help="Only your own entries.")
    picked = next(e for e in entries if e.id == st.session_state["board_pick"])
    with st.expander(f"Details and each answer's error: {md_escape(names[picked.id])}",
                     icon=":material/query_stats:"):
        full = screen_frame(produce("board table (screen)", entries, teaching=not review, **shown))
        # a dataframe, not st.table, which renders Markdown in its cells: names and rationales are user text
        st.dataframe(ub.details(full, picked.id), hide_index=True)
        if note := ub.extreme_note(picked, review):
            st.info(f"**Its largest record loss.** {md_escape(note)}", icon=":material/info:")
        queries = S.query_table(picked, review=review)
        if queries.empty:
            st.caption("No per-answer figures for this policy.")
        else:
            st.dataframe(queries, hide_index=True)


@st.fragment
def charts() -> None:
    """The board's charts: they rerun alone when their toggles change."""
    policies = S.splitting_policies(entries)
    measures = S.measures_of(policies)
    if not review:
        c1, c2 = st.columns([1, 1])
        who = c1.radio("Losses of", ["records", "owners"], horizontal=True, key="board_cdf_who")
        view = c2.radio("View", list(options.POLICY_VIEWS), horizontal=True, key="board_cdf_view",
                        format_func={"zoom": "CDF, zoomed", "cdf": "CDF", "tail": "share above (log)"}.get)
        series, unit = S.cdf_series(entries, owners=who == "owners", delta=delta)
        ch1, ch2 = st.columns(2)
        if series:
            show(board_cdf_figure(series, unit=unit, who=who, view=view), key="board_cdf", where=ch1)
        else:
            ch1.info("No owner losses: the policies' datasets have no owner column." if who == "owners" else
                     "No loss distribution to show.")
        pts = S.tradeoff_points(entries, delta)
        if len(pts):
            show(tradeoff_figure(pts, delta=delta), key="board_tradeoff", where=ch2)
            front = ", ".join(f"#{i} {n}" for i, n in zip(pts.loc[pts["pareto"], "#"], pts.loc[pts["pareto"], "name"]))
            ch2.caption(f"On the Pareto front (no policy is better on both): {md_escape(front)}.")
        off = [f"#{e.id} {e.name}" for e in entries if e.id not in set(pts["#"])]
        if off:
            ch2.caption(f"Not on this chart (no error measured like the others'): {md_escape(', '.join(off))}.")
    if policies and measures:
        m = st.selectbox("Public policy functions of", measures, key="board_fn_measure")
        show(public_functions_figure(policies, m), key="board_public_fn")


if entries:
    charts()

# --- participant code -------------------------------------------------------------------------------
with st.expander("Your participant code", icon=":material/badge:"):
    st.markdown(f"Your code: `{ub.participant()}`. Keep it: after a reconnect, type it here to withdraw your "
                "entries. Whoever has it can withdraw them.")
    c1, c2 = st.columns([3, 1])
    c1.text_input("An earlier code", key="board_code_input", type="password")
    c2.button("Use this code", key="board_use_code", on_click=ub.on_use_code)

# --- facilitator --------------------------------------------------------------------------------------
unlocked = ub.facilitator_key() is not None
with st.expander("Facilitator", icon=":material/admin_panel_settings:", expanded=unlocked):
    if W.facilitator_key() is None:
        st.caption("Facilitator actions are off on this server: start it with PRDP_FACILITATOR_KEY set to a "
                   "passphrase.")
    elif not unlocked:
        c1, c2 = st.columns([3, 1])
        c1.text_input("Facilitator key", key="board_key_input", type="password")
        c2.button("Unlock", key="board_unlock", on_click=ub.on_unlock)
    else:
        st.button("Lock", key="board_lock", on_click=ub.on_lock)
        st.markdown("**Workshop dataset** (everyone designs and submits on it)")
        board_pin.controls(st.container(key="board_pin_box"))
        st.markdown("**Board settings**")
        c1, c2, c3 = st.columns([2, 2, 1])
        c1.radio("Board mode", ["teaching", "review"], key="board_set_mode", horizontal=True,
                 index=["teaching", "review"].index(settings["mode"]),
                 help="Review: every viewer sees public quantities only. Teaching: each viewer's own mode decides.")
        c2.select_slider("Workshop δ", options=list(options.DELTAS), value=delta if delta in options.DELTAS else 1e-6,
                         key="board_set_delta", format_func=lambda d: f"{d:.0e}")
        c3.button("Save", key="board_save", on_click=ub.on_settings)
        st.markdown("**The board**")
        c1, c2, c3 = st.columns([2, 2, 1])
        c1.text_input("Title of the next board", key="board_archive_title", value="Workshop board")
        c2.button("Archive and start a new board", key="board_archive", on_click=ub.on_archive)
        c3.button("Remove the picked entry", key="board_remove", on_click=ub.on_remove, disabled=not entries)
        c1, c2 = st.columns([2, 2])
        c1.checkbox("Yes, delete every entry", key="board_clear_confirm")
        c2.button("Clear the board", key="board_clear", on_click=ub.on_clear)
        archived = [b for b in bs.boards() if b.archived_at is not None]
        if archived:
            st.caption("Archived boards (prdp board list --board ID): " + md_escape(", ".join(
                f"#{b.id} {b.title} ({b.entries})" for b in archived)))
        st.markdown("**Export**")
        st.button("Build the export", key="board_build_export", on_click=ub.on_export, args=(review,),
                  help="A CSV of the table and one HTML report comparing every policy; they follow the board's mode.")
        out = st.session_state.get("board_export")
        if out:
            d1, d2 = st.columns(2)
            download_button("Board (CSV)", out["csv"], where=d1, file_name="prdp_board.csv", mime="text/csv",
                            key="board_dl_csv")
            download_button("Board report (HTML)", out["html"], where=d2, file_name="prdp_board.html",
                            mime="text/html", key="board_dl_html", type="primary")
            st.caption(f"{out['n']} polic{'y' if out['n'] == 1 else 'ies'}, "
                       f"{'review' if out['review'] else 'teaching'} mode.")

links.share_box()
