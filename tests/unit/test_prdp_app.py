"""``prdp app``: the installed app is found before the checkout, and ``--open`` opens the browser once the
server answers its health check (the browser and Streamlit replaced by stand-ins; the wheel installed in fresh
environments is tested in tests/e2e/test_wheel.py)."""

from __future__ import annotations

import io
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from prdp_core.commands import cli
from prdp_core.commands.board_cli import app_script, browser_url
from tests.e2e.server import free_port


def test_prdp_app_runs_the_installed_app_before_the_checkout(tmp_path, monkeypatch):
    site = tmp_path / "site-packages"
    app = site / "prdp_explorer_app"
    (app / "app_pages").mkdir(parents=True)
    (app / "__init__.py").write_text('"""The app."""\n')
    (app / "app.py").write_text("")
    monkeypatch.syspath_prepend(str(site))
    assert app_script() == app / "app.py"


def test_the_browser_is_sent_to_a_local_address():
    assert browser_url("127.0.0.1", 8501) == "http://127.0.0.1:8501"
    assert browser_url("0.0.0.0", 8080) == "http://127.0.0.1:8080"  # a wildcard is reached on this machine
    assert browser_url("::1", 8501) == "http://[::1]:8501"


class _Health(BaseHTTPRequestHandler):
    def do_GET(self) -> None:
        ok = self.path == "/_stcore/health"
        self.send_response(200 if ok else 404)
        self.end_headers()
        self.wfile.write(b"ok" if ok else b"")

    def log_message(self, *args) -> None:
        pass


def test_prdp_app_open_opens_the_browser_once_the_server_answers(tmp_path, monkeypatch):
    monkeypatch.setenv("PRDP_WORKSHOP_DIR", str(tmp_path))
    monkeypatch.setenv("PRDP_BOARD_URL", "")  # prdp app sets these for the server it runs: restored after the test
    monkeypatch.setenv("PRDP_DATA_DIR", "")
    port = free_port()
    opened: list[str] = []
    done = threading.Event()
    monkeypatch.setattr("webbrowser.open", lambda url: (opened.append(url), done.set()))

    def streamlit_main(args, prog_name):
        """Streamlit's stand-in: answers the health check a moment after starting, until the browser opened."""
        assert args[args.index("--server.port") + 1] == str(port)
        done.wait(1.0)
        assert opened == []  # not before the server answers
        server = ThreadingHTTPServer(("127.0.0.1", port), _Health)
        threading.Thread(target=server.serve_forever, daemon=True).start()
        try:
            assert done.wait(60), "the browser was not opened"
        finally:
            server.shutdown()
            server.server_close()

    monkeypatch.setattr("streamlit.web.cli.main", streamlit_main)
    out, err = io.StringIO(), io.StringIO()
    assert cli.main(["app", "--port", str(port), "--open"], stdout=out, stderr=err) == 0, err.getvalue()
    assert opened == [f"http://127.0.0.1:{port}"]


def test_prdp_app_opens_no_browser_without_open(tmp_path, monkeypatch):
    monkeypatch.setenv("PRDP_WORKSHOP_DIR", str(tmp_path))
    monkeypatch.setenv("PRDP_BOARD_URL", "")
    monkeypatch.setenv("PRDP_DATA_DIR", "")
    started = []
    monkeypatch.setattr("prdp_core.commands.board_cli.open_when_ready", lambda url: started.append(url))
    monkeypatch.setattr("streamlit.web.cli.main", lambda args, prog_name: None)
    assert cli.main(["app", "--port", "8501"], stdout=io.StringIO(), stderr=io.StringIO()) == 0
    assert started == []
