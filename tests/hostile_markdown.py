"""User text that would load an address if a page rendered it as Markdown or HTML.

Each planted value holds a Markdown image ``![kind](http://HOST/kind.png)`` and an HTML
``<img src=http://HOST/kind-html.png>``, so the address a browser would fetch names the kind of text that
leaked. :func:`study` builds a study config and its table in which every name and label is such a value;
:func:`plant_board` puts another participant's entries on a board (one on an archived board);
:func:`report_html` and :func:`board_html` are the HTML exports of both.
"""

from __future__ import annotations

from pathlib import Path

import yaml

#: The kinds of user text a study and its table carry (the address of each names its kind).
STUDY_KINDS = ("id", "owner", "group", "measure", "value", "label", "title", "tier", "query", "mechanism")
#: The kinds of user text another participant's board entries carry.
BOARD_KINDS = ("entry-name", "archived-name", "why", "entry-dataset", "entry-title", "entry-query", "board-title")


def planted(host: str, kind: str) -> str:
    """A text of ``kind`` that loads ``http://host/<kind>.png`` if rendered as Markdown and
    ``…/<kind>-html.png`` if rendered as HTML."""
    return f"![{kind}](http://{host}/{kind}.png)<img src=http://{host}/{kind}-html.png>"


def study(host: str, *, rows: int = 150) -> tuple[str, bytes]:
    """A study config (YAML, reading ``table.csv``) and that table: its column names, group values, title,
    labels of queries, mechanisms and personalized budgets, tier names and filter values are all planted."""
    def bad(kind: str) -> str:
        return planted(host, kind)

    m, g, o = bad("measure"), bad("group"), bad("owner")
    values = [bad("value"), bad("label"), "plain"]
    head = ",".join('"' + c.replace('"', '""') + '"' for c in (bad("id"), o, g, m))
    lines = [f"r{i},o{i // 3},\"{values[i % 3]}\",{1 + (i * 37) % 400}" for i in range(rows)]
    cfg = {"version": 1, "title": bad("title"), "mode": "teaching", "seed": 1,
           "data": {"path": "table.csv", "schema": {"id": bad("id"), "measures": [m], "groups": [g], "owner": o}},
           "policy": {"thresholds": {m: 100},
                      "specification": {"column": g, "default_eps": 1, "labels": {bad("label"): 0.5}},
                      "tiers": {bad("tier"): 1.0, "agency": 4.0}},
           "workload": {"queries": [{"kind": "count", "group_by": [g], "rho": 0.5, "label": bad("query")},
                                    {"kind": "sum", "measure": m, "group_by": [g], "rho": 0.5,
                                     "filter": {"column": g, "values": [bad("value")]}}]},
           "mechanisms": [{"kind": "unit_splitting", "label": bad("mechanism")},
                          {"kind": "multitier", "query": "count",
                           "filter": {"column": g, "op": "==", "value": bad("value")}}]}
    return yaml.safe_dump(cfg, allow_unicode=True), ("\n".join([head, *lines]) + "\n").encode()


def plant_board(database: Path, host: str, facilitator_key: str) -> None:
    """Another participant's entry (planted name, rationale, dataset, study title and query label) on an
    archived board with a planted title, and another on the open board."""
    import prdp_core
    from prdp_core.board import summary as S
    from prdp_core.board.store import BoardStore
    from prdp_core.study.config import parse_config

    cfg = parse_config({"version": 1, "seed": 0, "title": planted(host, "entry-title"),
                        "data": {"sample": "cbp_like", "n": 3000, "seed": 1},
                        "policy": {"thresholds": {"EMP": 40, "PAYANN": 4000, "PAYQTR1": 900}},
                        "workload": {"queries": [{"kind": "count", "group_by": ["STATE"], "rho": 0.5,
                                                  "label": planted(host, "entry-query")}]},
                        "mechanisms": [{"kind": "unit_splitting"}]})
    summary = S.summarise(cfg, prdp_core.samples.load_dataset("cbp_like", n=3000, seed=1), teaching=True)
    store = BoardStore(f"sqlite:///{database}", facilitator_key=facilitator_key)
    try:
        store.archive(key=facilitator_key, title=planted(host, "board-title"))  # the title of the next board
        for name in ("archived-name", "entry-name"):
            store.submit(participant="someone-else", name=planted(host, name), rationale=planted(host, "why"),
                         config=cfg.to_dict(), summary=summary, kind=summary["kind"],
                         dataset=planted(host, "entry-dataset"))
            if name == "archived-name":
                store.archive(key=facilitator_key)
    finally:
        store.dispose()


def report_html(folder: Path, host: str) -> str:
    """The HTML report of :func:`study` run in ``folder``."""
    from prdp_core.review import report as R

    config, table = study(host)
    (folder / "table.csv").write_bytes(table)
    (folder / "study.yaml").write_text(config, encoding="utf-8")
    return R.render_html(R.run_study(R.load_config(folder / "study.yaml")), config_text=config)


def board_html(folder: Path, host: str, *, review: bool = False) -> str:
    """The board's HTML export of the entries :func:`plant_board` puts on a board in ``folder``."""
    from prdp_core.board import export as X
    from prdp_core.board.store import BoardStore

    plant_board(folder / "board.sqlite", host, "key")
    store = BoardStore(f"sqlite:///{folder / 'board.sqlite'}", facilitator_key="key")
    try:
        entries = store.entries()
    finally:
        store.dispose()
    return X.board_html(entries, review=review, delta=1e-6, dataset=planted(host, "entry-dataset"))
