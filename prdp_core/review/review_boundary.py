"""The review boundary: every output of a study leaves through :func:`produce`, which applies the mode.

Review mode shows what a policy and its releases make public and nothing computed from the records
(docs/security.md): no true value, no record count, no per-record or per-owner loss, distribution,
quantile or share. Each output kind — the HTML report, every CSV/JSON/YAML file, the reproduction script
and notebook, the Run page's answers, the board's table, report and entry configs, a share link, the "Reproduce in
Python" snippets, the lines ``prdp run``, ``prdp ledger show`` and ``prdp suggest thresholds`` print, a
session's ledger exports and study config — is registered in
:data:`REGISTRY` with the function that builds it, and is made by :func:`produce` only:

* in teaching mode the builder gets its subject as it is;
* in review mode the builder gets a *review view* (:func:`review_view`): a study run whose study says
  ``mode: review`` and whose releases went through :meth:`~prdp_core.core.release.Release.for_review` (no
  truths, no per-record losses), so that a builder cannot show what it was never handed; the builder
  is told the mode and leaves out the statistics of the records it could still compute (counts, the
  loss distributions of a policy preview).

Most builders are here; the module that builds an output above this one registers it itself (``report.html``
and ``prdp run (terminal)``: :mod:`prdp_core.review.report`, which imports this module), so the boundary imports
only downward.

A builder takes one subject, named by :attr:`Output.takes`: a :class:`~prdp_core.study.runner.StudyRun`
(``"run"``), its ledger (``"ledger"``), its study (``"study"``), board entries (``"entries"``, whose
review view drops the ``records`` section of each summary), one release (``"release"``, the Run page's:
its review view is :meth:`Release.for_review`), a study config (``"config"``, a mapping: a share
link's), a named ledger (``"named ledger"``, :class:`~prdp_core.board.ledgers.NamedLedger`: ``prdp ledger
show`` and ``prdp run --ledger``'s; its review view drops the statistics of the records) or a private
suggestion (``"suggestion"``, :class:`~prdp_core.mechanisms.dp_quantile.PrivateThresholds`: ``prdp suggest
thresholds``'; released values, the same in both modes); :func:`subject_of` picks it from a run.
``prdp run`` (:func:`prdp_core.review.report.write_outputs`), ``prdp board export`` and ``list --format csv``
(:func:`prdp_core.commands.board_cli.write_board`), the Run, Study and Board pages and every page's snippet
produce their outputs here. What a page draws from the records on the screen (profiles, loss charts, true
answers, counts) is registered in :data:`SCREEN` and drawn only when :func:`may_show` allows it (teaching mode), which
``ui.review.shows_records`` asks. ``tests/unit/test_review_boundary.py`` plants a record in a table and scans
every registered output in both modes, so an output added to the registry is scanned without further work.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any, Callable, Literal

from ..core.accounting import Ledger
from ..core.errors import ParameterError
from ..core.release import Release
from ..study.config import Study
from ..study.runner import StudyRun

#: The subject a builder takes: a study run, its ledger, its study, board entries (a list), one release, a
#: study config (a mapping, as a session exports its design), a named ledger of the store or a private suggestion.
Takes = Literal["run", "ledger", "study", "entries", "release", "config", "named ledger", "suggestion"]


@dataclass(frozen=True)
class Output:
    """One registered output: its ``name`` (a file name, or a description of a screen or terminal output),
    its ``kind`` (``study file``, ``session export``, ``board``, ``link``, ``snippet``, ``cli``), the subject
    it takes and its builder ``build(subject, teaching, **context) -> str | bytes``."""

    name: str
    kind: str
    takes: Takes
    build: Callable[..., str | bytes]
    description: str
    #: What a reader of the output sees, as text (a share link's parameter is compressed: its JSON).
    read: Callable[[bytes], str] = field(default=lambda data: data.decode("utf-8"))


#: Every output prdp writes, downloads or prints from a study, by name.
REGISTRY: dict[str, Output] = {}


def register(name: str, kind: str, takes: Takes, description: str, *, read: Callable[[bytes], str] | None = None
             ) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """Decorator: register ``build`` as the builder of the output ``name`` (``read``: how its bytes read as
    text, when they are not UTF-8 text)."""
    def deco(build: Callable[..., Any]) -> Callable[..., Any]:
        if name in REGISTRY:
            raise ValueError(f"The output {name!r} is registered twice.")
        out = Output(name, kind, takes, build, description)
        REGISTRY[name] = out if read is None else replace(out, read=read)
        return build
    return deco


#: The screen's outputs computed from the records (a page's profile, loss charts, true answers, counts), by name:
#: what each shows. A page draws one only when :func:`may_show` allows it (``ui.review.shows_records``).
SCREEN: dict[str, str] = {}


def register_screen(name: str, shows: str) -> str:
    """Register the screen output ``name`` (``shows``: what it shows, as the note of review mode names it)."""
    if name in SCREEN and SCREEN[name] != shows:
        raise ValueError(f"The screen output {name!r} is registered twice.")
    SCREEN[name] = shows
    return name


def may_show(name: str, *, teaching: bool) -> bool:
    """Whether the registered screen output ``name`` may be drawn: in teaching mode only (it is computed from the
    records). An unregistered name is a programming error (ValueError), so no page shows a statistic of the records
    that the registry does not list."""
    if name not in SCREEN:
        raise ValueError(f"The screen output {name!r} is not registered (prdp_core.review.review_boundary.SCREEN).")
    return bool(teaching)


def readable(name: str, data: bytes) -> str:
    """The output ``name``'s bytes as a reader sees them (text; a share link's design as JSON)."""
    return REGISTRY[name].read(data)


def review_view(run: StudyRun) -> StudyRun:
    """The run as review mode may use it: its study in review mode, every release without truths or
    per-record losses (:meth:`Release.for_review`); the dataset (for the policy's public function and
    the schema) and the ledger (public forms) are kept."""
    study = replace(run.study, mode="review")
    return StudyRun(study=study, dataset=run.dataset, data_file=run.data_file, ledger=run.ledger,
                    releases=[(label, m, rel.for_review()) for label, m, rel in run.releases])


def subject_of(run: StudyRun, takes: Takes) -> Any:
    """The subject of kind ``takes`` of a study run (``entries``: :func:`board_entries`; ``release``: its first;
    ``named ledger``: its ledger as a named ledger stores it, with the statistics of its records)."""
    if takes == "entries":
        return board_entries(run)
    if takes == "release":
        return run.releases[0][2]
    if takes == "config":
        return run.study.to_dict()
    if takes == "ledger":
        return run.ledger
    if takes == "named ledger":  # as prdp run --ledger stores it, with its table's statistics
        from ..board.ledgers import NamedLedger

        return NamedLedger.of_run("planted", run.ledger, _table_or_none(run))
    if takes == "suggestion":  # a DP p97 of each measure on a public grid, as released (nothing is drawn here)
        from ..mechanisms.dp_quantile import CandidateGrid, DPQuantile, PrivateThresholds, suggestion_entry

        grid = CandidateGrid(1, 1e6)
        qs = tuple(DPQuantile(m, 97, float(grid.values()[i * 97 % grid.size]), 0.25 / len(run.dataset.schema.measures),
                              grid) for i, m in enumerate(run.dataset.schema.measures))
        return PrivateThresholds(qs, suggestion_entry(qs))
    return run.study if takes == "study" else run


def _table_or_none(run: StudyRun) -> Any:
    """The run's records, or None when an engine holds them."""
    from ..core.errors import DataError

    try:
        return run.dataset.table
    except (DataError, AttributeError):
        return None


def produce(name: str, subject: Any, *, teaching: bool, **context: Any) -> bytes:
    """The output ``name`` of ``subject`` in the given mode, as bytes (text is UTF-8): the one way out.

    ``teaching`` is the mode of the session or command (a review-mode study run is produced in review
    whatever is asked). ``context``: what the builder needs besides its subject (e.g. the config text of
    a report). Raises :class:`ParameterError` for an unknown output or a subject of the wrong kind."""
    out = REGISTRY.get(name)
    if out is None:
        raise ParameterError(f"No output named {name!r}.", hint=f"Outputs: {', '.join(sorted(REGISTRY))}.")
    want: Any = {"run": StudyRun, "ledger": Ledger, "study": Study, "entries": list, "release": Release,
                 "config": Mapping}.get(out.takes) or _late_type(out.takes)
    if not isinstance(subject, want):
        raise ParameterError(f"The output {name!r} is made from a {out.takes}, not a {type(subject).__name__}.")
    if out.takes == "named ledger" and not teaching:  # its records' statistics dropped
        subject = subject.for_review()
    elif isinstance(subject, StudyRun):
        teaching = teaching and subject.teaching
        if not teaching:
            subject = review_view(subject)
    elif isinstance(subject, Study) and not teaching:
        subject = replace(subject, mode="review")
    elif isinstance(subject, list) and not teaching:
        subject = review_entries(subject)
    elif isinstance(subject, Release) and not teaching:
        subject = subject.for_review()
    elif isinstance(subject, Mapping) and not teaching:
        subject = {**subject, "mode": "review"}
    data = out.build(subject, teaching, **context)
    return data if isinstance(data, bytes) else data.encode("utf-8")


def _late_type(takes: str) -> type:
    """The type of a subject whose module is imported only when it is used (a named ledger's: the store's)."""
    from ..board.ledgers import NamedLedger
    from ..mechanisms.dp_quantile import PrivateThresholds

    return {"named ledger": NamedLedger, "suggestion": PrivateThresholds}[takes]


def names(kind: str | None = None) -> list[str]:
    """The registered outputs (of one ``kind``), in registration order."""
    return [n for n, o in REGISTRY.items() if kind is None or o.kind == kind]


# ---------------------------------------------------------------------------
# The outputs of a study run (prdp run --out DIR, the Study page's report tab)
# ---------------------------------------------------------------------------


@register("results.csv", "study file", "run", "every released answer (truth columns in teaching mode only)")
def _results(run: StudyRun, teaching: bool) -> bytes:
    from ..io.export import to_csv_bytes
    from ..study.study_tables import results_frame

    return to_csv_bytes(results_frame(run.releases, teaching=teaching))


@register("budget.csv", "study file", "run", "the budget table, adopted private suggestions included")
def _budget(run: StudyRun, teaching: bool) -> bytes:
    from ..io.export import to_csv_bytes
    from ..study.study_tables import budget_table

    return to_csv_bytes(budget_table(run))


@register("ledger.csv", "study file", "run", "the run's ledger (public forms)")
def _ledger_csv(run: StudyRun, teaching: bool) -> bytes:
    from ..io.export import to_csv_bytes
    from ..study.study_tables import ledger_frame

    return to_csv_bytes(ledger_frame(run))


@register("ledger.json", "study file", "run", "the run's ledger as data (no record count in review mode)")
def _ledger_json(run: StudyRun, teaching: bool) -> str:
    import json

    from ..study.study_tables import ledger_dict

    return json.dumps(ledger_dict(run), indent=2, default=str, ensure_ascii=False) + "\n"


@register("study.yaml", "study file", "run", "the normalised study config")
def _study_yaml(run: StudyRun, teaching: bool, *, config_text: str | None = None) -> str:
    return config_text if config_text is not None else run.study.to_yaml()


@register("reproduce.py", "study file", "run", "the reproduction script")
def _reproduce(run: StudyRun, teaching: bool, *, data_file: str | None = None) -> str:
    from ..study.reproduction import reproduction_script

    return reproduction_script(run.study, data_file=data_file if data_file is not None else run.data_file)


@register("study.ipynb", "study file", "run", "the reproduction notebook (the script's code in cells)")
def _notebook(run: StudyRun, teaching: bool, *, data_file: str | None = None) -> str:
    from ..study.notebook import notebook_text

    return notebook_text(run.study, data_file=data_file if data_file is not None else run.data_file)


@register("answers.csv", "release", "release", "one release's answers (the Run page's download)")
def _answers_csv(rel: Release, teaching: bool) -> bytes:
    from ..io.export import to_csv_bytes
    from ..study.study_tables import answers_export

    return to_csv_bytes(answers_export(rel, teaching))


# ---------------------------------------------------------------------------
# A session's ledger and study config (the Study page's downloads)
# ---------------------------------------------------------------------------


@register("session ledger (JSON)", "session export", "ledger", "a session's ledger as JSON")
def _session_ledger_json(ledger: Ledger, teaching: bool) -> str:
    from ..study.study_tables import ledger_json

    return ledger_json(ledger, teaching=teaching)


@register("session ledger (CSV)", "session export", "ledger", "a session's ledger as a table")
def _session_ledger_csv(ledger: Ledger, teaching: bool) -> bytes:
    from ..io.export import to_csv_bytes
    from ..study.study_tables import public_ledger_table

    return to_csv_bytes(public_ledger_table(ledger, teaching=teaching))


@register("study config (YAML)", "session export", "study", "the Study page's study-config download and preview (the "
          "design; review mode: mode: review)")
def _study_config(study: Study, teaching: bool) -> str:
    return study.to_yaml()


# ---------------------------------------------------------------------------
# Named ledgers and private suggestions (prdp ledger show, prdp run --ledger, prdp suggest thresholds)
# ---------------------------------------------------------------------------


@register("prdp ledger show (terminal)", "cli", "named ledger", "what prdp ledger show prints (table or JSON; "
          "--review: public forms only)")
def _ledger_show(led: Any, teaching: bool, *, fmt: str = "table") -> str:
    from ..board.texts import ledger_show_text

    return ledger_show_text(led, review=not teaching, fmt=fmt)


@register("prdp run --ledger (terminal)", "cli", "named ledger", "the line prdp run --ledger (and prdp suggest "
          "thresholds --ledger) adds")
def _run_ledger_line(led: Any, teaching: bool) -> str:
    from ..board.texts import run_ledger_line

    return run_ledger_line(led, teaching=teaching) + "\n"


@register("prdp suggest thresholds (terminal)", "cli", "suggestion", "what prdp suggest thresholds prints (private "
          "suggestions, public in both modes)")
def _suggest(sug: Any, teaching: bool, *, out: str = "suggested.yaml") -> str:
    from ..mechanisms.dp_quantile import suggestion_text

    return suggestion_text(sug, out)


# ---------------------------------------------------------------------------
# The board, share links and snippets
# ---------------------------------------------------------------------------


def board_entries(run: StudyRun) -> list[Any]:
    """The board entries of the run's policies, one per policy part, as the Board page submits them (the
    subject ``"entries"`` of a run)."""
    import time

    from ..board import summary
    from ..board.store import Entry

    out = []
    for i, part in enumerate(summary.policy_parts(run.study)):
        study = summary.restrict(run.study, part)
        summ = summary.summarise(study, run.dataset, teaching=run.teaching)
        out.append(Entry(id=i + 1, board_id=1, submission_id=f"-{i}", participant="-", name=part, rationale="",
                         kind=summ["kind"], dataset=summ["dataset"], config=study.to_dict(), summary=summ,
                         created_at=time.time()))
    return out


def review_entries(entries: list[Any]) -> list[Any]:
    """Board entries as review mode may use them: without the ``records`` section of their summaries (the
    statistics of the records: loss quantiles, CDFs, shares, errors)."""
    return [replace(en, summary={k: v for k, v in en.summary.items() if k != "records"}) for en in entries]


@register("board.csv", "board", "entries", "the board's table (Board page, prdp board list/export)")
def _board_csv(entries: list[Any], teaching: bool, *, delta: float = 1e-6) -> bytes:
    from ..board.export import board_csv

    return board_csv(entries, review=not teaching, delta=delta)


@register("board.html", "board", "entries", "the board's HTML report (Board page, prdp board export)")
def _board_html(entries: list[Any], teaching: bool, *, delta: float = 1e-6, title: str = "Workshop board",
                dataset: str | None = None) -> str:
    from ..board.export import board_html

    return board_html(entries, review=not teaching, delta=delta, title=title, dataset=dataset)


@register("board table (screen)", "board", "entries", "the board's table as the Board page shows it (read back with "
          ":func:`screen_frame`)")
def _board_table(entries: list[Any], teaching: bool, *, delta: float = 1e-6, mine: set[int] | None = None,
                 compact: bool = False) -> str:
    import json

    from ..board.summary import board_frame

    frame = board_frame(entries, review=not teaching, delta=delta, mine=mine, compact=compact)
    return json.dumps(frame.to_dict(orient="split", index=False), ensure_ascii=False, default=str)


def screen_frame(data: bytes) -> Any:
    """A table produced for the screen (a ``board table (screen)``), as the DataFrame a page shows: columns and
    rows as built, ±∞ and NaN kept."""
    import json

    import pandas as pd

    doc = json.loads(data.decode("utf-8"))
    return pd.DataFrame(doc["data"], columns=doc["columns"])


@register("entry.yaml", "board", "entries", "the study configs of board entries (prdp board export)")
def _entry_yaml(entries: list[Any], teaching: bool) -> str:
    from ..study.config import parse_config

    return "".join(parse_config(en.config).to_yaml() for en in entries)


@register("prdp board list (terminal)", "cli", "entries", "what prdp board list prints (table or JSON)")
def _board_list(entries: list[Any], teaching: bool, *, delta: float = 1e-6, fmt: str = "table",
                where: str = "") -> str:
    from ..board.texts import list_text

    return list_text(entries, review=not teaching, delta=delta, fmt=fmt, where=where)


def _link_json(data: bytes) -> str:
    """The design a share link's parameter carries, as JSON text (base64url of zlib-compressed JSON)."""
    import base64
    import zlib

    text = data.decode("ascii")
    return zlib.decompress(base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))).decode("utf-8")


@register("share link", "link", "config", "the policy parameter of a share link and of the address bar (the "
          "design only)", read=_link_json)
def _share_link(config: Mapping[str, Any], teaching: bool) -> str:
    from ..board import links

    return links.encode(config)


@register("snippets", "snippet", "study", "the 'Reproduce in Python' code of a page (every page's without part=)")
def _snippets(study: Study, teaching: bool, *, part: str | None = None, **options: Any) -> str:
    from ..core.errors import ConfigError
    from ..study.snippets import PARTS, snippet

    if part is not None:  # one page's code (options: data_dir, sample, owner_method)
        return snippet(study, part, **options)
    out = []
    for each in PARTS:
        try:
            out.append(snippet(study, each, **options))
        except ConfigError:  # a part whose policy section or mechanism the study lacks: no snippet
            continue
    return "\n".join(out)


__all__ = ["Output", "REGISTRY", "board_entries", "names", "produce", "readable", "register", "review_entries",
           "review_view", "screen_frame", "subject_of"]
