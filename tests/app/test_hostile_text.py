"""User text never reaches the page as Markdown or HTML.

A table whose file name, column names and group values are hostile Markdown/HTML (image links to a
planted host, ``<img>``, ``javascript:`` links, bold, math, Streamlit's ``:material/…:`` and
``:red[…]`` directives) is uploaded and every page is visited in teaching and review mode. Every text
Streamlit renders as Markdown — markdown, captions, alerts, headings, widget labels and help, radio
options, expander, status and tab labels, metric labels, toasts — is scanned: the hostile text must arrive escaped
(ui.common.md_escape), and it must arrive (the escaped column name is on the page).
"""

from __future__ import annotations

import json
import re

import pytest
from streamlit.testing.v1.element_tree import (
    AlertBase,
    Expander,
    HeadingBase,
    Markdown,
    Metric,
    Radio,
    Status,
    Tab,
    Toast,
    Widget,
)

from ui.common import md_escape

from ..hostile_markdown import plant_board, planted, study
from .conftest import open_page, upload, visible

HOST = "127.0.0.1:8999"
MEASURE = f"![m](http://{HOST}/x.png)"
GROUP = f"<img src=http://{HOST}/g.png>"
OWNER = "**owner** $x^2$"
FILE = f"![f](http://{HOST}/f.png).csv"
VALUES = [f"![v](http://{HOST}/v.png)", "[x](javascript:alert(1))", "**bold**", "$math$", ":material/home:",
          ":red[red]", "<b>b</b>"]

#: What must never appear in a rendered body: each piece of hostile syntax, unescaped.
UNSAFE = [re.compile(p) for p in (
    r"(?<!\\)!(?=\\?\[)",             # an image: "![" (escaped it is "\!\[")
    r"(?<!\\)\]\(",                   # a link or image target: "](…)"
    r"(?<!\\)<(img|b>)",              # HTML tags
    r"(?<!\\)\*\*(bold|owner)",       # bold
    r"(?<!\\)\$(math|x\^2)",          # KaTeX
    r":material/home:", r":red\[",    # Streamlit directives
)]

PAGES = ["start_here", "data", "policy_designer", "budget_functions", "personalized", "tradeoffs", "run",
         "analyst_tiers", "study", "concepts"]
#: The buttons of each page that release (their results name the study's labels, tiers and groups).
RELEASES = {"run": ("run_go",), "analyst_tiers": ("mt_release_btn",),
            "budget_functions": ("bf_run",)}


def _csv() -> bytes:
    head = ",".join('"' + c.replace('"', '""') + '"' for c in ("id", MEASURE, GROUP, OWNER))
    rows = [f"r{i},{1 + (i * 37) % 500},\"{VALUES[i % len(VALUES)]}\",f{i // 4}" for i in range(140)]
    return ("\n".join([head, *rows]) + "\n").encode()


def rendered_markdown(at) -> list[str]:
    """Every text of the page Streamlit renders as Markdown (raw, as sent to the browser)."""
    out: list[str] = []
    for tree in (at.main, at.sidebar):
        for node in tree:
            if isinstance(node, (Markdown, AlertBase, HeadingBase, Toast)):
                out.append(node.proto.body)
            elif isinstance(node, Metric):
                out += [node.proto.label, node.proto.help]
            elif isinstance(node, Widget):
                out += [getattr(node.proto, "label", ""), getattr(node.proto, "help", "")]
                if isinstance(node, Radio):
                    out += list(node.proto.options)
            elif isinstance(node, (Expander, Status, Tab)):
                out.append(node.proto.label)
    return [t for t in out if t]


def chart_texts(at) -> list[str]:
    """Every string of every Plotly figure on the page (Plotly renders some HTML tags in them)."""
    out: list[str] = []

    def walk(v: object) -> None:
        if isinstance(v, str):
            out.append(v)
        elif isinstance(v, dict):
            for x in v.values():
                walk(x)
        elif isinstance(v, list):
            for x in v:
                walk(x)

    for el in at.get("plotly_chart"):
        walk(json.loads(el.proto.spec))
    return out


def _check(at, where: str) -> str:
    assert not at.exception, (where, at.exception)
    bodies = rendered_markdown(at)
    bad = [(where, p.pattern, b) for b in bodies for p in UNSAFE if p.search(b)]
    assert not bad, bad[:3]
    tags = [(where, t) for t in chart_texts(at) if re.search(r"<(img|b>|a\s)", t)]
    assert not tags, tags[:3]
    return "\n".join(bodies + chart_texts(at))


@pytest.fixture(scope="module")
def hostile_app():
    at = open_page("data")
    upload(at, FILE, _csv())
    assert at.session_state["dataset"].schema.measures == (MEASURE,)
    return at


def test_hostile_names_are_escaped_on_every_page_in_both_modes(hostile_app):
    at = hostile_app
    seen = _check(at, "data")
    assert md_escape(FILE) in seen  # the file name is on the page, escaped
    for mode in ("teaching", "review"):
        at.session_state["mode"] = mode
        for page in PAGES:
            at.switch_page(f"app_pages/{page}.py")
            at.run()
            if page == "run":
                at.button(key="run_go").click().run()
            seen += _check(at, f"{page} ({mode})")
    assert md_escape(MEASURE) in seen and md_escape(OWNER) in seen
    assert "&lt;img src=http://127.0.0.1:8999/g.png&gt;" in seen or "&lt;b&gt;b&lt;/b&gt;" in seen  # charts, escaped
    assert MEASURE in visible(seen) and OWNER in visible(seen)  # what the reader sees is the name itself


def test_escaped_text_reads_as_the_original():
    for text in [MEASURE, GROUP, OWNER, FILE, *VALUES, "snake_case_name", "1. first", "- item", "a\\b",
                 "www.example.org", "C:\\data\\x.csv", "50%_share ~ {x} | y # z & <w>"]:
        esc = md_escape(text)
        assert visible(esc) == text, (text, esc)
        assert not any(p.search(esc) for p in UNSAFE), esc
    assert md_escape("line one\nline two") == "line one line two"


def test_planted_study_and_board_text_is_escaped_on_every_page(monkeypatch, tmp_path):
    """A study (title, labels, tier names, filter values) loaded with its table, another participant's board
    entries (name, rationale, dataset; an archived board's title) and this session's own entry: every page,
    the releases and the facilitator's tools show them escaped."""
    monkeypatch.setenv("PRDP_FACILITATOR_KEY", "key")
    workshop = tmp_path / "workshop"
    workshop.mkdir(exist_ok=True)
    plant_board(workshop / "board.sqlite", HOST, "key")
    config, table = study(HOST)
    at = open_page("study")
    at.file_uploader(key="study_upload").set_value((planted(HOST, "config") + ".yaml", config.encode(), "text/yaml"))
    at.file_uploader(key="study_data_upload").set_value((planted(HOST, "file") + ".csv", table, "text/csv"))
    at.button(key="study_load").click().run()
    loaded = _check(at, "study")
    assert md_escape(planted(HOST, "config") + ".yaml") in loaded, loaded
    assert at.session_state["dataset"].schema.measures == (planted(HOST, "measure"),), _check(at, "study")
    seen = ""
    for mode in ("teaching", "review"):
        at.session_state["mode"] = mode
        for page in [*PAGES, "board"]:
            at.switch_page(f"app_pages/{page}.py").run()
            for key in RELEASES.get(page, ()):
                at.button(key=key).click().run()
            if page == "board" and mode == "teaching":
                at.text_input(key="board_name").input(planted(HOST, "my-name"))
                at.text_input(key="board_rationale").input(planted(HOST, "my-why"))
                at.button(key="board_submit").click().run()
                at.text_input(key="board_key_input").input("key")
                at.button(key="board_unlock").click().run()
            seen += _check(at, f"{page} ({mode})")
    for kind in ("tier", "entry-name", "board-title", "my-name", "file", "value", "measure"):
        assert md_escape(planted(HOST, kind)) in seen, kind  # each kind is on a page, escaped


def test_planted_names_of_a_large_table_are_escaped_in_its_progress(monkeypatch, tmp_path):
    """A table of the data folder read in place: the progress of each statistic (which may name its group
    column) shows it escaped."""
    import pandas as pd

    owner, group = planted(HOST, "owner"), planted(HOST, "group")
    pd.DataFrame({"id": [f"r{i}" for i in range(400)], owner: [f"o{i // 3}" for i in range(400)],
                  group: [planted(HOST, "value") if i % 2 else "plain" for i in range(400)],
                  "EMP": [1.0 + (i * 37) % 300 for i in range(400)]}).to_parquet(tmp_path / "t.parquet")
    monkeypatch.setenv("PRDP_DATA_DIR", str(tmp_path))
    at = open_page("data")
    at.selectbox(key="large_file").set_value("t.parquet").run()
    at.button(key="large_connect_go").click().run()
    rid = at.session_state["raw"]["id"]
    at.selectbox(key=f"map_owner_{rid}").set_value(owner).run()
    at.button(key=f"apply_{rid}").click().run()
    assert at.session_state["dataset"].schema.owner_col == owner, _check(at, "data")
    at.switch_page("app_pages/policy_designer.py").run()
    at.session_state["policy_by_group_open"] = True  # Losses by group, opened: counted by group in the engine
    at.run()
    seen = _check(at, "policy_designer")
    assert md_escape(group) in seen
    at.switch_page("app_pages/study.py").run()
    at.button(key="study_build").click().run()  # the run's progress names each mechanism (its label)
    seen = _check(at, "study")
    assert "running" in seen, seen
