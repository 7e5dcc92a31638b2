"""The guided path of the Start here page: Data → Policy → Preview → Run → Review, one short step at a time.

Each :class:`Step` is a body of at most :data:`MAX_WORDS` words (``tests/unit/test_start_here.py`` counts them) with
its details behind "Learn more", and a "Next" button. The steps use the real pages' state: the active dataset (the
default sample in a fresh session), the active policy (:func:`ui.policy_designer.ensure_policy`), its preview, a
release made by the Run page's recorded path (:func:`ui.run.on_run`: the noise is drawn inside a recorded release,
charged to the session ledger) and the Study page's report of the recorded releases (:mod:`ui.study_report`, which
releases nothing more). Key in ``st.session_state``: ``guide_step`` (the step shown, 0 to 4) and ``guide_report``
(the report built, with what it was built from).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import streamlit as st

from prdp_core.core.interpret import loss_guidance
from prdp_core.core.loss_profile import format_loss
from prdp_core.mechanisms.preview import public_levels
from prdp_core.review.review_boundary import produce

from . import ledger_view, review, state, study_export, study_report, worked_example
from . import policy_designer as pstate
from . import run as rstate
from .common import confidential, download_button, guarded, md_escape, show_error

#: The most words a step's body may have.
MAX_WORDS = 120
#: Session keys of the step shown and of the report built.
STEP_KEY = "guide_step"
REPORT_KEY = "guide_report"
#: The Run page's partition-selection δ key (the guided release uses the Run page's default).
PS_DELTA_KEY = "run_ps_delta"


@dataclass(frozen=True)
class Step:
    """One step of the guided path: ``title``, ``body`` (Markdown with ``{fields}`` filled in from the session,
    at most :data:`MAX_WORDS` words), ``more`` (the details behind "Learn more") and the page to open for more."""

    title: str
    body: str
    more: str
    page: str


STEPS: tuple[Step, ...] = (
    Step("Data",
         "{source} Each record has numbers that get summed — the *measures* {measures} — and labels to group by, "
         "such as {groups}. {owner} Every privacy number in this guide is about these records. Press **Next** to "
         "see the policy that protects them.",
         "The Data page loads other samples or your own file (CSV, Parquet, Excel, SAS, Stata or SPSS) and sets the "
         "column roles: the record id, the measures, the groups and the owner. The samples' values are generated, "
         "not real.",
         "app_pages/data.py"),
    Step("Policy",
         "A *policy* says how much each record may lose, in ρ (the unit of zCDP: smaller is more private). Large "
         "values would need large noise, so each measure is cut into pieces of at most its threshold T(a): "
         "{thresholds}. A record cut into m(r) pieces pays ρ × m(r)² on each sum. The release answers {queries}; "
         "the policy loss is **P(r) = {formula}**.",
         "This is *unit splitting*: a sum over the pieces needs noise sized to one piece only, so sums stay "
         "accurate, and the few large records pay more. The formula P(r) is public; a real record's loss is "
         "confidential. The Policy designer page changes thresholds and budgets (the method is the per-record "
         "zCDP paper's Sec. 5, Lemma 7).",
         "app_pages/policy_designer.py"),
    Step("Preview",
         "Before anything is released, the policy's losses can be previewed. Every record pays at least the base "
         "loss, **{base}**; split records pay more. {readout} Open *Learn more* to follow one record step by step: "
         "its pieces, its loss, its ε and what an attacker could infer.",
         "", "app_pages/policy_designer.py"),
    Step("Run",
         "Press **Next** to release the workload once. Every answer gets Gaussian noise sized to the thresholds, "
         "and the release is written into the session's privacy ledger: losses of successive releases add up "
         "for every record. {run_note}",
         "The Run page chooses the queries, partition selection for unknown group keys and a secure release "
         "(exact OpenDP noise, unseeded). Each answer comes with its noise σ and a 95% interval.",
         "app_pages/run.py"),
    Step("Review",
         "Released: **{answers}** noisy answers, charged to the ledger below. The report gathers the data source, "
         "the policy, the answers, the budgets and the ledger into one HTML file with a script that reruns them. "
         "{mode_note}",
         "The Study page exports the whole study as a config that loads back, and builds the same report. In review "
         "mode (sidebar) the report holds no true value and no per-record loss: the version to share.",
         "app_pages/study.py"),
)


def step() -> int:
    """The step shown (0 to ``len(STEPS) - 1``)."""
    i = st.session_state.get(STEP_KEY, 0)
    return i if isinstance(i, int) and 0 <= i < len(STEPS) else 0


def go(i: int) -> None:
    """Callback of Back and of a step's buttons: show step ``i``."""
    st.session_state[STEP_KEY] = max(0, min(i, len(STEPS) - 1))


def on_next(i: int) -> None:
    """Callback of step ``i``'s Next button; the Run step's Next makes the release first (through the Run page's
    recorded path) and stays on the step when it is refused (its message is shown there)."""
    if STEPS[i].title == "Run" and not _released():
        rstate.on_run(PS_DELTA_KEY)
        if rstate.run_error() is not None:
            return
        st.session_state[RELEASED_FOR] = rstate.settings_key()
    go(i + 1)


#: Session key of the Run page's settings the guided path released with (:func:`_released`).
RELEASED_FOR = "guide_released_for"


def _released() -> bool:
    """Whether the guided path already released with the current settings (Back, then Next again, does not
    release — and charge the ledger — a second time)."""
    return rstate.current_release() is not None and st.session_state.get(RELEASED_FOR) == rstate.settings_key()


def _fields(i: int) -> dict[str, Any]:
    """The values filled into step ``i``'s body."""
    ds = state.dataset()
    pol = pstate.ensure_policy()
    title = STEPS[i].title
    if title == "Data":
        own = (f"Each is owned by a firm ({md_escape(ds.schema.owner_col)}), which may own several."
               if ds.schema.owner_col else "")
        records = review.count(ds.n, "records")
        source = (f"The app starts with a sample table, **{md_escape(ds.name)}**: {records} that imitate the US "
                  "Census Bureau's County Business Patterns (CBP), each an establishment." if ds.name == "cbp_like"
                  else f"The table in use is **{md_escape(ds.name)}**: {records}.")
        return {"source": source,
                "measures": md_escape(", ".join(ds.schema.measures)),
                "groups": md_escape(", ".join(ds.schema.groups[:3]) or "none"), "owner": own}
    if title == "Policy":
        thr = pol.thresholds.default() or {}
        return {"thresholds": md_escape(", ".join(f"T({m}) = {t:g}" for m, t in thr.items()) or "per group"),
                "queries": md_escape(", ".join(q.name() for q in pol.workload.queries)),
                "formula": md_escape(f"{pol.workload.flat_rho:g}ρ + {pol.workload.split_rho:g}ρ·m(r)²")}
    if title == "Preview":
        return {"base": format_loss(pol.workload.total_rho), "readout": _readout(pol)}
    if title == "Run":
        note = ("A secure release: exact noise, unseeded." if st.session_state.get("run_secure") else
                "This is a seeded teaching run, reproducible and not for publication.")
        return {"run_note": note + (" Released already with these settings: **Next** does not release again."
                                    if _released() else "")}
    if title == "Review":
        rel = rstate.current_release()
        teaching = state.teaching()
        return {"answers": f"{len(rel.answers):,}" if rel is not None else "no",
                "mode_note": "Teaching mode: the report holds true values — switch to review mode (sidebar) "
                             "before sharing it." if teaching else "Review mode: the report can be shared."}
    return {}


def _readout(pol: Any) -> str:
    """The preview's read-out: the real records' losses (teaching mode) or the public levels (review mode)."""
    if review.shows_records("policy losses", note=False) and not state.is_large():
        prev = pstate.preview(pol)
        return md_escape(prev.records.plain_language())
    levels = public_levels(pol)
    return "From the public formula: " + "; ".join(f"{md_escape(k)} loses {format_loss(v)}" for k, v in levels.items()
                                                   if k.startswith("a record cut")) + "."


def words(text: str) -> int:
    """The number of words of a step's text (Markdown marks are not words)."""
    return len([w for w in text.replace("**", " ").replace("*", " ").split() if any(c.isalnum() for c in w)])


def render_step(i: int) -> None:
    """Step ``i``: its body, what it shows, "Learn more", and the Back / Next buttons."""
    s = STEPS[i]
    st.progress((i + 1) / len(STEPS), text=f"Step {i + 1} of {len(STEPS)}: {s.title}")
    st.subheader(f"{i + 1}. {s.title}")
    if s.title == "Review":
        rstate.run_pending()  # a large dataset's release, asked for by the Run step
    with guarded():  # a refusal (e.g. the memory guard) is a message; the buttons stay
        st.markdown(s.body.format(**_fields(i)))
        _show(i)
    with st.expander("Learn more", icon=":material/school:"):
        if s.title == "Preview":
            worked_example.render("guide")
        else:
            st.markdown(s.more)
        st.page_link(s.page, label="Open the full page", icon=":material/open_in_new:")
    back, nxt, _ = st.columns([1, 1, 4])
    if i > 0:
        back.button("Back", key=f"guide_back_{i}", on_click=go, args=(i - 1,))
    if i < len(STEPS) - 1:
        nxt.button("Next", key=f"guide_next_{i}", type="primary", on_click=on_next, args=(i,))
    else:
        nxt.button("Start again", key="guide_restart", on_click=go, args=(0,))


def _show(i: int) -> None:
    """What step ``i`` shows beside its body."""
    title = STEPS[i].title
    if title == "Preview" and review.shows_records("policy losses", note=False) and not state.is_large():
        pol = pstate.ensure_policy()
        summ = pstate.preview_summary(pstate.preview(pol), owners=False)
        confidential()
        c1, c2, c3 = st.columns(3)
        c1.metric("Base loss", format_loss(pol.workload.total_rho))
        c2.metric("Records split", f"{summ['share_split']:.2%}")
        c3.metric("Largest record loss", format_loss(summ["max"]))
        note = loss_guidance(float(summ["max"]), pieces=int(summ["max_pieces"]))
        if note:
            st.caption(f":material/info: {note}")
    elif title == "Run":
        err = rstate.run_error()
        if err is not None:
            show_error(err)
    elif title == "Review":
        ledger_view.totals()
        _report()


def _report() -> None:
    """The report of the recorded releases and its download (built once per release; it releases nothing)."""
    ss = st.session_state
    teaching = state.teaching()
    study = study_export.export_study()
    yaml_text = produce("study config (YAML)", study, teaching=teaching).decode("utf-8")
    run, _missing = study_report.recorded_run(study)
    if not run.releases:
        st.info("No release is recorded yet: go back one step and press **Next** to release the workload.")
        return
    key = (state.token(), yaml_text, study_report.release_ids(run))
    built = ss.get(REPORT_KEY)
    if not built or built[0] != key:
        with st.spinner("Building the report…"):
            built = (key, produce("report.html", run, teaching=teaching, config_text=yaml_text))
        ss[REPORT_KEY] = built
    download_button("Download the report (HTML)", built[1], file_name="prdp_report.html", mime="text/html",
                    key="guide_dl_report", type="primary", icon=":material/download:")


__all__ = ["MAX_WORDS", "STEPS", "STEP_KEY", "Step", "go", "on_next", "render_step", "step", "words"]
