"""Run: release the active policy's workload, see answers, errors, the ledger and realized losses."""

from __future__ import annotations

import streamlit as st

from prdp_core.charts.policy import loss_cdf_figure
from prdp_core.charts.tradeoffs import answers_figure
from prdp_core.core.errors import PrdpError
from prdp_core.core.provenance import data_derived
from prdp_core.core.secure import mode_label
from prdp_core.review.review_boundary import produce
from ui import common, ledger_view, memory, review, state
from ui import group_keys as gkeys
from ui import legacy_sdc as legacy_view
from ui import policy_designer as pstate
from ui import run as rstate
from ui.common import code_expander, confidential, download_button, learn, md_escape, seeded_notice, show_error
from ui.figures import show
from ui.reproduce import snippet_code

st.title("Run")
st.caption("Release the workload of the active policy with unit splitting and Gaussian noise.")
learn("**What a release does.** Each SUM is computed on the split table (the pieces add up to the same total) with "
      "Gaussian noise scaled to the splitting threshold; COUNTs use COUNT DISTINCT before splitting. Every answer "
      "comes with its noise σ and a 95% interval. The *realized* loss of a record is what this very release revealed "
      "about it — always at most its policy loss.")

ds = state.dataset()
pol = pstate.ensure_policy()
teaching = state.teaching()
st.markdown(f"**Active policy** (edit it on the Policy designer page): {md_escape(pol.describe())}")
from_data = pstate.flagged_thresholds(pol)
if from_data:
    single = pol.thresholds.as_dict()["*"] if pol.thresholds.group_col is None else {}
    st.warning("**Thresholds computed from the confidential data:** " + pstate.flagged_text(pol)
               + ". Teaching runs may use them (the ledger and the answers CSV say so); a **secure release in "
                 "review mode refuses them**. Type public values in below, or on the Policy designer page.",
               icon=":material/lock:")
    with st.expander("Type public thresholds", icon=":material/edit:", expanded=rstate.run_error() is not None):
        if single:
            st.caption("Values fixed from public knowledge (published statistics, a documented bound, public or "
                       "synthetic data) — not read off these records. They replace the flagged thresholds.")
            pcols = st.columns(min(3, len(from_data)))
            for i, m in enumerate(from_data):
                pcols[i % len(pcols)].number_input(f"Public T({md_escape(m)})", min_value=0.0, value=float(single[m]),
                                                   step=common.scale_step(single[m]), format="%g", key=f"run_pub_{m}")
            st.button("Use these public thresholds", key="run_pub_apply", on_click=rstate.on_type_public,
                      args=(list(from_data),))
        else:
            st.caption("Per-group thresholds: type the public values into the thresholds table on the Policy "
                       "designer page (an edited value is no longer flagged).")
with st.expander(f"Workload: {len(pol.workload.queries)} quer{'y' if len(pol.workload.queries) == 1 else 'ies'}"):
    st.dataframe(pstate.workload_frame(pol), hide_index=True)
q_names = [f"{i + 1}. {q.name()}" for i, q in enumerate(pol.workload.queries)]
if st.session_state.get("run_queries_of") != q_names or "run_queries" not in st.session_state:
    # a new workload (or the page opened afresh): release all of it by default
    st.session_state["run_queries_of"] = q_names
    st.session_state["run_queries"] = list(range(len(q_names)))
st.multiselect("Queries to release", list(range(len(q_names))), format_func=q_names.__getitem__, key="run_queries",
               help="Each record pays only for the queries released (group-by and budgets: Policy designer page).")

c1, c2, c3 = st.columns([2, 1, 1])
if pol.workload.partition_rho > 0:
    c1.number_input("Partition-selection δ", min_value=1e-12, max_value=0.1, value=1e-6, format="%.0e",
                    key="run_ps_delta", help="Threshold τ = 1 + σ·Φ⁻¹(1 − δ): a cell with a single one-piece "
                                             "record appears with probability ≤ δ.")
    c1.caption("Group keys are found by partition selection on split data"
               + (" (group-bys with public key lists excepted)." if pol.workload.group_keys else "."))
elif gkeys.needed(pol):
    c1.caption("Group keys: the cells present in the data are treated as **public**. A secure release refuses keys "
               "taken from the data: list them under **Public group keys** below, or set a partition-selection ρ "
               "on the Policy designer page.")
else:
    c1.caption("Group keys: the public key lists below" if pol.workload.group_keys else "No group-by.")
min_records = c2.number_input("Evaluate answers with at least … records", min_value=1, value=1, step=1,
                              key="run_min_records", help="The paper evaluates CBP cells with ≥ 100 establishments.")
c3.toggle("Secure release", key="run_secure",
          help="Exact discrete Gaussian noise from OpenDP with a cryptographic generator, answers on a documented "
               "grid; unseeded, so not reproducible. Off: a seeded teaching run (numpy's generator).")
c3.button("Run release", type="primary", key="run_go", on_click=rstate.on_run, args=("run_ps_delta",))
rstate.run_pending()  # a large dataset's release: made here, with progress
run_err = rstate.run_error()  # only while it is about the current policy, queries and secure toggle
if run_err is not None:
    show_error(run_err)
    if note := memory.operator_note(run_err):  # a large table's release ran out of memory: what the operator can change
        st.caption(f":material/memory: {md_escape(note)} Nothing was released; **Run release** tries again, and the "
                   "pages that need the records offer a uniform sample.")
gkeys.editor(pol, expanded=bool(st.session_state.get("run_secure")) and gkeys.needed(pol))

rel = rstate.current_release()
if rel is None:
    st.info("Press **Run release** to release the workload once. Each run is added to the session's privacy ledger.")
else:
    rel_pol, current = rstate.release_policy(pol)
    if not current:
        st.warning("This release was made with an earlier version of the policy (the policy was edited since): "
                   f"{md_escape(rel_pol.describe())}. Press **Run release** to release the active policy.")
    if rel.secure:
        st.caption(f":material/lock: {mode_label(True)}: exact noise from OpenDP; COUNT and SUM answers lie on "
                   f"the grid {', '.join(f'{g:g}' for g in rel.extras.get('grid', {}).values())} (one per query), "
                   "an AVG answer is the ratio of its noisy SUM and noisy COUNT (post-processing of two grid "
                   "values, not itself on the grid); not reproducible.")
    else:
        seeded_notice(rel.seed if rel.seed is not None else 0)
    ps = rel.extras.get("partition_selection")
    if ps:  # the cells kept are published; how many were present in the data is a statistic of the records
        st.markdown("Partition selection kept " + ", ".join(
            f"**{ps['kept'][k]:,}**" + (f" of {ps['candidates'][k]:,}" if teaching else "") + f" cells by {k}"
            for k in ps["kept"]) + f" (τ = {ps['tau']:.1f} split rows, σ = {ps['sigma']:.2f}, δ = {ps['delta']:.0e}).")
    shown = rstate.answers_for_display(rel, teaching)
    st.subheader("Released answers")
    st.caption(f"Mode: **{mode_label(rel.secure)}**")
    if review.shows_records("true answers"):
        confidential("True values and errors are shown because the app is in teaching mode.")
        summ = rstate.error_summary(rel, int(min_records))
        st.dataframe(summ.style.format({"median ARE": "{:.2%}", "90th pct ARE": "{:.2%}", "within 5%": "{:.1%}",
                                        "within 20%": "{:.1%}"}), hide_index=True)
    q = st.selectbox("Query", list(shown["query"].cat.categories) if hasattr(shown["query"], "cat") else
                     sorted(shown["query"].unique()), key="run_query")
    sub = shown[shown["query"] == q]
    show(answers_figure(sub), key="run_answers_chart")
    st.dataframe(sub.head(2000), hide_index=True)
    st.caption(f"{len(sub):,} answers for this query ({len(shown):,} in all); the table shows at most 2,000 — the "
               "download has them all.")
    derived = data_derived(rel.params)
    if derived:
        st.caption(":material/lock: Parameters of this release computed from the confidential data: "
                   + md_escape("; ".join(derived)) + " (also in the ledger and the CSV).")
    download_button("Download answers (CSV)", produce("answers.csv", rel, teaching=teaching),
                    file_name="prdp_answers.csv", mime="text/csv", key="run_download")

    st.subheader("Policy loss and realized loss")
    if review.shows_records("release losses"):
        confidential()
        owners = rstate.owners_switch(rel, ds, st)
        try:
            cdfs = rstate.loss_cdfs(rel, ds, rel_pol, owners=owners)
        except PrdpError as err:
            show_error(err)
            cdfs = {}
        l1, l2 = st.columns(2)
        if cdfs:
            show(loss_cdf_figure(cdfs["records"], title="Records: policy vs realized loss",
                                 base=rel_pol.workload.total_rho, view="tail"), key="run_cdf_records", where=l1)
        if "owners" in cdfs:
            show(loss_cdf_figure(cdfs["owners"], title=f"Owners ({ds.schema.owner_col}): policy vs "
                                 "realized loss", base=rel_pol.workload.total_rho, view="tail"),
                 key="run_cdf_owners", where=l2)
        elif ds.schema.owner_col and not owners:
            l2.info("Turn on *Compute the owners' realized losses* above to see owner-level losses of this large "
                    "table.")
        learn("**Realized loss.** The realized loss of a record is Σ_q Δ_q(r)²/(2σ_q²): what removing it changes "
              "in each answer, against the noise. It is exact for Gaussian answers and always below the policy loss; "
              "owners' realized loss removes all their records at once.")
        if rel.extras.get("private_record_delta") is not None:
            st.caption("Partition selection also has a per-record δ(r) = Φ̄((τ − m(r))/σ): the chance that a record "
                       "alone in its cell makes the cell appear. It is tiny for small records and large for records "
                       "cut into about τ pieces or more.")

legacy_view.section(pol, rel)

st.subheader("Privacy ledger of this session")
ledger_view.notice()
led = state.ledger()
if len(led):
    st.dataframe(review.ledger_summary(led), hide_index=True)
    ledger_view.totals()
    st.caption("Losses of successive releases add up for every record (sequential composition). The mode column "
               "says which numbers came from secure releases and which from seeded teaching runs.")
else:
    st.caption("No release yet.")

code_expander(snippet_code("run", rstate.released_policy(pol)))
