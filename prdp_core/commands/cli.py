"""The ``prdp`` command line: run, validate and inspect studies headless.

::

    prdp run study.yaml [--data SOURCE] [--engine memory|duckdb|auto] [--out DIR] [--force] [--quiet]
             [--ledger NAME [--ledger-new-data] [--db URL]]
    prdp validate study.yaml [--data SOURCE] [--engine ...] [--no-data]
    prdp samples
    prdp samples write NAME --rows N --out FILE.parquet [--seed S] [--force]
    prdp board submit STUDY.yaml --name NAME | list | export --out DIR [--force]   (the workshop board)
    prdp app [--host 127.0.0.1] [--port 8501] [--data-dir DIR] [--board URL] [--open]
    prdp ledger show NAME [--db URL] [--format table|json] [--review] | list   (named ledgers)
    prdp suggest thresholds STUDY.yaml --range M=LO:HI [...] --epsilon E --out NEW.yaml [--ledger NAME]
             (private thresholds: a DP percentile, its cost charged to the named ledger)

Exit codes (scripts can rely on them):

====  ==========================================================================
0     success
1     unexpected internal error (a bug: please report it with the command)
2     usage error (unknown command or option, missing argument, an --out folder that
      cannot be written safely: a symbolic link, or files prdp did not write, without --force)
3     invalid config (ConfigError: the message names the offending key)
4     data problem (file missing or unreadable, bad values, roles, size limits)
5     any other refusal of the engine (PrdpError: policy, parameter, ...)
====  ==========================================================================

Progress of long runs is written to stderr as a plain-text bar (one line per step when
stderr is not a terminal); results go to files, a one-line summary to stdout. Everything
printed is terminal-safe: control characters in user text (names, column names, labels) are
written as visible escapes such as ``\x1b`` (:mod:`prdp_core.io.terminal`).

No command writes through a symbolic link (``run``, ``board export``, ``suggest``, ``samples
write``), and each overwrites only files prdp wrote itself (listed with their SHA-256 in the
folder's .prdp-outputs.json) unless ``--force`` is given; see :mod:`prdp_core.io.outputs`.
"""

from __future__ import annotations

import argparse
import os
import sys
from contextlib import redirect_stderr, redirect_stdout
from pathlib import Path
from typing import IO, Any, NoReturn, Sequence

from ..core.errors import ConfigError, OutputError, ParameterError, PrdpError
from ..io.terminal import SafeStream, escape, safe
from .exit_codes import (  # noqa: F401 - the exit codes are documented as names of this module too
    EXIT_CODES,
    EXIT_CONFIG,
    EXIT_DATA,
    EXIT_ERROR,
    EXIT_INTERNAL,
    EXIT_OK,
    EXIT_USAGE,
    exit_code,
)


class TextProgress:
    """A plain-text progress bar on a stream (stderr): redrawn in place on a terminal, one line
    per step otherwise (logs, CI). No dependency beyond the standard library. The step's text is
    escaped (:func:`prdp_core.io.terminal.escape`); the bar's own carriage returns go to the stream
    underneath a :class:`~prdp_core.io.terminal.SafeStream`."""

    def __init__(self, stream: IO[str] | None = None, width: int = 24, enabled: bool = True) -> None:
        stream = stream if stream is not None else sys.stderr
        self.stream: IO[str] = stream.raw if isinstance(stream, SafeStream) else stream
        self.width = width
        self.enabled = enabled
        self.tty = bool(getattr(self.stream, "isatty", lambda: False)())
        self._open = False

    def __call__(self, done: int, total: int, what: str) -> None:
        if not self.enabled:
            return
        total = max(int(total), 1)
        filled = int(round(self.width * min(done, total) / total))
        bar = "#" * filled + "-" * (self.width - filled)
        line = f"[{bar}] {done}/{total} {escape(what)}"
        if self.tty:
            self.stream.write("\r" + line.ljust(self.width + 60))
            self._open = done < total
            if not self._open:
                self.stream.write("\n")
        else:
            self.stream.write(line + "\n")
        self.stream.flush()

    def close(self) -> None:
        if self._open and self.enabled:
            self.stream.write("\n")
            self._open = False


class _Parser(argparse.ArgumentParser):
    """argparse with the documented usage exit code (2) and no traceback."""

    def error(self, message: str) -> NoReturn:
        self.print_usage(sys.stderr)
        self.exit(EXIT_USAGE, f"prdp: error: {message}\n")


def build_parser() -> argparse.ArgumentParser:
    codes = "\n".join(f"  {k}  {v}" for k, v in EXIT_CODES.items())
    p = _Parser(prog="prdp", formatter_class=argparse.RawDescriptionHelpFormatter,
                description="PrDP Explorer from the command line: run per-record privacy studies headless.",
                epilog=f"exit codes:\n{codes}\n\nThe config schema is described in docs/config.md; examples are in "
                       "examples/.")
    from .. import __version__

    p.add_argument("--version", action="version", version=f"prdp {__version__} (study schema version 1)")
    sub = p.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)
    sub.required = True
    r = sub.add_parser("run", help="run a study and write results, ledger, report and a reproduction script",
                       formatter_class=argparse.RawDescriptionHelpFormatter,
                       description="Run every mechanism of a study with its seed (headless) and write into DIR:\n"
                                   "  results.csv   every released answer (true values only in teaching mode)\n"
                                   "  budget.csv    the budget table (release x group level x rho or epsilon)\n"
                                   "  ledger.csv    the privacy ledger (public forms); ledger.json the same as data\n"
                                   "  report.html   self-contained report (opens without network)\n"
                                   "  reproduce.py  a Python script that reruns the study bit for bit\n"
                                   "  study.ipynb   the same code as a Jupyter notebook, in explained cells\n"
                                   "  study.yaml    the normalised config\n"
                                   "Files are never written through a symbolic link; a file of these names that\n"
                                   "prdp did not write in DIR (see DIR/.prdp-outputs.json) is not overwritten\n"
                                   "without --force.",
                       epilog=f"exit codes:\n{codes}")
    r.add_argument("config", metavar="STUDY.yaml", help="the study config (YAML, docs/config.md)")
    r.add_argument("--data", metavar="SOURCE", help="use this data instead of the config's data source (a file; "
                                                    "with the duckdb engine also a folder, a glob or "
                                                    "db.duckdb#table; with spark also an hdfs:// or s3a:// URI); the "
                                                    "config's column roles and fixes still apply")
    r.add_argument("--engine", choices=("memory", "duckdb", "spark", "auto"),
                   help="where the records are kept (overrides data.engine): duckdb for files beyond memory, "
                        "spark for a cluster (docs/cluster.md)")
    r.add_argument("--out", metavar="DIR", help="output folder (default: ./<config name>-results)")
    r.add_argument("--force", action="store_true", help="replace output files (and symbolic links, never followed) "
                                                         "that prdp did not write in DIR")
    r.add_argument("-q", "--quiet", action="store_true", help="no progress bar")
    r.add_argument("--ledger", metavar="NAME",
                   help="append the run's ledger entries to the named ledger in the store, so successive runs on the "
                        "same data add up (prdp ledger show NAME)")
    r.add_argument("--ledger-new-data", action="store_true",
                   help="with --ledger: append even though the ledger belongs to other data (the same records in a "
                        "new version of the table); its earlier releases then count at their worst case")
    r.add_argument("--db", metavar="URL", help="with --ledger: the store's database URL (default: PRDP_BOARD_URL, else "
                                               "sqlite:///<workshop folder>/board.sqlite)")
    v = sub.add_parser("validate", help="check a study config (and that it fits its data)",
                       description="Check a study config: schema, values, and — unless --no-data — that every "
                                   "column it names exists in its data.", epilog=f"exit codes:\n{codes}",
                       formatter_class=argparse.RawDescriptionHelpFormatter)
    v.add_argument("config", metavar="STUDY.yaml", help="the study config (YAML)")
    v.add_argument("--data", metavar="SOURCE", help="check against this data instead of the config's source")
    v.add_argument("--engine", choices=("memory", "duckdb", "spark", "auto"),
                   help="where the records are kept (overrides data.engine)")
    v.add_argument("--no-data", action="store_true", help="check the config alone, without loading its data")
    sp = sub.add_parser("samples", help="list the built-in samples (or write a large synthetic one to a file)",
                        description="List the built-in samples (name, kind, default size, description), or with "
                                    "'write' generate a synthetic sample of any size into a Parquet or CSV file, "
                                    "chunk by chunk (the table is never held in memory).",
                        epilog=f"exit codes:\n{codes}", formatter_class=argparse.RawDescriptionHelpFormatter)
    ssub = sp.add_subparsers(dest="samples_command", metavar="ACTION", parser_class=_Parser)
    w = ssub.add_parser("write", help="write a synthetic sample to a Parquet or CSV file, chunk by chunk",
                        description="Write ROWS records of a synthetic sample (e.g. cbp_like) into FILE (.parquet or "
                                    ".csv), one million at a time.", epilog=f"exit codes:\n{codes}",
                        formatter_class=argparse.RawDescriptionHelpFormatter)
    w.add_argument("name", metavar="NAME", help="a synthetic sample (prdp samples lists them)")
    w.add_argument("--rows", required=True, metavar="N", help="number of records, e.g. 1e8")
    w.add_argument("--out", required=True, metavar="FILE", help="the file to write (.parquet or .csv)")
    w.add_argument("--seed", type=int, default=0, help="seed of the draw (default 0)")
    w.add_argument("--force", action="store_true", help="replace FILE (or a symbolic link, never followed) if prdp "
                                                         "did not write it")
    w.add_argument("-q", "--quiet", action="store_true", help="no progress bar")
    from .board_cli import add_parsers
    from .suggest_cli import add_parser as add_suggest_parser

    add_parsers(sub, codes, _Parser)
    add_suggest_parser(sub, codes, _Parser)
    return p


def _fail(err: BaseException, out: IO[str]) -> int:
    code = exit_code(err)
    if isinstance(err, PrdpError):
        out.write(f"prdp: {err.title.lower()}: {err}\n")
    else:
        out.write(f"prdp: internal error: {type(err).__name__}: {err}\n"
                  "Set PRDP_DEBUG=1 to see the traceback, and please report it.\n")
    return code


def _cmd_samples(stdout: IO[str]) -> int:
    from ..data import samples

    rows = []
    for name in samples.names():
        info = samples.info(name)
        n = "all rows" if info.default_n is None else f"{info.default_n:,}"
        rows.append((name, info.kind, n, info.title))
    w = max(len(r[0]) for r in rows)
    stdout.write(f"{'name'.ljust(w)}  kind       default n   title\n")
    for name, kind, n, title in rows:
        stdout.write(f"{name.ljust(w)}  {kind.ljust(9)}  {n.rjust(9)}   {title}\n")
    return EXIT_OK


def _rows(text: str) -> int:
    """A row count written as 100000, 1e8 or 1_000_000."""
    try:
        x = float(str(text).replace("_", ""))
    except ValueError:
        raise ParameterError(f"--rows must be a number of records, e.g. 1e8 (got {text!r}).") from None
    if not (x.is_integer() and x >= 1):
        raise ParameterError(f"--rows must be a whole number of records ≥ 1 (got {text!r}).")
    return int(x)


def _cmd_samples_write(args: argparse.Namespace, stdout: IO[str], stderr: IO[str]) -> int:
    from ..data.samples import write_sample

    rows = _rows(args.rows)
    out = Path(args.out)
    if out.is_dir() and not out.is_symlink():  # a link is refused (or, with --force, replaced) by the writer
        stderr.write(f"prdp: error: --out {out} must name a file, not a folder.\n")
        return EXIT_USAGE
    if not out.absolute().parent.is_dir():
        stderr.write(f"prdp: error: the folder of --out {out} does not exist (or is a file).\n")
        return EXIT_USAGE
    bar = TextProgress(stderr, enabled=not args.quiet)
    try:
        write_sample(args.name, out, rows=rows, seed=args.seed, progress=bar, force=args.force)
    except OSError as err:
        bar.close()
        stderr.write(f"prdp: error: cannot write {out}: {err.strerror or err}.\n")
        return EXIT_USAGE
    finally:
        bar.close()
    stdout.write(f"{rows:,} records of {args.name} (seed {args.seed}) written to {out}\n")
    return EXIT_OK


def _with_engine(study: Any, engine: str | None, data: str | None) -> Any:
    """The study with ``--engine`` in place of data.engine."""
    from dataclasses import replace

    if engine is None or engine == study.data.engine:
        return study
    if study.data.sample is not None and data is None and engine != "memory":
        raise ConfigError(f"--engine {engine}: the study reads a sample, generated in memory.",
                          hint="Give --data SOURCE to read a file with another engine.")
    return replace(study, data=replace(study.data, engine=engine))


def _cmd_validate(args: argparse.Namespace, stdout: IO[str]) -> int:
    from ..study.config import load_config, load_data

    study = _with_engine(load_config(args.config), args.engine, args.data)
    where = "config only"
    if not args.no_data:
        ds = load_data(study, args.data)
        study.check_against(ds)
        where = f"fits its data ({ds.name}: {len(ds.schema.measures)} measure(s))"
    kinds = ", ".join(m["kind"] for m in study.mechanisms) or "none"
    stdout.write(f"OK: {args.config} is a valid study (schema version 1, mode {study.mode}, seed {study.seed}); "
                 f"mechanisms: {kinds}; {where}.\n")
    return EXIT_OK


def _cmd_run(args: argparse.Namespace, stdout: IO[str], stderr: IO[str]) -> int:
    from ..io.outputs import check_folder
    from ..review.report import OUTPUT_FILES, run_study, write_outputs
    from ..review.review_boundary import produce
    from ..study.config import load_config

    if (args.db or args.ledger_new_data) and not args.ledger:
        stderr.write("prdp: error: --db and --ledger-new-data go with --ledger NAME.\n")
        return EXIT_USAGE
    study = _with_engine(load_config(args.config), args.engine, args.data)
    out = Path(args.out) if args.out else Path.cwd() / f"{Path(args.config).stem}-results"
    try:
        check_folder(out, OUTPUT_FILES, force=args.force)  # before the (possibly long) run
    except OutputError as err:
        stderr.write(f"prdp: error: {err}\n")
        return EXIT_USAGE
    ledger = None
    if args.ledger:  # the named ledger's data is checked before anything is released
        from .board_cli import RunLedger

        ledger = RunLedger(args.ledger, args.db, study, args.data, new_data=args.ledger_new_data)
    bar = TextProgress(stderr, enabled=not args.quiet)
    try:
        run = run_study(study, args.data, progress=bar)
        if ledger is not None:  # recorded before the outputs are written: a release is never left out
            ledger.append(run, origin=f"prdp run {Path(args.config).name}")
        try:
            files = write_outputs(run, out, progress=lambda d, t, w: bar(d, t, f"output: {w}"), force=args.force)
        except OSError as err:
            bar.close()
            stderr.write(f"prdp: error: cannot write the outputs to {out}: {err.strerror or err}. Choose another "
                         "--out folder.\n")
            return EXIT_USAGE
    finally:
        bar.close()
    stdout.write(produce("prdp run (terminal)", run, teaching=run.teaching, config=str(args.config), out=str(out),
                         files=tuple(files)).decode("utf-8"))
    if ledger is not None:
        stdout.write(ledger.summary_line() + "\n")
    return EXIT_OK


def main(argv: Sequence[str] | None = None, *, stdout: IO[str] | None = None, stderr: IO[str] | None = None) -> int:
    """Entry point of the ``prdp`` console script; returns the exit code (see the module docstring).
    Everything it prints, argparse's help and usage errors included, goes through
    :func:`prdp_core.io.terminal.safe`."""
    stdout = safe(stdout if stdout is not None else sys.stdout)
    stderr = safe(stderr if stderr is not None else sys.stderr)
    parser = build_parser()
    try:
        with redirect_stdout(stdout), redirect_stderr(stderr):  # argparse writes to sys.stdout / sys.stderr
            args = parser.parse_args(argv)
    except SystemExit as exc:  # --help, --version (0) and usage errors (2)
        return int(exc.code or 0) if isinstance(exc.code, int) else EXIT_USAGE
    try:
        if args.command == "samples":
            if getattr(args, "samples_command", None) == "write":
                return _cmd_samples_write(args, stdout, stderr)
            return _cmd_samples(stdout)
        if args.command == "validate":
            return _cmd_validate(args, stdout)
        if args.command == "suggest":
            from . import suggest_cli

            return suggest_cli.run(args, stdout, stderr)
        if args.command in ("board", "app", "ledger"):
            from . import board_cli as board_cli

            run = {"board": board_cli.run_board, "app": board_cli.run_app, "ledger": board_cli.run_ledger}
            return run[args.command](args, stdout, stderr)
        return _cmd_run(args, stdout, stderr)
    except KeyboardInterrupt:
        stderr.write("prdp: interrupted\n")
        return 130
    except Exception as err:  # every error becomes a message and a documented exit code
        if os.environ.get("PRDP_DEBUG") and not isinstance(err, PrdpError):
            raise
        return _fail(err, stderr)


def console() -> None:
    """``prdp`` console script: run :func:`main` and exit with its code."""
    sys.exit(main())


if __name__ == "__main__":  # python -m prdp_core.commands.cli
    console()
