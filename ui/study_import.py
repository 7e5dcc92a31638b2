"""A study config loaded into the app (the Study page's import, share links, the board, a restored session).

:func:`import_state` validates the whole config and loads its data *before* touching the session, so a
bad config leaves the session as it was; pages the config does not mention return to their defaults.
The session's privacy ledger is never changed by an import (it records what this session released), nor
is its review mode (:mod:`ui.mode`: a review session stays in review whatever the config's mode, and the
import's notes say so). :func:`on_import` is the Study page's callback for an uploaded or pasted config.
"""

from __future__ import annotations

from typing import Any, Mapping

import streamlit as st

import prdp_core
from prdp_core.core.errors import ConfigError, PrdpError
from prdp_core.data import memory
from prdp_core.study.config import Study, parse_config

from . import mode as umode
from . import private_suggest, state
from .common import md_escape
from .concepts import DECLARED_PREFIX, DECLARED_SETTINGS
from .policy_designer import SOURCES_KEY
from .study import (
    DATASET_PAGES,
    EDITOR_KEYS,
    ENGINE_KEYS,
    PAGE_SETTING_PREFIXES,
    PAGE_SETTINGS,
    RESULT_KEYS,
    checked_setting,
    prefixed,
)
from .study_source import dataset_for, set_raw
from .study_updates import budget_updates, entry_of, policy_updates, spec_updates, tier_updates


def on_import(origin: str) -> None:
    """Callback of the Study page's import buttons: ``origin`` is ``"upload"`` or ``"paste"``.
    Leaves a message in ``study_msg``; on error the session is unchanged."""
    ss = st.session_state
    try:
        if origin == "upload":
            up = ss.get("study_upload")
            if up is None:
                raise ConfigError("Choose a study config file (YAML) first.")
            text: Any = up.getvalue()
            source = up.name
        else:
            text = ss.get("study_paste") or ""
            source = "the pasted config"
        data = ss.get("study_data_upload")
        if data is not None:
            memory.guard_table(file_bytes=data.size)
        notes = import_state(text, data_bytes=None if data is None else data.getvalue(),
                             data_name=None if data is None else data.name)
    except PrdpError as err:
        ss["study_msg"] = {"kind": "error", "text": f"**{err.title}.** {md_escape(err)}", "notes": []}
        return
    ss["study_msg"] = {"kind": "success", "text": f"Loaded the study from {md_escape(source)}: dataset "
                       f"**{md_escape(state.active_dataset().name)}**, {ss.get('mode')} mode, seed {ss.get('seed')}.",
                       "notes": notes}
    ss.pop("study_outputs", None)


def import_state(config: Mapping[str, Any] | Study | str | bytes, *, data_bytes: bytes | None = None,
                 data_name: str | None = None) -> list[str]:
    """Restore the app from a study config (mapping, YAML text or :class:`Study`).

    Everything is validated first — the config, its data (loaded from the sample, from
    ``data_bytes`` for a file source, or the active dataset when it is the same source), the
    policy against the data and every ``app`` setting name — and only then written to the
    session, so on any error (a :class:`PrdpError`) the session is unchanged. Pages the config
    does not mention return to their defaults; the privacy ledger is kept. Returns notes about
    anything the app could not show exactly as configured."""
    study = config if isinstance(config, Study) else parse_config(config)
    notes: list[str] = []
    for page, settings in study.app.items():
        allowed = PAGE_SETTINGS.get(page, ())
        for k in settings:
            if k not in allowed and not (page == "concepts" and k in DECLARED_SETTINGS):
                raise ConfigError(f"app.{page}.{k}: unknown setting of the {page.replace('_', ' ')} page.",
                                  hint=f"Settings of this page: {', '.join(allowed) or 'none'}.")
    new_ds, new_src = dataset_for(study, data_bytes, data_name)
    ds = new_ds if new_ds is not None else state.active_dataset()
    study.check_against(ds)
    kept_mode, mode_note = umode.imported(study.mode)  # an import never leaves review mode
    up: dict[str, Any] = {"mode": kept_mode, "seed": int(study.seed)}
    if mode_note:
        notes.append(mode_note)
    pop: set[str] = set(RESULT_KEYS)
    up[private_suggest.PRIVATE_KEY] = {}  # the config says which parameters a private suggestion released
    if "thresholds" in study.policy and study.workload is not None:
        policy_updates(study, ds, up, pop)
    m = entry_of(study, "thresholds")  # the Run page's unit-splitting release
    if m is not None:
        up["run_ps_delta"] = float(m["partition_delta"])
        up["run_secure"] = bool(m.get("secure", False))
    if "budget" in study.policy:
        budget_updates(study, ds, up, pop, notes)
    on_engine = getattr(ds, "engine", None) is not None  # a large dataset: parts that need the records stay out
    if "specification" in study.policy and on_engine:
        notes.append("The Personalized DP specification was not loaded: on a large dataset that page works on a "
                     "sample of the records (set it there).")
    elif "specification" in study.policy:
        spec_updates(study, ds, up, pop, notes)
    if "tiers" in study.policy and on_engine:
        notes.append("The analyst tiers were not loaded: on a large dataset that page works on a sample of the "
                     "records (set them there).")
    elif "tiers" in study.policy:
        tier_updates(study, ds, up, pop)
    for page, settings in study.app.items():
        settings = dict(settings)
        cols, cats = settings.pop("hl_declared_columns", None), settings.pop("hl_declared_categories", None)
        if cols is not None or cats is not None:
            if not isinstance(cols, list) or not isinstance(cats, list) or len(cols) != len(cats):
                raise ConfigError("app.concepts.hl_declared_columns: must list the columns whose public categories "
                                  "hl_declared_categories gives, one entry each.")
            up.update({f"{DECLARED_PREFIX}{c}": str(v) for c, v in zip(cols, cats)})
        for k, v in settings.items():
            ok, val = checked_setting(k, v)
            if ok:
                up[k] = val
            else:
                notes.append(f"app.{page}.{k} = {v!r} is not a value the page offers: the page keeps its default.")
    # no page designs a mechanism of no policy part (granular DP's histograms): they stay in the config only
    granular = [m.describe() for m in study.mechanisms if m.POLICY_PART is None]
    if granular:
        notes.append(f"The granular-DP mechanisms ({'; '.join(granular)}) are not loaded into the app: prdp run "
                     "releases them, and the Concepts page's histogram lab keeps its own settings (app.concepts). "
                     "A study exported from the app leaves them out — keep this config for them.")
    seeds = {study.mechanism_seed(i) for i, m in enumerate(study.mechanisms) if not m.get("secure")}
    if seeds - {study.seed}:
        notes.append(f"The app runs every page with the session seed {study.seed}; some mechanisms of this config "
                     "have other seeds (the CLI and the report use them).")

    # --- everything is valid: write the session -------------------------------------------
    ss = st.session_state
    owned = set(ENGINE_KEYS) | {k for keys in PAGE_SETTINGS.values() for k in keys} | set(EDITOR_KEYS)
    owned |= {k for k in list(ss.keys()) if isinstance(k, str) and k.startswith("thr_") and k not in
              ("thr_editor_version",)}
    owned |= {k for page in PAGE_SETTING_PREFIXES for k in prefixed(page, list(ss.keys()))}
    if new_ds is None:
        owned.discard("raw")  # same data source: keep the Data page's role editor as it is
    for k in owned - {"learn"} - set(up):
        ss.pop(k, None)
    for k in pop:
        ss.pop(k, None)
    if new_ds is not None and new_src is not None:
        if data_bytes is not None and new_src.get("kind") == "file":
            from . import durable

            new_src = {**new_src, **durable.keep_upload(data_bytes, new_src.get("filename"))}
        state.set_dataset(new_ds, new_src)  # gives the new data its starting policy, replaced below
        set_raw(new_ds, new_src, data_bytes, data_name)
        if SOURCES_KEY not in up:
            ss.pop(SOURCES_KEY, None)  # the config's thresholds were typed, whatever the starting policy's were
    pol = up.pop("policy", None)
    for k, v in up.items():
        ss[k] = v
    if pol is not None:
        from .policy_designer import set_policy

        set_policy(pol)
        ss["policy_token"] = state.active_token()
    else:
        ss.pop("policy", None)
        ss.pop("policy_token", None)
        ss.pop("policy_summary", None)
    if study.data.sample is not None:
        name = study.data.sample
        ss["sample_name"] = name
        ss["sample_seed"] = int(study.data.sample_seed)
        meta = prdp_core.data.samples.info(name)
        # a sample of no default size (a real table) is read whole: 0 on the Data page
        ss[f"sample_n_{name}"] = int(study.data.n) if study.data.n is not None else int(meta.default_n or 0)
    q_hi = up.get("pdp_value")
    if q_hi is not None and "pdp_hi" not in up:
        from .personalized import set_query_defaults

        keep: dict[str, Any] = {k: up[k] for k in ("pdp_lo", "pdp_cutoff") if k in up}
        set_query_defaults(q_hi)  # the page's design default for the public upper bound
        ss.update(keep)
    # the imported settings are for the data just loaded: the pages keep them instead of resetting their defaults
    state.settings_belong_to_dataset(DATASET_PAGES)
    ss["study_import_notes"] = notes
    return notes
