"""Streamlit-side helpers shared by the pages: session state, sidebar, common widgets.

Nothing here computes privacy math: that is prdp_core's job. These helpers keep the
pages thin and consistent (error display, "learn" notes, reproduce-in-Python code).
"""
