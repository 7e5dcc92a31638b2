"""The glossary defines every symbol and term the pages use, and names each page that uses it.

A page's text is its file in app_pages/, its ui modules (``ui/<page>.py``, ``ui/<page>_*.py``) and the other ui
modules it imports for what it shows (``from ui import x`` or ``from ui.x import …``; not the app's shared machinery,
:data:`SHARED`, whose texts are about the app, not the page's subject): the scan finds the Greek symbols (a letter
with an optional accent: ε̌, ε̂, Φ̄) and the terms a first-time reader needs defined (CKS, PctScore, ARE, m(r), P(r),
T(a), E(r), zCDP, …) there."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

from ui import glossary

ROOT = Path(__file__).resolve().parents[2]
PAGES = sorted(p.stem for p in (ROOT / "app_pages").glob("*.py"))
#: Terms written in Latin letters that a first-time reader needs defined wherever a page uses them.
TERMS = ("CKS", "PctScore", "ARE", "MSE", "CDF", "zCDP", "PrDP", "PDP", "PrLDP", "GRR", "BRR", "TSG", "CBP", "ε0",
         "m(r)", "P(r)", "T(a)", "E(r)", "r(a)", "√(2ρ)")
#: ui modules every page may import for the app's machinery (session, errors, review rule, widgets, snippets).
SHARED = {"state", "common", "review", "options", "figures", "reproduce", "memory", "page_state", "large", "data_tabs",
          "mode", "durable", "links", "sidebar", "session_design", "glossary", "policy_designer", "run", "group_keys",
          "private_suggest", "study_export", "study_import", "study_report"}
_TERM = re.compile(r"(?<![\w])(" + "|".join(re.escape(t) for t in TERMS) + r")(?![\w])")


def _modules(page: str) -> list[Path]:
    """The page's file and the ui modules it imports."""
    path = ROOT / "app_pages" / f"{page}.py"
    names = {page, *(p.stem for p in (ROOT / "ui").glob(f"{page}_*.py"))}
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and node.module == "ui":
            names |= {a.name for a in node.names if a.name not in SHARED}
        elif isinstance(node, ast.ImportFrom) and (node.module or "").startswith("ui."):
            names |= {node.module.split(".")[1]} - SHARED
    return [path, *(p for n in sorted(names) if (p := ROOT / "ui" / f"{n}.py").is_file())]


def symbols_used(page: str) -> set[str]:
    text = "".join(p.read_text(encoding="utf-8") for p in _modules(page))
    return {m.group() for m in glossary.GREEK.finditer(text)} | {m.group(1) for m in _TERM.finditer(text)}


def test_the_scan_finds_symbols_and_terms():
    used = symbols_used("concepts")
    assert {"ρ", "ε", "δ", "CKS", "P(r)", "√(2ρ)"} <= used
    assert {"ε̌", "ε̂"} <= symbols_used("budget_functions") and "Φ̄" in symbols_used("run")


@pytest.mark.parametrize("page", [p for p in PAGES if p != "glossary"])
def test_every_symbol_a_page_uses_is_defined_for_that_page(page):
    used = symbols_used(page)
    missing = sorted(s for s in used if s not in glossary.BY_SYMBOL)
    assert missing == [], f"{page} uses symbols the glossary does not define: {missing}"
    unlisted = sorted(s for s in used if page not in glossary.BY_SYMBOL[s].pages)
    assert unlisted == [], f"the glossary's entries of {unlisted} do not name the page {page}"
    assert used <= {t.symbol for t in glossary.terms_of(page)}  # the page's sidebar lists its terms


def test_every_entry_is_plain_and_names_real_pages():
    assert len({t.symbol for t in glossary.TERMS}) == len(glossary.TERMS)
    for t in glossary.TERMS:
        assert t.name and len(t.plain.split()) >= 5, t.symbol
        assert t.pages and set(t.pages) <= set(PAGES), (t.symbol, t.pages)
        assert "Lemma" not in t.plain and "Sec." not in t.plain, t.symbol  # plain words, no paper references
    assert set(glossary.TITLES) == set(PAGES) - {"glossary"}


def test_the_search_matches_symbols_names_and_definitions():
    assert "P(r)" in {t.symbol for t in glossary.matching("p(r)")}
    assert {t.symbol for t in glossary.matching("canonne")} == {"CKS"}
    assert glossary.matching("") == list(glossary.TERMS) and glossary.matching("no such term at all") == []
