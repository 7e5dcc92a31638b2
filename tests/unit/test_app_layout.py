"""The app's layout: pages in app_pages/ (no legacy pages/ folder, no patch of Streamlit's page manager), at
most 250 lines each with a ui module of the same name; an installation puts the engine on the import path, never
the app's helpers."""

from __future__ import annotations

import os
import subprocess
import sys
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_only_the_engine_is_a_distributed_package():
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    include = project["tool"]["setuptools"]["packages"]["find"]["include"]
    assert sorted(include) == ["prdp_core", "prdp_core.*"]


def test_ui_is_not_importable_outside_the_checkout(tmp_path):
    """The installed interpreter, started in another folder, finds prdp_core (the prdp command needs it) but not
    the app's ``ui`` package, which Streamlit imports from app.py's folder."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    code = ("import importlib.util as u, prdp_core.commands.board_cli as c; "
            "print(u.find_spec('ui') is None, u.find_spec('app_pages') is None, c.app_script())")
    r = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, env=env, capture_output=True, text=True,
                       timeout=120, check=False)
    assert r.returncode == 0, r.stderr
    assert r.stdout.split() == ["True", "True", str(ROOT / "app.py")]


PAGES = sorted((ROOT / "app_pages").glob("*.py"))
MAX_PAGE_LINES = 250


def test_pages_live_in_app_pages_and_streamlit_is_not_patched():
    assert not (ROOT / "pages").exists()  # Streamlit would treat it as a legacy multipage app
    assert len(PAGES) >= 10
    code = [ROOT / "app.py", *PAGES, *(ROOT / "ui").glob("*.py"), *(ROOT / "tests").rglob("conftest.py")]
    assert [p.name for p in code if "PagesManager" in p.read_text(encoding="utf-8")] == []


def test_every_page_is_short_and_has_a_ui_module_of_its_name():
    long = {p.name: n for p in PAGES if (n := len(p.read_text(encoding="utf-8").splitlines())) > MAX_PAGE_LINES}
    assert long == {}
    assert [p.name for p in PAGES if not (ROOT / "ui" / p.name).is_file()] == []


UI_MODULES = sorted((ROOT / "ui").glob("*.py"))
MAX_UI_MODULE_LINES = 600


def test_every_ui_module_holds_one_concept():
    """The app's helpers follow the engine's rule (tests/unit/test_code_layout.py): at most 600 lines, a docstring
    whose first line says the module's concept."""
    import ast

    assert len(UI_MODULES) >= 20
    for path in UI_MODULES:
        text = path.read_text(encoding="utf-8")
        lines = len(text.splitlines())
        assert lines <= MAX_UI_MODULE_LINES, f"ui/{path.name} has {lines} lines: split it by concept"
        doc = ast.get_docstring(ast.parse(text))
        assert doc and len(doc.strip().splitlines()[0].split()) >= 3, f"ui/{path.name}: no docstring saying its concept"


def test_every_page_declares_its_state_once_and_the_study_loops_over_the_declarations():
    import importlib

    from ui import study
    from ui.page_state import PageState

    declared = {}
    for page in PAGES:
        st_decl = getattr(importlib.import_module(f"ui.{page.stem}"), "STATE", None)
        if st_decl is not None:
            assert isinstance(st_decl, PageState) and st_decl.page == page.stem
            declared[page.stem] = st_decl
    # the pages whose settings or engine keys a study carries all declare them; the study reads nothing else
    assert set(declared) >= {"policy_designer", "run", "tradeoffs", "budget_functions", "personalized",
                             "analyst_tiers", "concepts", "data"}
    assert {p.page for p in study.PAGES} == set(declared) | {"study"}
    keys = [k for p in study.PAGES for k in (*p.settings, *p.engine, *p.editors, *p.results)]
    assert len(keys) == len(set(keys)), sorted(k for k in set(keys) if keys.count(k) > 1)
    for p in study.PAGES:
        assert set(p.rules) <= set(p.settings), p.page  # a rule checks an imported setting of its own page
        assert study.PAGE_SETTINGS.get(p.page, ()) == p.settings
    assert study.ENGINE_KEYS == tuple(k for p in study.PAGES for k in p.engine)
