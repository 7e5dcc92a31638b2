"""The user's path at scale: the whole ``prdp run`` with default settings, first and second run, beside hand-written
DuckDB SQL for the same statistics in the same run.

A study on a cbp_like Parquet file (``prdp samples write``; ``--file`` for another file with the same columns):
COUNT and SUMs of EMP and PAYANN by STATE, unit splitting at thresholds EMP 100 / PAYANN 10,000, partition selection,
``data.engine: duckdb``, no memory setting. Measured, each in a process of its own (wall time and peak resident
memory of that process, ``os.wait4``):

1. ``prdp run`` with an empty result cache (``PRDP_CACHE_DIR`` a fresh folder): the first run on the file;
2. ``prdp run`` again on the unchanged file (what a second run, or a second session, costs);
3. the hand-written SQL, in one DuckDB process with DuckDB's own defaults: the role checks (rows, missing and
   duplicate ids, missing and negative measures), the records' split-count histogram (the loss CDF), the sums
   per STATE, the owners' losses (a GROUP BY over the owners) and exact quantiles of both measures.

With ``--app``, the app's path instead, through the Streamlit protocol (``st_client.py``: what a browser sends,
nothing drawn): the app is started (``streamlit run app.py`` on 127.0.0.1, ``PRDP_DATA_DIR`` the file's folder, no
memory setting, stopped by its process handle) and one session connects the file (*Connect*, the roles with the
id, owner, measures and groups, *Use this table*), waits for the records' loss CDF on the Policy designer, changes
the first threshold, computes the owners' CDF and releases on the Run page — each step timed, with the server's
peak resident memory during it (``VmHWM``, reset before each step through ``/proc/<pid>/clear_refs``); then a second
session the same way on the unchanged file, and two sessions pressing *Run release* at once. The hand-written SQL
runs in the same invocation, as above. The widgets are found by their keys (:data:`APP_KEYS`); a key the app no
longer has stops the run with its name.

Run: .venv/bin/python benchmarks/bench_user_path.py [--rows 1000000] [--file PATH] [--keep]
     .venv/bin/python benchmarks/bench_user_path.py --app [--rows 1000000] [--file PATH] [--id EID --owner FIRM
         --measures EMP,PAY --groups STATE]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import re
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import machine  # noqa: E402
from st_client import ProtocolError, StreamlitClient, plotly_data  # noqa: E402

#: The app's widgets and charts the --app part drives, by user key: name → (element kind, key). A key ending in
#: ``*`` is a prefix (the key ends with a per-table id); ``{measure}`` is the first measure. Adapt here when the
#: app's keys change: a key the page does not show stops the run naming it.
APP_KEYS: dict[str, tuple[str, str]] = {
    "file": ("selectbox", "large_file"),
    "connect": ("button", "large_connect_go"),
    "id": ("selectbox", "map_id_*"),
    "owner": ("selectbox", "map_owner_*"),
    "measures": ("multiselect", "map_measures_*"),
    "groups": ("multiselect", "map_groups_*"),
    "use table": ("button", "apply_*"),
    "records CDF": ("plotly_chart", "cdf_records"),
    "threshold": ("number_input", "thr_{measure}"),
    "owners switch": ("checkbox", "policy_large_owners"),
    "owners CDF": ("plotly_chart", "cdf_owners"),
    "release": ("button", "run_go"),
    "released": ("plotly_chart", "run_answers_chart"),
    "realized owners switch": ("checkbox", "run_large_owners"),
    "realized owners CDF": ("plotly_chart", "run_cdf_owners"),
}
#: The app's pages the --app part visits (their titles in the navigation).
APP_PAGES = {"data": "Data", "policy": "Policy designer", "release": "Run"}

STUDY = """version: 1
title: the user's path at scale
mode: teaching
seed: 4
data:
  path: {path}
  engine: duckdb
  schema: {{id: ESTAB_ID, measures: [EMP, PAYANN], groups: [STATE], owner: FIRM_ID}}
policy:
  thresholds:
    group_column: STATE
    rows:
      "*": {{EMP: 100, PAYANN: 10000}}
workload:
  partition_rho: 0.1
  queries:
    - {{kind: count, group_by: [STATE], rho: 0.5}}
    - {{kind: sum, measure: EMP, group_by: [STATE], rho: 0.5}}
    - {{kind: sum, measure: PAYANN, group_by: [STATE], rho: 0.5}}
mechanisms:
  - kind: unit_splitting
"""

#: The same statistics as hand-written SQL (rel: the file), in the order a run needs them.
SQL = {
    "checks": "SELECT count(*), count(ESTAB_ID), count(DISTINCT ESTAB_ID), count_if(EMP IS NULL OR isnan(EMP)), "
              "count_if(PAYANN IS NULL OR isnan(PAYANN)), count_if(EMP < 0), count_if(PAYANN < 0) FROM rel",
    "records CDF": "SELECT greatest(ceil(EMP / 100), 1) + greatest(ceil(PAYANN / 10000), 1) AS m, count(*) FROM rel "
                   "GROUP BY m",
    "sums per STATE": "SELECT STATE, count(*), sum(least(EMP, 100 * greatest(ceil(EMP / 100), 1))), sum(PAYANN) "
                      "FROM rel GROUP BY STATE",
    "owner losses": "SELECT l, count(*) FROM (SELECT FIRM_ID, sum(greatest(ceil(EMP / 100), 1) "
                    "+ greatest(ceil(PAYANN / 10000), 1)) AS l FROM rel GROUP BY FIRM_ID) GROUP BY l",
    "quantiles": "SELECT quantile_disc(EMP, [0.5, 0.9, 0.99]), quantile_disc(PAYANN, [0.5, 0.9, 0.99]) FROM rel",
}

HAND_WRITTEN = """
import sys, time, duckdb
con = duckdb.connect()
con.execute("CREATE VIEW rel AS SELECT * FROM read_parquet(" + repr(sys.argv[1]) + ")")
kept = {{}}
for name, sql in {sql!r}.items():
    t0 = time.perf_counter()
    kept[name] = con.execute(sql).fetchall()
    print(f"{{name}}\\t{{time.perf_counter() - t0:.2f}}", flush=True)
if len(sys.argv) > 2:  # the sums per STATE, to compare with the run's true values
    import json
    with open(sys.argv[2], "w") as f:
        json.dump([[str(r[0])] + [float(x) for x in r[1:]] for r in kept["sums per STATE"]], f)
"""


def measured(argv: list[str], env: dict[str, str] | None = None) -> tuple[float, float, str]:
    """(wall seconds, peak resident GB, stdout) of one process, its own resources (``os.wait4``)."""
    with tempfile.TemporaryFile("w+") as out, tempfile.TemporaryFile("w+") as err:
        t0 = time.perf_counter()
        proc = subprocess.Popen(argv, stdout=out, stderr=err, env=env, text=True)
        _, status, usage = os.wait4(proc.pid, 0)
        wall = time.perf_counter() - t0
        proc.returncode = os.waitstatus_to_exitcode(status)
        out.seek(0)
        err.seek(0)
        if proc.returncode:
            raise SystemExit(f"{' '.join(argv)} failed:\n{err.read()[-2000:]}")
        return wall, usage.ru_maxrss / 2**20, out.read()


def renamed(text: str, columns: dict[str, str] | None) -> str:
    """``text`` (SQL or a study) with cbp_like's column names (ESTAB_ID, FIRM_ID, EMP, PAYANN, STATE) replaced by
    the file's (``columns``)."""
    names = columns or {}
    return re.sub(r"\b(ESTAB_ID|FIRM_ID|EMP|PAYANN|STATE)\b", lambda m: names.get(m.group(1), m.group(1)), text)


def hand_written(work: Path, data: Path, columns: dict[str, str] | None = None, sums: Path | None = None
                 ) -> tuple[str, float, float]:
    """The hand-written SQL in a DuckDB process of its own: (label with each statement's time, wall, peak GB).
    ``columns``: the file's names of cbp_like's columns (ESTAB_ID, FIRM_ID, EMP, PAYANN, STATE), when they differ;
    ``sums``: a JSON file to write the sums per STATE to (STATE, records, EMP, PAYANN)."""
    sql = {k: renamed(v, columns) for k, v in SQL.items()}
    script = work / "hand_written.py"
    script.write_text(HAND_WRITTEN.format(sql=sql), encoding="utf-8")
    wall, peak, out = measured([sys.executable, str(script), str(data), *([str(sums)] if sums else [])])
    parts = ", ".join(f"{line.split(chr(9))[0]} {line.split(chr(9))[1]} s" for line in out.strip().splitlines())
    return f"hand-written DuckDB SQL ({parts})", wall, peak


@dataclass(frozen=True)
class Roles:
    """The columns the --app part maps on the Column roles view."""

    id: str
    owner: str
    measures: list[str]
    groups: list[str]

    def columns(self) -> dict[str, str]:
        """cbp_like's column names → this file's (for the hand-written SQL)."""
        return {"ESTAB_ID": self.id, "FIRM_ID": self.owner, "EMP": self.measures[0],
                "PAYANN": self.measures[min(1, len(self.measures) - 1)], "STATE": self.groups[0]}


def _key(c: StreamlitClient, name: str, roles: Roles) -> str:
    """The element id of :data:`APP_KEYS` ``name`` on the client's page (ProtocolError naming the key if absent)."""
    kind, key = APP_KEYS[name]
    key = key.format(measure=roles.measures[0])
    try:
        return c.key_id(kind, key.rstrip("*"), prefix=key.endswith("*"))
    except ProtocolError:
        raise ProtocolError(f"the app shows no {kind} with key {key!r} (APP_KEYS[{name!r}] in "
                            f"benchmarks/bench_user_path.py): adapt the table to the app's keys") from None


def _has(c: StreamlitClient, name: str, roles: Roles) -> bool:
    try:
        _key(c, name, roles)
        return True
    except ProtocolError:
        return False


class Server:
    """The app on 127.0.0.1 (``streamlit run app.py``), its peak resident memory read from ``/proc``."""

    def __init__(self, data_dir: Path, work: Path, timeout: float) -> None:
        import socket

        self.timeout = timeout  # of each wait of a session's client, s
        with socket.socket() as sock:
            sock.bind(("127.0.0.1", 0))
            self.port = sock.getsockname()[1]
        env = {k: v for k, v in os.environ.items() if not k.startswith("PRDP_")}
        env.update(PRDP_DATA_DIR=str(data_dir), PRDP_CACHE_DIR=str(work / "app-cache"), PYTHONPATH=str(ROOT))
        self.log = open(work / "server.log", "w")
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "streamlit", "run", str(ROOT / "app.py"), "--server.headless", "true",
             "--server.address", "127.0.0.1", "--server.port", str(self.port), "--browser.gatherUsageStats", "false"],
            cwd=ROOT, env=env, stdout=self.log, stderr=subprocess.STDOUT)
        self.url = f"http://127.0.0.1:{self.port}"

    def wait_ready(self, timeout: float = 120) -> None:
        import urllib.request

        end = time.monotonic() + timeout
        while time.monotonic() < end:
            if self.proc.poll() is not None:
                raise SystemExit(f"the app stopped at its start (exit {self.proc.returncode}); see its log")
            try:
                with urllib.request.urlopen(self.url + "/_stcore/health", timeout=2) as r:
                    if r.status == 200:
                        return
            except OSError:
                time.sleep(0.5)
        raise SystemExit(f"the app did not answer on {self.url} within {timeout:g} s")

    def reset_peak(self) -> None:
        """Start a new peak (``VmHWM``) from the resident memory now."""
        with open(f"/proc/{self.proc.pid}/clear_refs", "w") as f:
            f.write("5")

    def peak_gb(self) -> float:
        with open(f"/proc/{self.proc.pid}/status") as f:
            for line in f:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) / 2**20
        return float("nan")

    def stop(self) -> None:
        self.proc.terminate()
        try:
            self.proc.wait(30)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        self.log.close()


async def _chart_changed(c: StreamlitClient, name: str, roles: Roles, before: str | None) -> None:
    """Wait until the chart of :data:`APP_KEYS` ``name`` is shown (and differs from ``before``), then idle."""
    kind, key = APP_KEYS[name]

    def shown() -> bool:
        try:
            return before is None or plotly_data(c.keyed(kind, key)) != before
        except ProtocolError:
            if not c.running and c.error_alerts():  # the run ended on an error box instead of the chart
                shown = " | ".join(c.error_alerts())
                raise ProtocolError(f"waiting for the {name}, the page shows: {shown}") from None
            return False

    await c.wait_for(shown, f"the {name} ({kind} {key!r})")
    await c.wait_idle()


async def _connect(c: StreamlitClient, file: str, roles: Roles) -> None:
    """Data page: choose the file, *Connect*, map the roles, *Use this table* (until the run that follows ends)."""
    await c.wait_idle()
    await c.choose(_key(c, "file", roles), file)
    await c.wait_idle()
    await c.click(_key(c, "connect", roles))
    await c.wait_idle()
    await c.wait_for(lambda: _has(c, "id", roles), f"the roles view ({APP_KEYS['id'][1]!r})")
    for name, value in (("id", roles.id), ("owner", roles.owner), ("measures", roles.measures),
                        ("groups", roles.groups)):
        wid = _key(c, name, roles)
        if c.value(wid) != value:
            await c.choose(wid, value)
            await c.wait_idle()
    await c.click(_key(c, "use table", roles))
    await c.wait_idle()  # the runs that checked, prepared and profiled the table
    if not any(s.kind == "markdown" and s.element.body.startswith(f"**{file}**") for s in c.elements.values()):
        shown = " | ".join(c.error_alerts()) or "no error box"
        raise ProtocolError(f"*Use this table* did not make {file} the active dataset (the sidebar does not name "
                            f"it; {shown})")


async def _path(server: Server, file: str, roles: Roles, label: str, release: asyncio.Barrier | None = None
                ) -> list[tuple[str, float, float]]:
    """One session's path, each step timed with the server's peak RSS during it. With ``release``: every session
    waits there before pressing *Run release* (sessions releasing at once; the first one through starts the peak)."""
    rows: list[tuple[str, float, float]] = []

    async def step(what: str, coro: Any) -> None:
        if release is None:
            server.reset_peak()
        elif what.startswith("release") and await release.wait() == 0:
            server.reset_peak()
        t0 = time.perf_counter()
        await coro
        rows.append((f"{label}: {what}", time.perf_counter() - t0, server.peak_gb()))
        print(f"{rows[-1][0]}: {rows[-1][1]:.1f} s", file=sys.stderr, flush=True)

    c = StreamlitClient(server.url, timeout=server.timeout)
    try:
        await step("open the app", c.connect())
        await step("connect the file, roles, Use this table", _connect(c, file, roles))
        await step("records' CDF (Policy designer)", _open_chart(c, APP_PAGES["policy"], "records CDF", roles))
        before = await _chart_now(c, "records CDF", roles)
        await c.wait_for(lambda: _has(c, "threshold", roles), f"the threshold box ({APP_KEYS['threshold'][1]!r})")
        box = _key(c, "threshold", roles)
        await step("threshold change (records' CDF again)",
                   _then(c.set_number(box, 2 * float(c.value(box) or 1)),
                         _chart_changed(c, "records CDF", roles, before)))
        await c.wait_for(lambda: _has(c, "owners switch", roles),
                         f"the owners' switch ({APP_KEYS['owners switch'][1]!r})")
        switch = _key(c, "owners switch", roles)
        await step("owners' CDF", _then(c.check(switch, True), _chart_changed(c, "owners CDF", roles, None)))
        await c.open_page(APP_PAGES["release"])
        await step("release (Run page)", _then(c.click(_key(c, "release", roles)),
                                                _chart_changed(c, "released", roles, None)))
        if release is None:  # a large table's owners' realized losses, asked for after the release
            await c.wait_for(lambda: _has(c, "realized owners switch", roles),
                             f"the owners' realized losses switch ({APP_KEYS['realized owners switch'][1]!r})")
            await step("owners' realized losses (Run page)",
                       _then(c.check(_key(c, "realized owners switch", roles), True),
                             _chart_changed(c, "realized owners CDF", roles, None)))
    finally:
        await c.close()
    return rows


async def _chart_now(c: StreamlitClient, name: str, roles: Roles) -> str:
    """The data of the chart of :data:`APP_KEYS` ``name``, once the page shows it (a rerun may redraw the page
    between two steps)."""
    kind, key = APP_KEYS[name]
    got: list[str] = []

    def shown() -> bool:
        try:
            got.append(plotly_data(c.keyed(kind, key)))
            return True
        except ProtocolError:
            return False

    await c.wait_for(shown, f"the {name} ({kind} {key!r})")
    return got[-1]


async def _open_chart(c: StreamlitClient, page: str, name: str, roles: Roles) -> None:
    await c.open_page(page)
    await _chart_changed(c, name, roles, None)


async def _then(first: Any, second: Any) -> None:
    await first
    await second


async def _sessions(server: Server, file: str, roles: Roles) -> list[tuple[str, float, float]]:
    rows = await _path(server, file, roles, "first session")
    rows += await _path(server, file, roles, "second session (unchanged file)")
    barrier = asyncio.Barrier(2)
    pair = await asyncio.gather(*(_path(server, file, roles, f"session {k} of two releasing at once", barrier)
                                  for k in (1, 2)))
    rows += [r for r in pair[0] + pair[1] if r[0].endswith("release (Run page)")]
    return rows


def run_app(data: Path, work: Path, roles: Roles, timeout: float) -> list[tuple[str, float, float]]:
    """The app's path on ``data`` (see the module doc): (step, wall s, server's peak GB) rows. ``timeout``: of each
    wait for the app, s."""
    server = Server(data.parent, work, timeout)
    try:
        server.wait_ready()
        return asyncio.run(_sessions(server, data.name, roles))
    finally:
        server.stop()


def run_browser(data: Path, work: Path, roles: Roles, timeout: float) -> list[tuple[str, float, float]]:
    """The app's path on ``data`` in a real browser (:mod:`browser_path`): (step, wall s, server's peak GB) rows."""
    import pyarrow.parquet as pq
    from browser_path import run_browser as browse

    server = Server(data.parent, work, timeout)
    try:
        server.wait_ready()
        return browse(server, data.name, roles.id, roles.owner, pq.ParquetFile(data).metadata.num_rows, timeout)
    finally:
        server.stop()


def same_truths(results: Path, sums: Path) -> str:
    """Whether the run's true values (``results.csv``, teaching mode: the COUNT and the two SUMs of each STATE) are
    the hand-written SQL's, exactly; as a sentence for the table's note."""
    import json

    import pandas as pd

    got = pd.read_csv(results, keep_default_na=False)
    want = {row[0]: row[1:] for row in json.loads(sums.read_text())}
    queries = list(dict.fromkeys(got["query"]))  # COUNT, SUM of the first measure, SUM of the second
    state = got.columns[3]  # the group column follows release, mechanism, query
    differ = [f"{q} {r[state]}" for i, q in enumerate(queries) for _, r in got[got["query"] == q].iterrows()
              if float(r["true"]) != want[str(r[state])][i]]
    return (f"Truths equal the hand-written SQL's in all {len(got)} cells" if not differ else
            f"TRUTHS DIFFER from the hand-written SQL's in {len(differ)} of {len(got)} cells: {', '.join(differ[:5])}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", type=int, default=1_000_000, help="rows of the generated file (default 10⁶)")
    ap.add_argument("--file", help="a cbp_like Parquet file to use instead of generating one")
    ap.add_argument("--keep", action="store_true", help="keep the working folder")
    ap.add_argument("--app", action="store_true", help="the app's path through the Streamlit protocol instead")
    ap.add_argument("--id", default="ESTAB_ID", help="the record id column (default ESTAB_ID)")
    ap.add_argument("--owner", default="FIRM_ID", help="the owner column (default FIRM_ID)")
    ap.add_argument("--measures", default="EMP,PAYANN", help="the measures, comma-separated (two)")
    ap.add_argument("--groups", default="STATE", help="the groups, comma-separated (the first is STATE's)")
    ap.add_argument("--browser", action="store_true",
                    help="the app's path in a real browser (Playwright, Debian chromium) instead; see browser_path.py")
    ap.add_argument("--timeout", type=float, default=3600, help="--app: the longest wait for one step, s")
    args = ap.parse_args()
    work = Path(tempfile.mkdtemp(prefix="prdp-user-path-"))
    data = Path(args.file).resolve() if args.file else work / "cbp.parquet"
    prdp = [sys.executable, "-m", "prdp_core.commands.cli"]
    if not args.file:
        subprocess.run([*prdp, "samples", "write", "cbp_like", "--rows", str(args.rows), "--out", str(data)],
                       check=True, capture_output=True)
    if args.app or args.browser:
        roles = Roles(args.id, args.owner, args.measures.split(","), args.groups.split(","))
        try:
            try:
                rows = run_browser(data, work, roles, args.timeout) if args.browser else \
                    run_app(data, work, roles, args.timeout)
            except ProtocolError as err:
                raise SystemExit(f"--app stopped: {err}") from None
            sql_label, sql_wall, sql_peak = hand_written(work, data, roles.columns())
        finally:
            if not args.keep:
                import shutil

                shutil.rmtree(work, ignore_errors=True)
        print(f"Machine: {machine()}. File: {data.name}.\n")
        print("| step of the app | wall | server's peak RSS during the step |\n|---|---|---|")
        for label, wall, peak in rows:
            print(f"| {label} | {wall:.1f} s | {peak:.2f} GB |")
        print(f"| {sql_label} | {sql_wall:.1f} s | {sql_peak:.2f} GB (its own process) |")
        return
    roles = Roles(args.id, args.owner, args.measures.split(","), args.groups.split(","))
    study = data.parent / f".bench-user-path-{os.getpid()}.yaml"  # data.path is relative to the study's folder
    study.write_text(renamed(STUDY.format(path=data.name), roles.columns()), encoding="utf-8")
    env = {k: v for k, v in os.environ.items() if not k.startswith("PRDP_")}
    env["PRDP_CACHE_DIR"] = str(work / "cache")
    env["PYTHONPATH"] = str(ROOT)
    rows = []
    try:
        for label, out in (("prdp run, first run", "first"), ("prdp run, second run (unchanged file)", "second")):
            wall, peak, _ = measured([*prdp, "run", str(study), "--out", str(work / out), "-q"], env)
            rows.append((label, wall, peak))
    finally:
        study.unlink()
    same = (work / "first" / "results.csv").read_bytes() == (work / "second" / "results.csv").read_bytes()
    rows.append(hand_written(work, data, roles.columns(), work / "sums.json"))
    truths = same_truths(work / "first" / "results.csv", work / "sums.json")
    print(f"Machine: {machine()}. File: {data.name}, {data.stat().st_size / 1e9:.2f} GB.\n")
    print("| step | wall | peak RSS |\n|---|---|---|")
    for label, wall, peak in rows:
        print(f"| {label} | {wall:.1f} s | {peak:.2f} GB |")
    print(f"\nResults of the two runs byte-identical: {same}. {truths}. First run / hand-written SQL: "
          f"{rows[0][1] / rows[2][1]:.2f}×.")
    if not args.keep:
        import shutil

        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
