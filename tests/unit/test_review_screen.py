"""The screen's statistics of the records go through the review boundary: every one a page asks for is registered
(prdp_core.review_boundary.SCREEN, filled by ui.review.SCREEN_OUTPUTS), every registered one is asked for by a
page, and the boundary shows them in teaching mode only."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from prdp_core.review import review_boundary as rb

ROOT = Path(__file__).resolve().parents[2]


def _asked() -> dict[str, list[str]]:
    """The names the pages and ui modules pass to shows_records / may_show, with where."""
    from ui import review  # noqa: F401 - registers the screen outputs

    asked: dict[str, list[str]] = {}
    for path in [*sorted((ROOT / "ui").glob("*.py")), *sorted((ROOT / "app_pages").glob("*.py"))]:
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Call):
                fn = node.func.attr if isinstance(node.func, ast.Attribute) else getattr(node.func, "id", None)
                if fn in ("shows_records", "may_show") and node.args:
                    arg = node.args[0]
                    where = f"{path.relative_to(ROOT)}:{node.lineno}"
                    if path.name == "review.py" and isinstance(arg, ast.Name):
                        continue  # shows_records passing its own argument on
                    assert isinstance(arg, ast.Constant) and isinstance(arg.value, str), \
                        f"{where}: a screen output is named by a literal"
                    asked.setdefault(arg.value, []).append(where)
    return asked


def test_every_screen_output_a_page_asks_for_is_registered_and_every_registered_one_is_asked_for():
    asked = _asked()
    assert len(asked) >= 20
    assert sorted(set(asked) - set(rb.SCREEN)) == [], "asked for, not registered"
    assert sorted(set(rb.SCREEN) - set(asked)) == [], "registered, never asked for"


def test_the_boundary_shows_the_screen_outputs_in_teaching_mode_only():
    _asked()
    for name in rb.SCREEN:
        assert rb.may_show(name, teaching=True) is True
        assert rb.may_show(name, teaching=False) is False
    with pytest.raises(ValueError, match="not registered"):
        rb.may_show("a new chart of the records", teaching=True)
    with pytest.raises(ValueError, match="registered twice"):
        rb.register_screen("policy losses", "something else")
