"""A large dataset in a real browser: a 200,000-row Parquet file in the server's data folder (PRDP_DATA_DIR) is
connected without uploading, its guessed roles confirmed, a threshold changed on the Policy designer (the
records' CDF updates) and a release run; paths outside the data folder (``..``, an absolute path, a symbolic
link leading out) are refused with a message and the active dataset kept.

The seconds from the threshold change to the updated chart are written to
test-artifacts/e2e/large-dataset.json and printed (targets live in benchmarks/README.md, not here).
"""

from __future__ import annotations

import json
import re
from typing import Iterator

import pytest

import prdp_core

from .conftest import (
    ARTIFACTS,
    FINGERPRINT_JS,
    _clean_env,
    _require_browser,
    change_first_threshold,
    new_page,
    shot,
    wait_idle,
)
from .server import app_server

pytestmark = [pytest.mark.e2e, pytest.mark.xdist_group("e2e")]

ROWS = 200_000
CHART = ".st-key-cdf_records .js-plotly-plot"
_FINGERPRINT = FINGERPRINT_JS % CHART


@pytest.fixture(scope="module")
def large_url(tmp_path_factory) -> Iterator[str]:
    """A server whose data folder holds cbp.parquet (200,000 rows, written in chunks) and a link leading out."""
    _require_browser()
    home = tmp_path_factory.mktemp("large-server")
    data = home / "data"
    data.mkdir()
    prdp_core.data.samples.write_sample("cbp_like", data / "cbp.parquet", rows=ROWS, seed=5)
    secret = home / "secret.parquet"
    prdp_core.data.samples.write_sample("cbp_like", secret, rows=10, seed=1)
    (data / "link.parquet").symlink_to(secret)
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    env = _clean_env(PRDP_WORKSHOP_DIR=str(home / "workshop"), PRDP_DATA_DIR=str(data))
    with open(ARTIFACTS / "large-dataset-server.log", "w") as log, app_server(log, env=env) as (url, _proc):
        yield url


@pytest.fixture
def lpage(browser, large_url):
    pg = new_page(browser)
    try:
        pg.goto(large_url)
        pg.get_by_role("heading", name="Data", exact=True).wait_for()
        wait_idle(pg)
        pg.get_by_role("tab", name=re.compile("Large dataset")).click()
        wait_idle(pg)  # switching tabs reruns the page
        yield pg
    finally:
        pg.context.close()


def _sidebar(page):
    return page.locator('[data-testid="stSidebar"]')


def _no_exception(page, where: str) -> None:
    assert page.locator('[data-testid="stException"]').count() == 0, where


def test_connect_a_large_file_change_a_threshold_and_release(lpage):
    page = lpage
    page.locator('[data-testid="stSelectbox"]').filter(has_text="File or folder").get_by_role("combobox").first.click()
    options = page.get_by_role("option")
    options.first.wait_for()
    assert "link.parquet" not in " ".join(options.all_inner_texts())  # a link leading out is not offered
    page.get_by_role("option", name="cbp.parquet").click()
    wait_idle(page)
    page.get_by_role("button", name="Connect").click()
    wait_idle(page, timeout=180_000)
    page.get_by_text("cbp.parquet is not in use yet").wait_for(timeout=180_000)  # roles guessed, not active
    _sidebar(page).get_by_text("cbp_like").first.wait_for()  # the sample is still the active dataset
    page.get_by_role("button", name="Use this table").click()
    wait_idle(page, timeout=180_000)
    _sidebar(page).get_by_text(f"{ROWS:,} records").wait_for(timeout=180_000)
    _sidebar(page).get_by_text("Large dataset: its records stay in the engine").wait_for()
    page.get_by_text("Active dataset: cbp.parquet").wait_for()
    _no_exception(page, "data page")
    shot(page, "large-dataset-profile")

    page.locator('[data-testid="stSidebarNav"] a').filter(has_text="Policy designer").click()
    wait_idle(page, timeout=180_000)
    page.locator(CHART).wait_for(timeout=180_000)
    _no_exception(page, "policy designer")
    old, new, seconds = change_first_threshold(page, _FINGERPRINT, lambda t: t / 4 if t > 4 else t * 4)
    wait_idle(page, timeout=120_000)
    _no_exception(page, "policy designer after the change")
    shot(page, "large-dataset-policy-designer")

    page.locator('[data-testid="stSidebarNav"] a').filter(has_text="Run").first.click()
    wait_idle(page, timeout=180_000)
    page.get_by_role("button", name="Run release").click()
    wait_idle(page, timeout=180_000)
    page.get_by_role("heading", name="Released answers").wait_for(timeout=180_000)
    page.locator(".st-key-run_cdf_records .js-plotly-plot").wait_for(timeout=180_000)
    _no_exception(page, "run page")
    assert page.get_by_text("No release yet.").count() == 0  # the ledger holds the release
    shot(page, "large-dataset-release")
    (ARTIFACTS / "large-dataset.json").write_text(json.dumps(
        {"rows": ROWS, "threshold": [old, new], "seconds_to_updated_cdf": round(seconds, 3)}, indent=2))
    print(f"\nlarge dataset, {ROWS:,} rows: threshold {old:g} → {new:g}, updated CDF after {seconds:.2f} s")


@pytest.mark.parametrize("path, words", [("../x.parquet", "may not leave the data folder"),
                                         ("/etc/passwd", "not absolute"),
                                         ("link.parquet", "outside the data folder")])
def test_a_path_outside_the_data_folder_is_refused(lpage, path, words):
    page = lpage
    box = page.get_by_label("… or a path, folder or glob inside the data folder")
    box.fill(path)
    box.press("Enter")
    wait_idle(page)
    page.get_by_role("button", name="Connect").click()
    wait_idle(page)
    err = page.locator('[data-testid="stAlertContentError"]').first
    err.wait_for()
    assert words in err.inner_text(), err.inner_text()
    page.get_by_text("The active dataset is still cbp_like").wait_for()
    _sidebar(page).get_by_text("cbp_like").first.wait_for()  # the sample is still the active dataset
    _no_exception(page, path)
