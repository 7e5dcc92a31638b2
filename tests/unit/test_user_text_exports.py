"""The study report and the board's HTML export show user text literally: a study whose title, labels, tier
names, column names and group values hold a Markdown image and an HTML ``<img>`` (tests/hostile_markdown.py),
and board entries whose names, rationales and datasets do, give HTML with no tag of theirs."""

from __future__ import annotations

import html
import re
from pathlib import Path

from prdp_core import report as R
from prdp_core.board import export as X
from prdp_core.board.store import BoardStore

from ..hostile_markdown import BOARD_KINDS, plant_board, planted, study

HOST = "127.0.0.1:8999"
#: A tag of planted text: an <img> whose address is the planted host (in any spelling a browser decodes).
TAG = re.compile(r"<img[^>]*" + re.escape(HOST), re.I)


def study_report(tmp_path: Path) -> str:
    config, table = study(HOST)
    (tmp_path / "table.csv").write_bytes(table)
    (tmp_path / "study.yaml").write_text(config, encoding="utf-8")
    run = R.run_study(R.load_config(tmp_path / "study.yaml"))
    return R.render_html(run, config_text=config)


def test_study_report_shows_planted_text_escaped(tmp_path):
    page = study_report(tmp_path)
    assert not TAG.search(page), TAG.search(page)
    for kind in ("title", "measure", "query", "mechanism"):
        assert html.escape(planted(HOST, kind), quote=False) in page, kind


def test_board_export_shows_planted_text_escaped(tmp_path):
    plant_board(tmp_path / "board.sqlite", HOST, "key")
    store = BoardStore(f"sqlite:///{tmp_path / 'board.sqlite'}", facilitator_key="key")
    try:
        entries = store.entries()
    finally:
        store.dispose()
    for review in (False, True):
        page = X.board_html(entries, review=review, delta=1e-6, dataset=planted(HOST, "entry-dataset"))
        assert not TAG.search(page), TAG.search(page)
        for kind in ("entry-name", "why", "entry-dataset"):
            assert kind in BOARD_KINDS and html.escape(planted(HOST, kind), quote=False) in page, kind
