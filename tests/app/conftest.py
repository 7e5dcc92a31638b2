"""AppTest helpers: run the real app.py and switch to a page."""

from __future__ import annotations

from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

ROOT = Path(__file__).resolve().parents[2]


def open_page(page: str, *, timeout: float = 120) -> AppTest:
    """Run app.py (default sample loaded), then switch to ``pages/<page>.py``."""
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=timeout)
    at.run()
    assert not at.exception, at.exception
    if page != "data":
        at.switch_page(f"pages/{page}.py")
        at.run()
        assert not at.exception, at.exception
    return at


@pytest.fixture
def data_page() -> AppTest:
    return open_page("data")


def texts(at: AppTest) -> str:
    """All markdown, caption, error, warning, info and success text on the page."""
    parts = []
    for kind in ("markdown", "caption", "error", "warning", "info", "success", "title", "subheader"):
        parts += [str(e.value) for e in getattr(at, kind)]
    return "\n".join(parts)
