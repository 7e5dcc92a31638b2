"""Data page: pick a sample or upload a table, map column roles, profile the measures."""

from __future__ import annotations

from typing import Any

import streamlit as st

import prdp_core
from prdp_core import charts
from prdp_core.core.errors import PrdpError
from prdp_core.core.wording import readable
from prdp_core.data.dataset import GENERATED_ID, MISSING_GROUP, TableCheck
from prdp_core.study.config import MAX_SHIFT
from ui import data as udata
from ui import large, large_roles, review, state
from ui.common import code_expander, confidential, guarded, learn, md_escape, show_error
from ui.figures import show
from ui.reproduce import snippet_code

st.title("Data")
st.caption("Pick a sample, upload a table or connect a large one from the server's data folder, say which columns "
           "are measures, groups and owners, and see how skewed the measures are.")
st.page_link("app_pages/start_here.py", label="New here? Take the five-step guided path", icon=":material/flag:")
learn("**Records and measures.** A *record* is the unit whose privacy is protected (an establishment, an "
      "account). *Measures* are the non-negative numbers a policy is about (employees, payroll, balance). "
      "Skewed measures — a few records holding most of the total — are why per-record policies exist: any "
      "single clipping bound is either far too large (noise) or far too small (bias).")

large_roles.switch_tab()  # the tab a finished step of the large-dataset flow opens
busy = large_roles.busy()  # a step of the large-dataset flow runs at the end of this run: its buttons are disabled
prof_tab, src_tab, up_tab, large_tab, roles_tab = st.tabs(list(udata.TABS), key=udata.TAB_KEY,
                                                           on_change="rerun")

with prof_tab:
    profile_box = st.container()  # "Use this table" on a large dataset: prepared and profiled here, with progress
    ds = state.dataset()
    st.subheader(f"Profile of {md_escape(ds.name)}")
    udata.message("profile")
    for line in udata.shift_lines(ds, state.source()):
        st.markdown(f":material/add_circle: **{md_escape(line)}**")
    if review.shows_records("measure profile"):
        for note in ds.notes:
            st.caption(f":material/info: {md_escape(note)}")
        prof = state.profile()
        confidential()
        tbl = prof.table()[["count", "min", "median", "p90", "p99", "max", "mean", "skewness", "top1_share"]]
        fmt: dict[str, Any] = {"count": "{:,.0f}", "min": readable, "median": readable, "p90": readable,
                               "p99": readable, "max": readable, "mean": readable, "skewness": "{:,.2f}",
                               "top 1% share": "{:.1%}"}
        if ds.shifts:  # values are on the shifted scale: the table says by how much (the lines above: why)
            tbl.insert(0, "shift", [ds.shifts.get(m, 0.0) for m in tbl.index])
            fmt["shift"] = "+{:,.15g}"
        st.dataframe(tbl.rename(columns={"top1_share": "top 1% share"}).style.format(fmt))
        for m, p in prof.measures.items():
            ratio = f"{p.max / p.median:,.0f}× the median" if p.median > 0 else "far above the median (which is 0)"
            st.markdown(f"- **{md_escape(m)}**: the top 1% of records hold **{p.top1_share:.1%}** of the total; the "
                        f"largest record is {ratio}.")
        learn("**Reading the profile.** Skewness far above 1 and a top-1% share far above 1% signal a heavy tail. "
              "The Lorenz curve bows away from the diagonal the more the total is concentrated in few records.")
        c1, c2 = st.columns(2)
        with c1:
            m = st.selectbox("Histogram of", list(prof.histograms), key="profile_measure")
            show(charts.histogram_figure(prof.histograms[m], m), key="hist_chart")
        with c2:
            show(charts.lorenz_figure(prof.lorenz), key="lorenz_chart")

with src_tab:
    names = prdp_core.data.samples.names()
    c1, c2, c3 = st.columns([3, 1, 1])
    name = c1.selectbox("Sample", names, format_func=lambda n: prdp_core.data.samples.info(n).title, key="sample_name")
    meta = prdp_core.data.samples.info(name)
    if meta.kind == "synthetic":
        c2.number_input("Records", min_value=1, max_value=meta.max_n or 10_000_000, value=meta.default_n or 1000,
                        step=10_000, key=f"sample_n_{name}", disabled=meta.default_n == meta.max_n)
    else:
        c2.number_input("Rows to sample (0 = all)", min_value=0, value=0, step=1000, key=f"sample_n_{name}")
    c3.number_input("Seed", min_value=0, value=0, step=1, key="sample_seed")
    st.markdown(f"{meta.description}  \n*Source:* {meta.source}")
    if meta.properties:
        st.markdown("\n".join(f"- {p}" for p in meta.properties))
    st.button("Load sample", type="primary", key="load_sample", on_click=udata.on_load_sample)
    udata.message("samples")

with up_tab:
    st.markdown("CSV or TSV (delimiter detected), Parquet, Excel (.xlsx), SAS (.sas7bdat, .xpt), Stata (.dta) or "
                "SPSS (.sav; value labels become the group names), up to "
                f"{prdp_core.core.limits.MAX_UPLOAD_MB} MB. The active dataset stays in place until the new one "
                "is checked.")
    st.file_uploader("Upload a table", key="upload", on_change=udata.on_upload,
                     help="CSV, TSV, TXT, Parquet, XLSX, SAS7BDAT, XPT, DTA, SAV")
    udata.message("upload")

with large_tab:
    st.markdown("A table too large to upload, read **in place** from the server's data folder by an engine: nothing "
                "is uploaded, the records stay in the file and every statistic is computed there. Parquet or CSV "
                "files, a folder (or glob) of them, or a table of a DuckDB database. SAS, Stata and SPSS files "
                "are read whole into memory instead, under the upload limits.")
    st.caption(f":material/folder: Data folder: `{md_escape(large.folder())}` (set by the server: PRDP_DATA_DIR). "
               "Nothing outside it can be named.")
    names = large.sources()
    c1, c2, c3 = st.columns([3, 2, 1])
    c1.selectbox("File or folder of the data folder", names, index=None, key="large_file",
                 placeholder="(the data folder is empty)" if not names else "Choose a file or folder")
    if str(st.session_state.get("large_file") or "").lower().endswith(".duckdb"):
        with guarded():
            c2.selectbox("Table", large.database_tables(st.session_state["large_file"]), key="large_table")
    c3.selectbox("Engine", large.engine_names(), key="large_engine", help=large.engine_help())
    st.text_input("… or a path, folder or glob inside the data folder", key="large_path",
                  placeholder="e.g. parts/*.parquet or agency.duckdb#establishments")
    st.button("Connect", type="primary", key="large_connect_go", on_click=large_roles.on_connect, disabled=busy)
    udata.message("large")

with roles_tab:
    roles_box = st.container()  # "Connect" and the roles' check of a large dataset run here, with progress
    if st.session_state.get("raw") is None and state.source().get("kind") == "sample":
        src = state.source()
        udata.raw_from_sample(src["name"], src.get("n"), int(src.get("seed", 0)))
    if st.session_state.get("raw") is None and large.is_large():
        with guarded():
            large_roles.raw_from_source(state.source())
    raw = st.session_state["raw"]
    df, rid, guess = raw["df"], raw["id"], raw["schema"]
    cols = list(df.columns)
    udata.message("roles")
    learn("**Roles.** The *record id* names the privacy unit. *Measures* are split or clipped by the policy. "
          "*Groups* are filters and group-by keys (copied to every split piece). An *owner* (e.g. a firm) "
          "owns several records; its loss follows from group privacy.")
    if raw.get("pending"):
        st.warning(f"**{md_escape(raw['name'])} is not in use yet.** Its roles were guessed from the column names "
                   "and contents — a row number can look like a measure, a code like a group. Check each role, "
                   f"then press **{'Check and use' if raw.get('large') else 'Use'} this table**; until then every page "
                   "works on "
                   f"**{md_escape(state.dataset().name)}**.", icon=":material/fact_check:")
    st.caption(f"Table **{md_escape(raw['name'])}**: {review.count(raw.get('n', len(df)), 'rows')} × {len(cols)} "
               "columns. Roles were guessed from the data (or documented, for samples); edit them as needed, then "
               "press *Use this table*." + (" A large dataset's roles are guessed from a uniform sample of its rows; "
                                            "its check counts every row, in the engine." if raw.get("large")
                                            else ""))
    with st.expander("Preview of sampled rows" if raw.get("large") else "Preview of the first rows", expanded=False):
        if review.shows_records("table rows"):
            confidential()
            st.dataframe(prdp_core.data.preview(df), hide_index=True)  # long cells cut
    c1, c2 = st.columns(2)
    id_options = [None] + cols
    c1.selectbox("Record id", id_options, index=id_options.index(guess.id_col),
                 format_func=lambda c: f"(generate from row number: {GENERATED_ID})" if c is None else c,
                 key=f"map_id_{rid}", disabled=busy)
    c2.selectbox("Owner id (optional)", id_options, index=id_options.index(guess.owner_col),
                 format_func=lambda c: "(none)" if c is None else c, key=f"map_owner_{rid}", disabled=busy)
    id_like = set(large_roles.id_like(raw)) - set(guess.measures)  # a measure given (a study, a restore) stays offered
    st.multiselect("Measures (numeric, non-negative)", [c for c in cols if c not in id_like],
                   default=list(guess.measures), key=f"map_measures_{rid}", disabled=busy)
    st.multiselect("Groups (filters / group-by keys)", cols, default=list(guess.groups), key=f"map_groups_{rid}",
                   disabled=busy)
    schema = udata.schema_from_widgets(rid)
    chk: TableCheck | None
    try:
        chk = udata.check_raw(raw, schema)
    except PrdpError as err:
        show_error(err)
        chk = None
    if chk is None and raw.get("large"):
        st.caption(f":material/fact_check: {large_roles.UNCHECKED}")
    if chk is not None:
        show_counts = review.shows_records("rows to fix")
        if chk.non_numeric:
            bad = next(mi for mi in chk.measures if mi.non_numeric)
            examples = (f" (e.g. {md_escape(', '.join(repr(x) for x in bad.non_numeric_examples))})"
                        if show_counts else "")
            st.warning(f"Measure **{md_escape(bad.column)}** has {review.count(bad.non_numeric, 'value(s)')} that "
                       f"are not numbers{examples}.")
            st.checkbox("Treat non-numeric values as missing", key=f"fix_nonnum_{rid}", disabled=busy)
        n_missing = chk.rows_with_bad if st.session_state.get(f"fix_nonnum_{rid}") else chk.rows_with_missing
        if n_missing:
            st.warning(f"{review.count(n_missing, 'row(s)')} have a missing, empty or infinite measure value.")
            st.checkbox("Drop these rows" if not show_counts else f"Drop these {n_missing:,} rows",
                        key=f"fix_missing_{rid}", disabled=busy)
        if chk.negative:
            desc = md_escape(", ".join(f"{c} ({review.count(k, 'rows')})" for c, k in chk.negative.items()))
            st.warning(f"Negative values in {desc}. The papers assume non-negative measures.")
            st.radio("Negative values", ["reject", "shift"], key=f"fix_neg_{rid}", horizontal=True, disabled=busy,
                     format_func={"reject": "Reject (fix the file)",
                                  "shift": "Add a public constant to every value of each such measure"}.get)
            if st.session_state.get(f"fix_neg_{rid}") == "shift":
                st.caption("The constant c you type is added to every value of the measure — nothing else: "
                           "relative differences are kept, a sum over n records moves by n × c, and thresholds "
                           "apply to the shifted values. c must be **public** — a documented lower bound of the "
                           "measure with its sign reversed (a lower bound of −1,000 gives c = 1,000): it enters "
                           "every released sum, and a constant read off the smallest record would reveal that "
                           "record. It must be at least minus the smallest value, so that no value stays negative.")
                cols_sh = st.columns(max(1, len(chk.negative)))
                for i, c in enumerate(chk.negative):
                    cols_sh[i].number_input(f"Public constant added to {md_escape(c)}", min_value=0.0,
                                            max_value=MAX_SHIFT, value=None, format="%g", placeholder="e.g. 1000",
                                            key=udata.shift_key(rid, c), disabled=busy)
                    if show_counts:
                        mn = next(mi.minimum for mi in chk.measures if mi.column == c)
                        cols_sh[i].caption(f":material/lock: Smallest {md_escape(c)} in this table: {mn:,.15g} "
                                           "(confidential)")
        if chk.missing_groups:
            desc = md_escape(", ".join(f"{c} ({review.count(k, 'rows')})" for c, k in chk.missing_groups.items()))
            st.warning(f"Missing or blank values in the group column(s) {desc}: a release grouped by such a column "
                       "is refused.")
            st.checkbox(f"Put them in a group of their own, '{MISSING_GROUP}'", key=f"fix_missgroup_{rid}",
                        disabled=busy)
        if chk.duplicate_ids or chk.missing_ids:
            st.warning(f"The record id **{md_escape(schema.id_col)}** has "
                       f"{review.count(chk.duplicate_ids + chk.missing_ids, 'duplicate or missing value(s)')}. If it "
                       "identifies an owner of several records, map it as the owner.")
            st.checkbox("Generate ids from row numbers instead", key=f"fix_dup_{rid}", disabled=busy)
    if chk is not None or raw.get("large"):
        st.button("Use this table" if chk is not None else "Check and use this table", type="primary",
                  key=f"apply_{rid}", on_click=udata.on_apply, args=(rid,), disabled=busy)
    large_roles.way_on(raw, udata.on_apply)

code_expander(snippet_code("data"))
large_roles.run_pending(profile_box, roles_box)  # the step a button asked for, after the page is drawn
