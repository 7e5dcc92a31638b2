"""The prdp command line with wrong paths: --out on a file, a folder given as data."""

from __future__ import annotations

import io
from pathlib import Path

from prdp_core.commands import cli

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "personalized_tiers.yaml"


def _run(argv):
    out, err = io.StringIO(), io.StringIO()
    code = cli.main(argv, stdout=out, stderr=err)
    return code, out.getvalue(), err.getvalue()


def test_out_pointing_at_a_file_is_a_usage_error_before_the_run(tmp_path):
    target = tmp_path / "results.txt"
    target.write_text("keep me")
    code, _, err = _run(["run", str(EXAMPLE), "--out", str(target), "-q"])
    assert code == cli.EXIT_USAGE
    assert "is a file, not a folder" in err and "internal error" not in err
    assert "running" not in err  # refused before running the mechanisms
    assert target.read_text() == "keep me"
    code, _, err = _run(["run", str(EXAMPLE), "--out", str(target / "sub"), "-q"])
    assert code == cli.EXIT_USAGE and "which is a file" in err


def test_a_folder_as_data_file_says_so(tmp_path):
    code, _, err = _run(["validate", str(EXAMPLE), "--data", str(tmp_path)])
    assert code == cli.EXIT_DATA
    assert "is a folder, not a data file" in err


def test_validate_refuses_a_clipping_bound_the_release_cannot_use(tmp_path):
    cfg = tmp_path / "study.yaml"
    cfg.write_text("version: 1\ndata: {sample: cbp_like, n: 2000, seed: 1}\n"
                   "policy:\n  tiers: {public: 0.5, agency: 8}\n"
                   "mechanisms:\n  - kind: multitier\n    model: central\n    query: sum\n    measure: EMP\n"
                   "    clip: 1.0e300\n", encoding="utf-8")
    code, _, err = _run(["validate", str(cfg), "--no-data"])
    assert code == cli.EXIT_CONFIG and "clip" in err
