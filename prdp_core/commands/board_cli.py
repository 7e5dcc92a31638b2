"""The ``prdp board`` and ``prdp app`` commands (registered by :mod:`prdp_core.commands.cli`).

::

    prdp board submit STUDY.yaml --name NAME [--rationale TEXT] [--policy PART] [--db URL]
    prdp board list [--db URL] [--format table|json|csv] [--review] [--board ID]
    prdp board export --out DIR [--force] [--db URL] [--review] [--board ID]
    prdp app [--host 127.0.0.1] [--port 8501] [--data-dir DIR] [--board URL] [--open]
    prdp ledger show NAME [--db URL] [--format table|json] [--review]
    prdp ledger list [--db URL]

``--db`` / ``--board`` default to ``PRDP_BOARD_URL``, else the SQLite file of the workshop
folder (``PRDP_WORKSHOP_DIR``, default ./workshop). Listing and exporting follow the board's
mode: when the facilitator set it to review, or with ``--review``, only public columns appear.
The named ledgers that ``prdp run --ledger NAME`` appends to (:class:`RunLedger`) live in the
same database (:mod:`prdp_core.board.ledgers`).
"""

from __future__ import annotations

import argparse
import os
import sys
import threading
import time
import urllib.request
import webbrowser
from pathlib import Path
from typing import IO, Any, Iterable

from ..board import workshop
from ..core.errors import DataError, PrdpError, StoreError
from .exit_codes import EXIT_OK


def add_parsers(sub: Any, codes: str, parser_class: type) -> None:
    """Add ``board`` (submit, list, export) and ``app`` to the ``prdp`` parser's subcommands."""
    fmt = argparse.RawDescriptionHelpFormatter
    epilog = f"exit codes:\n{codes}"
    b = sub.add_parser("board", help="the workshop board: submit a study's policy, list or export the board",
                       description="The workshop board in its database (PRDP_BOARD_URL, else "
                                   "<PRDP_WORKSHOP_DIR>/board.sqlite).", epilog=epilog, formatter_class=fmt)
    bs = b.add_subparsers(dest="board_command", metavar="ACTION", parser_class=parser_class)
    bs.required = True
    db_help = "board database URL (default: PRDP_BOARD_URL, else sqlite:///<workshop folder>/board.sqlite)"
    s = bs.add_parser("submit", help="put a study's policy on the board", epilog=epilog, formatter_class=fmt,
                      description="Compute the board summary of the study's policy on its data and submit it. "
                                  "Submitting the same study again with the same name, rationale and participant "
                                  "code adds nothing. Its error figures (seeded runs of the mechanism on the data) "
                                  "are computed for a teaching study on a board not set to review mode only.")
    s.add_argument("config", metavar="STUDY.yaml", help="the study config (YAML, docs/config.md)")
    s.add_argument("--name", required=True, help="the policy's name on the board (at most 120 characters)")
    s.add_argument("--rationale", default="", help="one line saying why (at most 300 characters)")
    s.add_argument("--policy", choices=("thresholds", "budget", "specification", "tiers"),
                   help="which policy of the study to submit (needed when it holds several)")
    s.add_argument("--data", metavar="FILE", help="use this data file instead of the config's data source")
    s.add_argument("--participant", metavar="CODE", help="your participant code (default: a new one, printed)")
    s.add_argument("--db", metavar="URL", help=db_help)
    ls = bs.add_parser("list", help="print the board, one row per policy", epilog=epilog, formatter_class=fmt,
                       description="Print the board's table. Review mode (the board's setting, or --review) shows "
                                   "public columns only.")
    ls.add_argument("--format", choices=("table", "json", "csv"), default="table")
    ls.add_argument("--review", action="store_true", help="public columns only, whatever the board's mode")
    ls.add_argument("--board", type=int, metavar="ID", help="an archived board (default: the open one)")
    ls.add_argument("--db", metavar="URL", help=db_help)
    ex = bs.add_parser("export", help="write board.csv, board.html and each entry's study config",
                       epilog=epilog, formatter_class=fmt,
                       description="Write the board into DIR: board.csv (formula-safe), board.html (self-contained, "
                                   "opens offline) and entry-<id>.yaml (each policy's study config). Files are never "
                                   "written through a symbolic link; a file of these names that prdp did not write "
                                   "in DIR (see DIR/.prdp-outputs.json) is not overwritten without --force.")
    ex.add_argument("--out", metavar="DIR", required=True, help="output folder (created if missing; not a link)")
    ex.add_argument("--force", action="store_true", help="replace files (and symbolic links, never followed) that "
                                                         "prdp did not write in DIR")
    ex.add_argument("--review", action="store_true", help="public columns only, whatever the board's mode")
    ex.add_argument("--board", type=int, metavar="ID", help="an archived board (default: the open one)")
    ex.add_argument("--db", metavar="URL", help=db_help)
    a = sub.add_parser("app", help="start the app (the workshop server)", epilog=epilog, formatter_class=fmt,
                       description="Start PrDP Explorer with Streamlit. It listens on 127.0.0.1 unless --host says "
                                   "otherwise; facilitator actions need PRDP_FACILITATOR_KEY in the environment.")
    a.add_argument("--host", default="127.0.0.1", help="address to listen on (default 127.0.0.1: this machine only)")
    a.add_argument("--port", type=int, default=8501, help="port (default 8501)")
    a.add_argument("--data-dir", metavar="DIR", help="folder of tables the facilitator may pin (default: "
                                                     "<workshop folder>/data)")
    a.add_argument("--board", metavar="URL", help=db_help)
    a.add_argument("--open", action="store_true", help="open the app in the default web browser once it answers")
    led = sub.add_parser("ledger", help="named privacy ledgers that prdp run --ledger NAME appends to",
                         description="The named ledgers of headless runs, in the store's database (PRDP_BOARD_URL, "
                                     "else <PRDP_WORKSHOP_DIR>/board.sqlite).", epilog=epilog, formatter_class=fmt)
    ls_ = led.add_subparsers(dest="ledger_command", metavar="ACTION", parser_class=parser_class)
    ls_.required = True
    sh = ls_.add_parser("show", help="print a ledger: each release and the totals so far", epilog=epilog,
                        formatter_class=fmt,
                        description="Print every release of the ledger with its public worst case and the totals "
                                    "so far: the largest loss of a record in the release and the largest per-record "
                                    "total (rho; epsilon while every release is pure epsilon), computed on the data "
                                    "when each run was appended. No per-record value is printed; --review leaves out "
                                    "these statistics of the records too.")
    sh.add_argument("name", metavar="NAME", help="the ledger's name (as given to prdp run --ledger)")
    sh.add_argument("--format", choices=("table", "json"), default="table")
    sh.add_argument("--review", action="store_true", help="public columns only (no statistic of the records)")
    sh.add_argument("--db", metavar="URL", help=db_help)
    ll = ls_.add_parser("list", help="list the named ledgers and their number of releases", epilog=epilog,
                        formatter_class=fmt, description="List the named ledgers of the store.")
    ll.add_argument("--db", metavar="URL", help=db_help)


def _store(url: str | None) -> Any:
    from ..board.store import BoardStore

    return BoardStore(url or workshop.board_url(), facilitator_key=workshop.facilitator_key())


def _submit(args: argparse.Namespace, stdout: IO[str], stderr: IO[str]) -> int:
    from ..board.store import new_participant_code
    from ..board.summary import PARTS, restrict, summarise
    from ..study.config import load_config, load_data

    study = restrict(load_config(args.config), args.policy)
    store = _store(args.db)
    settings = store.settings()
    pin = settings["dataset"]
    if pin and not workshop.matches_pin(study.data.to_dict(), pin):
        raise StoreError(f"The facilitator pinned the workshop dataset ({workshop.describe_pin(pin)}); this study "
                         f"reads {study.data.describe()}.", hint="Design the policy on the workshop dataset.")
    ds = load_data(study, args.data)
    teaching = study.mode == "teaching" and settings.get("mode") != "review"  # the stricter mode, as the app's
    summary = summarise(study, ds, teaching=teaching)  # error figures: teaching simulations, never in review
    code = args.participant or new_participant_code()
    config = study.to_dict()
    entry, created = store.submit(participant=code, name=args.name, rationale=args.rationale, config=config,
                                  summary=summary, kind=PARTS[summary["part"]][0], dataset=study.data.describe())
    what = "submitted" if created else "already on the board:"
    stdout.write(f"{what} #{entry.id} '{entry.name}' ({entry.kind}) on {store.where}\n")
    if not args.participant:
        stdout.write(f"participant code: {code} (type it on the Board page to withdraw this entry)\n")
    if not teaching:
        stderr.write("prdp: note: review mode (the study's or the board's): the entry has no error figures, which "
                     "run the mechanism on the data (a teaching study computes them).\n")
    return EXIT_OK


def _review(args: argparse.Namespace, settings: dict[str, Any]) -> bool:
    return bool(args.review) or settings.get("mode") == "review"


def _list(args: argparse.Namespace, stdout: IO[str]) -> int:
    from ..review.review_boundary import produce

    store = _store(args.db)
    settings = store.settings()
    entries = store.entries(args.board)
    review, delta = _review(args, settings), float(settings["delta"])
    name = "board.csv" if args.format == "csv" else "prdp board list (terminal)"
    context = {} if args.format == "csv" else {"fmt": args.format, "where": str(store.where)}
    stdout.write(produce(name, entries, teaching=not review, delta=delta, **context).decode("utf-8"))
    return EXIT_OK


def _export(args: argparse.Namespace, stdout: IO[str]) -> int:

    store = _store(args.db)
    settings = store.settings()
    entries = store.entries(args.board)
    out = Path(args.out)
    review = _review(args, settings)
    try:
        files = write_board(entries, out, review=review, delta=float(settings["delta"]),
                            dataset=workshop.describe_pin(settings["dataset"]), force=args.force)
    except OSError as err:
        raise StoreError(f"Cannot write the board to {out}: {err.strerror or err}.",
                         hint="Choose another --out folder.") from None
    stdout.write(f"{len(entries)} polic{'y' if len(entries) == 1 else 'ies'} ({'review' if review else 'teaching'} "
                 f"mode) written to {out}: {', '.join(sorted(files))}\n")
    return EXIT_OK


def write_board(entries: Iterable[Any], out_dir: str | Path, *, review: bool, delta: float,
                title: str = "Workshop board", dataset: str | None = None, force: bool = False) -> dict[str, Path]:
    """Write board.csv, board.html and entry-<id>.yaml (each entry's study config) into ``out_dir``
    (created if missing) with :func:`prdp_core.io.outputs.write_files`; returns name → path.

    Raises :class:`~prdp_core.core.errors.OutputError` before writing anything when ``out_dir`` is a link or
    a file, or holds a link or a file prdp did not write under one of these names (unless ``force``)."""
    from ..io.outputs import check_folder, write_files
    from ..review.review_boundary import produce  # every file through the review boundary, in the board's mode

    entries = list(entries)
    names = ["board.csv", "board.html", *(f"entry-{en.id}.yaml" for en in entries)]
    check_folder(out_dir, names, force=force)  # before the (possibly long) rendering

    files: dict[str, bytes] = {"board.csv": produce("board.csv", entries, teaching=not review, delta=delta),
                               "board.html": produce("board.html", entries, teaching=not review, delta=delta,
                                                     title=title, dataset=dataset)}
    for en in entries:
        files[f"entry-{en.id}.yaml"] = produce("entry.yaml", [en], teaching=not review)
    return write_files(out_dir, files, force=force)


def run_board(args: argparse.Namespace, stdout: IO[str], stderr: IO[str]) -> int:
    """``prdp board ACTION``: returns the exit code (errors are raised as PrdpError)."""
    if args.board_command == "submit":
        return _submit(args, stdout, stderr)
    if args.board_command == "list":
        return _list(args, stdout)
    return _export(args, stdout)


# ---------------------------------------------------------------------------
# Named ledgers: prdp run --ledger NAME, prdp ledger show / list
# ---------------------------------------------------------------------------


class RunLedger:
    """The named ledger a ``prdp run --ledger NAME`` appends to. Made before the run: it opens the store and
    refuses (StoreError) a ledger that belongs to other data unless ``new_data``, so nothing is released that
    could not be recorded."""

    def __init__(self, name: str, db: str | None, study: Any, data: str | None, *, new_data: bool = False) -> None:
        from ..board.ledgers import LedgerStore, study_fingerprint, valid_name

        self.name = valid_name(name)
        self.teaching = study.mode == "teaching"
        self.new_data = bool(new_data)
        self.fingerprint = study_fingerprint(study, data)
        self.store = LedgerStore(_store(db))
        self.store.check_named(self.name, self.fingerprint, new_data=self.new_data)
        self.added = 0
        self.last: Any = None

    def append(self, run: Any, *, origin: str) -> None:
        """Append every ledger entry of ``run`` (a :class:`~prdp_core.study.runner.StudyRun`), totals computed on
        its data."""
        self.append_entries(run.ledger.entries, run.dataset, origin=origin)

    def append_entries(self, entries: Any, dataset: Any, *, origin: str) -> None:
        """Append ledger ``entries`` released on ``dataset`` (e.g. an adopted private suggestion's)."""
        import uuid

        items = [(uuid.uuid4().hex, e) for e in entries]
        try:
            table = dataset.table
        except (DataError, AttributeError):
            table = None  # held by an engine where it lives: no record-by-record totals (public forms only)
        ledger_id = self.store.append_named(self.name, items, fingerprint=self.fingerprint, table=table,
                                            origin=origin, new_data=self.new_data)
        stored = self.store.entries(ledger_id)
        self.added, self.last = len(items), (stored[-1] if stored else None)

    def summary_line(self) -> str:
        """What the run added, for stdout, through the review boundary (the largest per-record total only for a
        teaching study)."""
        from ..board.ledgers import NamedLedger
        from ..review.review_boundary import produce

        entries = self.store.entries(self.store.find(self.name) or 0)
        led = NamedLedger(self.name, str(self.store.where), "", entries, added=self.added)
        return produce("prdp run --ledger (terminal)", led, teaching=self.teaching).decode("utf-8").rstrip("\n")


def _ledger_show(args: argparse.Namespace, stdout: IO[str]) -> int:
    from ..board.ledgers import LedgerStore, NamedLedger, describe_data
    from ..review.review_boundary import produce

    store = LedgerStore(_store(args.db))
    ledger_id = store.find(args.name)
    if ledger_id is None:
        known = ", ".join(n for n, _ in store.names()) or "none yet"
        raise StoreError(f"There is no ledger named '{args.name}' in {store.where} (ledgers: {known}).",
                         hint="prdp run STUDY.yaml --ledger NAME creates one.")
    entries = store.entries(ledger_id)  # refused (StoreError naming the first bad entry) when changed in the store
    led = NamedLedger(args.name, str(store.where), describe_data(store.fingerprint(ledger_id)), entries,
                      seal=store.seal(ledger_id))
    stdout.write(produce("prdp ledger show (terminal)", led, teaching=not args.review, fmt=args.format)
                 .decode("utf-8"))
    return EXIT_OK


def run_ledger(args: argparse.Namespace, stdout: IO[str], stderr: IO[str]) -> int:
    """``prdp ledger ACTION``: returns the exit code (errors are raised as PrdpError)."""
    if args.ledger_command == "show":
        return _ledger_show(args, stdout)
    from ..board.ledgers import LedgerStore

    store = LedgerStore(_store(args.db))
    names = store.names()
    if not names:
        stdout.write(f"No named ledger in {store.where} (prdp run STUDY.yaml --ledger NAME creates one).\n")
    for name, n in names:
        stdout.write(f"{name}\t{n} release(s)\n")
    return EXIT_OK


# ---------------------------------------------------------------------------
# prdp app
# ---------------------------------------------------------------------------


APP_PACKAGE = "prdp_explorer_app"


def app_script() -> Path:
    """The app's entry script: app.py of the installed ``prdp_explorer_app`` (a wheel ships the app there, see
    setup.py), else app.py beside ``prdp_core`` (the checkout an editable install points at), else app.py in the
    current folder. ``ui`` is not an importable package of its own: Streamlit imports it from app.py's folder."""
    import importlib.util

    import prdp_core

    spec = importlib.util.find_spec(APP_PACKAGE)
    installed = [Path(p) / "app.py" for p in (spec.submodule_search_locations or [])] if spec else []
    beside = Path(prdp_core.__file__).resolve().parent.parent / "app.py"
    for cand in (*installed, beside, Path.cwd() / "app.py"):
        if cand.is_file() and (cand.parent / "app_pages").is_dir():
            return cand
    raise PrdpError("prdp app found no app: this installation holds neither the app (prdp_explorer_app) nor a "
                    "PrDP Explorer checkout (app.py and app_pages/).",
                    hint="Reinstall from a wheel (pip install prdp-explorer), install the checkout in editable mode "
                         "(make install), or run prdp app from the checkout's folder.")


def browser_url(host: str, port: int) -> str:
    """The address a browser on this machine opens for a server listening on ``host``: a wildcard address
    (0.0.0.0, ::) is reached at 127.0.0.1, an IPv6 address in brackets."""
    host = "127.0.0.1" if host in ("", "0.0.0.0", "::") else host
    return f"http://[{host}]:{port}" if ":" in host else f"http://{host}:{port}"


def open_when_ready(url: str, timeout: float = 120.0) -> threading.Thread:
    """Open ``url`` in the default web browser (``webbrowser.open``) as soon as the server there answers
    ``/_stcore/health``, from a background thread (the server runs in the foreground); nothing is opened if it
    does not answer within ``timeout`` seconds. Returns the thread."""

    def wait() -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            try:
                with urllib.request.urlopen(f"{url}/_stcore/health", timeout=2) as r:
                    if r.status == 200:
                        webbrowser.open(url)
                        return
            except OSError:
                pass
            time.sleep(0.2)

    thread = threading.Thread(target=wait, name="prdp-app-open", daemon=True)
    thread.start()
    return thread


def streamlit_flags(app: Path, host: str, port: int) -> list[str]:
    """Streamlit options for ``prdp app``: every setting of the checkout's .streamlit/config.toml
    (read there, so starting from another folder changes nothing), then the host and port."""
    import tomllib

    cfg_file = app.parent / ".streamlit" / "config.toml"
    cfg = tomllib.loads(cfg_file.read_text(encoding="utf-8")) if cfg_file.is_file() else {}
    opts: dict[str, Any] = {f"{section}.{k}": v for section, values in cfg.items() if isinstance(values, dict)
                            for k, v in values.items()}
    opts.update({"server.address": host, "server.port": int(port), "server.headless": True,
                 "server.fileWatcherType": "none", "server.runOnSave": False, "browser.gatherUsageStats": False})
    flags = []
    for k, v in opts.items():
        flags += [f"--{k}", str(v).lower() if isinstance(v, bool) else str(v)]
    return flags


def run_app(args: argparse.Namespace, stdout: IO[str], stderr: IO[str]) -> int:
    """``prdp app``: check the board database and the data folder, then run Streamlit in this
    process (``python -m streamlit run app.py`` with the options above); returns its exit code."""
    app = app_script()
    if not 0 < args.port < 65536:
        raise PrdpError(f"--port {args.port} is not a port number (1–65535).")
    if args.data_dir:
        os.environ[workshop.ENV_DATA_DIR] = str(Path(args.data_dir).expanduser().resolve())
    if args.board:
        os.environ[workshop.ENV_BOARD_URL] = args.board
    store = _store(None)  # a bad URL or an unwritable folder is reported before the server starts
    where = store.where
    from ..board.sessions import Retention, SessionStore

    sessions = SessionStore(store, workshop.upload_dir(), Retention.from_env())  # a bad retention setting stops here
    removed = sessions.apply_retention()  # at start-up, as the app does again when it opens the store
    store.dispose()
    data = workshop.data_dir()
    stdout.write(f"PrDP Explorer on http://{args.host}:{args.port}\n  board and saved sessions: {where}\n"
                 f"  data folder: {data} ({len(workshop.data_files(data))} table(s))\n  uploaded tables: "
                 f"{sessions.upload_dir} ({sessions.retention.describe()}; {len(removed)} deleted now)\n"
                 f"  facilitator actions: "
                 f"{'on' if workshop.facilitator_key() else 'off (set PRDP_FACILITATOR_KEY to turn them on)'}\n")
    if args.host not in ("127.0.0.1", "localhost", "::1"):
        stderr.write(f"prdp: warning: listening on {args.host}: anyone who can reach this address can use the app "
                     "(no login, plain HTTP). See docs/security.md.\n")
    stdout.flush()
    from streamlit.web import cli as stcli

    argv = ["run", str(app), *streamlit_flags(app, args.host, args.port)]
    if args.open:
        open_when_ready(browser_url(args.host, args.port))
    saved = sys.argv
    sys.argv = ["streamlit", *argv]
    try:
        stcli.main(args=argv, prog_name="streamlit")
    except SystemExit as exc:
        return int(exc.code) if isinstance(exc.code, int) else (0 if exc.code is None else 1)
    finally:
        sys.argv = saved
    return EXIT_OK
