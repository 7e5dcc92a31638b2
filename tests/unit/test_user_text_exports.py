"""The study report and the board's HTML export show user text literally: a study whose title, labels, tier
names, column names and group values hold a Markdown image and an HTML ``<img>`` (tests/hostile_markdown.py),
and board entries whose names, rationales and datasets do, give HTML with no tag of theirs."""

from __future__ import annotations

import html
import re

from ..hostile_markdown import board_html, planted, report_html

HOST = "127.0.0.1:8999"
#: A tag of planted text: an <img> whose address is the planted host.
TAG = re.compile(r"<img[^>]*" + re.escape(HOST), re.I)


def test_study_report_shows_planted_text_escaped(tmp_path):
    page = report_html(tmp_path, HOST)
    assert not TAG.search(page), TAG.search(page)
    for kind in ("title", "measure", "query", "mechanism"):
        assert html.escape(planted(HOST, kind), quote=False) in page, kind


def test_board_export_shows_planted_text_escaped(tmp_path):
    for review in (False, True):
        (tmp_path / str(review)).mkdir()
        page = board_html(tmp_path / str(review), HOST, review=review)
        assert not TAG.search(page), TAG.search(page)
        for kind in ("entry-name", "why", "entry-dataset"):
            assert html.escape(planted(HOST, kind), quote=False) in page, kind
