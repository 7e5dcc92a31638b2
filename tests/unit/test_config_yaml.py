"""The strict YAML reader of study configs (CLI and Study import alike): no anchors, aliases, merge keys
or repeated keys, a depth cap, values YAML cannot build refused, and error messages that quote at most
a short prefix of any value."""

from __future__ import annotations

import io
import tracemalloc
from pathlib import Path

import pytest
import yaml

from prdp_core.commands.cli import EXIT_CONFIG, main
from prdp_core.core.errors import ConfigError
from prdp_core.study import config
from prdp_core.study.config import MAX_CONFIG_DEPTH, MAX_QUOTED_CHARS, parse_config

ROOT = Path(__file__).resolve().parents[2]
BASE = "version: 1\ndata: {sample: cbp_like, n: 500}\n"


def _refused(text: str) -> str:
    with pytest.raises(ConfigError) as info:
        parse_config(text)
    return str(info.value)


def billion_laughs(levels: int = 9) -> str:
    """A few hundred bytes whose ``seed`` expands to 9^levels values through an alias chain."""
    lol = "".join(f"l{i}: &l{i} [{', '.join(['*l' + str(i - 1)] * 9) if i else ', '.join('x' * 9)}]\n"
                  for i in range(levels))
    return f"{BASE}{lol}seed: *l{levels - 1}\n"


def test_billion_laughs_is_refused_while_reading_before_any_alias_is_resolved(monkeypatch):
    text = billion_laughs()
    assert len(text.encode()) < 600
    built = []
    original = yaml.SafeLoader.construct_object
    monkeypatch.setattr(yaml.SafeLoader, "construct_object", lambda self, *a, **k: built.append(1) or original(
        self, *a, **k))
    tracemalloc.start()
    msg = _refused(text)
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    assert "anchor (&l0) at line 3" in msg and "not allowed" in msg
    assert not built  # refused while composing: no value was ever built, let alone expanded
    assert peak < 300e6  # loose: the expansion would take gigabytes


def test_billion_laughs_through_the_cli_exits_3(tmp_path):
    cfg = tmp_path / "bomb.yaml"
    cfg.write_text(billion_laughs(), encoding="utf-8")
    for argv in (["validate", str(cfg)], ["run", str(cfg), "--out", str(tmp_path / "o")]):
        err = io.StringIO()
        assert main(argv, stdout=io.StringIO(), stderr=err) == EXIT_CONFIG
        assert "anchor (&l0) at line 3" in err.getvalue() and len(err.getvalue()) < 400
    assert not (tmp_path / "o").exists()


@pytest.mark.parametrize("text, expected", [
    (BASE + "report: &r {delta: 1.0e-6}\n", "anchor (&r) at line 3, column 9"),
    (BASE + "report:\n  <<: {delta: 1.0e-6}\n", "merge key (<<) at line 4, column 3"),
    (BASE + "seed: 1\nmode: review\nseed: 2\n", "repeats the key 'seed' at line 5, column 1 (first given at line 3)"),
    (BASE + "policy:\n  tiers: {a: 1, b: 2, a: 3}\n", "repeats the key 'a' at line 4, column 23"),
    (BASE + "app: {study: {yes: 1, true: 2}}\n", "repeats the key True"),  # both read as true
    (BASE + "report: {min_records: 1, min_records: 1}\n", "repeats the key 'min_records'"),
])
def test_anchors_merge_keys_and_repeated_keys_are_refused_with_the_line(text, expected):
    msg = _refused(text)
    assert expected in msg, msg


def test_an_alias_alone_is_refused_too():
    # an alias to an undefined anchor would be a YAML error; the check comes first and names it
    assert "alias (*a) at line 3" in _refused(BASE + "seed: *a\n")


def test_nesting_is_capped():
    deep = BASE + "x: " + "[" * (MAX_CONFIG_DEPTH + 1) + "]" * (MAX_CONFIG_DEPTH + 1) + "\n"
    assert f"nested more than {MAX_CONFIG_DEPTH} levels deep at line 3" in _refused(deep)
    ok = BASE + "x: " + "[" * (MAX_CONFIG_DEPTH - 1) + "]" * (MAX_CONFIG_DEPTH - 1) + "\n"
    assert "unknown key" in _refused(ok)  # read, then refused by the schema (x is no key of a study)
    very_deep = BASE + "x: " + "[" * 100_000 + "]" * 100_000 + "\n"
    assert "nested more than" in _refused(very_deep)


@pytest.mark.parametrize("value", ["9" * 5000, "2001-13-45", "!!int x", "!!float x", "!!bool maybe", "!!timestamp x"])
def test_values_yaml_cannot_build_are_config_errors(value):
    msg = _refused(BASE + f"seed: {value}\n")
    assert "The value at line 3, column 7 cannot be read" in msg


def test_the_reader_is_a_safe_loader_used_for_every_config():
    assert issubclass(config._StrictLoader, yaml.SafeLoader)
    folder = Path(config.__file__).parent
    sources = {p.name: p.read_text(encoding="utf-8") for p in folder.glob("*.py")}
    assert not any("safe_load(" in s or "yaml.load(" in s for s in sources.values())
    calls = {name: s.count("_read_yaml(") for name, s in sources.items() if "_read_yaml(" in s}
    assert calls == {"yaml_reader.py": 1, "study.py": 1}  # defined once, called by parse_config


def test_size_cap_and_python_tags_still_hold():
    assert "larger than" in _refused("x: " + "y" * config.MAX_CONFIG_BYTES)
    assert "could not determine a constructor" in _refused(BASE + "title: !!python/object/apply:os.system ['true']\n")


def test_messages_quote_at_most_a_short_prefix_of_any_value():
    long = "z" * 100_000
    cases = [BASE + f"seed: {long}\n",                                    # a value
             BASE + f"? {long}\n: 1\n",                                   # an unknown key
             BASE + f"policy:\n  thresholds:\n    ? {long}\n    : -1\n",  # a key in the path of a bad value
             BASE + f"policy: {{tiers: {{a: [{', '.join(['1'] * 50_000)}]}}}}\n",  # a long list
             "version: 1\ndata: {path: " + "d/" * 400 + "../x.csv}\n"]      # a path
    for text in cases:
        msg = _refused(text)
        assert len(msg) < 4 * MAX_QUOTED_CHARS + 200, msg[:300]
        assert "…" in msg or "...]" in msg  # cut text ends with …, a cut list with ...
    query = f"{{kind: sum, measure: {long[:400]}, split: false, clamp: 5}}"  # a name of 400 characters
    bad = parse_config(BASE + f"workload: {{queries: [{query}]}}\n")
    with pytest.raises(ConfigError) as info:
        bad.check_against(config.load_data(bad))
    assert len(str(info.value)) < 1500 and "…" in str(info.value)


def test_configs_without_anchors_read_as_before():
    """The format does not change: every example (and an exported study) reads exactly as yaml.safe_load did."""
    texts = [p.read_text(encoding="utf-8") for p in sorted((ROOT / "examples").rglob("*.yaml"))]
    texts.append(parse_config(texts[0], base_dir=ROOT / "examples").to_yaml())
    for text in texts:
        assert config._read_yaml(text) == yaml.safe_load(text)
    assert config._read_yaml("a: [1, {b: 2}]\nc: !!str 3\nd: ~\n") == {"a": [1, {"b": 2}], "c": "3", "d": None}
