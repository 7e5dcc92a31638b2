"""Real-browser smoke flow: open the app, load a sample, upload a CSV, visit every page."""

from __future__ import annotations

import re

import pytest

from .conftest import ARTIFACTS, ROOT, shot, wait_idle

pytestmark = [pytest.mark.e2e, pytest.mark.xdist_group("e2e")]


def _nav_links(page):
    return page.locator('[data-testid="stSidebarNav"] a')


def test_smoke_main_path(page, app_url, tmp_path):
    page.goto(app_url)
    page.get_by_role("heading", name="Data", exact=True).wait_for()
    wait_idle(page)
    page.get_by_text("top 1% of records hold").first.wait_for()
    page.locator("[data-testid=\"stPlotlyChart\"]").nth(1).wait_for()
    shot(page, "01-data-default-sample")

    # load another sample (a smaller SIM table)
    page.get_by_role("tab", name=re.compile("Samples")).click()
    page.locator('[data-testid="stSelectbox"]').filter(has_text="Sample").get_by_role("combobox").first.click()
    page.get_by_role("option", name=re.compile("SIM: Pareto")).click()
    wait_idle(page)
    box = page.locator('[data-testid="stNumberInput"]').filter(has_text="Records").locator("input").first
    box.fill("20000")
    box.press("Enter")
    wait_idle(page)
    page.get_by_role("button", name="Load sample").click()
    wait_idle(page)
    page.get_by_text("Loaded sim_pareto").wait_for()
    sidebar = page.locator('[data-testid="stSidebar"]')
    sidebar.get_by_text("20,000 records").wait_for()
    shot(page, "02-data-sim-sample")

    # upload a CSV
    page.get_by_role("tab", name=re.compile("Upload a file")).click()
    wait_idle(page)  # switching tabs reruns the page
    csv = tmp_path / "firms.csv"
    csv.write_text("estab_id,firm,county,emp,payroll\n" + "".join(
        f"E{i},F{i // 3},C{i % 7},{1 + (i * 37) % 500},{10 + (i * 91) % 9000}\n" for i in range(300)))
    page.locator('[data-testid="stFileUploaderDropzoneInput"]').set_input_files(str(csv))
    wait_idle(page)
    page.get_by_text("firms.csv is not in use yet").wait_for()  # its guessed roles wait for confirmation
    page.get_by_role("button", name="Use this table").click()
    wait_idle(page)
    page.get_by_text("Active dataset: firms.csv").wait_for()
    sidebar.get_by_text("300 records").wait_for()
    shot(page, "03-data-uploaded")

    # design a policy and run one release end to end on the uploaded data
    _nav_links(page).filter(has_text="Policy designer").click()
    wait_idle(page)
    page.get_by_text("Policy-loss CDF over records").first.wait_for()
    sidebar.get_by_text("Unit splitting").first.wait_for()  # the active policy (and the page's glossary terms)
    _nav_links(page).filter(has_text="Run").first.click()
    wait_idle(page)
    page.get_by_role("button", name="Run release").click()
    wait_idle(page)
    page.get_by_text("Released answers", exact=True).wait_for()
    page.get_by_text("Seeded run (seed 0)").wait_for()
    page.get_by_text("Unit splitting: ").first.wait_for(state="attached")  # the ledger entry (a grid cell)
    shot(page, "04-run-release")

    # visit every page
    links = _nav_links(page)
    n = links.count()
    registered = (ROOT / "app.py").read_text().count("st.Page(")
    assert n == (registered if registered > 1 else 0)  # Streamlit hides the menu when there is one page
    for i in range(n):
        link = _nav_links(page).nth(i)
        title = link.inner_text().strip()
        link.click()
        wait_idle(page)
        assert page.locator('[data-testid="stException"]').count() == 0, title
        shot(page, f"05-page-{i:02d}-{re.sub(r'[^a-z0-9]+', '-', title.lower()).strip('-')}")
    assert len(list(ARTIFACTS.glob("05-page-*.png"))) >= n
