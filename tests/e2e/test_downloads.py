"""Concurrent sessions release and download their answers: every download completes.

Regression test of the cancelled "Download answers" clicks under load. A download click used to rerun the
session; the rerun first drops the session's references to its download files, and other sessions' runs
finishing meanwhile deleted the file before the browser fetched it. The click must not rerun the app (no
message from the browser to the server), and each session must receive its own complete answers table.
"""

from __future__ import annotations

import re

import pandas as pd
import pytest

from .conftest import shot, wait_idle

pytestmark = [pytest.mark.e2e, pytest.mark.xdist_group("e2e")]

SESSIONS = 3


def _csv(path, seed: int, n: int = 20_000) -> None:
    rows = "".join(f"E{i},F{i // 3},C{(i * 7 + seed) % 40},{1 + (i * 37 + seed) % 500},{10 + (i * 91) % 9000}\n"
                   for i in range(n))
    path.write_text("estab_id,firm,county,emp,payroll\n" + rows)


def test_concurrent_sessions_release_and_every_download_completes(browser, app_url, tmp_path):
    contexts = [browser.new_context(viewport={"width": 1400, "height": 1000}, accept_downloads=True)
                for _ in range(SESSIONS)]
    try:
        pages, sent = [], []
        for ctx in contexts:
            pg = ctx.new_page()
            pg.set_default_timeout(120_000)
            frames: list[int] = []
            pg.on("websocket", lambda ws, frames=frames: ws.on("framesent", lambda payload: frames.append(1)))
            pg.goto(app_url)
            pages.append(pg)
            sent.append(frames)
        for i, pg in enumerate(pages):  # every session uploads its own table (the server works on them at once)
            pg.get_by_role("heading", name="Data", exact=True).wait_for()
            wait_idle(pg, 120_000)
            pg.get_by_role("tab", name=re.compile("Upload a file")).click()
            _csv(tmp_path / f"firms_{i}.csv", seed=i)
            pg.locator('[data-testid="stFileUploaderDropzoneInput"]').set_input_files(str(tmp_path / f"firms_{i}.csv"))
        for i, pg in enumerate(pages):  # confirm the guessed roles: an upload is not used before that
            pg.get_by_text(f"firms_{i}.csv is not in use yet").wait_for()
            wait_idle(pg, 120_000)
            pg.get_by_role("button", name="Use this table").click()
        for i, pg in enumerate(pages):
            pg.get_by_text(f"Active dataset: firms_{i}.csv").wait_for()
            wait_idle(pg, 120_000)
            pg.locator('[data-testid="stSidebarNav"] a').filter(has_text="Run").first.click()
        for pg in pages:
            pg.get_by_role("button", name="Run release").wait_for()
            wait_idle(pg, 120_000)
            pg.get_by_role("button", name="Run release").click()
        for pg in pages:
            pg.get_by_text("Released answers", exact=True).wait_for()
            wait_idle(pg, 120_000)

        for round_ in range(2):  # all sessions click at once, twice
            before = [len(f) for f in sent]
            with pages[0].expect_download() as d0, pages[1].expect_download() as d1, \
                    pages[2].expect_download() as d2:
                for pg in pages:
                    pg.get_by_role("button", name="Download answers (CSV)").click()
            for i, info in enumerate((d0, d1, d2)):
                download = info.value
                assert download.failure() is None, (round_, i, download.failure())
                answers = pd.read_csv(download.path())
                assert list(answers.columns[:2]) == ["query", "label"] and len(answers) > 40
                assert answers["label"].astype(str).str.startswith("C").any()
            pages[0].wait_for_timeout(1_500)
            assert [len(f) for f in sent] == before, "a download click sent a rerun to the server"
        shot(pages[0], "downloads-concurrent")
    finally:
        for ctx in contexts:
            ctx.close()
