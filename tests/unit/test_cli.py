"""The prdp command line: run, validate, samples, exit codes, and the reproduction script."""

from __future__ import annotations

import io
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from prdp_core.commands.cli import EXIT_CONFIG, EXIT_DATA, EXIT_ERROR, EXIT_OK, EXIT_USAGE, TextProgress, main
from prdp_core.io.outputs import MANIFEST
from prdp_core.review.report import OUTPUT_FILES

from .test_report import planted_folder, secrets, spellings

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples"
PRDP = shutil.which("prdp", path=str(Path(sys.executable).parent)) or shutil.which("prdp")

ALL_KINDS = """
version: 1
mode: teaching
seed: 9
data: {sample: cbp_like, n: 3000, seed: 2}
policy:
  thresholds:
    group_column: STATE
    rows:
      "*": {EMP: 100, PAYANN: 10000}
      CA: {EMP: 40, PAYANN: 4000}
  budget: {steps: {column: EMP, bounds: [5, 50], eps: [2, 1, 0.2]}, eps_max: 2, U: 1.0e+6}
  specification: {tiers: {f_c: 0.4}, user: FIRM_ID}
  tiers: {public: 0.5, researchers: 2, agency: 8}
workload:
  queries:
    - {kind: count, group_by: [STATE], rho: 0.2}
    - {kind: sum, measure: EMP, group_by: [STATE, NAICS2], rho: 0.3}
    - {kind: avg, measure: PAYANN, rho: 0.1, rho_count: 0.1, split: false, clamp: 5000,
       filter: {column: STATE, values: [CA]}}
  partition_rho: 0.05
mechanisms:
  - {kind: unit_splitting}
  - {kind: prdp, query: count}
  - {kind: prdp, model: local, query: sum, column: EMP, threshold: bernstein}
  - {kind: personalized, mechanism: sample, t: 0.3, rescale: true, query: {kind: count, column: EMP, cutoff: 5}}
  - {kind: personalized, mechanism: pe, query: {kind: median, column: EMP, hi: 500}, seed: 77}
  - {kind: multitier, query: sum, measure: EMP, clip: 50, family: gaussian, delta: 1.0e-6}
  - {kind: multitier, model: local, measure: PAYANN, d: 6, scale: linear, filter: {column: EMP, op: ">=", value: 2}}
"""


def cli(*args: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    code = main(list(args), stdout=out, stderr=err)
    return code, out.getvalue(), err.getvalue()


def test_console_script_is_installed_and_runs(tmp_path):
    assert PRDP, "the prdp console script is not installed (make install)"
    r = subprocess.run([PRDP, "run", str(EXAMPLES / "cbp_unit_splitting.yaml"), "--out", str(tmp_path / "o")],
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == EXIT_OK, r.stderr
    assert "1 release(s)" in r.stdout
    assert sorted(p.name for p in (tmp_path / "o").iterdir()) == sorted([*OUTPUT_FILES, MANIFEST])
    assert "[########################] " in r.stderr  # the progress bar, on stderr


@pytest.mark.parametrize("args", [["--help"], ["run", "--help"], ["validate", "--help"], ["samples", "--help"],
                                  ["--version"]])
def test_help(args, capsys):
    assert main(args) == EXIT_OK
    text = capsys.readouterr().out
    assert "prdp" in text
    if args[0] in ("--help", "run"):
        assert "exit codes" in text and "3  invalid config" in text


@pytest.mark.parametrize("args", [[], ["bogus"], ["run"], ["run", "x.yaml", "--frobnicate"], ["validate"]])
def test_usage_errors(args, capsys):
    assert main(args) == EXIT_USAGE
    assert "usage:" in capsys.readouterr().err


def test_samples():
    code, out, _ = cli("samples")
    assert code == EXIT_OK and "cbp_like" in out and "bank_normal_50k" in out


def test_validate_examples():
    for path in sorted(EXAMPLES.rglob("*.yaml")):
        code, out, err = cli("validate", str(path))
        assert code == EXIT_OK, err
        assert out.startswith("OK:")


def test_invalid_config(tmp_path):
    bad = tmp_path / "bad.yaml"
    bad.write_text("version: 1\ndata: {sample: cbp_like}\npolicy: {thresholds: {EMP: -3}}\n")
    for cmd in ("run", "validate"):
        code, out, err = cli(cmd, str(bad), *(["--out", str(tmp_path / "o")] if cmd == "run" else []))
        assert code == EXIT_CONFIG
        assert "policy.thresholds.EMP: must be a positive number (got -3)" in err
    bad.write_text("version: 3\ndata: {sample: cbp_like}\n")
    assert cli("validate", str(bad))[0] == EXIT_CONFIG
    bad.write_text("version: 1\ndata: {sample: cbp_like}\npolicy: {thresholds: {NOPE: 3}}\n")
    code, _, err = cli("validate", str(bad))
    assert code == EXIT_CONFIG and "policy.thresholds.NOPE" in err
    assert cli("validate", str(bad), "--no-data")[0] == EXIT_OK
    assert cli("run", str(tmp_path / "missing.yaml"))[0] == EXIT_CONFIG
    assert not (tmp_path / "o").exists()


def test_missing_and_bad_data(tmp_path):
    cfg = tmp_path / "s.yaml"
    cfg.write_text("version: 1\ndata: {path: gone.csv}\n")
    code, _, err = cli("run", str(cfg), "--out", str(tmp_path / "o"))
    assert code == EXIT_DATA and "gone.csv" in err
    assert cli("validate", str(cfg))[0] == EXIT_DATA
    (tmp_path / "bad.csv").write_text("id,v\n1,abc\n2,-5\n")
    cfg.write_text("version: 1\ndata: {path: bad.csv, schema: {id: id, measures: [v]}}\n")
    code, _, err = cli("run", str(cfg), "--out", str(tmp_path / "o"))
    assert code == EXIT_DATA and "not numbers" in err
    code, _, err = cli("run", str(EXAMPLES / "cbp_unit_splitting.yaml"), "--data", str(tmp_path / "nothing.csv"))
    assert code == EXIT_DATA


def test_other_engine_errors_exit_5(tmp_path):
    cfg = tmp_path / "s.yaml"
    # every record asks for less than ε̌ = 50: refused at run time (PolicyError)
    cfg.write_text("version: 1\ndata: {sample: bank_normal_50k, n: 500}\n"
                   "policy: {budget: {expression: '1 / max(BALANCE, 1)', eps_min: 50, eps_max: 60}}\n"
                   "mechanisms: [{kind: prdp, query: count}]\n")
    code, _, err = cli("run", str(cfg), "--out", str(tmp_path / "o"))
    assert code == EXIT_ERROR, err
    assert "mechanisms[0] (prdp)" in err


def test_review_mode_output_contains_no_true_values(tmp_path):
    folder = planted_folder(tmp_path, "review")
    code, _, err = cli("run", str(folder / "study.yaml"), "--out", str(folder / "out"), "-q")
    assert code == EXIT_OK, err
    assert err == ""  # --quiet: no progress bar
    texts = {p.name: p.read_text(encoding="utf-8") for p in (folder / "out").iterdir()}
    found = [(n, s) for n, t in texts.items() for v in secrets(folder) for s in spellings(v) if len(s) >= 5 and s in t]
    assert not found, found


@pytest.mark.parametrize("case", ["all_kinds", "file_study"])
def test_reproduction_script_matches_the_cli_bit_for_bit(tmp_path, case):
    if case == "all_kinds":
        cfg = tmp_path / "study.yaml"
        cfg.write_text(ALL_KINDS)
    else:
        shutil.copytree(EXAMPLES / "file_study", tmp_path / "fs")
        cfg = tmp_path / "fs" / "study.yaml"
    out = tmp_path / "cli-out"
    code, _, err = cli("run", str(cfg), "--out", str(out), "-q")
    assert code == EXIT_OK, err
    script = out / "reproduce.py"
    assert len(script.read_text().splitlines()) < 120  # short and readable
    r = subprocess.run([sys.executable, str(script), str(tmp_path / "again")], capture_output=True, text=True,
                       timeout=300, cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    assert (tmp_path / "again" / "results.csv").read_bytes() == (out / "results.csv").read_bytes()


def test_secure_run(tmp_path):
    cfg = tmp_path / "s.yaml"
    cfg.write_text((EXAMPLES / "cbp_unit_splitting.yaml").read_text().replace(
        "    partition_delta: 1.0e-6", "    partition_delta: 1.0e-6\n    secure: true").replace("n: 20000", "n: 3000"))
    code, _, err = cli("run", str(cfg), "--out", str(tmp_path / "o"), "-q")
    assert code == EXIT_OK, err
    ledger = (tmp_path / "o" / "ledger.json").read_text()
    assert '"secure": true' in ledger and '"seed": null' in ledger
    assert "noise = Noise.secure()" in (tmp_path / "o" / "reproduce.py").read_text()


def test_data_override(tmp_path):
    shutil.copy(EXAMPLES / "file_study" / "firms.csv", tmp_path / "other.csv")
    code, out, err = cli("run", str(EXAMPLES / "file_study" / "study.yaml"), "--data", str(tmp_path / "other.csv"),
                         "--out", str(tmp_path / "o"), "-q")
    assert code == EXIT_OK, err
    assert "other.csv" in (tmp_path / "o" / "reproduce.py").read_text()


def test_text_progress_bar():
    s = io.StringIO()
    bar = TextProgress(s, width=10)
    for i in range(4):
        bar(i, 3, f"step {i}")
    lines = s.getvalue().splitlines()
    assert lines[0].startswith("[----------] 0/3") and lines[-1].startswith("[##########] 3/3")


def test_outputs_neutralise_formulas_and_markup(tmp_path):
    rows = ["id,grp,v"] + [f"{i},{'=SUM(A1:A9)' if i % 2 else '<script>alert(1)</script>'},{1 + i % 7}"
                           for i in range(60)]
    (tmp_path / "t.csv").write_text("\n".join(rows) + "\n")
    (tmp_path / "s.yaml").write_text(
        "version: 1\nmode: teaching\ndata: {path: t.csv, schema: {id: id, measures: [v], groups: [grp]}}\n"
        "policy: {thresholds: {v: 5}}\nworkload: {queries: [{kind: sum, measure: v, group_by: [grp], rho: 1}]}\n"
        "mechanisms: [{kind: unit_splitting}]\n")
    code, _, err = cli("run", str(tmp_path / "s.yaml"), "--out", str(tmp_path / "o"), "-q")
    assert code == EXIT_OK, err
    csv_text = (tmp_path / "o" / "results.csv").read_text()
    assert "'=SUM(A1:A9)" in csv_text and ",=SUM" not in csv_text
    html = (tmp_path / "o" / "report.html").read_text()
    assert "<script>alert(1)</script>" not in html and "&lt;script&gt;alert(1)&lt;/script&gt;" in html


def _secure_everywhere(text: str) -> str:
    """A study's text with ``secure: true`` on every mechanism (and its data made small)."""
    return text.replace("  - kind: ", "  - secure: true\n    kind: ").replace("n: 10000", "n: 2000")


def test_secure_personalized_and_multitier_study(tmp_path):
    """examples/personalized_tiers.yaml with secure: true on every mechanism, plus the other personalized
    mechanisms and central families: every ledger row says secure and unseeded, the results say the mode."""
    extra = """
  - kind: personalized
    mechanism: pe
    query: {kind: median, column: EMP, lo: 0, hi: 500, integer: true}
  - kind: personalized
    mechanism: stretching
    query: {kind: sum, column: EMP, lo: 0, hi: 100}
  - kind: personalized
    mechanism: minimum
    query: {kind: mean, column: EMP, lo: 0, hi: 100}
  - kind: personalized
    mechanism: threshold
    query: {kind: min, column: EMP, lo: 0, hi: 100}
  - kind: multitier
    model: central
    query: count
    family: gaussian
  - kind: multitier
    model: central
    query: sum
    measure: EMP
    clip: 50
    family: laplace
"""
    cfg = tmp_path / "s.yaml"
    cfg.write_text(_secure_everywhere((EXAMPLES / "personalized_tiers.yaml").read_text() + extra))
    code, _, err = cli("run", str(cfg), "--out", str(tmp_path / "o"), "-q")
    assert code == EXIT_OK, err
    import json

    rows = json.loads((tmp_path / "o" / "ledger.json").read_text())
    entries = rows["entries"] if isinstance(rows, dict) else rows
    assert len(entries) >= 9
    assert all(e.get("secure") is True and e.get("seed") is None for e in entries), entries
    import pandas as pd

    results = pd.read_csv(tmp_path / "o" / "results.csv")
    assert results["secure"].astype(str).str.lower().eq("true").all() and results["seed"].isna().all()
    script = (tmp_path / "o" / "reproduce.py").read_text()
    calls = [ln for ln in script.splitlines() if ln.startswith("rel = ")]
    assert len(calls) == 9 and all("noise=noise" in ln and "seed=" not in ln for ln in calls), calls
    assert "Noise.teaching" not in script and script.count("noise = Noise.secure()") >= 1


def test_secure_review_run_refuses_personalized_bounds_from_the_data(tmp_path):
    cfg = tmp_path / "s.yaml"
    cfg.write_text((EXAMPLES / "personalized_tiers.yaml").read_text().replace(
        "    query: {kind: count, column: EMP, cutoff: 10}",
        "    query: {kind: sum, column: EMP, hi: 250}\n    design_defaults: [hi]\n    secure: true"))
    code, _, err = cli("run", str(cfg), "--out", str(tmp_path / "o"), "-q")
    assert code != EXIT_OK and "computed from the confidential data: hi" in err, err
    cfg.write_text(cfg.read_text().replace("mode: review", "mode: teaching"))  # teaching runs flag it instead
    code, _, err = cli("run", str(cfg), "--out", str(tmp_path / "o3"), "-q")
    assert code == EXIT_OK, err
    assert "hi_source" in (tmp_path / "o3" / "ledger.json").read_text()
