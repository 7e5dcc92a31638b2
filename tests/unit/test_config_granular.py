"""The ``granular`` mechanism kind of a study: validation, `prdp run` (secure and seeded) and the reproduce script."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from prdp_core.commands.cli import EXIT_OK, main
from prdp_core.core.errors import ConfigError
from prdp_core.study.config import parse_config

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "cbp_granular.yaml"


def _study(**mech) -> dict:
    return {"version": 1, "mode": "teaching", "seed": 3, "data": {"sample": "cbp_like", "n": 3000, "seed": 0},
            "mechanisms": [{"kind": "granular", "attributes": ["STATE"], "eps": 1.0, **mech}]}


@pytest.mark.parametrize("mech, message", [
    ({"attributes": []}, "mechanisms[0].attributes: must list 1 to"),
    ({"attributes": ["STATE", "STATE"]}, "lists a column twice"),
    ({"eps": 0}, "mechanisms[0].eps: must be a positive number"),
    ({"nu": 0.1}, "mechanisms[0].nu: applies to the heavy-hitter histogram only"),
    ({"histogram": "heavy_hitter", "threshold": 3}, "mechanisms[0].threshold: applies to the standard"),
    ({"categories": {"NAICS2": ["11"]}}, "mechanisms[0].categories.NAICS2: is not one of the attributes"),
    ({"categories": {"STATE": []}}, "must be a non-empty list of categories"),
    ({"histogram": "pie"}, "mechanisms[0].histogram: must be one of standard, heavy_hitter"),
    ({"secure": True, "seed": 4}, "mechanisms[0].seed: a secure release is unseeded"),
])
def test_granular_entries_are_validated(mech, message):
    with pytest.raises(ConfigError) as e:
        parse_config(_study(**mech))
    assert message in str(e.value), str(e.value)


def test_granular_entry_normalised_and_round_trips():
    st = parse_config(_study(histogram="heavy_hitter", categories={"STATE": "CA, TX"}, secure=True))
    m = st.mechanisms[0]
    assert m == {"kind": "granular", "histogram": "heavy_hitter", "attributes": ["STATE"],
                 "categories": {"STATE": "CA, TX"}, "eps": 1.0, "nu": 0.01, "method": "exact", "secure": True}
    assert parse_config(st.to_dict()).mechanisms == st.mechanisms


def test_granular_example_runs_secure_through_prdp_run(tmp_path):
    out = tmp_path / "o"
    assert main(["run", str(EXAMPLE), "--out", str(out), "-q"]) == EXIT_OK
    entries = json.loads((out / "ledger.json").read_text())["entries"]
    assert [e["mechanism"] for e in entries] == ["granular.standard_histogram", "granular.heavy_hitter_histogram"]
    assert all(e["secure"] is True and e["seed"] is None for e in entries)
    code = (out / "reproduce.py").read_text()
    assert code.count("noise = Noise.secure()") == 2 and "Noise.teaching" not in code
    r = subprocess.run([sys.executable, str(out / "reproduce.py"), str(tmp_path / "again")], capture_output=True,
                       text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    assert (tmp_path / "again" / "results.csv").exists()


def test_granular_seeded_run_is_reproducible(tmp_path):
    cfg = _study(categories={"STATE": ["CA", "TX", "NY"]}, threshold=-1e9)
    path = tmp_path / "g.yaml"
    path.write_text(yaml.safe_dump(cfg))
    for d in ("a", "b"):
        assert main(["run", str(path), "--out", str(tmp_path / d), "-q"]) == EXIT_OK
    assert (tmp_path / "a" / "results.csv").read_bytes() == (tmp_path / "b" / "results.csv").read_bytes()
    entries = json.loads((tmp_path / "a" / "ledger.json").read_text())["entries"]
    assert entries[0]["secure"] is False and entries[0]["seed"] == 3
    rows = (tmp_path / "a" / "results.csv").read_text().splitlines()
    assert len(rows) == 1 + 4  # three declared states and "(other)", every cell published
