"""Session state of the app: the active dataset, mode, and cached engine calls.

Keys (all in ``st.session_state``):

* ``dataset`` – the active :class:`prdp_core.Dataset` (a sample is loaded at start-up), or the
  :class:`~prdp_core.engines.EngineDataset` of a large table whose records stay in an engine (:mod:`ui.large`);
* ``dataset_source`` – how it was obtained (for the reproduce-in-Python code and configs);
* ``page_sample`` – on a page that needs the records of a large table, the labelled uniform sample it works on
  for this run and its callbacks (:func:`use_sample`): :func:`dataset` and :func:`token` return it there,
  :func:`active_dataset` and :func:`active_token` always the session's dataset;
* ``mode`` – ``"teaching"`` (seeded runs, true values shown) or ``"review"``;
* ``learn`` – whether short explanations are shown on every page;
* ``seed`` – the seed of teaching-mode runs;
* ``ledger`` – the session's :class:`prdp_core.core.accounting.Ledger` (every release run);
* ``recorded_releases`` – each page part's last recorded releases (:func:`release`) with the ids of their ledger
  entries, rendered by the report and saved with the durable session (:mod:`ui.session_releases`).

This module is the bottom of the app's ui package: it imports none of its modules. What it asks of the modules
above it (a new dataset's policy, a large table's profile, a page part's study settings, storing ledger entries)
they register at import (:data:`HOOKS`, :func:`register`).
"""

from __future__ import annotations

import hashlib
import time
import uuid
from functools import partial
from typing import TYPE_CHECKING, Any, Callable, Mapping, TypeVar

import pandas as pd
import streamlit as st

import prdp_core
from prdp_core.board.ledgers import data_fingerprint
from prdp_core.data import memory
from prdp_core.data.dataset import Dataset, prepare_dataset
from prdp_core.data.profile import DatasetProfile, profile_dataset

if TYPE_CHECKING:
    import numpy as np

    from prdp_core.core.accounting import Ledger, LedgerEntry
    from prdp_core.core.recorder import Recorder

DEFAULT_SAMPLE = "cbp_like"
#: Lifetime (s) of server-wide cache entries of public computations (samples, simulations on synthetic
#: data). Everything computed from a session's dataset is cached per session (``scope="session"``) and
#: dropped when the session's browser disconnects.
PUBLIC_CACHE_TTL_S = 3600
#: Largest sample (records) kept in the server-wide caches: every sample's default size (a 200,000-record
#: CBP-like sample is about 27 MB as a table, as much again prepared). A larger sample is generated for the
#: session that asks for it and cached in that session only (:func:`sample_dataset`), so that what it holds
#: is released when the session ends instead of staying on the server for :data:`PUBLIC_CACHE_TTL_S`.
SHARED_SAMPLE_MAX_ROWS = 200_000
MODES = {"teaching": "Teaching (seeded, shows true values)", "review": "Review (true values hidden)"}

#: What this module asks of the modules above it, which it never imports: each registers its part when it is imported
#: (:func:`register`; the app imports them all before a page runs).
#:
#: * ``new_dataset`` – called in turn when :func:`set_dataset` replaces the active dataset by another, before any
#:   page runs: :mod:`ui.private_suggest` drops a suggestion released on the previous table, then
#:   :func:`ui.policy_designer.ensure_policy` gives the new table its starting policy;
#: * ``large_profile`` – the profile of a large table (:func:`ui.large.profile`), for :func:`profile`;
#: * ``part_settings`` – a page part's settings as the study exports them (:func:`ui.study_export.part_settings`),
#:   kept with its recorded releases (:func:`release`);
#: * ``add_entries`` – adds ledger entries to the session ledger and stores them, returning their ids
#:   (:func:`ui.durable.add_entries`), for :func:`record_entries`.
HOOKS: dict[str, list[Callable[..., Any]]] = {"new_dataset": [], "large_profile": [], "part_settings": [],
                                              "add_entries": []}


def register(name: str, hook: Callable[..., Any]) -> None:
    """Register ``hook`` for ``name``, a key of :data:`HOOKS` (once: a module imported again adds nothing)."""
    if name not in HOOKS:
        raise KeyError(f"ui.state has no hook '{name}' (it has: {', '.join(HOOKS)})")
    if hook not in HOOKS[name]:
        HOOKS[name].append(hook)


def _hook(name: str) -> Callable[..., Any]:
    """The hook registered for ``name`` (the last one)."""
    if not HOOKS[name]:
        raise RuntimeError(f"no module registered ui.state's '{name}' hook: import the ui module that provides it")
    return HOOKS[name][-1]


@st.cache_resource(show_spinner="Generating sample…", max_entries=4, ttl=PUBLIC_CACHE_TTL_S)
def cached_sample(name: str, n: int | None, seed: int) -> Dataset:
    """A small sample dataset (at most :data:`SHARED_SAMPLE_MAX_ROWS` records), generated once per (name,
    size, seed) for the whole server: every session shares the same object (a resource cache hands out no
    copies), which nothing mutates. Pages ask :func:`sample_dataset`, which guards and chooses the cache."""
    return prdp_core.data.samples.load_dataset(name, n=n, seed=seed)


@st.cache_data(show_spinner=False, max_entries=4, ttl=PUBLIC_CACHE_TTL_S)
def _shared_frame(name: str, n: int | None, seed: int) -> pd.DataFrame:
    return prdp_core.data.samples.load(name, n=n, seed=seed)


@st.cache_resource(show_spinner="Generating sample…", max_entries=1, scope="session")
def _session_frame(name: str, n: int | None, seed: int) -> pd.DataFrame:
    """A large sample's table for this session only, generated once (the Data page's role editor and the
    datasets prepared from it do not change it); dropped when the session's browser disconnects."""
    return prdp_core.data.samples.load(name, n=n, seed=seed)


def shared_sample(name: str, n: int | None) -> bool:
    """Whether sample ``name`` of ``n`` records is small enough for the server-wide caches."""
    return memory.sample_size(name, n)[0] <= SHARED_SAMPLE_MAX_ROWS


def sample_dataset(name: str, n: int | None, seed: int) -> Dataset:
    """Sample ``name`` (``n`` records, None: its default size; ``seed``) as a dataset, for every route that
    makes a sample active (Data page, study import, share link, board, session restore). Asks the memory
    guard first (:func:`prdp_core.data.memory.guard_table`: ResourceLimitError, nothing generated); a small
    sample comes from the server-wide cache, a large one is this session's own."""
    memory.guard_table(sample=name, n=n)
    if shared_sample(name, n):
        return cached_sample(name, n, seed)
    return prepare_dataset(_session_frame(name, n, seed), prdp_core.data.samples.info(name).schema, name=name)


def sample_frame(name: str, n: int | None, seed: int, *, admitted: bool = False) -> pd.DataFrame:
    """Sample ``name``'s table before preparation (the Data page's role editor, a study's own roles), after
    the same guard and with the same cache choice as :func:`sample_dataset`; not to be changed in place.
    ``admitted``: the table of the active sample, which passed the guard when it became active (or is the
    start-up sample): not asked again (a refusal then would leave a dataset without its table)."""
    if not admitted:
        memory.guard_table(sample=name, n=n)
    if shared_sample(name, n):
        return _shared_frame(name, n, seed)
    return _session_frame(name, n, seed)


@st.cache_data(show_spinner="Profiling measures…", max_entries=8, scope="session")
def cached_profile(token: str, _ds: Dataset) -> DatasetProfile:
    """Profile of the dataset identified by ``token`` (the dataset itself is not hashed)."""
    return profile_dataset(_ds)


def dataset_token(ds: Any, source: dict[str, Any]) -> str:
    """A short key identifying a dataset and its schema, for caches.

    ``st.cache_data`` is shared by every session of a server: an uploaded table gets a fresh nonce,
    so two different files with the same name, schema and size never share cached results (or
    show one user's profile to another). Samples are public generators and keep stable keys, as do
    the workshop's tables of the server's data folder (``shared``: their content hash) and its large
    datasets (their files' sizes and modification times are in the source)."""
    stable = source.get("kind") in ("sample", "large") or source.get("shared")
    nonce = "" if stable else uuid.uuid4().hex
    h = hashlib.sha1(repr((sorted(source.items()), ds.schema, ds.n, ds.notes, nonce)).encode()).hexdigest()
    return h[:16]


def init_state() -> None:
    """Fill in defaults on the first run of a session (loads the default sample)."""
    ss = st.session_state
    ss.pop(PAGE_SAMPLE_KEY, None)  # a page that needs the records chooses its sample again on every run
    ss.setdefault("mode", "teaching")
    ss.setdefault("learn", False)
    ss.setdefault("seed", 0)
    if "dataset" not in ss:
        set_dataset(cached_sample(DEFAULT_SAMPLE, None, 0),
                    {"kind": "sample", "name": DEFAULT_SAMPLE, "n": None, "seed": 0})


def set_dataset(ds: Any, source: dict[str, Any]) -> None:
    """Make ``ds`` the active dataset (the previous one is replaced only on success).

    The active policy follows at once: a new dataset gets its own starting policy in the same call (the
    ``new_dataset`` hooks, :data:`HOOKS`: :func:`ui.policy_designer.ensure_policy`), so no page — and not the
    sidebar, drawn after the page — ever shows the previous table's thresholds against the new one. Data-source
    actions call this from widget callbacks, which run before the page script."""
    ss = st.session_state
    old = ss.get("dataset_token")
    ss["dataset"] = ds
    ss["dataset_source"] = dict(source)
    ss["dataset_token"] = dataset_token(ds, source)
    if old is not None and old != ss["dataset_token"]:
        for hook in HOOKS["new_dataset"]:
            hook()


#: Session key: page → the dataset token its data-dependent defaults were set for (:func:`first_run_on_dataset`).
PAGE_TOKENS_KEY = "page_dataset_tokens"


def first_run_on_dataset(page: str) -> bool:
    """True the first time ``page`` runs on the active dataset (then False until the dataset changes): the page
    resets its defaults that depend on the dataset, so nothing set for the previous table is shown against
    the new one."""
    tokens = dict(st.session_state.get(PAGE_TOKENS_KEY) or {})
    if tokens.get(page) == token():
        return False
    tokens[page] = token()
    st.session_state[PAGE_TOKENS_KEY] = tokens
    return True


def settings_belong_to_dataset(pages: tuple[str, ...]) -> None:
    """The settings of ``pages`` were set for the active dataset (a study import): no reset on their next run."""
    st.session_state[PAGE_TOKENS_KEY] = {**(st.session_state.get(PAGE_TOKENS_KEY) or {}),
                                         **{p: token() for p in pages}}


#: Session key of the sample a page that needs the records works on (:func:`use_sample`).
PAGE_SAMPLE_KEY = "page_sample"


def dataset() -> Any:
    """The dataset the page works on: the active dataset, or on a page that needs the records of a large
    table the labelled sample it chose (:func:`use_sample`)."""
    smp = st.session_state.get(PAGE_SAMPLE_KEY)
    return smp["dataset"] if smp else st.session_state["dataset"]


def active_dataset() -> Any:
    """The session's active dataset (never a page's sample): a Dataset, or an EngineDataset."""
    return st.session_state["dataset"]


def source() -> dict[str, Any]:
    return st.session_state.get("dataset_source", {})


def token() -> str:
    """The dataset token of :func:`dataset` (a page's sample has its own)."""
    smp = st.session_state.get(PAGE_SAMPLE_KEY)
    return smp["token"] if smp else st.session_state["dataset_token"]


def active_token() -> str:
    return st.session_state["dataset_token"]


def fingerprint(of: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """The records of data source ``of`` (default: the active one), as :func:`prdp_core.board.ledgers.data_fingerprint`:
    a sample by name, size and seed, a table by its content hash (an upload and a data-folder file with the same
    bytes are the same data), another source by its record without roles."""
    src = dict(source() if of is None else of)
    schema = src.get("schema") or {}
    if src.get("kind") == "sample":
        ident: dict[str, Any] = {"sample": src.get("name"), "n": src.get("n"), "seed": int(src.get("seed") or 0)}
    elif src.get("upload") or src.get("shared"):
        ident = {"sha256": src.get("upload") or src.get("shared")}
    else:
        ident = {k: v for k, v in src.items() if k not in ("schema", "options")}
    return data_fingerprint(ident, id_col=schema.get("id_col"), prepare=src.get("options") or {},
                            name=src.get("filename") or src.get("name"))


def is_large() -> bool:
    """Whether the page works on a table held by an engine beyond memory (not a page's in-memory sample)."""
    from prdp_core.engines import MemoryEngine, is_engine_data

    ds = dataset()
    return is_engine_data(ds) and not isinstance(ds.engine, MemoryEngine)


def use_sample(sample: Dataset, page: str, rows: int, seed: int) -> None:
    """On ``page`` (for this run and its callbacks), work on ``sample``, a uniform sample of the active large
    dataset: :func:`dataset` and :func:`token` return it, and releases recorded by :func:`release` are
    labelled with it."""
    h = hashlib.sha1(repr((active_token(), rows, seed)).encode()).hexdigest()[:16]
    st.session_state[PAGE_SAMPLE_KEY] = {"dataset": sample, "token": h, "page": page, "rows": int(rows),
                                         "seed": int(seed), "of": active_dataset().name}


def page_sample() -> dict[str, Any] | None:
    """The sample the page works on (rows, seed, the table it was drawn from), or None."""
    smp = st.session_state.get(PAGE_SAMPLE_KEY)
    return None if not smp else {k: v for k, v in smp.items() if k != "dataset"}


def profile() -> DatasetProfile:
    if is_large():
        return _hook("large_profile")()
    return cached_profile(token(), dataset())


def teaching() -> bool:
    return st.session_state.get("mode", "teaching") == "teaching"


def review_mode() -> bool:
    """Review mode (sidebar): the pages show no statistic of the records (see :mod:`ui.review`)."""
    return not teaching()


def rng_and_seed() -> tuple["np.random.Generator", int]:
    """The generator of a seeded (teaching/review) run and its seed."""
    import numpy as np

    seed = int(st.session_state.get("seed", 0))
    return np.random.default_rng(seed), seed


def ledger() -> "Ledger":
    """The session's privacy ledger: every release run in this session, in order."""
    from prdp_core.core.accounting import Ledger

    if "ledger" not in st.session_state:
        st.session_state["ledger"] = Ledger()
    return st.session_state["ledger"]


#: Session key: page part → its last recorded release (:func:`release`), what the Study page's report renders.
RECORDED_KEY = "recorded_releases"

T = TypeVar("T")


def recorder(sample: dict[str, Any] | None = None, data: Mapping[str, Any] | None = None,
             written: list[tuple[Any, str]] | None = None) -> "Recorder":
    """The session's recorder (:class:`prdp_core.core.recorder.Recorder`): its releases are recorded in the session
    ledger and stored (:mod:`ui.durable`), the ledger outliving a server restart. A release made on a sample of
    a large table (the page's, or ``sample``: the rows asked for, the table ``of`` and the seed) says so in its
    entries' labels and parameters (``data_sample``). The rows asked for are a public choice; the table's record
    count is not written (a sample asking for more rows than the table has is the whole table).

    ``data`` is the fingerprint of the records the release runs on
    (:func:`prdp_core.board.ledgers.data_fingerprint`) when they are not the active table's — generated
    records: the release is charged to their ledger, never to the active table's (default: the active data).
    ``written`` receives each recorded entry (as the mechanism returned it) with its id in the session ledger."""
    from prdp_core.core.recorder import Recorder

    return Recorder(ledger(), write=partial(_record_release_entries, sample=sample, data=data, written=written))


def release(part: str, make: Callable[[], T], *, label: str | None = None, add: bool = False,
            sample: dict[str, Any] | None = None, data: Mapping[str, Any] | None = None,
            entries: Callable[[T], Any] | None = None, keep: bool = True) -> T:
    """Make a release of page ``part`` as a recorded release of the session (:func:`recorder`): ``make()`` draws the
    noise, its ledger entries are recorded before it is returned (a refusal records nothing). A release on the
    session's data (not on generated records, ``data``) is kept, under ``label``, as the part's last recorded
    release — or added to the part's releases of the same click (``add``) — which the Study page's report renders
    (:func:`recorded`); ``keep=False`` for what is not a release of a study's mechanism (a comparison table, a
    Run-page release of some of the queries)."""
    written: list[tuple[Any, str]] = []
    out = recorder(sample, data, written).release(make, label=label or part, entries=entries)
    if data is None and keep:
        keep_recorded(part, [(label, out)], _hook("part_settings")(part), add=add, written=written)
    return out


def uids_of(rel: Any, written: list[tuple[Any, str]]) -> tuple[str, ...]:
    """The ids in the session ledger of the entries of ``rel``, from what its recorder ``written`` (entry, id)."""
    return tuple(uid for e in getattr(rel, "entries", ()) for w, uid in written if w is e)


def keep_recorded(part: str, releases: list[tuple[str | None, Any]], settings: str | None, add: bool = False,
                  written: list[tuple[Any, str]] | None = None, uids: list[tuple[str, ...]] | None = None) -> None:
    """Keep ``releases``, just recorded on the active dataset with the page's ``settings``
    (:func:`ui.study_export.part_settings`), as page ``part``'s last recorded releases (or add them to those of
    the same click, ``add``), each with the ids of its ledger entries (``uids``, or found in what the recorder
    ``written``): what the report's key and the stored session (:mod:`ui.session_releases`) name them by."""
    kept = dict(st.session_state.get(RECORDED_KEY) or {})
    earlier = kept.get(part) if add else None
    if earlier is None or earlier["token"] != active_token():
        earlier = {}
    ids = uids if uids is not None else [uids_of(rel, written or []) for _, rel in releases]
    kept[part] = {"token": active_token(), "releases": [*earlier.get("releases", []), *releases],
                  "uids": [*earlier.get("uids", []), *ids], "settings": settings, "at": time.time()}
    st.session_state[RECORDED_KEY] = kept


def recorded_uids(rel: Any) -> tuple[str, ...]:
    """The ids of the ledger entries of a kept recorded release (:func:`keep_recorded`; empty when not kept)."""
    for rec in (st.session_state.get(RECORDED_KEY) or {}).values():
        for (_, kept), ids in zip(rec["releases"], rec.get("uids", [])):
            if kept is rel:
                return tuple(ids)
    return ()


def recorded(part: str) -> tuple[list[tuple[str | None, Any]], str | None]:
    """The releases page ``part`` last recorded on the active dataset (:func:`release`) — (label, release) pairs —
    and the page's settings they were made with."""
    rec = (st.session_state.get(RECORDED_KEY) or {}).get(part)
    return (list(rec["releases"]), rec.get("settings")) if rec and rec["token"] == active_token() else ([], None)


def _record_release_entries(entries: "tuple[LedgerEntry, ...]", sample: dict[str, Any] | None = None,
                            data: Mapping[str, Any] | None = None,
                            written: list[tuple[Any, str]] | None = None) -> None:
    """Record a release's entries (:func:`recorder`): labelled with the page's sample (or ``sample``), charged to
    ``data``'s ledger; each entry as given and its id in the ledger added to ``written``."""
    given = entries
    smp = sample if sample is not None else page_sample()
    if smp:
        from dataclasses import replace

        note = f" [uniform sample ({smp['rows']:,} rows asked) of {smp['of']}, seed {smp['seed']}]"
        entries = tuple(replace(e, label=e.label + note, params={**e.params, "data_sample": {
            "rows_asked": smp["rows"], "table": smp["of"], "seed": smp["seed"]}}) for e in entries)
    uids = record_entries(entries, data=data)
    if written is not None:
        written.extend(zip(given, uids))


def record_entries(entries: "tuple[LedgerEntry, ...]", data: Mapping[str, Any] | None = None) -> list[str]:
    """Add ledger entries to the session ledger and store them (:mod:`ui.durable`): releases, and adopted
    private suggestions (:mod:`ui.private_suggest`); ``data`` as in :func:`recorder`. Their ids in the ledger
    (the ``add_entries`` hook, :data:`HOOKS`)."""
    return list(_hook("add_entries")(entries, data))
