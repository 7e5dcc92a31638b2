"""Session state of the app: the active dataset, mode, and cached engine calls.

Keys (all in ``st.session_state``):

* ``dataset`` – the active :class:`prdp_core.Dataset` (a sample is loaded at start-up);
* ``dataset_source`` – how it was obtained (for the reproduce-in-Python code and configs);
* ``mode`` – ``"teaching"`` (seeded runs, true values shown) or ``"review"``;
* ``learn`` – whether short explanations are shown on every page;
* ``seed`` – the seed of teaching-mode runs;
* ``ledger`` – the session's :class:`prdp_core.accounting.Ledger` (every release run).
"""

from __future__ import annotations

import hashlib
import uuid
from typing import TYPE_CHECKING, Any

import streamlit as st

import prdp_core
from prdp_core.data import Dataset
from prdp_core.profile import DatasetProfile, profile_dataset

if TYPE_CHECKING:
    import numpy as np

    from prdp_core.accounting import Ledger
    from prdp_core.release import Release

DEFAULT_SAMPLE = "cbp_like"
#: Lifetime (s) of server-wide cache entries of public computations (samples, simulations on synthetic
#: data). Everything computed from a session's dataset is cached per session (``scope="session"``) and
#: dropped when the session's browser disconnects.
PUBLIC_CACHE_TTL_S = 3600
MODES = {"teaching": "Teaching (seeded, shows true values)", "review": "Review (true values hidden)"}


@st.cache_data(show_spinner="Generating sample…", max_entries=4, ttl=PUBLIC_CACHE_TTL_S)
def cached_sample(name: str, n: int | None, seed: int) -> Dataset:
    """A sample dataset, generated once per (name, size, seed)."""
    return prdp_core.samples.load_dataset(name, n=n, seed=seed)


@st.cache_data(show_spinner="Profiling measures…", max_entries=8, scope="session")
def cached_profile(token: str, _ds: Dataset) -> DatasetProfile:
    """Profile of the dataset identified by ``token`` (the dataset itself is not hashed)."""
    return profile_dataset(_ds)


def dataset_token(ds: Dataset, source: dict[str, Any]) -> str:
    """A short key identifying a dataset and its schema, for caches.

    ``st.cache_data`` is shared by every session of a server: an uploaded table gets a fresh nonce,
    so two different files with the same name, schema and size never share cached results (or
    show one user's profile to another). Samples are public generators and keep stable keys."""
    nonce = "" if source.get("kind") == "sample" else uuid.uuid4().hex
    h = hashlib.sha1(repr((sorted(source.items()), ds.schema, ds.n, ds.notes, nonce)).encode()).hexdigest()
    return h[:16]


def init_state() -> None:
    """Fill in defaults on the first run of a session (loads the default sample)."""
    ss = st.session_state
    ss.setdefault("mode", "teaching")
    ss.setdefault("learn", False)
    ss.setdefault("seed", 0)
    if "dataset" not in ss:
        set_dataset(cached_sample(DEFAULT_SAMPLE, None, 0),
                    {"kind": "sample", "name": DEFAULT_SAMPLE, "n": None, "seed": 0})


def set_dataset(ds: Dataset, source: dict[str, Any]) -> None:
    """Make ``ds`` the active dataset (the previous one is replaced only on success)."""
    st.session_state["dataset"] = ds
    st.session_state["dataset_source"] = dict(source)
    st.session_state["dataset_token"] = dataset_token(ds, source)


def dataset() -> Dataset:
    return st.session_state["dataset"]


def source() -> dict[str, Any]:
    return st.session_state.get("dataset_source", {})


def token() -> str:
    return st.session_state["dataset_token"]


def profile() -> DatasetProfile:
    return cached_profile(token(), dataset())


def teaching() -> bool:
    return st.session_state.get("mode", "teaching") == "teaching"


def rng_and_seed() -> tuple["np.random.Generator", int]:
    """The generator of a seeded (teaching/review) run and its seed."""
    import numpy as np

    seed = int(st.session_state.get("seed", 0))
    return np.random.default_rng(seed), seed


def ledger() -> "Ledger":
    """The session's privacy ledger: every release run in this session, in order."""
    from prdp_core.accounting import Ledger

    if "ledger" not in st.session_state:
        st.session_state["ledger"] = Ledger()
    return st.session_state["ledger"]


def record_release(release: "Release") -> None:
    """Add a release's ledger entries to the session ledger."""
    ledger().extend(release.entries)
