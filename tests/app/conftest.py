"""AppTest helpers: run the real app.py and switch to a page."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(autouse=True)
def _own_workshop_folder(monkeypatch, tmp_path):
    """Every AppTest saves its session (ui.durable) in a workshop folder of its own, never in ./workshop."""
    monkeypatch.setenv("PRDP_WORKSHOP_DIR", str(tmp_path / "workshop"))
    for var in ("PRDP_BOARD_URL", "PRDP_DATA_DIR", "PRDP_UPLOAD_DIR"):
        monkeypatch.delenv(var, raising=False)


class Browser:
    """The browser the AppTest sessions of a test come from: the secret its cookie holds (None: a browser that
    holds none yet, as on its first visit). AppTest sends no cookies, so :func:`one_browser` hands this one to
    ``ui.durable.browser_cookie``; set :attr:`cookie` to switch browsers."""

    def __init__(self, cookie: str | None) -> None:
        self.cookie = cookie


@pytest.fixture
def one_browser(monkeypatch) -> Browser:
    """Every AppTest session of the test comes from one browser (the same cookie), as a reload or a reconnect
    does; a test switches to another browser by setting the returned :class:`Browser`'s cookie."""
    import secrets

    from ui import durable

    b = Browser(secrets.token_urlsafe(24))  # as prdp_core.board.sessions.new_browser_secret
    monkeypatch.setattr(durable, "browser_cookie", lambda: b.cookie, raising=False)
    return b


def open_page(page: str, *, timeout: float = 120) -> AppTest:
    """Run app.py (default sample loaded), then switch to ``app_pages/<page>.py``."""
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=timeout)
    at.run()
    assert not at.exception, at.exception
    if page != "data":
        at.switch_page(f"app_pages/{page}.py")
        at.run()
        assert not at.exception, at.exception
    return at


def small_sample(n: int = 4000, seed: int | None = 1) -> AppTest:
    """A session on the Data page with the cbp_like sample of ``n`` records (``seed``: None keeps the default)."""
    at = open_page("data")
    at.session_state["sample_name"] = "cbp_like"
    at.session_state["sample_n_cbp_like"] = n
    if seed is not None:
        at.session_state["sample_seed"] = seed
    at.button(key="load_sample").click().run()
    return at


@pytest.fixture
def data_page() -> AppTest:
    return open_page("data")


def visible(markdown: str) -> str:
    """Markdown as the reader sees its text: backslash escapes of punctuation and the zero-width spaces
    ui.common.md_escape adds around user text removed."""
    return re.sub(r"\\([!-/:-@\[-`{-~])", r"\1", markdown).replace("\u200b", "")


def texts(at: AppTest) -> str:
    """All markdown, caption, error, warning, info and success text on the page, as the reader sees it
    (:func:`visible`)."""
    parts = []
    for kind in ("markdown", "caption", "error", "warning", "info", "success", "title", "subheader"):
        parts += [visible(str(e.value)) for e in getattr(at, kind)]
    return "\n".join(parts)


def _decode(v):
    """Plotly encodes numpy arrays as {"dtype", "bdata"} (base64); return a plain list."""
    import base64

    import numpy as np

    if isinstance(v, dict) and "bdata" in v:
        return np.frombuffer(base64.b64decode(v["bdata"]), dtype=np.dtype(v["dtype"])).tolist()
    return v


def chart_traces(at: AppTest, key: str) -> list[dict]:
    """The traces of the Plotly chart with widget key ``key``, with x/y decoded to lists."""
    import json

    for el in at.get("plotly_chart"):
        if el.proto.id and el.proto.id.endswith(key):
            data = json.loads(el.proto.spec)["data"]
            for tr in data:
                for axis in ("x", "y"):
                    if axis in tr:
                        tr[axis] = _decode(tr[axis])
            return data
    raise AssertionError(f"no chart with key {key!r}")


def upload(at: AppTest, name: str, content: bytes, mime: str = "text/csv", *, use: bool = True) -> AppTest:
    """Upload a file on the Data page; with ``use``, confirm its guessed roles (*Use this table*) so it becomes
    the active dataset (an upload alone only opens the Column roles view)."""
    at.file_uploader(key="upload").set_value((name, content, mime)).run()
    assert not at.exception, at.exception
    if use:
        at.button(key=f"apply_{at.session_state['raw']['id']}").click().run()
        assert not at.exception, at.exception
    return at
