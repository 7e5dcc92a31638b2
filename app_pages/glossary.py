"""Glossary: every symbol and term the pages use, in plain words, with the pages that use it."""

from __future__ import annotations

import streamlit as st

from ui import glossary
from ui.common import md_escape

st.title("Glossary")
st.caption("Every symbol and term the pages use, in plain words. Each page lists its own terms in the sidebar "
           "(*Terms on this page*).")
find = st.text_input("Find a term", key="glossary_find", placeholder="e.g. ρ, P(r), CKS, base loss")
shown = glossary.matching(find)
if not shown:
    st.info(f"No term matches “{md_escape(find)}”. Clear the box to see them all.")
for term in shown:
    st.markdown(glossary.entry(term) + "  \n" + glossary.used_on(term))
