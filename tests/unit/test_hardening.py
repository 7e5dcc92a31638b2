"""Hardened inputs: adversarial values into every numeric widget's engine entry point, the
loader, the expression evaluator and the study-config loader; resource limits with clear
messages; localhost binding; no user input reaching a shell, eval or a path outside the data.

The rule everywhere: bad input raises a :class:`~prdp_core.core.errors.PrdpError` with an actionable
message (or is handled), never another exception, and never runs for long.
"""

from __future__ import annotations

import ast
import math
import time
import tomllib
from pathlib import Path
from typing import Any, Callable

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import prdp_core
from prdp_core.core import interpret, limits
from prdp_core.core.accounting import zcdp_to_approx_dp
from prdp_core.core.errors import ConfigError, ExpressionError, PrdpError, ResourceLimitError
from prdp_core.core.secure import SecureSampler, grid_for
from prdp_core.core.splitting import as_thresholds, percentile_thresholds, split_counts, thresholds_for_cap
from prdp_core.core.workload import Query, SplittingPolicy, Workload
from prdp_core.data.dataset import Dataset, Schema
from prdp_core.mechanisms import baselines as BL
from prdp_core.mechanisms import granular, multitier, personalized
from prdp_core.mechanisms.analysis import optimal_clip, workload_errors
from prdp_core.mechanisms.budget_solver import solve_budget
from prdp_core.mechanisms.prdp import local as prldp
from prdp_core.mechanisms.prdp.budget import constant, inverse, log_budget, parse_budget
from prdp_core.mechanisms.prdp.central import count, framework
from prdp_core.mechanisms.prdp.experiments import scaling_study
from prdp_core.mechanisms.preview import preview_policy
from prdp_core.mechanisms.sweeps import sweep
from prdp_core.mechanisms.unit_splitting import PartitionSelection, release

ROOT = Path(__file__).resolve().parents[2]

# ---------------------------------------------------------------------------
# Adversarial values
# ---------------------------------------------------------------------------

#: What a numeric widget (or a number in a study config) can carry: floats including NaN and
#: ±inf, zero and negative zero, negatives, huge and subnormal values, 64-bit integers, numpy scalars.
NUMBERS = [math.nan, math.inf, -math.inf, 0, 0.0, -0.0, -1, -1e-9, 1e308, -1e308, 1e-308, 5e-324, 1e300,
           2**63 - 1, -(2**63), 10**6, 1e15, np.float64("nan"), np.int64(-5), np.float32(1e-40)]
ADVERSARIAL = st.sampled_from(NUMBERS)

_TAB = pd.DataFrame({"id": np.arange(8), "g": list("aabbccdd"), "v": [0.0, 1.0, 3.0, 10.0, 250.0, 7.5, 1e6, 40.0]})
_DS = Dataset("t", _TAB, Schema(id_col="id", measures=("v",), groups=("g",)))
_POL = SplittingPolicy(as_thresholds({"v": 100.0}), Workload((Query("sum", "v", rho=0.5, group_by=("g",)),
                                                              Query("count", rho=0.1))))
_BUD = inverse(1e4, "v")
_SPEC = personalized.spec_from_values(np.array([0.1, 0.5, 1.0, 1.0, 0.3, 0.7, 0.2, 0.9]))


def _rng() -> np.random.Generator:
    return np.random.default_rng(0)


#: (page, widget, engine call with the widget's value x)
ENTRY_POINTS: list[tuple[str, str, Callable[[Any], Any]]] = [
    ("data", "sample size", lambda x: prdp_core.data.samples.load("cbp_like", n=x)),
    ("data", "sample seed", lambda x: prdp_core.data.samples.load("table2_example", seed=x)),
    ("policy designer", "threshold T(a)", lambda x: split_counts(_TAB, as_thresholds({"v": x}))),
    ("policy designer", "query ρ", lambda x: SplittingPolicy(as_thresholds({"v": 10.0}),
                                                             Workload((Query("sum", "v", rho=x),)))(_TAB)),
    ("policy designer", "AVG count ρ", lambda x: Query("avg", "v", rho=0.1, rho_count=x)),
    ("policy designer", "partition-selection ρ", lambda x: Workload((Query("count", rho=0.1),), partition_rho=x)),
    ("policy designer", "preview threshold", lambda x: preview_policy(
        _DS, SplittingPolicy(as_thresholds({"v": x}), _POL.workload)).record_cdf()),
    ("policy designer", "(ε, δ) table δ", lambda x: zcdp_to_approx_dp(1.0, x)),
    ("policy designer", "(ε, δ) table ρ", lambda x: zcdp_to_approx_dp(x, 1e-6)),
    ("trade-offs", "sweep ρ", lambda x: sweep(_TAB, _POL, [{"v": 10.0}], [x])),
    ("trade-offs", "sweep threshold", lambda x: sweep(_TAB, _POL, [{"v": x}], [0.5])),
    ("trade-offs", "optimal clip n", lambda x: optimal_clip(n=x, alpha=1.5, rho=0.5)),
    ("trade-offs", "error target", lambda x: solve_budget(_TAB, _POL, target=x)),
    ("trade-offs", "share of cells", lambda x: solve_budget(_TAB, _POL, target=0.1, share=x)),
    ("trade-offs", "optimal clip α", lambda x: optimal_clip(n=1000, alpha=x, rho=0.5)),
    ("run", "partition-selection δ", lambda x: PartitionSelection(rho=0.1, delta=x)),
    ("run", "release partition δ", lambda x: release(
        _TAB, SplittingPolicy(_POL.thresholds, Workload(_POL.workload.queries, partition_rho=0.1)),
        rng=_rng(), partition_delta=x)),
    ("budget functions", "α", lambda x: inverse(x, "v")(_TAB)),
    ("budget functions", "ε̂", lambda x: inverse(1e4, "v", eps_max=x)(_TAB)),
    ("budget functions", "U", lambda x: inverse(1e4, "v", U=x)(_TAB)),
    ("budget functions", "ε̌", lambda x: inverse(1e4, "v", eps_min=x)(_TAB)),
    ("budget functions", "log k", lambda x: log_budget(500, "v", k=x)(_TAB)),
    ("budget functions", "constant ε", lambda x: constant(x)(_TAB)),
    ("budget functions", "β", lambda x: framework(_TAB, _BUD, "sum", beta=x, rng=_rng())),
    ("budget functions", "local β", lambda x: prldp.framework(_TAB, _BUD, "sum", beta=x, rng=_rng())),
    ("budget functions", "count ε̌", lambda x: count(_BUD(_TAB), eps_min=x, eps_max=1.0, beta=0.1, rng=_rng())),
    ("personalized", "Φ value", lambda x: personalized.spec_from_values(np.array([x, 1.0]))),
    ("personalized", "threshold t", lambda x: personalized.release(_TAB.assign(u=range(8)), _SPEC,
                                                                   personalized.PersonalizedQuery("count"),
                                                                   personalized.Threshold(x), rng=_rng())),
    ("personalized", "sample t", lambda x: personalized.Sample(x).delivered(_SPEC.eps, _SPEC)),
    ("personalized", "query hi", lambda x: personalized.PersonalizedQuery("sum", "v", lo=0, hi=x)),
    ("personalized", "query lo", lambda x: personalized.PersonalizedQuery("median", "v", lo=x, hi=10)),
    ("personalized", "tier share", lambda x: personalized.TierConfig(f_c=x)),
    ("personalized", "tier ε", lambda x: personalized.TierConfig(eps_m=x)),
    ("personalized", "comparison runs", lambda x: personalized.compare(_TAB.assign(u=range(8)), _SPEC,
                                                                       personalized.PersonalizedQuery("count"),
                                                                       runs=x, rng=_rng())),
    ("personalized", "curve thresholds", lambda x: personalized.threshold_curve(_TAB.assign(u=range(8)), _SPEC,
                                                                                personalized.PersonalizedQuery("count"),
                                                                                [x], runs=5, rng=_rng())),
    ("analyst tiers", "tier ε", lambda x: multitier.plan_central([("a", x), ("b", 0.5)], "laplace")),
    ("analyst tiers", "gaussian δ", lambda x: multitier.plan_central([("a", 1.0)], "gaussian", delta=x)),
    ("analyst tiers", "local d", lambda x: multitier.plan_local([("a", 1.0), ("b", 0.5)], x)),
    ("analyst tiers", "release answer", lambda x: multitier.release_central(
        multitier.plan_central([("a", 1.0)], "laplace"), x, rng=_rng())),
    ("analyst tiers", "σ for ε", lambda x: multitier.gaussian_sigma_for(x, 1e-6)),
    ("concepts", "ε accuracy", lambda x: interpret.inference_accuracy(x)),
    ("concepts", "prior", lambda x: interpret.posterior_bound(1.0, x)),
    ("concepts", "ρ side by side", lambda x: interpret.zcdp_side_by_side(x)),
    ("concepts", "ε target", lambda x: interpret.rho_for_approx_dp(x)),
    ("concepts", "record value", lambda x: interpret.record_guarantee(x)),
    ("concepts", "ε0 calibration", lambda x: granular.calibrate_heavy_hitter_histogram(x, 0.01, 16)),
    ("concepts", "ν calibration", lambda x: granular.calibrate_heavy_hitter_histogram(1.0, x, 16)),
    ("concepts", "attributes d", lambda x: granular.granularity_table(x, 1.0)),
    ("concepts", "synthetic n", lambda x: granular.synthetic_attribute_data(n=x, d=8, rng=_rng())),
    ("baselines", "clipped-sum budget", lambda x: BL.ClippedSum("v", x, upper=10.0)),
    ("baselines", "clipping bound", lambda x: BL.clipped_sum_laplace(_TAB["v"].to_numpy(), 0.0, x, 1.0, rng=_rng())),
    ("data", "shift a negative measure by", lambda x: prdp_core.data.prepare_dataset(
        _TAB.assign(v=_TAB["v"] - 5.0), _DS.schema, negative="shift", shift_by={"v": x})),
    ("policy designer", "suggestion percentile", lambda x: percentile_thresholds(_TAB, ["v"], x)),
    ("policy designer", "suggestion loss cap", lambda x: thresholds_for_cap(_TAB, ["v"], cap=x, flat=0.1, split=0.5)),
    ("policy designer", "suggestion share above the cap", lambda x: thresholds_for_cap(
        _TAB, ["v"], cap=1.0, flat=0.1, split=0.5, share=x)),
    ("trade-offs", "probability γ", lambda x: solve_budget(_TAB, _POL, target=0.1, gamma=x)),
    ("trade-offs", "answers with at least … records", lambda x: workload_errors(_TAB, _POL, min_count=x)),
    ("analyst tiers", "clipping bound U", lambda x: multitier.central_query(_TAB, "sum", measure="v", clip=x)),
    ("analyst tiers", "filter value", lambda x: multitier.central_query(
        _TAB, "count", filter=multitier.RecordFilter("v", ">=", x))),
    ("analyst tiers", "local top of the range U", lambda x: multitier.local_categories(
        _TAB, "v", 16, scale="log", top=x)),
    ("budget functions", "scaling runs per point", lambda x: scaling_study("n", [1000], methods=("naive",), trials=x)),
    ("secure", "grid bits", lambda x: SecureSampler(bits=x)),
    ("secure", "grid sensitivity", lambda x: grid_for(x)),
]


@pytest.mark.filterwarnings("ignore::RuntimeWarning")  # overflow to inf on purpose (1e308 etc.)
@pytest.mark.parametrize("page,widget,call", ENTRY_POINTS, ids=[f"{p}: {w}" for p, w, _ in ENTRY_POINTS])
@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(x=ADVERSARIAL)
def test_numeric_entry_points_raise_only_actionable_errors(page, widget, call, x):
    t0 = time.thread_time()  # CPU time of this thread: bounded work, whatever the machine's load
    try:
        call(x)
    except PrdpError as err:
        assert str(err).strip() and "Traceback" not in str(err)
    assert time.thread_time() - t0 < 20, f"{page}: {widget} took too long for {x!r}"


@pytest.mark.filterwarnings("ignore::RuntimeWarning")
@pytest.mark.parametrize("bad", [math.nan, math.inf, -math.inf, -1.0, 1e308, "empty"])
def test_adversarial_record_values_in_engine_calls(bad):
    """NaN / inf / negative / huge measure values, or no records at all, reaching the engine directly
    (not via the Data page)."""
    tab = _TAB.head(0) if bad == "empty" else _TAB.assign(v=[0.0, 1.0, bad, 10.0, 250.0, 7.5, 1e6, 40.0])
    bad = math.nan if bad == "empty" else bad
    for call in (lambda: split_counts(tab, {"v": 10.0}), lambda: _BUD(tab),
                 lambda: framework(tab, _BUD, "sum", beta=0.1, rng=_rng()),
                 lambda: release(tab, _POL, rng=_rng()),
                 lambda: BL.ClippedSum("v", 1.0, upper=10.0).release(tab, rng=_rng()),
                 lambda: parse_budget("1e4 / max(v, 1)")(tab)):
        try:
            out = call()
        except PrdpError:
            continue
        if isinstance(out, np.ndarray):
            assert not np.isnan(out).any() or math.isnan(bad)


# ---------------------------------------------------------------------------
# Loader: huge, wide, empty, unicode
# ---------------------------------------------------------------------------


def test_a_million_columns_is_refused_fast():
    k = 1_000_000
    data = (",".join(f"c{i}" for i in range(k)) + "\n" + ",".join("1" for _ in range(k)) + "\n").encode()
    t0 = time.thread_time()
    with pytest.raises(ResourceLimitError, match="column limit"):
        prdp_core.load_table(data, filename="wide.csv")
    assert time.thread_time() - t0 < 5


def test_a_data_row_wider_than_its_header_is_refused_not_shifted():
    with pytest.raises(PrdpError, match="first data row has 3 fields"):
        prdp_core.load_table(b"a,b\n1,2,3\n4,5,6\n", filename="x.csv")
    k = 1_000_000
    t0 = time.thread_time()
    with pytest.raises(PrdpError):
        prdp_core.load_table(("a,b\n" + ",".join("1" for _ in range(k)) + "\n").encode(), filename="x.csv")
    assert time.thread_time() - t0 < 5


def test_wide_parquet_and_size_limits():
    import io

    wide = pd.DataFrame(np.zeros((1, limits.MAX_COLUMNS + 1)), columns=[f"c{i}" for i in range(limits.MAX_COLUMNS + 1)])
    buf = io.BytesIO()
    wide.to_parquet(buf)
    with pytest.raises(ResourceLimitError, match="column limit"):
        prdp_core.load_table(buf.getvalue(), filename="w.parquet")
    with pytest.raises(ResourceLimitError) as exc:
        prdp_core.load_table(b"a\n" + b"1\n" * 1000, filename="x.csv", max_bytes=100)
    assert "MB" in str(exc.value) or "bytes" in str(exc.value) or "limit" in str(exc.value)


def test_row_limit(monkeypatch):
    monkeypatch.setattr(limits, "MAX_ROWS", 5)
    with pytest.raises(ResourceLimitError, match="row limit"):
        prdp_core.load_table(b"a\n" + b"1\n" * 6, filename="x.csv")


@settings(max_examples=60, deadline=None)
@given(st.lists(st.text(alphabet=st.characters(exclude_categories=("Cs",)), min_size=0, max_size=12),
                min_size=1, max_size=6),
       st.lists(st.sampled_from(["1", "-1", "nan", "inf", "-inf", "1e308", "1e-320", "", "١٢", "1_000", "0x1f",
                                 "١", "½", "=cmd|' /C calc'!A0"]), min_size=1, max_size=6))
def test_unicode_headers_and_adversarial_cells(names, cells):
    header = ",".join(n.replace(",", " ").replace("\n", " ").replace("\r", " ").replace('"', "'") for n in names)
    row = ",".join(cells[: len(names)] + ["1"] * max(0, len(names) - len(cells)))
    try:
        df = prdp_core.load_table((header + "\n" + row + "\n").encode("utf-8"), filename="u.csv")
    except PrdpError:
        return
    try:
        schema = prdp_core.data.guess_schema(df)
        prdp_core.data.prepare_dataset(df, schema, non_numeric="missing", missing="drop", negative="shift",
                                       duplicate_ids="regenerate")
    except PrdpError:
        pass


# ---------------------------------------------------------------------------
# Expression evaluator: adversarial inputs and values
# ---------------------------------------------------------------------------


@pytest.mark.parametrize("text", [
    "x" * (limits.MAX_EXPRESSION_CHARS + 1), "(" * 500 + "1" + ")" * 500, "1" + "+1" * 1000,
    "v ** 10 ** 10", "exp(exp(exp(v)))", "𝓋 + 1", "v\u202e + 1", "\x00", "v.__class__", "__import__('os')",
    "[v for v in v]", "lambda: 1", "v if v else 1", "open('/etc/passwd')", "v; 1", "v\n1",
])
def test_expression_attacks_fail_fast_with_expression_errors(text):
    t0 = time.thread_time()
    try:
        out = parse_budget(text, eps_min=0.01, eps_max=10, U=1e6)(_TAB)
        assert np.all(np.isfinite(out))
    except PrdpError as err:
        assert isinstance(err, (ExpressionError, PrdpError)) and str(err)
    assert time.thread_time() - t0 < 2


@given(st.lists(st.sampled_from([0.0, -0.0, 1e-320, 1e308, math.inf, -math.inf, math.nan, -5.0, 1.0, 1e6]),
                min_size=1, max_size=8))
def test_expression_on_adversarial_columns(values):
    tab = pd.DataFrame({"v": values})
    for text in ("1e4 / v", "log(v)", "sqrt(v)", "v ** 2", "where(v > 10, 0.1, 1 / v)", "exp(v)"):
        try:
            out = parse_budget(text, eps_min=0.01, eps_max=10, U=1e6)(tab)
        except PrdpError:
            continue
        assert np.all(np.isfinite(out)) and np.all(out >= 0.01 * (1 - 1e-12))


# ---------------------------------------------------------------------------
# Study-config loader
# ---------------------------------------------------------------------------

YAML_SCALARS = st.one_of(st.none(), st.booleans(), st.integers(-2**70, 2**70), st.floats(),
                         st.text(max_size=20), st.sampled_from([".nan", ".inf", "-.inf", "1e400", "0x10", "~", "yes",
                                                                "!!python/object/apply:os.system ['true']"]))
KEYS = st.sampled_from(["version", "name", "seed", "mode", "data", "policy", "workload", "mechanisms", "report",
                        "app", "sample", "path", "n", "thresholds", "rho", "budget", "kind", "eps", "tiers",
                        "__class__", "é", ""])
YAML_TREES = st.recursive(YAML_SCALARS, lambda c: st.one_of(st.lists(c, max_size=4),
                                                            st.dictionaries(KEYS, c, max_size=5)), max_leaves=25)


@settings(max_examples=150, deadline=None)
@given(st.dictionaries(KEYS, YAML_TREES, max_size=6))
def test_config_loader_on_random_structures(d):
    from prdp_core.study import config

    try:
        config.parse_config({"version": 1, **d})
    except ConfigError as err:
        assert str(err)
    except PrdpError:
        pass


@settings(max_examples=100, deadline=None)
@given(st.text(max_size=400))
def test_config_loader_on_random_text(text):
    from prdp_core.study import config

    try:
        config.parse_config(text)
    except PrdpError:
        pass


def test_config_yaml_bombs_tags_and_paths(tmp_path):
    from prdp_core.study import config

    lol = "a: &a [x, x, x, x, x, x, x, x, x]\n" + "".join(
        f"{chr(98 + i)}: &{chr(98 + i)} [{', '.join(['*' + chr(97 + i)] * 9)}]\n" for i in range(8))
    t0 = time.thread_time()
    with pytest.raises(ConfigError):
        config.parse_config("version: 1\n" + lol)
    assert time.thread_time() - t0 < 2
    with pytest.raises(ConfigError):
        config.parse_config("version: 1\nname: !!python/object/apply:os.system ['touch /tmp/pwned']\n")
    assert not Path("/tmp/pwned").exists()
    with pytest.raises(ConfigError):
        config.parse_config("x" * (config.MAX_CONFIG_BYTES + 1))
    for bad in ("../../etc/passwd", "/etc/passwd", "..\\..\\x.csv", "C:\\x.csv", "data/../../x.csv"):
        with pytest.raises(ConfigError):
            config.safe_data_path(bad, tmp_path)
    outside = tmp_path.parent / "outside.csv"
    outside.write_text("a\n1\n")
    (tmp_path / "link.csv").symlink_to(outside)
    with pytest.raises(ConfigError):
        config.safe_data_path("link.csv", tmp_path)


# ---------------------------------------------------------------------------
# Resource limits: each named in its message
# ---------------------------------------------------------------------------


def test_resource_limits_have_clear_messages(monkeypatch):
    with pytest.raises(ExpressionError, match=f"{limits.MAX_EXPRESSION_CHARS:,}"):
        parse_budget("1" + "+1" * limits.MAX_EXPRESSION_CHARS)
    monkeypatch.setattr(limits, "MAX_SWEEP_POINTS", 3)
    with pytest.raises(ResourceLimitError, match="sweep points"):
        sweep(_TAB, _POL, [{"v": t} for t in (1.0, 2.0)], [0.1, 0.2])
    monkeypatch.setattr(limits, "MAX_SPLIT_ROWS", 10)
    with pytest.raises(ResourceLimitError, match="split table"):
        prdp_core.core.splitting.unit_split(_TAB, {"v": 1.0}, id_col="id")
    monkeypatch.setattr(limits, "MAX_SECURE_ANSWERS", 3)
    with pytest.raises(ResourceLimitError, match="secure release"):
        SecureSampler().gaussian_answers(np.zeros(4, dtype=np.int64), 1.0, 1.0, 0.5)
    with pytest.raises(ResourceLimitError, match="over the limit of 3"):
        limits.check_limit("Things", 4, 3, "Fewer things.")
    limits.check_limit("Things", 3, 3, "Fewer things.")


def test_upload_limit_matches_the_server_setting():
    cfg = tomllib.loads((ROOT / ".streamlit" / "config.toml").read_text())
    assert cfg["server"]["maxUploadSize"] == limits.MAX_UPLOAD_MB
    assert limits.max_upload_bytes() == limits.MAX_UPLOAD_MB * 2**20


# ---------------------------------------------------------------------------
# Localhost binding
# ---------------------------------------------------------------------------


def test_app_binds_to_localhost_unless_configured():
    cfg = tomllib.loads((ROOT / ".streamlit" / "config.toml").read_text())
    assert cfg["server"]["address"] == "127.0.0.1"
    assert cfg["server"].get("enableXsrfProtection", True) is True
    # a served app watches no source file: the watcher's thread floods on many file events and slows every session
    assert cfg["server"]["fileWatcherType"] == "none" and cfg["server"]["runOnSave"] is False
    make = (ROOT / "Makefile").read_text()
    assert "HOST ?= 127.0.0.1" in make and "--server.address $(HOST)" in make
    for line in make.splitlines():
        if "streamlit run" in line:
            assert "0.0.0.0" not in line
    conftest = (ROOT / "tests" / "e2e" / "conftest.py").read_text()
    assert "127.0.0.1" in conftest and "0.0.0.0" not in conftest


# ---------------------------------------------------------------------------
# No user input reaches a shell, eval or arbitrary paths
# ---------------------------------------------------------------------------

_CODE = sorted([*(ROOT / "prdp_core").rglob("*.py"), *(ROOT / "ui").rglob("*.py"), *(ROOT / "app_pages").rglob("*.py"),
                ROOT / "app.py"])
_FORBIDDEN_CALLS = {"eval", "exec", "compile", "__import__", "execfile", "input"}
_FORBIDDEN_ATTRS = {("os", "system"), ("os", "popen"), ("os", "execv"), ("os", "execve"), ("os", "execl"),
                    ("os", "spawnl"), ("os", "spawnv"), ("os", "startfile"), ("pickle", "load"), ("pickle", "loads"),
                    ("marshal", "loads"), ("shelve", "open"), ("yaml", "load"), ("yaml", "unsafe_load"),
                    ("yaml", "full_load"), ("pd", "read_pickle"), ("pandas", "read_pickle"), ("np", "load")}
_FORBIDDEN_MODULES = {"subprocess", "pty", "pickle", "marshal", "shelve", "dill", "cloudpickle", "commands"}


def _violations(path: Path) -> list[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    out = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            out += [f"import {a.name}" for a in node.names if a.name.split(".")[0] in _FORBIDDEN_MODULES]
        elif isinstance(node, ast.ImportFrom) and node.module and node.module.split(".")[0] in _FORBIDDEN_MODULES:
            out.append(f"from {node.module} import …")
        elif isinstance(node, ast.Call):
            f = node.func
            if isinstance(f, ast.Name) and f.id in _FORBIDDEN_CALLS:
                out.append(f"{f.id}(…)")
            if (isinstance(f, ast.Attribute) and isinstance(f.value, ast.Name)
                    and (f.value.id, f.attr) in _FORBIDDEN_ATTRS):
                out.append(f"{f.value.id}.{f.attr}(…)")
            for kw in node.keywords:
                if kw.arg == "shell" and not (isinstance(kw.value, ast.Constant) and kw.value.value is False):
                    out.append("shell=…")
                if kw.arg == "allow_pickle" and not (isinstance(kw.value, ast.Constant) and kw.value.value is False):
                    out.append("allow_pickle=…")
    return out


@pytest.mark.parametrize("path", _CODE, ids=[str(p.relative_to(ROOT)) for p in _CODE])
def test_no_eval_exec_shell_or_unsafe_deserialisation(path):
    assert not _violations(path), f"{path.relative_to(ROOT)}: {_violations(path)}"


def test_the_scanner_catches_what_it_should(tmp_path):
    bad = tmp_path / "bad.py"
    bad.write_text("import subprocess\nimport os\neval(x)\nos.system(cmd)\nyaml.load(t)\nf(shell=True)\n"
                   "from pickle import loads\nnp.load(p, allow_pickle=True)\n")
    assert set(_violations(bad)) == {"import subprocess", "eval(…)", "os.system(…)", "yaml.load(…)", "shell=…",
                                     "from pickle import …", "np.load(…)", "allow_pickle=…"}


def test_file_access_in_the_app_goes_through_uploads_or_the_sample_folder():
    """Pages and UI helpers never open a path: uploads arrive as bytes (st.file_uploader); samples
    and configs are read by the engine from its own folder or through ``config.safe_data_path``."""
    for path in [*(ROOT / "ui").rglob("*.py"), *(ROOT / "app_pages").rglob("*.py"), ROOT / "app.py"]:
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if isinstance(node, ast.Call):
                f = node.func
                name = f.id if isinstance(f, ast.Name) else (f.attr if isinstance(f, ast.Attribute) else "")
                assert name not in ("open", "read_csv", "read_parquet", "read_excel", "read_text", "read_bytes",
                                    "load_config"), f"{path.relative_to(ROOT)} calls {name}()"
    # the engine's own readers: samples from sample_data/, configs with the folder check
    samples_src = (ROOT / "prdp_core" / "data" / "samples.py").read_text()
    assert "sample_dir()" in samples_src
    from prdp_core.study import config

    assert "safe_data_path" in Path(config.__file__).read_text()


def test_uploaded_tables_never_share_cache_keys_across_sessions():
    """st.cache_data is process-wide: two uploads with the same file name, schema and size (e.g. two
    analysts on a shared server) must get different cache keys; samples keep stable keys."""
    from ui.state import dataset_token

    a = prdp_core.data.prepare_dataset(pd.DataFrame({"id": [1, 2], "v": [1.0, 2.0]}), Schema(id_col="id",
                                                                                            measures=("v",)))
    b = prdp_core.data.prepare_dataset(pd.DataFrame({"id": [1, 2], "v": [5.0, 9.0]}), Schema(id_col="id",
                                                                                            measures=("v",)))
    src = {"kind": "file", "filename": "payroll.csv", "schema": a.schema.to_dict(), "options": {}}
    assert dataset_token(a, src) != dataset_token(b, src)
    sample = {"kind": "sample", "name": "cbp_like", "n": None, "seed": 0}
    assert dataset_token(a, sample) == dataset_token(a, sample)


def test_no_page_draws_a_table_that_renders_markdown():
    """st.table renders Markdown in its cells (an image in a board entry's name would be fetched): pages and UI
    helpers show tables with st.dataframe, which shows text as text."""
    for path in [*(ROOT / "ui").rglob("*.py"), *(ROOT / "app_pages").rglob("*.py"), ROOT / "app.py"]:
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "table":
                owner = node.func.value
                assert not (isinstance(owner, ast.Name) and owner.id == "st"), \
                    f"{path.relative_to(ROOT)}:{node.lineno} calls st.table"
