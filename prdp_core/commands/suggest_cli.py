"""``prdp suggest thresholds``: private splitting thresholds for a study, adopted into a new study config.

The command line's counterpart of the Policy designer's private suggestion
(:mod:`prdp_core.mechanisms.dp_quantile`): it reads the study's data, draws a DP percentile of each measure over
the public candidate range typed with ``--range``, writes a copy of the study whose thresholds are the
suggestion (``threshold_source``: ``private: …``, so a secure review run may use them) and, with
``--ledger NAME``, appends the suggestion's cost to the named ledger that ``prdp run --ledger NAME``
then adds the releases to. Without ``--ledger`` the cost is printed and must be accounted for by hand.
The suggestion is drawn as a recorded release (:class:`~prdp_core.core.recorder.Recorder`): its entry is in
the command's ledger (and the named one) before the suggestion is used.

Every option is checked before anything is read, drawn, charged or written: ``--epsilon`` (finite,
> 0, at most :data:`~prdp_core.mechanisms.dp_quantile.MAX_EPSILON`), ``--percentile``, ``--candidates`` and
``--seed`` when the command line is parsed (a usage error, exit code 2), ``--range`` (finite, LO > 0
since thresholds are positive, a width that is a finite number) and ``--out`` before the data is
loaded.
"""

from __future__ import annotations

import argparse
import math
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import IO, Any

from ..core.errors import ConfigError, ParameterError, PrdpError


def _checked(check: Callable[[str], Any], what: str) -> Callable[[str], Any]:
    """An argparse type: ``check(text)``, its PrdpError a usage error naming the option (exit code 2)."""
    def convert(text: str) -> Any:
        try:
            return check(text)
        except PrdpError as err:
            raise argparse.ArgumentTypeError(str(err)) from None

    convert.__name__ = what  # argparse names the type in its message for other errors
    return convert


def _epsilon(text: str) -> float:
    from ..mechanisms.dp_quantile import check_epsilon

    return check_epsilon(text)


def _percentile(text: str) -> float:
    from ..mechanisms.dp_quantile import level_units

    try:
        pct = float(text)
    except ValueError:
        raise ParameterError(f"A percentile must be a number (got {text!r}).") from None
    level_units(pct)
    return pct


def _whole(text: str, what: str, lo: int, hi: int) -> int:
    try:
        x = float(str(text).replace("_", ""))
    except ValueError:
        raise ParameterError(f"{what} must be a whole number (got {text!r}).") from None
    if not (x.is_integer() and lo <= x <= hi):
        raise ParameterError(f"{what} must be a whole number from {lo:,} to {hi:,} (got {text!r}).")
    return int(x)


def _candidates(text: str) -> int:
    from ..mechanisms.dp_quantile import MAX_CANDIDATES

    return _whole(text, "The number of candidates", 2, MAX_CANDIDATES)


def _seed(text: str) -> int:
    return _whole(text, "A teaching seed", 0, 2**63 - 1)


def add_parser(sub: Any, codes: str, parser_class: type) -> None:
    """The ``suggest`` command and its ``thresholds`` action."""
    fmt = argparse.RawDescriptionHelpFormatter
    s = sub.add_parser("suggest", help="private suggestions of public parameters (a DP percentile, charged)",
                       description="Suggest public parameters privately: a differentially private percentile over "
                                   "a public range of candidates, whose cost goes to a named ledger.",
                       epilog=f"exit codes:\n{codes}", formatter_class=fmt)
    ss = s.add_subparsers(dest="suggest_command", metavar="ACTION", parser_class=parser_class)
    ss.required = True
    t = ss.add_parser(
        "thresholds", formatter_class=fmt, epilog=f"exit codes:\n{codes}",
        help="private splitting thresholds at a percentile of each measure, written into a copy of the study",
        description="Draw a DP percentile of each measure named by --range (the exponential mechanism over the "
                    "range's candidates; ε split evenly over the measures; every record pays ε in all) and write a "
                    "copy of STUDY.yaml with these thresholds, marked 'private: …'. The range is a public choice "
                    "made without looking at the data (e.g. the measure's definition).")
    t.add_argument("config", metavar="STUDY.yaml", help="the study config (its data and column roles are used)")
    t.add_argument("--range", action="append", required=True, metavar="MEASURE=LO:HI", dest="ranges",
                   help="public candidate range of a measure (repeat per measure), e.g. EMP=1:1e6")
    t.add_argument("--percentile", type=_checked(_percentile, "percentile"), default=97.0,
                   help="the percentile (default 97; strictly between 0 and 100, two decimals at most)")
    t.add_argument("--epsilon", type=_checked(_epsilon, "epsilon"), required=True,
                   help="total pure-DP cost ε of the suggestion (finite, > 0, at most 100)")
    t.add_argument("--candidates", type=_checked(_candidates, "candidates"), default=1000,
                   help="candidates per measure (default 1000; 2 to 100,000)")
    t.add_argument("--spacing", choices=("log", "linear"), default="log", help="candidate spacing (default log)")
    t.add_argument("--secure", action="store_true", help="exact OpenDP sampler, unseeded (for published numbers)")
    t.add_argument("--seed", type=_checked(_seed, "seed"), help="seed of a teaching run (default: the study's seed)")
    t.add_argument("--data", metavar="SOURCE", help="use this data instead of the config's data source")
    t.add_argument("--out", required=True, metavar="FILE",
                   help="the new study config (.yaml), in the same folder as STUDY.yaml when it reads a file")
    t.add_argument("--force", action="store_true", help="replace FILE if prdp did not write it")
    t.add_argument("--ledger", metavar="NAME", help="append the suggestion's cost to this named ledger")
    t.add_argument("--ledger-new-data", action="store_true", help="with --ledger: as for prdp run")
    t.add_argument("--db", metavar="URL", help="with --ledger: the store's database URL")


def parse_range(text: str, spacing: str, size: int) -> tuple[str, Any]:
    """``MEASURE=LO:HI`` → (measure, :class:`~prdp_core.mechanisms.dp_quantile.CandidateGrid`)."""
    from ..mechanisms.dp_quantile import CandidateGrid

    name, sep, rng = str(text).partition("=")
    lo, sep2, hi = rng.partition(":")
    if not sep or not sep2 or not name.strip():
        raise ParameterError(f"--range {text!r}: write MEASURE=LO:HI, e.g. EMP=1:1e6.")
    try:
        bounds = float(lo), float(hi)
    except ValueError:
        raise ParameterError(f"--range {text!r}: LO and HI must be numbers.") from None
    if not all(math.isfinite(b) for b in bounds):
        raise ParameterError(f"--range {text!r}: LO and HI must be finite.")
    if bounds[0] <= 0:
        raise ParameterError(f"--range {text!r}: thresholds are positive: the range needs lo > 0.")
    try:
        return name.strip(), CandidateGrid(bounds[0], bounds[1], size, spacing)  # type: ignore[arg-type]  # spacing is log or linear (the option's choices)
    except ParameterError as err:
        raise ParameterError(f"--range {text!r}: {err}") from None


def run(args: argparse.Namespace, stdout: IO[str], stderr: IO[str]) -> int:
    """``prdp suggest thresholds``: returns the exit code (errors raised as PrdpError)."""
    from functools import partial

    from ..core.accounting import Ledger
    from ..core.recorder import Recorder
    from ..io.outputs import check_folder, write_files
    from ..mechanisms.dp_quantile import dp_percentile_thresholds
    from ..review.review_boundary import produce
    from ..study.config import load_config, load_data, parse_config
    from .exit_codes import EXIT_OK

    if (args.db or args.ledger_new_data) and not args.ledger:
        raise ConfigError("--db and --ledger-new-data go with --ledger NAME.")
    grids = dict(parse_range(r, args.spacing, args.candidates) for r in args.ranges)
    study = load_config(args.config)
    out = Path(args.out)
    folder = out.parent if str(out.parent) else Path(".")
    if out.suffix.lower() not in (".yaml", ".yml"):
        raise ConfigError(f"--out {args.out}: name a .yaml file.")
    if study.data.path is not None and args.data is None and \
            folder.resolve() != Path(args.config).resolve().parent:
        raise ConfigError(f"--out {args.out}: the study reads a file by a path relative to its own folder; write the "
                          "new config into that folder.")
    check_folder(folder, [out.name], force=args.force)  # before anything is drawn or charged
    pol = dict(study.policy)
    if isinstance(pol.get("thresholds"), dict) and "rows" in pol["thresholds"]:
        raise ConfigError("policy.thresholds: private suggestions are drawn for one row of thresholds, not per group.")
    ds = load_data(study, args.data)
    unknown = [m for m in grids if m not in ds.schema.measures]
    if unknown:
        raise ConfigError(f"--range: {', '.join(unknown)} is not a measure of the study's data "
                          f"(measures: {', '.join(ds.schema.measures)}).")
    ledger = None
    if args.ledger:  # checked before anything is drawn
        from .board_cli import RunLedger

        ledger = RunLedger(args.ledger, args.db, study, args.data, new_data=args.ledger_new_data)
    seed = None if args.secure else (study.seed if args.seed is None else args.seed)
    drawn = Ledger()

    def record(entries: tuple[Any, ...]) -> None:  # in the named ledger before anything else: never left out
        drawn.extend(entries)
        if ledger is not None:
            ledger.append_entries(list(entries), ds, origin=f"prdp suggest thresholds {Path(args.config).name}")

    sug = Recorder(drawn, write=record).release(
        partial(dp_percentile_thresholds, ds, list(grids), args.percentile, grids=grids, epsilon=args.epsilon,
                secure=args.secure, seed=seed), label="private suggestion", entries=lambda s: (s.entry,))
    pol["thresholds"] = {**dict(pol.get("thresholds") or {}), **sug.thresholds}
    pol["threshold_source"] = {**dict(pol.get("threshold_source") or {}), **sug.sources}
    new = replace(study, policy=pol)
    text = new.to_yaml()
    parse_config(text)  # the written config reads back
    write_files(folder, {out.name: text.encode("utf-8")}, force=args.force)
    stdout.write(produce("prdp suggest thresholds (terminal)", sug, teaching=study.mode == "teaching", out=str(out))
                 .decode("utf-8"))
    if ledger is not None:
        stdout.write(ledger.summary_line() + "\n")
    else:
        stderr.write("prdp: note: the suggestion's cost is in no ledger (give --ledger NAME to record it).\n")
    return EXIT_OK


__all__ = ["add_parser", "parse_range", "run"]
