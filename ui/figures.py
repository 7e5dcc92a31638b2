"""Charts built once per content: a rerun that changes nothing a chart draws reuses its figure.

Building a Plotly figure (validating every property of its traces and layout) is the costliest part of a
page's rerun after the data work. :func:`chart` keys a figure by a digest of everything it draws — the
arrays by their bytes, the other arguments by their text — so the reruns a workshop participant makes
without changing a chart (a toggle elsewhere on the page, the Learn switch, coming back to the page)
rebuild nothing. The figures are kept per session (a few, the last drawn) and never mutated by their
readers (``st.plotly_chart`` serialises a copy).
"""

from __future__ import annotations

import hashlib
from typing import Any, Callable, Mapping

import numpy as np
import streamlit as st


def digest(*parts: Any) -> str:
    """A digest of ``parts``: arrays by dtype, shape and bytes, mappings and sequences item by item, anything
    else by its ``repr``."""
    h = hashlib.sha256()

    def add(p: Any) -> None:
        if isinstance(p, np.ndarray):
            h.update(f"a{p.dtype}{p.shape}".encode())
            h.update(np.ascontiguousarray(p).tobytes())
        elif isinstance(p, Mapping):
            h.update(b"{")
            for k, v in p.items():
                add(k)
                add(v)
            h.update(b"}")
        elif isinstance(p, (list, tuple)):
            h.update(b"[")
            for v in p:
                add(v)
            h.update(b"]")
        else:
            h.update(f"{type(p).__name__}:{p!r};".encode())

    for part in parts:
        add(part)
    return h.hexdigest()


@st.cache_resource(show_spinner=False, max_entries=8, scope="session")
def _cached(key: str, _build: Callable[[], Any]) -> Any:
    return _build()


def chart(build: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
    """The Plotly figure ``build(*args, **kwargs)``, built once per digest of its name and arguments in this
    session."""
    return _cached(digest(build.__module__, build.__qualname__, args, kwargs), lambda: build(*args, **kwargs))
