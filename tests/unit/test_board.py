"""The workshop board's engine: summaries of every policy kind, review mode, exports, links,
the workshop folder and the ``prdp board`` / ``prdp app`` commands."""

from __future__ import annotations

import base64
import io
import json
import math
import re
import subprocess
import sys
import zlib
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import prdp_core
from prdp_core.board import comparison as C
from prdp_core.board import export as X
from prdp_core.board import links as L
from prdp_core.board import summary as B
from prdp_core.board import workshop as W
from prdp_core.board.store import BoardStore
from prdp_core.commands import cli
from prdp_core.commands.board_cli import app_script, streamlit_flags, write_board
from prdp_core.core.accounting import zcdp_to_approx_dp
from prdp_core.core.errors import ConfigError, DataError, ResourceLimitError
from prdp_core.core.loss_profile import owner_losses
from prdp_core.mechanisms.preview import preview_policy
from prdp_core.study.config import load_config, load_data, parse_config

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples"
PRDP = str(Path(sys.executable).with_name("prdp"))
PLANTED = 73519.2468  # a value that appears once in the data and must never reach the board


def _study(**policy_and_more) -> dict:
    d = {"version": 1, "seed": 3, "data": {"sample": "cbp_like", "n": 3000, "seed": 1}}
    d.update(policy_and_more)
    return d


SPLIT = _study(policy={"thresholds": {"EMP": 100, "PAYANN": 10000, "PAYQTR1": 2500}},
               workload={"queries": [{"kind": "count", "group_by": ["STATE"], "rho": 0.25},
                                     {"kind": "sum", "measure": "EMP", "group_by": ["STATE"], "rho": 0.5},
                                     {"kind": "sum", "measure": "PAYANN", "split": False, "clamp": 5e4,
                                      "rho": 0.25}]},
               mechanisms=[{"kind": "unit_splitting"}])
BUDGET = _study(policy={"budget": {"preset": "inverse", "column": "EMP", "alpha": 1000, "U": 1e7}},
                mechanisms=[{"kind": "prdp", "query": "sum", "column": "EMP"}])
SPEC = _study(policy={"specification": {"tiers": {}}},
              mechanisms=[{"kind": "personalized", "mechanism": "sample", "query": {"kind": "count", "column": "EMP",
                                                                                    "cutoff": 10}}])
TIERS = _study(policy={"tiers": {"public": 0.5, "agency": 4}},
               mechanisms=[{"kind": "multitier", "query": "sum", "measure": "EMP", "clip": 100}])
KINDS = {"unit splitting": SPLIT, "budget function": BUDGET, "personalized DP": SPEC, "analyst tiers": TIERS}


@pytest.fixture(scope="module")
def cbp():
    return prdp_core.data.samples.load_dataset("cbp_like", n=3000, seed=1)


# ---------------------------------------------------------------------------
# Summaries
# ---------------------------------------------------------------------------


@pytest.mark.parametrize("kind", list(KINDS))
def test_every_policy_kind_has_a_summary(kind, cbp):
    s = B.summarise(parse_config(KINDS[kind]), cbp, teaching=True, runs=5)
    assert s["kind"] == kind and set(s) == {"version", "kind", "part", "unit", "dataset", "public", "records"}
    assert set(s["public"]) == {"base_loss", "policy", "budgets", "queries"}
    rec = s["records"]
    assert 0 <= rec["share_above_base"] <= 1 and rec["p50"] <= rec["p99"] <= rec["max"]
    assert rec["owner_p99"] is not None and rec["owner_p99"] >= rec["p99"]  # cbp_like has firms
    assert rec["median_rel_error"] is not None and rec["median_rel_error"] >= 0
    x, y = rec["cdf"]
    assert len(x) == len(y) <= B.CDF_POINTS and y[-1] == pytest.approx(1.0)
    json.dumps(s, allow_nan=False)  # stored as JSON


def test_unit_splitting_summary_matches_the_engine(cbp):
    study = parse_config(SPLIT)
    s = B.summarise(study, cbp, teaching=True)
    pol = study.splitting_policy(cbp.table)
    prev = preview_policy(cbp, pol)
    v = prev.records.values
    assert s["unit"] == "rho" and s["public"]["base_loss"] == pytest.approx(1.0)
    assert s["records"]["p99"] == pytest.approx(np.quantile(v, 0.99))
    assert s["records"]["max"] == pytest.approx(v.max())
    assert s["records"]["share_above_base"] == pytest.approx(np.mean(v > 1.0 + 1e-12))
    ol = owner_losses(v, cbp.table[cbp.schema.owner_col]).to_numpy()
    assert s["records"]["owner_p99"] == pytest.approx(np.quantile(ol, 0.99))
    sig = {q["query"]: q["sigma"] for q in s["public"]["queries"]}
    assert sig["1. COUNT(*) BY STATE"] == pytest.approx(1 / math.sqrt(0.5))      # Δ = 1
    assert sig["2. SUM(EMP) BY STATE"] == pytest.approx(100 / math.sqrt(1.0))    # Δ = T(EMP)
    assert [q["half_width_95"] for q in s["public"]["queries"]][1] == pytest.approx(1.959964 * 100, rel=1e-6)
    assert "closed form" in s["records"]["error_method"]


def test_per_group_thresholds_give_a_sigma_range(cbp):
    d = dict(SPLIT)
    d["policy"] = {"thresholds": {"group_column": "STATE",
                                  "rows": {"*": {"EMP": 100, "PAYANN": 1e4, "PAYQTR1": 2500},
                                           "CA": {"EMP": 400, "PAYANN": 1e4, "PAYQTR1": 2500}}}}
    s = B.summarise(parse_config(d), cbp, teaching=True)
    q = s["public"]["queries"][1]
    assert (q["sigma"], q["sigma_max"]) == pytest.approx((100.0, 400.0))
    assert "σ 100–400" in B.board_frame([_entry(1, "g", s, d)], review=True, delta=1e-6)["σ per query"][0]


@pytest.mark.parametrize("kind", list(KINDS))
def test_a_review_summary_runs_no_simulation_and_a_teaching_one_draws_only_inside_one(kind, cbp, monkeypatch):
    """The error figures are teaching simulations: in review mode none runs (no draw at all), the summary says why
    and the per-record losses are the public ones; in teaching mode every draw is inside the declared simulation."""
    from tests.samplers import watch

    study = parse_config(KINDS[kind])
    draws = watch(monkeypatch)
    rev = B.summarise(study, cbp, teaching=False, runs=3)
    assert draws.count == 0
    rec = rev["records"]
    assert (rec["median_rel_error"], rec["error_method"], rec["query_errors"]) == (None, B.REVIEW_ERRORS, [])
    if kind == "personalized DP":  # each user's public Φ, not a run's delivered ε
        phi = study.privacy_spec(cbp.table).phi_for(cbp.table)
        assert rec["p99"] == pytest.approx(np.quantile(phi, 0.99)) and rec["max"] == pytest.approx(phi.max())
    if kind == "analyst tiers":  # every record pays the top tier's ε
        assert rec["p50"] == rec["max"] == 4
    teach = B.summarise(study, cbp, teaching=True, runs=3)
    assert teach["public"] == rev["public"] and teach["records"]["median_rel_error"] is not None
    assert not draws.outside and not draws.ledgers and draws.simulated == {"the board's error estimate"}


def test_restrict_keeps_one_policy_and_its_mechanism():
    both = parse_config(_study(policy={"specification": {"tiers": {}}, "tiers": {"a": 1, "b": 2}},
                               mechanisms=SPEC["mechanisms"] + TIERS["mechanisms"],
                               app={"study": {"learn": True}}))
    with pytest.raises(ConfigError, match="holds 2 policies"):
        B.restrict(both)
    t = B.restrict(both, "tiers")
    assert list(t.policy) == ["tiers"] and [m["kind"] for m in t.mechanisms] == ["multitier"] and not t.app
    with pytest.raises(ConfigError, match="no such policy"):
        B.restrict(both, "budget")
    with pytest.raises(ConfigError, match="no policy"):
        B.restrict(parse_config(_study()))
    only = B.restrict(parse_config({**SPLIT, "mechanisms": []}))
    assert [m["kind"] for m in only.mechanisms] == ["unit_splitting"]


@pytest.mark.parametrize("kind", list(KINDS))
def test_no_data_value_reaches_the_board(kind, tmp_path):
    """A value planted in one record never appears in what the board stores (config, summary)."""
    df = prdp_core.data.samples.load("cbp_like", n=2000, seed=4)
    df["EMP"] = df["EMP"].astype(float)
    df.loc[17, "EMP"] = PLANTED
    (tmp_path / "firms.csv").write_text(df.to_csv(index=False))
    cfg = dict(KINDS[kind])
    cfg["data"] = {"path": "firms.csv", "schema": {"id": "ESTAB_ID", "measures": ["EMP", "PAYANN", "PAYQTR1"],
                                                   "groups": ["STATE", "COUNTY"], "owner": "FIRM_ID"}}
    path = tmp_path / "study.yaml"
    path.write_text(parse_config(cfg).to_yaml())
    study = load_config(path)
    ds = load_data(study)
    assert (ds.table["EMP"] == PLANTED).sum() == 1
    summary = B.summarise(study, ds, teaching=True, runs=3)
    store = BoardStore(f"sqlite:///{tmp_path}/board.sqlite")
    store.submit(participant="p", name="n", config=study.to_dict(), summary=summary, kind=summary["kind"],
                 dataset=study.data.describe())
    raw = (tmp_path / "board.sqlite").read_bytes() + b"".join(p.read_bytes() for p in tmp_path.glob("board.sqlite-*"))
    for text in (repr(PLANTED), f"{PLANTED:,}", "73519.2468"):
        assert text.encode() not in raw
    assert store.entries()[0].summary["kind"] == kind  # the row really is there


# ---------------------------------------------------------------------------
# The board's table, review mode and exports
# ---------------------------------------------------------------------------


class _E:
    def __init__(self, i, name, summary, config, rationale=""):
        self.id, self.name, self.summary, self.config, self.rationale = i, name, summary, config, rationale
        self.kind, self.dataset, self.created_at = summary.get("kind", ""), summary.get("dataset", ""), 1.7e9


def _entry(i, name, summary, config, rationale=""):
    return _E(i, name, summary, config, rationale)


@pytest.fixture(scope="module")
def entries(cbp):
    out = []
    for i, (kind, cfg) in enumerate(KINDS.items(), start=1):
        summ = B.summarise(parse_config(cfg), cbp, teaching=True, runs=3)
        out.append(_entry(i, f"{kind} policy", summ, cfg, rationale="why"))
    return out


def test_review_mode_shows_public_columns_only(entries):
    teach = B.board_frame(entries, review=False, delta=1e-6)
    rev = B.board_frame(entries, review=True, delta=1e-6)
    assert set(B.RECORD_COLUMNS) <= set(teach.columns)
    assert not set(B.RECORD_COLUMNS) & set(rev.columns)
    split = teach.iloc[0]
    assert split["ε at δ, base"] == pytest.approx(zcdp_to_approx_dp(1.0, 1e-6))
    assert split["ε at δ, p99 record"] == pytest.approx(zcdp_to_approx_dp(entries[0].summary["records"]["p99"], 1e-6))
    assert teach.iloc[1]["ε at δ, p99 record"] == pytest.approx(entries[1].summary["records"]["p99"])  # pure ε


def _scrambled(entries):
    """The same entries with every statistic of the records replaced."""
    out = []
    for e in entries:
        s = json.loads(json.dumps(e.summary))
        s["records"] = {"share_above_base": 0.123456, "p50": 11.1111, "p99": 22.2222, "max": 33.3333,
                        "owner_p99": 44.4444, "median_rel_error": 0.55555, "cdf": [[1.0], [1.0]],
                        "owner_cdf": [[1.0], [1.0]], "query_errors": [{"query": "q", "median_rel_error": 0.666}]}
        out.append(_entry(e.id, e.name, s, e.config, e.rationale))
    return out


def _stable(html: str) -> str:
    html = re.sub(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}", "ID", html)
    return re.sub(r"exported [0-9-]+ [0-9:]+ UTC", "exported T", html)


def test_review_exports_do_not_depend_on_any_statistic_of_the_records(entries):
    other = _scrambled(entries)
    assert X.board_csv(entries, review=True, delta=1e-6) == X.board_csv(other, review=True, delta=1e-6)
    a = _stable(X.board_html(entries, review=True, delta=1e-6))
    assert a == _stable(X.board_html(other, review=True, delta=1e-6))
    assert "Review mode" in a and "Loss distributions" not in a and "Privacy vs accuracy" not in a
    assert "Public policy functions" in a  # public: the policy function of the unit-splitting entry
    teach = X.board_html(other, review=False, delta=1e-6)
    assert "Loss distributions" in teach and "22.22" in teach  # teaching mode does show them


def test_exports_escape_participant_text(entries):
    nasty = [_entry(9, "<script>alert('x')</script>", entries[0].summary, entries[0].config,
                    rationale="=HYPERLINK(\"http://evil\")"), _entry(10, "@SUM(A1)", entries[1].summary,
                                                                     entries[1].config)]
    html = X.board_html(nasty, review=False, delta=1e-6)
    assert "<script>alert(" not in html and "&lt;script&gt;alert(" in html
    csv = X.board_csv(nasty, review=False, delta=1e-6).decode()
    assert "'@SUM(A1)" in csv and "'=HYPERLINK" in csv
    assert "\n=" not in csv and ",=" not in csv and ",@" not in csv


def test_write_board_writes_csv_html_and_configs(entries, tmp_path):
    files = write_board(entries, tmp_path / "out", review=False, delta=1e-8, dataset="sample 'cbp_like'")
    assert sorted(files) == ["board.csv", "board.html", "entry-1.yaml", "entry-2.yaml", "entry-3.yaml",
                             "entry-4.yaml"]
    assert load_config(tmp_path / "out" / "entry-1.yaml").policy["thresholds"]["EMP"] == 100
    html = (tmp_path / "out" / "board.html").read_text()
    assert "<script src=" not in html and html.count("<script>/**") == 1  # plotly.js inlined once
    assert "δ = 1e-08" in html


def test_pareto_front():
    x = [1.0, 2.0, 3.0, 2.0, 1.0, float("nan")]
    y = [3.0, 2.0, 1.0, 3.0, 3.0, 0.1]
    assert B.pareto_front(x, y).tolist() == [True, True, True, False, True, False]
    pts = B.tradeoff_points([_entry(1, "a", {"unit": "eps", "records": _measured(1.0, 0.1)}, {}),
                             _entry(2, "b", {"unit": "eps", "records": _measured(2.0, 0.2)}, {}),
                             _entry(3, "c", {"unit": "eps", "records": {}}, {})], 1e-6)
    assert pts["name"].tolist() == ["a", "b"] and pts["pareto"].tolist() == [True, False]


def _measured(p99: float, error: float, workload=("SUM(EMP)",), runs: int = 30) -> dict:
    """A summary's records measured as the board compares them: seeded runs on ``workload``."""
    return {"p99": p99, "median_rel_error": error, "error_workload": list(workload),
            "errors": {"seeded runs": {"median_rel_error": error, "query_errors": [], "runs": runs}}}


SUM_EMP = {"queries": [{"kind": "sum", "measure": "EMP", "rho": 0.5}]}


def test_a_splitting_and_a_budget_entry_on_the_same_workload_get_their_errors_from_the_same_measure(cbp):
    """Like with like: a unit-splitting policy answering SUM(EMP) and a budget function's mechanism answering
    SUM(EMP) are measured by the same number of seeded runs on the same workload (the splitting entry keeps its
    closed form for its own table); the board shows that figure for both and puts both on its Pareto chart."""
    split = _study(policy={"thresholds": {"EMP": 100, "PAYANN": 10000, "PAYQTR1": 2500}}, workload=SUM_EMP,
                   mechanisms=[{"kind": "unit_splitting"}])
    s1 = B.summarise(parse_config(split), cbp, teaching=True, runs=4)
    s2 = B.summarise(parse_config(BUDGET), cbp, teaching=True, runs=4)
    r1, r2 = s1["records"], s2["records"]
    assert r1["error_workload"] == r2["error_workload"] == ["SUM(EMP)"]
    assert r1["errors"]["seeded runs"]["runs"] == r2["errors"]["seeded runs"]["runs"] == 4
    assert set(r1["errors"]) == {"seeded runs", "closed form"} and set(r2["errors"]) == {"seeded runs"}
    assert r1["median_rel_error"] == r1["errors"]["closed form"]["median_rel_error"]  # its own: the closed form
    entries = [_entry(1, "split", s1, split), _entry(2, "budget", s2, BUDGET)]
    frame = B.board_frame(entries, review=False, delta=1e-6)
    assert frame["error measure"].tolist() == ["4 seeded runs", "4 seeded runs"]
    assert frame["median rel. error"].tolist() == [r1["errors"]["seeded runs"]["median_rel_error"],
                                                   r2["errors"]["seeded runs"]["median_rel_error"]]
    assert B.tradeoff_points(entries, 1e-6)["name"].tolist() == ["split", "budget"]
    alone = B.board_frame(entries[:1], review=False, delta=1e-6)  # splitting entries only: their closed form
    assert alone["error measure"].tolist() == ["closed form"]
    assert alone["median rel. error"][0] == r1["errors"]["closed form"]["median_rel_error"]


def test_entries_measured_differently_are_marked_and_kept_off_the_pareto_front():
    old = {"unit": "eps", "records": {"p99": 0.5, "median_rel_error": 0.01}}  # stored before: its own measure only
    entries = [_entry(1, "a", {"unit": "eps", "records": _measured(1.0, 0.1)}, {}),
               _entry(2, "b", {"unit": "eps", "records": _measured(2.0, 0.2)}, {}),
               _entry(3, "other workload", {"unit": "eps", "records": _measured(0.1, 0.01, ("COUNT(*)",))}, {}),
               _entry(4, "fewer runs", {"unit": "eps", "records": _measured(0.1, 0.01, runs=3)}, {}),
               _entry(5, "older", old, {})]
    frame = B.board_frame(entries, review=False, delta=1e-6)
    basis = frame["error measure"].tolist()
    assert basis[:2] == ["30 seeded runs"] * 2 and all(b.startswith("not comparable") for b in basis[2:])
    assert "COUNT(*)" in basis[2] and "3 seeded runs" in basis[3] and "before" in basis[4]
    pts = B.tradeoff_points(entries, 1e-6)
    assert pts["name"].tolist() == ["a", "b"] and pts["pareto"].tolist() == [True, False]  # the better ones are off
    assert "SUM(EMP)" in C.describe_reference(entries) and "30 seeded runs" in C.describe_reference(entries)
    assert C.query_label("sum", "EMP", by=["STATE"]) == "SUM(EMP) BY STATE"


def test_cdfs_share_a_unit_or_convert_to_eps_at_delta(entries):
    same, unit = B.cdf_series(entries[:1], delta=1e-6)
    assert unit == "ρ (zCDP)" and same["#1 unit splitting policy"][0][0] == pytest.approx(1.0)
    mixed, unit = B.cdf_series(entries, delta=1e-6)
    assert unit == "ε at δ = 1e-06" and len(mixed) == 4
    assert mixed["#1 unit splitting policy"][0][0] == pytest.approx(zcdp_to_approx_dp(1.0, 1e-6))


# ---------------------------------------------------------------------------
# Links
# ---------------------------------------------------------------------------


def test_a_link_round_trips_the_design_without_views_or_mode():
    cfg = parse_config({**SPLIT, "mode": "teaching", "title": "mine", "app": {"study": {"learn": True}}}).to_dict()
    text = L.encode(cfg)
    assert re.fullmatch(r"[A-Za-z0-9_-]+", text) and len(text) < 1000
    back = L.decode(text)
    assert back.policy == parse_config(SPLIT).policy and back.workload == parse_config(SPLIT).workload
    assert back.data == parse_config(SPLIT).data and back.seed == 3
    assert back.mode == "review" and back.app == {} and back.title == ""


def _pack(obj) -> str:
    raw = obj if isinstance(obj, bytes) else json.dumps(obj).encode()
    return base64.urlsafe_b64encode(zlib.compress(raw)).rstrip(b"=").decode()


@pytest.mark.parametrize("text, message", [
    ("", "no policy"), (None, "no policy"), ("abc$%", "damaged"), ("A" * (L.MAX_LINK_CHARS + 1), "too long"),
    ("eJzLSM3JyQcABiwCFQ", "damaged"),  # valid base64, cut zlib stream
    (_pack([1, 2]), "not a study config"),
    (_pack({"version": 1, "data": {"sample": "nope"}}), "unknown sample"),
    (_pack({"version": 1, "data": {"sample": "cbp_like"}, "policy": {"thresholds": {"EMP": -3}}}),
     "policy.thresholds.EMP"),
    (_pack(b"{" * 100_000), "damaged"),
    (_pack(b" " * 1_000_000), "unpacks to more than"),
])
def test_bad_links_give_messages(text, message):
    with pytest.raises(ConfigError, match=message):
        L.decode(text)


def test_a_design_too_large_for_a_link_is_refused():
    rows = {f"G{i:05d}": {"EMP": float(i + 1)} for i in range(3000)}
    cfg = {"version": 1, "data": {"sample": "cbp_like"},
           "policy": {"thresholds": {"group_column": "STATE", "rows": {"*": {"EMP": 1.0}, **rows}}}}
    with pytest.raises(ResourceLimitError, match="too large for a link"):
        L.encode(cfg)


# ---------------------------------------------------------------------------
# The workshop folder and the pinned dataset
# ---------------------------------------------------------------------------


def test_workshop_defaults_and_overrides(tmp_path):
    env = {"PRDP_WORKSHOP_DIR": str(tmp_path / "w")}
    assert W.board_url(env) == f"sqlite:///{tmp_path / 'w' / 'board.sqlite'}"
    assert W.data_dir(env) == tmp_path / "w" / "data"
    assert W.facilitator_key(env) is None and W.facilitator_key({"PRDP_FACILITATOR_KEY": "k"}) == "k"
    env.update(PRDP_BOARD_URL="postgresql+psycopg://h/db", PRDP_DATA_DIR=str(tmp_path / "d"))
    assert W.board_url(env) == "postgresql+psycopg://h/db" and W.data_dir(env) == tmp_path / "d"
    assert W.workshop_dir({}) == Path.cwd() / "workshop"


def test_data_folder_tables_and_pins(tmp_path):
    data = tmp_path / "data"
    data.mkdir()
    df = prdp_core.data.samples.load("cbp_like", n=500, seed=2)
    df.to_csv(data / "firms.csv", index=False)
    (data / "notes.md").write_text("not a table")
    (data / ".hidden.csv").write_text("a\n1\n")
    outside = tmp_path / "secret.csv"
    outside.write_text("a\n1\n")
    (data / "link.csv").symlink_to(outside)
    assert W.data_files(data) == ["firms.csv"]
    assert W.data_files(tmp_path / "none") == []
    f = W.load_file(data, "firms.csv")
    assert f.dataset.n == 500 and f.source["shared"] == f.sha256 and f.source["filename"] == "firms.csv"
    for bad in ("missing.csv", "../secret.csv", "link.csv", "/etc/passwd"):
        with pytest.raises((DataError, ConfigError)):
            W.load_file(data, bad)
    assert W.matches_pin({"path": "firms.csv"}, {"file": "firms.csv"})
    assert not W.matches_pin({"path": "other.csv"}, {"file": "firms.csv"})
    assert W.matches_pin({"sample": "cbp_like", "seed": 0}, {"sample": "cbp_like", "n": None, "seed": 0})
    assert not W.matches_pin({"sample": "cbp_like", "n": 10, "seed": 0}, {"sample": "cbp_like", "n": None})
    assert W.matches_pin({"sample": "x"}, None)
    assert W.describe_pin({"sample": "cbp_like", "n": 5000, "seed": 1}) == "sample 'cbp_like', n = 5,000, seed 1"
    assert W.pin_of_source(f.source) == {"file": "firms.csv"}


def test_a_data_folder_file_with_negative_values_is_pinned_with_its_roles_and_a_public_shift(tmp_path):
    df = pd.DataFrame({"FIRM": [1, 1, 2, 3], "PROFIT": [-50.0, 10.0, 20.0, -5.0], "EMP": [1, 2, 3, 4]})
    df.to_csv(tmp_path / "profits.csv", index=False)
    with pytest.raises(DataError, match="negative"):
        W.load_file(tmp_path, "profits.csv")  # guessed roles, no fix: refused with the checker's message
    schema = prdp_core.data.Schema(id_col=None, measures=("PROFIT", "EMP"), groups=(), owner_col="FIRM")
    opts = {"negative": "shift", "shift_by": {"PROFIT": 60.0}}
    f = W.load_file(tmp_path, "profits.csv", schema, opts)
    assert f.dataset.shifts == {"PROFIT": 60.0} and f.dataset.table["PROFIT"].min() == 10.0
    pin = W.file_pin("profits.csv", schema, opts)
    assert pin["prepare"] == opts and pin["schema"]["owner"] == "FIRM"
    assert W.pin_roles(pin) == (schema, opts) and W.pin_of_source(f.source) == {"file": "profits.csv",
                                                                                "prepare": opts}
    assert W.matches_pin({"path": "profits.csv", "prepare": opts}, pin)
    assert not W.matches_pin({"path": "profits.csv"}, pin)  # the same file without the shift: other values
    assert "PROFIT shifted by +60 (public)" in W.describe_pin(pin)


def test_large_dataset_sources_of_the_data_folder_and_nothing_outside(tmp_path):
    """The app's Large dataset source: the data folder's Parquet/CSV files, folders of parts and DuckDB
    databases are listed and resolved; absolute paths, '..', and links leading out (of the path or of a file
    a folder or glob matches) are refused, as are missing files and folders of mixed types."""
    import duckdb

    data = tmp_path / "data"
    (data / "parts").mkdir(parents=True)
    df = prdp_core.data.samples.load("cbp_like", n=300, seed=2)
    df.to_parquet(data / "cbp.parquet")
    df.iloc[:150].to_parquet(data / "parts" / "a.parquet")
    df.iloc[150:].to_parquet(data / "parts" / "b.parquet")
    df.to_csv(data / "firms.csv", index=False)
    (data / "sheet.xlsx").write_bytes(b"not read here")
    con = duckdb.connect(str(data / "agency.duckdb"))
    con.execute("CREATE TABLE estab AS SELECT * FROM read_parquet(?)", [str(data / "cbp.parquet")])
    con.close()
    outside = tmp_path / "secret"
    outside.mkdir()
    df.to_parquet(outside / "s.parquet")
    (data / "out.parquet").symlink_to(outside / "s.parquet")
    (data / "outdir").symlink_to(outside, target_is_directory=True)
    (data / "parts" / "c.parquet").symlink_to(outside / "s.parquet")
    assert W.data_files(data, large=True) == ["agency.duckdb", "cbp.parquet", "firms.csv", "parts"]
    assert W.data_files(data) == ["cbp.parquet", "firms.csv", "sheet.xlsx"]  # the board's tables: unchanged
    assert W.database_tables(data, "agency.duckdb") == ["estab"]
    assert W.data_source("cbp.parquet", data).files == (str((data / "cbp.parquet").resolve()),)
    assert W.data_source("agency.duckdb#estab", data).table == "estab"
    assert len(W.data_source("parts/[ab].parquet", data).files) == 2
    stamp = W.data_source_stamp(W.data_source("parts/[ab].parquet", data))
    assert [s[1] for s in stamp] == [(data / "parts" / f).stat().st_size for f in ("a.parquet", "b.parquet")]
    eng = W.open_data_source("agency.duckdb#estab", data)
    assert eng.n_rows() == 300 and len(eng.sample(50, 1)) == 50
    # a view stored in a database of the folder cannot read a file elsewhere: the connection is confined
    con = duckdb.connect(str(data / "views.duckdb"))
    con.execute(f"CREATE VIEW peek AS SELECT * FROM read_parquet('{outside / 's.parquet'}')")
    con.close()
    with pytest.raises(DataError):
        W.open_data_source("views.duckdb#peek", data).n_rows()
    for bad, words in [("../secret/s.parquet", "may not leave the data folder"),
                       ("/etc/passwd", "must be relative to the data folder, not absolute"),
                       ("~/x.parquet", "no '~'"), ("out.parquet", "outside the data folder"),
                       ("outdir/s.parquet", "outside the data folder"), ("outdir", "outside the data folder"),
                       ("parts", "outside the data folder"),  # the folder holds a link leading out
                       ("parts/*.parquet", "outside the data folder"), ("missing.parquet", "No data file"),
                       ("", "must be non-empty")]:
        with pytest.raises(DataError, match=re.escape(words)):
            W.data_source(bad, data)


# ---------------------------------------------------------------------------
# The command line
# ---------------------------------------------------------------------------


def _prdp(*argv):
    out, err = io.StringIO(), io.StringIO()
    code = cli.main(list(argv), stdout=out, stderr=err)
    return code, out.getvalue(), err.getvalue()


def test_board_commands_submit_list_and_export(tmp_path, monkeypatch):
    monkeypatch.setenv("PRDP_WORKSHOP_DIR", str(tmp_path / "w"))
    monkeypatch.delenv("PRDP_BOARD_URL", raising=False)
    study = tmp_path / "s.yaml"
    study.write_text(parse_config(SPLIT).to_yaml())
    code, out, _ = _prdp("board", "submit", str(study), "--name", "Conservative", "--rationale", "Table 8")
    assert code == 0 and "submitted #1 'Conservative'" in out and "participant code:" in out
    pcode = re.search(r"participant code: (\S+)", out).group(1)
    code, out, _ = _prdp("board", "submit", str(study), "--name", "Conservative", "--rationale", "Table 8",
                         "--participant", pcode)
    assert code == 0 and "already on the board: #1" in out  # the same submission again adds nothing
    assert (tmp_path / "w" / "board.sqlite").exists()
    code, out, _ = _prdp("board", "list")
    assert code == 0 and "Conservative" in out and "p99 record loss" in out and "1 policy, teaching mode" in out
    code, out, _ = _prdp("board", "list", "--review")
    assert code == 0 and "p99 record loss" not in out and "review mode" in out
    code, out, _ = _prdp("board", "list", "--format", "json")
    rows = json.loads(out)
    assert rows[0]["name"] == "Conservative" and rows[0]["rationale"] == "Table 8" and "p99 record loss" in rows[0]
    code, out, _ = _prdp("board", "list", "--format", "csv")
    assert pd.read_csv(io.StringIO(out))["name"].tolist() == ["Conservative"]
    code, out, _ = _prdp("board", "export", "--out", str(tmp_path / "exp"))
    assert code == 0 and sorted(p.name for p in (tmp_path / "exp").iterdir()) == [".prdp-outputs.json", "board.csv",
                                                                                  "board.html", "entry-1.yaml"]
    (tmp_path / "afile").write_text("x")
    code, _, err = _prdp("board", "export", "--out", str(tmp_path / "afile"))
    assert code == 2 and "is a file" in err


def test_board_submit_refusals(tmp_path, monkeypatch):
    db = f"sqlite:///{tmp_path}/b.sqlite"
    both = tmp_path / "both.yaml"
    both.write_text((EXAMPLES / "personalized_tiers.yaml").read_text())
    code, _, err = _prdp("board", "submit", str(both), "--name", "x", "--db", db)
    assert code == 3 and "name the one to submit" in err
    code, _, err = _prdp("board", "submit", str(both), "--name", "x", "--policy", "tiers", "--db", "junk://")
    assert code == 5 and "board" in err.lower()
    assert _prdp("board", "submit", str(both), "--db", db)[0] == 2  # no --name: usage error
    monkeypatch.setenv("PRDP_FACILITATOR_KEY", "k")
    BoardStore(db, facilitator_key="k").pin_dataset({"sample": "bank_normal_50k"}, key="k")
    code, _, err = _prdp("board", "submit", str(both), "--name", "x", "--policy", "tiers", "--db", db)
    assert code == 5 and "pinned the workshop dataset" in err


def test_board_submit_from_several_processes_at_once(tmp_path):
    study = tmp_path / "s.yaml"
    study.write_text(parse_config({**SPLIT, "data": {"sample": "cbp_like", "n": 500}}).to_yaml())
    db = f"sqlite:///{tmp_path}/w/board.sqlite"
    procs = [subprocess.Popen([PRDP, "board", "submit", str(study), "--name", f"p{i}", "--db", db],
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for i in range(4)]
    outs = [p.communicate(timeout=240) for p in procs]
    assert [p.returncode for p in procs] == [0] * 4, outs
    assert sorted(e.name for e in BoardStore(db).entries()) == ["p0", "p1", "p2", "p3"]


def test_prdp_app_finds_the_checkout_and_keeps_the_server_settings():
    app = app_script()
    assert app == ROOT / "app.py"
    flags = streamlit_flags(app, "127.0.0.1", 8765)
    opts = dict(zip(flags[::2], flags[1::2]))
    assert opts["--server.address"] == "127.0.0.1" and opts["--server.port"] == "8765"
    assert opts["--server.enableXsrfProtection"] == "true" and opts["--client.showErrorDetails"] == "none"
    assert opts["--client.disableDataExport"] == "true" and opts["--server.maxUploadSize"] == str(
        prdp_core.core.limits.MAX_UPLOAD_MB)
    assert opts["--server.headless"] == "true" and opts["--browser.gatherUsageStats"] == "false"


def test_prdp_app_refuses_a_bad_board_or_port_before_starting(tmp_path, monkeypatch):
    monkeypatch.setenv("PRDP_WORKSHOP_DIR", str(tmp_path))
    monkeypatch.setenv("PRDP_BOARD_URL", "")  # prdp app sets these for the server it runs: restored after the test
    monkeypatch.setenv("PRDP_DATA_DIR", "")
    code, _, err = _prdp("app", "--board", "nonsense://x")
    assert code == 5 and "board database" in err
    code, _, err = _prdp("app", "--port", "70000")
    assert code == 5 and "not a port" in err


def test_query_table_adds_errors_only_in_teaching_mode(entries):
    split = entries[0]
    pub = B.query_table(split, review=True)
    assert pub["query"].tolist() == ["1. COUNT(*) BY STATE", "2. SUM(EMP) BY STATE", "3. SUM(PAYANN)"]
    assert "median rel. error" not in pub.columns and pub["σ"].iloc[0] == pytest.approx(1 / math.sqrt(0.5))
    teach = B.query_table(split, review=False)
    assert teach["median rel. error"].notna().all()
    tiers = B.query_table(entries[3], review=False)  # tier names join the per-tier errors
    assert tiers["query"].tolist() == ["agency", "public"] and tiers["median rel. error"].notna().all()
    assert tiers["σ"].notna().all() and tiers["note"].tolist() == ["ε = 4", "ε = 0.5"]
