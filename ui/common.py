"""Small widgets every page uses: errors, learn notes, confidentiality notes, code expander."""

from __future__ import annotations

import math
import re
from contextlib import contextmanager
from typing import Any, Iterator

import streamlit as st

from prdp_core.core.errors import PrdpError

#: Characters Markdown, GitHub-flavoured Markdown, KaTeX or HTML give a meaning to wherever they stand (CommonMark
#: lets any ASCII punctuation be escaped with a backslash).
_MD_SPECIAL = re.compile(r"([\\`*\[\]<>&$|~#{}!])")
#: Underscores that can open or close emphasis (not those inside a word, such as snake_case names).
_MD_UNDERSCORE = re.compile(r"(?<![0-9A-Za-z])_|_(?![0-9A-Za-z])")
#: A list marker or numbered-list marker at the start of the text.
_MD_LEADING = re.compile(r"^(\s*)([-+]|\d+[.)])(?=\s|$)")
#: A colon that can start a Streamlit directive or shortcode (:red[…], :material/icon:, :smile:) or an
#: autolink (http://…): followed by a word character, '+', '-' or '/'.
_MD_COLON = re.compile(r":(?=[\w+/-])")
#: The start of a bare-URL autolink of GitHub-flavoured Markdown.
_MD_WWW = re.compile(r"(?i)\b(www)\.")


def md_escape(text: Any) -> str:
    """User text (a column name, group value, file name, expression, label) made safe to put into
    anything Streamlit renders as Markdown: ``st.markdown``/``caption``/``info``/``error``…, widget
    labels, ``help=``, expander and tab labels, metric labels.

    Markdown and HTML metacharacters are backslash-escaped, so ``![m](http://host/x.png)`` shows as
    that text instead of loading an image, ``<img …>`` stays text and ``**b**``, ``_i_`` and ``$x$``
    are not formatted; a zero-width space after a colon that could start a Streamlit directive or
    shortcode (``:red[…]``, ``:material/icon:``, ``:smile:``) or a URL breaks them, as one inside
    ``www.`` breaks bare-URL autolinks; line breaks become spaces. What the reader sees is the text.
    """
    s = " ".join(str(text).splitlines())
    s = _MD_SPECIAL.sub(r"\\\1", s)
    s = _MD_UNDERSCORE.sub(r"\\_", s)
    s = _MD_LEADING.sub(lambda m: m.group(1) + (m.group(2)[:-1] + "\\" + m.group(2)[-1]
                                                 if m.group(2)[-1] in ".)" else "\\" + m.group(2)), s)
    s = _MD_COLON.sub(":\u200b", s)
    return _MD_WWW.sub("\\1\u200b.", s)


def show_error(err: PrdpError) -> None:
    """Show an engine error as a message the user can act on (never a traceback)."""
    st.error(f"**{err.title}.** {md_escape(err)}")


@contextmanager
def guarded(what: str = "") -> Iterator[None]:
    """Run a block; show :class:`PrdpError` as a message and keep the rest of the page."""
    try:
        yield
    except PrdpError as err:
        show_error(err)


def learn(text: str) -> None:
    """A short explanation shown when the sidebar's "learn" toggle is on."""
    if st.session_state.get("learn"):
        st.info(text, icon=":material/school:")


def confidential(text: str = "") -> None:
    """Mark numbers that describe real records (confidential; for the designer only)."""
    st.caption(":material/lock: **Confidential:** these values describe real records. They are shown to the "
               "policy designer only and are left out of review-mode exports." + (f" {text}" if text else ""))


def download_button(label: str, data: bytes | str, *, where: Any = None, **kwargs: Any) -> None:
    """A download button (in ``where``, default the page) whose click does not rerun the app.

    Streamlit serves the payload from its media file store, and a click that reruns the session
    first drops the session's references to its files; when other sessions finish two runs before
    the browser's request arrives (a busy server), the file is deleted and the browser cancels the
    download. With ``on_click="ignore"`` the click only downloads: the file stays referenced."""
    (where if where is not None else st).download_button(label, data, on_click="ignore", **kwargs)


def code_expander(code: str, label: str = "Reproduce in Python") -> None:
    """The prdp_core code that reproduces what the page shows."""
    with st.expander(label, icon=":material/code:"):
        st.code(code.strip() + "\n", language="python")


def seeded_notice(seed: int) -> None:
    """Say that a run is seeded: reproducible, for teaching and review, never a real release."""
    st.caption(f":material/science: Seeded run (seed {seed}): reproducible and meant for teaching and review, "
               "not for a real release.")


def mode_notice(secure: bool, seed: int, detail: str) -> None:
    """Say which mode produced a release: secure (``detail``: what is certified) or a seeded teaching run."""
    if secure:
        from prdp_core.core.secure import mode_label

        st.caption(f":material/lock: {mode_label(True)}: {detail}; not reproducible.")
    else:
        seeded_notice(seed)




def scale_step(value: Any) -> float:
    """The step of a number input that fits the scale of ``value``: one unit of its second significant digit
    (1,234 → 100, 37 → 1, 0.37 → 0.01), so an arrow key changes it by 1–10% whatever its magnitude; 1 for zero
    or a value that is not a finite number."""
    try:
        v = abs(float(value))
    except (TypeError, ValueError):
        return 1.0
    if not math.isfinite(v) or v == 0:
        return 1.0
    return float(10.0 ** (math.floor(math.log10(v)) - 1))
