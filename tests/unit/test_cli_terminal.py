"""Terminal-safe CLI output: control characters in user text (a column name, a board entry's name, a
file name, an argument) never reach the terminal raw — in tables, CSV, JSON, summaries, progress and
error messages they are printed as visible escapes such as ``\\x1b``."""

from __future__ import annotations

import io
import json
import re

import pandas as pd

from prdp_core.commands import cli
from prdp_core.io.terminal import SafeStream, escape, json_text

#: What an attacker plants: retitle the window (OSC 0 … BEL), clear the screen (CSI 2J), C1 CSI, DEL, CR.
TITLE, CLEAR = "\x1b]0;pwned\x07", "\x1b[2J"
NAME = f"{TITLE}EMP{CLEAR}"
#: Any byte that drives a terminal: C0 but line feed and tab, DEL, C1, bidi overrides.
RAW = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")


def _prdp(*argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    code = cli.main(list(argv), stdout=out, stderr=err)
    return code, out.getvalue(), err.getvalue()


def _clean(text: str) -> str:
    assert not RAW.search(text), repr(text)
    return text


def _study(path, data: str, measure: str) -> None:
    q = json.dumps(measure)  # a JSON string is a YAML double-quoted scalar
    path.write_text("version: 1\nmode: teaching\nseed: 1\n"
                    f"data: {{path: {data}, schema: {{id: id, measures: [{q}], groups: [STATE]}}}}\n"
                    f"policy: {{thresholds: {{{q}: 50}}}}\n"
                    f"workload: {{queries: [{{kind: sum, measure: {q}, group_by: [STATE]}}]}}\n"
                    "mechanisms: [{kind: unit_splitting}]\n", encoding="utf-8")


def test_escape_writes_every_control_character_as_visible_text():
    assert escape(f"{NAME}\r\x9b6n\x7f\u202eevil") == "\\x1b]0;pwned\\x07EMP\\x1b[2J\\x0d\\x9b6n\\x7f\\u202eevil"
    assert escape("ρ = 0.5\tε\nnext — ok") == "ρ = 0.5\tε\nnext — ok"  # text, tabs and lines stay
    doc = {"name": f"{NAME}\x9b\u2066"}
    assert json.loads(_clean(json_text(doc))) == doc  # valid JSON, nothing lost
    raw = io.StringIO()
    assert SafeStream(raw).write(CLEAR) == len(CLEAR) and raw.getvalue() == "\\x1b[2J"


def test_validate_prints_a_column_name_with_escape_codes_as_text(tmp_path):
    (tmp_path / "t.csv").write_text(f"id,{NAME},STATE\n1,abc,A\n2,7,B\n", encoding="utf-8")
    (tmp_path / "u.csv").write_text("id,EMP,STATE\n1,5,A\n2,7,B\n", encoding="utf-8")
    _study(tmp_path / "bad_value.yaml", "t.csv", NAME)
    _study(tmp_path / "missing.yaml", "u.csv", NAME)
    code, out, err = _prdp("validate", str(tmp_path / "bad_value.yaml"))
    assert code == cli.EXIT_DATA and "Measure '\\x1b]0;pwned\\x07EMP\\x1b[2J' has 1 value(s)" in _clean(err + out)
    code, out, err = _prdp("validate", str(tmp_path / "missing.yaml"))
    assert code == cli.EXIT_DATA and "measure '\\x1b]0;pwned\\x07EMP\\x1b[2J'" in _clean(err + out)
    odd = tmp_path / f"study{CLEAR}.yaml"  # a file name is user text too
    _study(odd, "u.csv", "EMP")
    code, out, err = _prdp("validate", str(odd))
    assert code == cli.EXIT_OK and "study\\x1b[2J.yaml is a valid study" in _clean(out + err)


def test_board_list_prints_an_entry_name_with_escape_codes_as_text(tmp_path):
    db = f"sqlite:///{tmp_path}/board.sqlite"
    study = tmp_path / "s.yaml"
    study.write_text("version: 1\nseed: 3\ndata: {sample: cbp_like, n: 400, seed: 1}\n"
                     "policy: {thresholds: {EMP: 100}}\n"
                     "workload: {queries: [{kind: sum, measure: EMP, group_by: [STATE]}]}\n"
                     "mechanisms: [{kind: unit_splitting}]\n", encoding="utf-8")
    code, out, err = _prdp("board", "submit", str(study), "--name", NAME, "--rationale", f"why{CLEAR}", "--db", db)
    assert code == cli.EXIT_OK and "'\\x1b]0;pwned\\x07EMP\\x1b[2J'" in _clean(out + err)
    code, out, err = _prdp("board", "list", "--db", db)
    assert code == cli.EXIT_OK and "\\x1b]0;pwned\\x07EMP" in _clean(out + err)
    code, out, err = _prdp("board", "list", "--format", "csv", "--db", db)
    assert code == cli.EXIT_OK and pd.read_csv(io.StringIO(_clean(out)))["name"].tolist() == [escape(NAME)]
    code, out, err = _prdp("board", "list", "--format", "json", "--db", db)
    rows = json.loads(_clean(out))  # JSON keeps the exact text, escaped the JSON way
    assert code == cli.EXIT_OK and rows[0]["name"] == NAME and rows[0]["rationale"] == f"why{CLEAR}"
    code, out, err = _prdp("board", "export", "--out", str(tmp_path / "exp"), "--db", db)
    assert code == cli.EXIT_OK and _clean(out + err)
    exported = pd.read_csv(tmp_path / "exp" / "board.csv")  # a file is data: the name as it was typed
    assert exported["name"].tolist() == [NAME]


def test_errors_usage_messages_and_progress_are_escaped(tmp_path):
    code, out, err = _prdp("validate", str(tmp_path / f"nope{TITLE}.yaml"))
    assert code != cli.EXIT_OK and "nope\\x1b]0;pwned\\x07.yaml" in _clean(out + err)
    code, out, err = _prdp("validate", "s.yaml", CLEAR)  # argparse quotes unknown arguments
    assert code == cli.EXIT_USAGE and "unrecognized arguments: \\x1b[2J" in _clean(out + err)
    stream = io.StringIO()
    bar = cli.TextProgress(SafeStream(stream))
    bar(1, 2, f"output: {NAME}")
    bar(2, 2, "done")
    assert "output: \\x1b]0;pwned" in _clean(stream.getvalue())


def test_suggest_run_summaries_and_ledger_show_print_a_measure_name_as_text(tmp_path):
    (tmp_path / "t.csv").write_text(f"id,{NAME},STATE\n1,5,A\n2,7,B\n3,9,A\n4,2,B\n", encoding="utf-8")
    _study(tmp_path / "s.yaml", "t.csv", NAME)
    db = f"sqlite:///{tmp_path}/ledgers.sqlite"
    code, out, err = _prdp("suggest", "thresholds", str(tmp_path / "s.yaml"), "--range", f"{NAME}=1:100",
                           "--epsilon", "1", "--out", str(tmp_path / "new.yaml"), "--ledger", "L", "--db", db)
    assert code == cli.EXIT_OK and "T(\\x1b]0;pwned\\x07EMP\\x1b[2J) = " in _clean(out + err)
    code, out, err = _prdp("run", str(tmp_path / "new.yaml"), "--out", str(tmp_path / f"o{CLEAR}"), "--ledger", "L",
                           "--db", db)
    assert code == cli.EXIT_OK and "written to " in _clean(out) and "o\\x1b[2J" in out and _clean(err)
    code, out, err = _prdp("ledger", "show", "L", "--db", db)
    assert code == cli.EXIT_OK and "(\\x1b]0;pwn" in _clean(out + err), out  # the label, cut at 40
    code, out, err = _prdp("ledger", "show", "L", "--db", db, "--format", "json")
    assert code == cli.EXIT_OK and NAME in json.loads(_clean(out))["entries"][0]["release"]
