"""A bare Streamlit app: the elements PrDP Explorer uses, with Streamlit's defaults and no content of the app.

The accessibility test (tests/e2e/test_accessibility.py) runs axe-core on its pages; what axe finds here is
Streamlit's own (the sectioned navigation's list markup, for instance) and is not held against the app. It has
no captions: the app chooses to write notices and introductions as captions, so their contrast is the app's.
"""

from __future__ import annotations

import pandas as pd
import plotly.graph_objects as go
import streamlit as st


def _page(title: str) -> None:
    st.title(title)
    st.markdown("Some text with **bold**, *italic* and `code`.")
    left, right = st.columns(2)
    left.subheader("Inputs")
    left.number_input("A number", min_value=0.0, value=10.0, key=f"num_{title}", help="A help text.")
    left.toggle("A switch", key=f"toggle_{title}", help="A help text.")
    left.selectbox("A choice", ["one", "two"], key=f"select_{title}")
    left.slider("A slider", 0.0, 1.0, 0.5, key=f"slider_{title}")
    left.radio("A radio", ["a", "b"], horizontal=True, key=f"radio_{title}")
    left.checkbox("A box", key=f"check_{title}")
    left.text_input("A text", key=f"text_{title}")
    right.button("A button", key=f"button_{title}")
    right.download_button("A download", b"x", file_name="x.txt", key=f"download_{title}", on_click="ignore")
    right.metric("A metric", "1.0", "0.1")
    right.info("An info box.", icon=":material/info:")
    right.warning("A warning box.")
    frame = pd.DataFrame({"a": [1.0, 2.0, 3.0], "b": ["x", "y", "z"]})
    tab1, tab2 = st.tabs(["First tab", "Second tab"])
    tab1.dataframe(frame, hide_index=True)
    tab2.data_editor(frame, key=f"editor_{title}", hide_index=True)
    with st.expander("An expander", icon=":material/table_rows:"):
        st.dataframe(frame, hide_index=True)
    fig = go.Figure(go.Scatter(x=[1, 2, 3], y=[3, 1, 2], name="a series"))
    fig.update_layout(title="A chart", height=300)
    st.plotly_chart(fig, key=f"chart_{title}")
    with st.sidebar:
        st.markdown("### A sidebar heading")
        st.markdown("**Bold** text  \nand a line")
        st.radio("Mode", ["first", "second"], key=f"mode_{title}", label_visibility="collapsed")
        st.number_input("Seed", min_value=0, step=1, key=f"seed_{title}")
        st.toggle("A sidebar switch", key=f"sidebar_toggle_{title}")


def _first() -> None:
    _page("First")


def _second() -> None:
    _page("Second")


def _third() -> None:
    _page("Third")


st.set_page_config(page_title="Bare", layout="wide")
st.navigation({"One": [st.Page(_first, title="First", default=True), st.Page(_second, title="Second")],
               "Two": [st.Page(_third, title="Third")]}).run()
