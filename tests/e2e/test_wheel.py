"""The wheel is the whole product: built once from the checkout (through its source distribution),
installed in a fresh virtual environment of each supported Python (3.11, 3.12, 3.13) with the versions of
requirements.lock, it runs a study headless and serves the app (``prdp app``) from a folder outside the
checkout; a real browser opens the Data page and finds the default sample's profile. Under CI=true a missing
interpreter, uv or the browser fails the test."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from .conftest import IN_CI, ROOT, app_server, new_page, shot, wait_idle
from .server import clean_env

pytestmark = [pytest.mark.e2e, pytest.mark.wheel, pytest.mark.xdist_group("wheel")]

PYTHONS = ("3.11", "3.12", "3.13")


def _unavailable(what: str) -> None:
    if IN_CI:
        pytest.fail(f"{what} is missing under CI")
    pytest.skip(f"{what} is missing; the test runs under CI")


def _uv() -> list[str]:
    """The uv command (as the Makefile finds it: on PATH, else the module of the Python that runs make)."""
    if shutil.which("uv"):
        return ["uv"]
    for python in ("python3", sys.executable):
        if subprocess.run([python, "-m", "uv", "--version"], capture_output=True, check=False).returncode == 0:
            return [python, "-m", "uv"]
    _unavailable("uv")
    raise AssertionError("unreachable")


def _run(cmd: list[str], **kw) -> subprocess.CompletedProcess:
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=600, check=False, **kw)
    assert r.returncode == 0, f"{' '.join(cmd)} exited with {r.returncode}:\n{r.stdout}\n{r.stderr}"
    return r


def _env(home: Path) -> dict[str, str]:
    """A user's environment: nothing pointing into the checkout or another environment, a workshop folder of
    its own."""
    env = clean_env(PRDP_WORKSHOP_DIR=str(home))
    for name in ("PYTHONPATH", "VIRTUAL_ENV", "PRDP_SAMPLE_DATA"):
        env.pop(name, None)
    return env


@pytest.fixture(scope="module")
def wheel(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("dist")
    t0 = time.perf_counter()
    # the source distribution first, then the wheel from it (uv build's default): the wheel holds what
    # MANIFEST.in puts in the sdist, and setuptools' build folder is a temporary one, not the checkout's
    _run([*_uv(), "build", "--quiet", "--out-dir", str(out), str(ROOT)])
    print(f"wheel built in {time.perf_counter() - t0:.1f} s")
    (whl,) = out.glob("prdp_explorer-*.whl")
    return whl


@pytest.mark.timeout(900)
@pytest.mark.parametrize("version", PYTHONS)
def test_the_wheel_installs_runs_a_study_and_serves_the_app(version, wheel, browser, tmp_path):
    found = subprocess.run([str(ROOT / ".ci" / "find-python"), version], capture_output=True, text=True,
                           check=False)
    if found.returncode != 0:
        _unavailable(f"Python {version}")
    times = {}
    t0 = time.perf_counter()
    venv = tmp_path / "venv"
    _run([*_uv(), "venv", "--quiet", "--python", found.stdout.strip(), str(venv)])
    # linked from uv's cache and not compiled ahead: the same files, installed in seconds rather than copied
    _run([*_uv(), "pip", "install", "--quiet", "--python", str(venv / "bin" / "python"),
          "--constraint", str(ROOT / "requirements.lock"), str(wheel)],
         env={**os.environ, "UV_LINK_MODE": "hardlink", "UV_COMPILE_BYTECODE": "0"})
    times["install"] = time.perf_counter() - t0
    prdp = str(venv / "bin" / "prdp")
    home = tmp_path / "home"
    home.mkdir()
    env = _env(home)

    # the engine, the command and the shipped sample tables, from a folder outside the checkout
    t0 = time.perf_counter()
    _run([prdp, "run", str(ROOT / "examples" / "cbp_unit_splitting.yaml"), "--out", str(home / "out"), "-q"],
         cwd=home, env=env)
    assert (home / "out" / "results.csv").stat().st_size > 0 and (home / "out" / "report.html").is_file()
    times["prdp run"] = time.perf_counter() - t0
    out = _run([str(venv / "bin" / "python"), "-c", "from prdp_core.commands.board_cli import app_script; "
                "from prdp_core.data.samples import names, sample_dir; "
                "print(app_script().parent); print(sample_dir()); print(' '.join(names('real')))"],
               cwd=home, env=env).stdout.splitlines()
    app_dir, samples, real = Path(out[0]), Path(out[1]), out[2].split()
    assert app_dir.is_relative_to(venv) and samples.is_relative_to(venv), out  # installed, not the checkout's
    assert "world_cities" in real, out  # a real table of sample_data/, shipped in the wheel

    # the app: prdp app answers its health check and the Data page shows the default sample's profile
    t0 = time.perf_counter()
    log_path = home / "server.log"
    with open(log_path, "w") as log, app_server(
            log, env=env, cwd=home, startup_timeout=240,
            command=lambda port: [prdp, "app", "--host", "127.0.0.1", "--port", str(port)]) as (url, proc):
        page = new_page(browser)
        try:
            page.goto(url)
            page.get_by_role("heading", name="Data", exact=True).wait_for(timeout=180_000)
            wait_idle(page, timeout=180_000)
            page.get_by_text("top 1% of records hold").first.wait_for(timeout=120_000)
            page.locator('[data-testid="stSidebar"]').get_by_text("cbp_like").first.wait_for()
            assert page.locator('[data-testid="stException"]').count() == 0
            shot(page, f"wheel-python-{version}")
        finally:
            page.context.close()
        assert proc.poll() is None, log_path.read_text()
    times["prdp app"] = time.perf_counter() - t0
    print(f"Python {version}: " + ", ".join(f"{k} {v:.1f} s" for k, v in times.items()))
    assert "Traceback" not in log_path.read_text(), log_path.read_text()
