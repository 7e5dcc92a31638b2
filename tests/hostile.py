"""Hostile text for the generated-code tests: titles, labels, column names, group values and file
names that would run code if a generator ever put them into a script other than as a literal.

Every hostile value ends every kind of Python text it could be placed in — a docstring (\"\"\"), a
''' string, a # comment (newline, carriage return), an f-string ({...}) — and then calls
``open('PWN', 'a')``, which creates the sentinel file ``PWN`` in the script's working folder.
Unicode line separators (U+2028, U+0085), a backslash and ``{}`` are in it too.
"""

from __future__ import annotations

import ast
import io
import os
import subprocess
import sys
import tokenize
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

SENTINEL = "PWN"
RUN = "open('PWN','a')"
_BODY = ('"""' + "'''" + "\n" + RUN + "\n#\r" + RUN + "\r\u2028" + RUN + "\u2028\x85" + RUN + "\x85#{" + RUN
         + "}{}")


def hostile(tag: str, *, backslash: bool = True) -> str:
    """A hostile value starting with ``tag`` (a file name cannot hold the backslash: a config path
    reads it as a folder separator)."""
    return tag + _BODY + ("\\" if backslash else "") + '"""'


def is_whole_hostile(text: str) -> bool:
    """True if ``text`` holds a complete hostile value (not a fragment of one)."""
    return _BODY in text


#: A budget expression that validates: its text constant holds a triple quote, newlines and the call.
def hostile_expression(group: str, measure: str) -> str:
    payload = '"""\n' + RUN + "\n#\r" + RUN + "\r\u2028" + RUN + "\x85{" + RUN + "}"
    return f"where(`{group}` == '''{payload}''', 2, 1) * 1e4 / max(`{measure}`, 1)"


@dataclass(frozen=True)
class HostileData:
    """A Parquet table whose file name, column names and group values are hostile."""

    folder: Path
    filename: str
    id: str
    measure: str
    group: str
    label: str
    owner: str
    groups: tuple[str, str]
    labels: tuple[str, str]
    frame: pd.DataFrame

    @property
    def path(self) -> Path:
        return self.folder / self.filename

    def parquet_bytes(self) -> bytes:
        return self.path.read_bytes()


def write_hostile_data(folder: Path, n: int = 300) -> HostileData:
    """Write the hostile table into ``folder`` (Parquet: any character can name a column)."""
    rng = np.random.default_rng(0)
    names = {k: hostile(k) for k in ("ID", "M", "G", "L", "U")}
    groups = (hostile("GA"), hostile("GB"))
    labels = (hostile("LX"), hostile("LY"))
    frame = pd.DataFrame({names["ID"]: np.arange(n), names["M"]: rng.integers(1, 40, n).astype(float),
                          names["G"]: [groups[i % 2] for i in range(n)],
                          names["L"]: [labels[(i // 2) % 2] for i in range(n)],
                          names["U"]: [f"firm{i // 3}" for i in range(n)]})
    filename = hostile("F", backslash=False) + ".parquet"
    folder.mkdir(parents=True, exist_ok=True)
    frame.to_parquet(folder / filename, index=False)
    return HostileData(folder, filename, names["ID"], names["M"], names["G"], names["L"], names["U"], groups,
                       labels, frame)


def hostile_config(data: HostileData, *, mode: str = "teaching") -> dict:
    """A study config of every mechanism kind whose text (title, labels, expression, names, group values,
    filter values, tier names, label mapping) is hostile."""
    return {
        "version": 1, "title": hostile("T"), "mode": mode, "seed": 3,
        "data": {"path": data.filename, "schema": {"id": data.id, "measures": [data.measure],
                                                   "groups": [data.group, data.label], "owner": data.owner}},
        "policy": {
            "thresholds": {"group_column": data.group, "rows": {"*": {data.measure: 10.0},
                                                                data.groups[0]: {data.measure: 5.0}}},
            "budget": {"expression": hostile_expression(data.group, data.measure), "eps_min": 1e-3, "eps_max": 50.0,
                       "U": 1e6},
            "specification": {"column": data.label, "labels": {data.labels[0]: 0.5, data.labels[1]: 2.0},
                              "user": data.owner},
            "tiers": {hostile("T1"): 0.5, hostile("T2"): 4.0},
        },
        "workload": {"queries": [
            {"kind": "count", "group_by": [data.group], "rho": 0.2, "label": hostile("Q1")},
            {"kind": "sum", "measure": data.measure, "group_by": [data.group, data.label], "rho": 0.3,
             "filter": {"column": data.group, "values": list(data.groups)}, "label": hostile("Q2")},
        ]},
        "mechanisms": [
            {"kind": "unit_splitting", "label": hostile("M1")},
            {"kind": "prdp", "query": "sum", "column": data.measure, "label": hostile("M2")},
            {"kind": "personalized", "mechanism": "sample", "label": hostile("M3"),
             "query": {"kind": "count", "column": data.measure, "cutoff": 2}},
            {"kind": "multitier", "query": "sum", "measure": data.measure, "clip": 10, "label": hostile("M4"),
             "filter": {"column": data.group, "op": "==", "value": data.groups[0]}},
            {"kind": "multitier", "model": "local", "measure": data.measure, "d": 4, "label": hostile("M5")},
        ],
    }


def assert_user_text_only_in_literals(code: str) -> None:
    """Every token of ``code`` holding hostile text is a plain string literal holding a whole hostile
    value; no comment, docstring or f-string holds any of it (and the code parses)."""
    tree = ast.parse(code)
    for node in ast.walk(tree):
        if isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant) and isinstance(node.value.value, str):
            assert SENTINEL not in node.value.value, f"user text in a docstring: {node.value.value[:120]!r}"
    for tok in tokenize.generate_tokens(io.StringIO(code).readline):
        if SENTINEL not in tok.string:
            continue
        assert tok.type == tokenize.STRING, f"user text outside a literal, line {tok.start[0]}: {tok.string!r}"
        prefix = tok.string[:tok.string.index(tok.string.lstrip("rRbBuUfF")[0])].lower()
        assert "f" not in prefix, f"user text in an f-string, line {tok.start[0]}: {tok.string[:120]!r}"
        value = ast.literal_eval(tok.string)
        assert isinstance(value, str) and is_whole_hostile(value), \
            f"a fragment of user text, line {tok.start[0]}: {tok.string[:120]!r}"


def run_python(script: Path, cwd: Path, *args: str, timeout: float = 300) -> subprocess.CompletedProcess:
    """Run ``script`` with this interpreter in ``cwd``; fail if it fails or if the sentinel appears."""
    env = {**os.environ, **{k: "1" for k in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS")}}
    r = subprocess.run([sys.executable, str(script), *args], cwd=cwd, capture_output=True, text=True, check=False,
                       timeout=timeout, env=env)  # one thread each: the machine's cores are shared
    assert not (cwd / SENTINEL).exists(), f"{script.name} ran planted code"
    assert r.returncode == 0, r.stderr[-3000:]
    return r
