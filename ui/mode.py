"""The session's mode is sticky: review mode is left for teaching mode only by an explicit, confirmed choice.

Review mode hides every statistic of the records (:mod:`ui.review`); teaching mode shows them. Entering
review mode is always allowed at once (it only hides more). Leaving it is one action of the reader: choosing
teaching mode in the sidebar asks for a confirmation (:func:`on_choice`, :func:`confirmation`), and nothing
else switches a review session to teaching — not a study import, a share link, a board entry loaded into the
session, nor a restored session (each goes through :func:`ui.study_import.import_state`, which keeps review mode by
:func:`imported` and says so).

Keys in ``st.session_state``: ``mode`` (the sidebar's radio), ``mode_confirm`` (a choice of teaching mode
waits for its confirmation).
"""

from __future__ import annotations

import streamlit as st

#: The key of the sidebar's mode radio.
KEY = "mode"
#: Set while a choice of teaching mode (made in review mode) waits for its confirmation.
CONFIRM_KEY = "mode_confirm"

#: The note of an import that would have left review mode.
KEPT_NOTE = ("This session stays in review mode: the study's config is in teaching mode, but an import never "
             "shows true values. To see them, choose teaching mode in the sidebar and confirm.")


def on_choice() -> None:
    """Callback of the sidebar's mode radio. A choice of teaching mode made in review mode is held back (the
    session stays in review) until :func:`confirm_teaching`; a choice of review mode applies at once."""
    ss = st.session_state
    if ss.get(KEY) == "teaching":  # the radio had review: the two modes are its only options
        ss[KEY] = "review"
        ss[CONFIRM_KEY] = True
    else:
        ss.pop(CONFIRM_KEY, None)


def confirm_teaching() -> None:
    """Callback of the confirmation's button: leave review mode for teaching mode."""
    st.session_state.pop(CONFIRM_KEY, None)
    st.session_state[KEY] = "teaching"


def stay_in_review() -> None:
    """Callback of the confirmation's other button: keep review mode."""
    st.session_state.pop(CONFIRM_KEY, None)


def confirmation() -> None:
    """In the sidebar, under the mode radio: the question a choice of teaching mode asks in review mode."""
    ss = st.session_state
    if not ss.get(CONFIRM_KEY) or ss.get(KEY) != "review":
        ss.pop(CONFIRM_KEY, None)
        return
    st.warning("**Show the true values?** Teaching mode shows every statistic of the records that review mode "
               "hides: true answers, errors, per-record losses, record counts, profiles and rows.",
               icon=":material/visibility:")
    yes, no = st.columns(2)
    yes.button("Switch to teaching", key="mode_confirm_teaching", on_click=confirm_teaching, type="primary")
    no.button("Stay in review", key="mode_stay_review", on_click=stay_in_review)


def imported(config_mode: str) -> tuple[str, str | None]:
    """The mode of the session after loading a config whose mode is ``config_mode`` (a study import, a share link,
    a board entry, a restored session), and the note to show when it differs from the config's: review mode is
    kept, whatever the config says."""
    if st.session_state.get(KEY, "teaching") == "review" and config_mode != "review":
        return "review", KEPT_NOTE
    return config_mode, None


__all__ = ["CONFIRM_KEY", "KEPT_NOTE", "KEY", "confirm_teaching", "confirmation", "imported", "on_choice",
           "stay_in_review"]
