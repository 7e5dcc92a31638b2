"""Study: export the whole app as a re-loadable config, load one back, download the report."""

from __future__ import annotations

from functools import partial

import streamlit as st
from streamlit.delta_generator import DeltaGenerator

from prdp_core.core.errors import PrdpError
from prdp_core.review import report as R
from prdp_core.review.review_boundary import produce
from ui import ledger_view, review, state, study_export, study_import
from ui import memory as umem
from ui import study_report as ustudy_report
from ui.common import code_expander, confidential, download_button, learn, md_escape, show_error


def _progress_line(status: DeltaGenerator, i: int, n: int, text: str) -> None:
    """Step i of n of a study run on a large dataset, written into its status box (``text`` may name a
    mechanism's label)."""
    status.write(f":material/progress_activity: {i + 1}/{n + 1}: {md_escape(text)}")


st.title("Study")
st.caption("Everything a review session needs to take home: the study as a config that loads back (here or in "
           "the `prdp` command line), a self-contained HTML report, the results and a script that reruns them.")
learn("**A study config** is a short YAML file: the data source and column roles, the policy (thresholds, budget "
      "function, specification, tiers), the workload, each mechanism with its parameters, the mode and the seed. "
      "It holds no data values — share it freely. Load it back to restore every page, or run it headless with "
      "`prdp run study.yaml`.")

ss = st.session_state
tab_export, tab_import, tab_report = st.tabs([":material/download: Export the study", ":material/upload: Load a study",
                                              ":material/summarize: Report"])

study = None
yaml_text = ""
try:
    study = study_export.export_study()
    yaml_text = produce("study config (YAML)", study, teaching=state.teaching()).decode("utf-8")
except PrdpError as err:
    with tab_export:
        show_error(err)

with tab_export:
    if study is not None:
        kinds = [m["kind"].replace("_", " ") for m in study.mechanisms]
        st.markdown(f"**Data:** {md_escape(study.data.describe())}  \n**Mode:** {study.mode}, seed {study.seed}  \n"
                    f"**Policy parts:** {', '.join(study.policy) or 'none yet'}  \n"
                    f"**Mechanisms:** {', '.join(kinds) or 'none yet (visit the Policy designer first)'}")
        for note in study_export.export_notes():
            st.warning(md_escape(note))
        if study.data.path is not None and study.data.engine != "memory":
            st.caption(f":material/database: The config reads **{md_escape(study.data.path)}** of the server's data "
                       f"folder with the {md_escape(study.data.engine)} engine (the records stay in the file): save "
                       "the config in that folder to run it with `prdp run`, or pass `--data PATH`. Loading it back "
                       "here reads the same path of the data folder.")
        elif study.data.path is not None:
            st.caption(f":material/info: The config names the data file **{md_escape(study.data.path)}**: keep it "
                       "next to the config (it is not part of the export).")
        download_button("Download the study config (YAML)", yaml_text.encode("utf-8"), file_name="study.yaml",
                        mime="application/x-yaml", key="study_dl_config", type="primary",
                        icon=":material/download:")
        with st.expander("Preview of the config", icon=":material/code:"):
            st.code(yaml_text, language="yaml")

with tab_import:
    st.markdown("Load a study config: every page takes its settings, the data source is loaded, pages the config "
                "does not mention return to their defaults. The privacy ledger of this session is kept, and so is "
                "review mode (a config in teaching mode does not leave it). A config that does not validate "
                "changes nothing.")
    c1, c2 = st.columns(2)
    c1.file_uploader("Study config (YAML)", type=["yaml", "yml"], key="study_upload")
    c2.file_uploader("Its data file (only for a study that reads a file)", key="study_data_upload",
                     help="CSV, TSV, Parquet, Excel, SAS, Stata or SPSS, as on the Data page.")
    st.button("Load this study", key="study_load", type="primary", on_click=study_import.on_import, args=("upload",))
    with st.expander("… or paste a config", icon=":material/content_paste:"):
        st.text_area("Study config (YAML)", key="study_paste", height=220)
        st.button("Load the pasted config", key="study_load_paste", on_click=study_import.on_import, args=("paste",))
    msg = ss.get("study_msg")
    if msg:
        (st.error if msg["kind"] == "error" else st.success)(msg["text"])
        if msg["kind"] == "error":
            st.caption(f"Nothing was changed: the active dataset is still **{md_escape(state.dataset().name)}**.")
        for note in msg.get("notes", []):
            st.info(md_escape(note))

with tab_report:
    teaching = state.teaching()
    if study is None:
        st.info("Fix the problem shown in the first tab to build a report.")
    elif not study.mechanisms:
        st.info("The study has no mechanism yet: design a policy (Policy designer) or visit a Policies / Release page.")
    else:
        run, missing = ustudy_report.recorded_run(study)
        st.markdown("The report renders the releases recorded in this session's ledger — the numbers the pages "
                    "showed — and adds the results table, the reproduction script and its notebook. Building it "
                    "releases nothing.")
        status_note = st.empty()
        if missing:
            status_note.caption(f"No recorded release yet of: {md_escape(', '.join(missing))} (run them on their "
                                "pages).")
        if not run.releases:
            status_note.info("No release of this study's mechanisms is recorded on the active dataset yet. Run them on "
                             "their pages, or run them all now: each release is charged to the session ledger.")
        label = "Build the report" if run.releases else "Run the study's mechanisms and build the report"
        if st.button(label, key="study_build", type="primary", icon=":material/summarize:"):
            try:
                if not run.releases:
                    umem.guard("report", columns=umem.dataset_columns(state.dataset()) * len(study.mechanisms))
                    on_engine = state.is_large()  # a large dataset: each mechanism's statistics in the engine
                    box = (st.status(f"Running the study on {review.count(state.dataset().n, 'records', hidden='the')}",
                                     expanded=True) if on_engine else st.spinner("Running the study…"))
                    with box as status:
                        say = partial(_progress_line, status) if status is not None else None
                        run = ustudy_report.run_and_record(study, say)
                        if status is not None:
                            status.update(label="Released and recorded", state="complete", expanded=False)
                    status_note.empty()
                ss["study_outputs"] = {
                    "key": (state.token(), yaml_text, ustudy_report.release_ids(run)),
                    "html": produce("report.html", run, teaching=teaching, config_text=yaml_text),
                    "results": produce("results.csv", run, teaching=teaching),
                    "budget": R.budget_table(run), "budget_csv": produce("budget.csv", run, teaching=teaching),
                    "script": produce("reproduce.py", run, teaching=teaching),
                    "notebook": produce("study.ipynb", run, teaching=teaching),
                    "releases": len(run.releases), "mode": study.mode, "how": R.mode_text(run.releases)}
            except PrdpError as err:
                show_error(err)
        out = ss.get("study_outputs")
        if out is not None and out["key"] == (state.token(), yaml_text, ustudy_report.release_ids(run)):
            st.success(f"Report built: {out['releases']} release(s), {out['mode']} mode.")
            st.caption(md_escape(out["how"]))
            if out["mode"] == "teaching":
                confidential("Teaching mode: the report and results hold true values and per-record loss "
                             "distributions. Switch to review mode (sidebar) for a report you can share.")
            else:
                st.caption(":material/visibility_off: Review mode: no true value and no per-record loss in the "
                           "report or the results.")
            st.dataframe(out["budget"], hide_index=True)
            download_button("Budget table (CSV)", out["budget_csv"], file_name="prdp_budget.csv",
                            mime="text/csv", key="study_dl_budget")
            d1, d2, d3, d4 = st.columns(4)
            download_button("Report (HTML)", out["html"], where=d1, file_name="prdp_report.html", mime="text/html",
                            key="study_dl_report", type="primary", icon=":material/download:")
            download_button("Results (CSV)", out["results"], where=d2, file_name="prdp_results.csv", mime="text/csv",
                            key="study_dl_results")
            download_button("Reproduction script (Python)", out["script"], where=d3, file_name="reproduce.py",
                            mime="text/x-python", key="study_dl_script")
            download_button("Notebook (Jupyter)", out["notebook"], where=d4, file_name="study.ipynb",
                            mime="application/x-ipynb+json", key="study_dl_notebook",
                            help="The reproduction script's code in cells, each after a short explanation.")
        elif out is not None:
            st.caption("The study or its recorded releases changed since the last report: build it again.")
    led = state.ledger()
    st.subheader("This session's privacy ledger")
    ledger_view.notice()
    if len(led):
        st.dataframe(review.ledger_summary(led), hide_index=True)
        ledger_view.totals()
        download_button("Ledger (JSON)", produce("session ledger (JSON)", led, teaching=teaching),
                        file_name="prdp_ledger.json", mime="application/json", key="study_dl_ledger")
        download_button("Ledger (CSV)", produce("session ledger (CSV)", led, teaching=teaching),
                        file_name="prdp_ledger.csv", mime="text/csv", key="study_dl_ledger_csv")
    else:
        st.caption("No release yet in this session.")

code_expander("""from prdp_core import report

study = report.load_config("study.yaml")       # the config downloaded above (ConfigError names a bad key)
run = report.run_study(study)                   # loads the data, runs every mechanism with its seed
report.write_outputs(run, "study-results")      # results.csv, budget.csv, ledger, report.html, reproduce.py,
                                                #   study.ipynb
# or from a shell:  prdp run study.yaml --out study-results""")
