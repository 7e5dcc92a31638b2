"""The study: the validated, normalised config (:class:`Study`, written back by ``to_dict`` /
``to_yaml``), read from YAML text, a mapping or a file."""


from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Mapping

import yaml

from ...core.errors import ConfigError
from .data_source import DataSource, _data, safe_data_path
from .fields import _choice, _err, _fmt, _int, _mapping, _name, _names_hint, _number, _scalar, _text, _wrap
from .keys import MAX_CONFIG_BYTES, MAX_SEED, MODES, SCHEMA_VERSION
from .mechanisms import _mechanism
from .policy import _budget, _specification, _threshold_source, _thresholds, _tiers, _workload, build_budget
from .study_data import data_columns, group_values
from .yaml_reader import _read_yaml

if TYPE_CHECKING:
    from ..runs import RunConfig

TOP_KEYS = ("version", "title", "mode", "seed", "data", "policy", "workload", "mechanisms", "report", "app")
APP_PAGES = ("data", "concepts", "policy_designer", "personalized", "budget_functions", "tradeoffs", "run",
             "analyst_tiers", "study")


@dataclass(frozen=True)
class Study:
    """A validated study (see ``docs/config.md`` for every key).

    ``policy`` holds the normalised ``thresholds`` / ``budget`` / ``specification`` /
    ``tiers`` sections that are present; ``workload`` the normalised workload (or None);
    ``mechanisms`` one typed run configuration per mechanism (:class:`~prdp_core.study.runs.RunConfig`,
    read as the entry's normalised mapping). ``base_dir`` is the folder data
    paths are resolved against (the config file's folder; None for pasted text).
    """

    data: DataSource
    mode: str = "review"
    seed: int = 0
    title: str = ""
    policy: dict[str, Any] = field(default_factory=dict)
    workload: dict[str, Any] | None = None
    mechanisms: tuple[RunConfig, ...] = ()
    report: dict[str, Any] = field(default_factory=dict)
    app: dict[str, dict[str, Any]] = field(default_factory=dict)
    base_dir: str | None = field(default=None, compare=False)

    # -- engine objects ---------------------------------------------------------------

    def mechanism_seed(self, i: int) -> int:
        """Seed of mechanism ``i``: its own ``seed`` key, else the study seed + i (distinct noise per release)."""
        return self.mechanisms[i].noise_seed(self.seed, i)

    def mechanism_label(self, i: int) -> str:
        return self.mechanisms[i].release_label(i)

    def thresholds(self, table: Any = None) -> Any:
        """Splitting thresholds T(a); with ``table`` group values typed as text are matched to the data."""
        import pandas as pd

        from ...core.splitting import as_thresholds, thresholds_from_frame

        t = self.policy["thresholds"]
        if "rows" not in t:
            return as_thresholds(t)
        frame = pd.DataFrame([{"group": g, **row} for g, row in t["rows"].items()])
        return _wrap("policy.thresholds", lambda: thresholds_from_frame(frame, group_col=t["group_column"],
                                                                          table=table))

    def splitting_policy(self, table: Any = None) -> Any:
        """The :class:`~prdp_core.core.workload.SplittingPolicy` (thresholds + workload)."""
        from ...core.workload import SplittingPolicy, Workload

        if "thresholds" not in self.policy or self.workload is None:
            raise ConfigError("policy.thresholds: unit splitting needs thresholds and a workload.")
        wl = Workload.from_dict(self.workload)
        return SplittingPolicy(self.thresholds(table), wl, threshold_source=self.policy.get("threshold_source") or {})

    def budget_function(self) -> Any:
        if "budget" not in self.policy:
            raise ConfigError("policy.budget: this study has no budget function.")
        return _wrap("policy.budget", lambda: build_budget(self.policy["budget"]))

    def privacy_spec(self, table: Any) -> Any:
        """The personalized DP specification Φ over the users of ``table``."""
        import numpy as np
        import pandas as pd

        from ...mechanisms import personalized

        s = self.policy.get("specification")
        if s is None:
            raise ConfigError("policy.specification: this study has no personalized DP specification.")

        def build() -> Any:
            if "tiers" in s:
                return personalized.generate_tiers_for(table, personalized.TierConfig(**s["tiers"]),
                                                       rng=np.random.default_rng(s["seed"]), user_col=s["user"])
            col = s["column"]
            if s["labels"]:
                tab = pd.DataFrame({col: table[col].astype(str)})
                if s["user"]:
                    tab[s["user"]] = table[s["user"]].to_numpy()
                return personalized.spec_from_labels(tab, col, dict(s["labels"]), user_col=s["user"],
                                          default_eps=s["default_eps"])
            return personalized.spec_from_column(table, col, user_col=s["user"], default_eps=s["default_eps"])

        if s.get("column") and s["column"] not in table.columns:
            raise ConfigError(f"policy.specification.column: '{_name(s['column'])}' is not a column of the data.")
        if s.get("user") and s["user"] not in table.columns:
            raise ConfigError(f"policy.specification.user: '{_name(s['user'])}' is not a column of the data.")
        return _wrap("policy.specification", build)

    def tiers(self) -> Any:
        from ...mechanisms import multitier as mt

        if "tiers" not in self.policy:
            raise ConfigError("policy.tiers: this study has no analyst tiers.")
        return _wrap("policy.tiers", lambda: mt.tiers_from(self.policy["tiers"]))

    # -- checks against the data -----------------------------------------------------

    def check_against(self, ds: Any) -> None:
        """Check every column the study names exists in ``ds`` (a Dataset); ConfigError names the key."""
        cols = set(data_columns(ds))
        measures = set(ds.schema.measures)
        for m in self.data.prepare.get("shift_by", {}):
            if m not in measures:
                raise _err(f"data.prepare.shift_by.{_name(m)}", f"'{_name(m)}' is not a measure of the data.",
                           hint=f"Measures: {_names_hint(ds.schema.measures)}.")

        def need(col: str | None, key: str, *, measure: bool = False) -> None:
            if col is None:
                return
            if col not in cols:
                raise _err(key, f"'{_name(col)}' is not a column of the data.",
                           hint=f"Columns: {_names_hint(sorted(cols))}.")
            if measure and col not in measures:
                raise _err(key, f"'{_name(col)}' is not a measure of the data.",
                           hint=f"Measures: {_names_hint(ds.schema.measures)}.")

        t = self.policy.get("thresholds")
        if t is not None:
            if "rows" in t:
                need(t["group_column"], "policy.thresholds.group_column")
                for g, row in t["rows"].items():
                    for m in row:
                        need(m, f"policy.thresholds.rows.{_name(g)}.{_name(m)}", measure=True)
            else:
                for m in t:
                    need(m, f"policy.thresholds.{_name(m)}", measure=True)
        if self.workload is not None:
            for i, q in enumerate(self.workload["queries"]):
                p = f"workload.queries[{i}]"
                need(q.get("measure"), f"{p}.measure", measure=True)
                for g in q.get("group_by", ()):
                    need(g, f"{p}.group_by")
                if "filter" in q:
                    need(q["filter"]["column"], f"{p}.filter.column")
        if t is not None and self.workload is not None:
            pol = _wrap("policy", lambda: self.validate_policy(ds))
            if self.workload.get("group_keys"):  # listed values compared in each column's type (numbers)
                _wrap("workload.group_keys", lambda: _listed_cells(pol, ds))
        if "budget" in self.policy:
            b = self.budget_function()
            _wrap("policy.budget", lambda: b.check_columns(data_columns(ds)))
        s = self.policy.get("specification")
        if s is not None:
            need(s.get("column"), "policy.specification.column")
            need(s.get("user"), "policy.specification.user")
        for i, m in enumerate(self.mechanisms):
            m.check_columns(need, f"mechanisms[{i}]")

    def dataset_policy(self, ds: Any) -> Any:
        """The splitting policy, group values typed as text matched to the dataset's values."""
        t = self.policy.get("thresholds") or {}
        return self.splitting_policy(group_values(ds, t.get("group_column")))

    def validate_policy(self, ds: Any) -> Any:
        """The splitting policy checked against the dataset (in memory, or by its engine)."""
        policy = self.dataset_policy(ds)
        if getattr(ds, "engine", None) is not None:
            ds.engine.validate_policy(policy, ds.schema.measures)
        else:
            policy.validate(ds.table, ds.schema.measures)
        return policy

    # -- serialisation ----------------------------------------------------------------

    def to_dict(self) -> dict[str, Any]:
        """The study as a plain mapping in the documented schema (``parse_config`` reads it back)."""
        d: dict[str, Any] = {"version": SCHEMA_VERSION}
        if self.title:
            d["title"] = self.title
        d.update(mode=self.mode, seed=self.seed, data=self.data.to_dict())
        if self.policy:
            d["policy"] = _policy_out(self.policy)
        if self.workload is not None:
            d["workload"] = _workload_out(self.workload)
        d["mechanisms"] = [m.to_config() for m in self.mechanisms]
        if self.report:
            d["report"] = dict(self.report)
        if self.app:
            d["app"] = {k: dict(v) for k, v in self.app.items()}
        return d

    def to_yaml(self) -> str:
        """YAML text of :meth:`to_dict`, with a header naming the schema."""
        head = ("# PrDP Explorer study (schema version 1; every key is described in docs/config.md).\n"
                "# Validate: prdp validate FILE    Run: prdp run FILE --out DIR\n")
        return head + yaml.safe_dump(self.to_dict(), sort_keys=False, allow_unicode=True, width=100)


def _listed_cells(policy: Any, ds: Any) -> Any:
    """The public cells of the workload's key lists on ``ds`` (PolicyError for a value of the wrong type)."""
    from ...mechanisms.unit_splitting.stats import listed_keys, table_kinds

    kinds = ds.engine.column_kinds() if getattr(ds, "engine", None) is not None else table_kinds(ds.table)
    return listed_keys(policy, kinds)


def _policy_out(p: Mapping[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for k in ("thresholds", "threshold_source", "budget", "specification", "tiers"):
        if k not in p or (k == "threshold_source" and not p[k]):
            continue
        v = p[k]
        if k == "budget":
            v = {kk: vv for kk, vv in v.items() if vv is not None}
        elif k == "specification":
            v = {kk: vv for kk, vv in v.items() if vv is not None and not (kk == "labels" and not vv)}
        out[k] = v
    return out


def _workload_out(w: Mapping[str, Any]) -> dict[str, Any]:
    out = {"queries": [dict(q) for q in w["queries"]], "partition_rho": w["partition_rho"], "joint": w["joint"]}
    if w.get("group_keys"):
        out["group_keys"] = {c: list(v) for c, v in w["group_keys"].items()}
    return out


def _report(v: Any) -> dict[str, Any]:
    d = _mapping(v or {}, "report", ("delta", "min_records", "title"))
    out: dict[str, Any] = {}
    if "delta" in d:
        out["delta"] = _number(d["delta"], "report.delta", positive=True, hi=0.1)
    if "min_records" in d:
        out["min_records"] = _int(d["min_records"], "report.min_records", lo=1)
    if "title" in d:
        out["title"] = _text(d["title"], "report.title", max_len=200)
    return out


def _app(v: Any) -> dict[str, dict[str, Any]]:
    """Settings of the app's pages that are not part of the engine's study (views, sweeps):
    page → setting → plain value. The app checks the setting names when it imports them."""
    d = _mapping(v or {}, "app", APP_PAGES)
    out: dict[str, dict[str, Any]] = {}
    for page, settings in d.items():
        if settings is None:
            continue
        if not isinstance(settings, Mapping):
            raise _err(f"app.{page}", "must map settings to values.")
        clean: dict[str, Any] = {}
        for k, val in settings.items():
            key = f"app.{page}.{_name(k)}"
            if not isinstance(k, str) or not k.replace("_", "").isalnum() or len(k) > 80:
                raise _err(key, "is not a valid setting name.")
            if isinstance(val, list):
                if len(val) > 1000:
                    raise _err(key, "is too long a list.")
                clean[k] = [_scalar(x, f"{key}[{j}]") for j, x in enumerate(val)]
            else:
                clean[k] = _scalar(val, key)
        out[page] = clean
    return out


def study_from_dict(d: Any, *, base_dir: str | os.PathLike | None = None) -> Study:
    """Validate a parsed config mapping and return the :class:`Study` (ConfigError otherwise)."""
    if not isinstance(d, Mapping):
        raise ConfigError("The config must be a YAML mapping (key: value lines) at its top level.",
                          hint="Start from one of the examples in examples/.")
    if "version" not in d:
        raise _err("version", f"is required (this build reads version {SCHEMA_VERSION}).",
                   hint=f"Add 'version: {SCHEMA_VERSION}' at the top of the file.")
    ver = d["version"]
    if isinstance(ver, bool) or not isinstance(ver, int) or ver != SCHEMA_VERSION:
        raise _err("version", f"unsupported version {_fmt(ver)}: this build reads version {SCHEMA_VERSION} only.",
                   hint="Export the study again from this version of the app, or update the file by hand "
                        "(docs/config.md).")
    top = _mapping(d, "", TOP_KEYS, required=("data",))
    seed = _int(top.get("seed", 0), "seed", hi=MAX_SEED)
    mode = _choice(top.get("mode", "review"), "mode", MODES)
    title = "" if top.get("title") is None else _text(top["title"], "title", max_len=200)
    data = _data(top["data"])
    if data.path is not None and base_dir is not None:
        safe_data_path(data.path, base_dir)
    policy: dict[str, Any] = {}
    if top.get("policy") is not None:
        pd_ = _mapping(top["policy"], "policy", ("thresholds", "threshold_source", "budget", "specification",
                                                 "tiers"))
        if pd_.get("thresholds") is not None:
            policy["thresholds"] = _thresholds(pd_["thresholds"])
        if pd_.get("threshold_source") is not None:
            policy["threshold_source"] = _threshold_source(pd_["threshold_source"], policy.get("thresholds"))
        if pd_.get("budget") is not None:
            policy["budget"] = _budget(pd_["budget"])
        if pd_.get("specification") is not None:
            policy["specification"] = _specification(pd_["specification"], seed)
        if pd_.get("tiers") is not None:
            policy["tiers"] = _tiers(pd_["tiers"])
    workload = None if top.get("workload") is None else _workload(top["workload"])
    if workload is not None and "thresholds" in policy:
        th = policy["thresholds"]
        measures = set(th) if "rows" not in th else {m for r in th["rows"].values() for m in r}
        for i, q in enumerate(workload["queries"]):
            if q["kind"] != "count" and q.get("split", True) and q["measure"] not in measures:
                raise _err(f"workload.queries[{i}].measure", f"'{_name(q['measure'])}' is summed on split data but "
                           "has no splitting threshold in policy.thresholds.",
                           hint="Add a threshold for it, or set split: false with a clamp (top-coding).")
    mechs = top.get("mechanisms") or []
    if not isinstance(mechs, list):
        raise _err("mechanisms", "must be a list of mechanisms.")
    mechanisms = tuple(_mechanism(m, i, policy, workload is not None, data.engine) for i, m in enumerate(mechs))
    return Study(data=data, mode=mode, seed=seed, title=title, policy=policy, workload=workload,
                 mechanisms=mechanisms, report=_report(top.get("report")), app=_app(top.get("app")),
                 base_dir=None if base_dir is None else str(base_dir))


def parse_config(text: str | bytes | Mapping[str, Any], *, base_dir: str | os.PathLike | None = None) -> Study:
    """Validate a study config given as YAML text (or an already parsed mapping).

    ``base_dir`` is the folder a ``data.path`` is resolved against (None: the path can only
    be used once a data file is supplied separately, as in the app). YAML is read by a strict
    safe loader (plain values only; anchors, aliases, merge keys, repeated keys and nesting deeper
    than ``MAX_CONFIG_DEPTH`` are refused with the line). Raises :class:`ConfigError`.
    """
    if isinstance(text, Mapping):
        return study_from_dict(text, base_dir=base_dir)
    if isinstance(text, bytes):
        if len(text) > MAX_CONFIG_BYTES:
            raise ConfigError(f"The config is larger than {MAX_CONFIG_BYTES:,} bytes.",
                              hint="A study config is a short text file.")
        try:
            text = text.decode("utf-8-sig")
        except UnicodeDecodeError:
            raise ConfigError("The config is not UTF-8 text.", hint="Save it as UTF-8 YAML.") from None
    if not isinstance(text, str):
        raise ConfigError("The config must be YAML text.")
    if len(text) > MAX_CONFIG_BYTES:
        raise ConfigError(f"The config is larger than {MAX_CONFIG_BYTES:,} characters.",
                          hint="A study config is a short text file.")
    if not text.strip():
        raise ConfigError("The config is empty.", hint="Start from one of the examples in examples/.")
    return study_from_dict(_read_yaml(text), base_dir=base_dir)


def load_config(path: str | os.PathLike) -> Study:
    """Read and validate the study config at ``path`` (YAML, read as by :func:`parse_config`).

    A ``data.path`` in the file is resolved relative to the file's folder and may not leave
    it (no absolute paths, no ``..``, no symbolic links pointing outside). Raises
    :class:`~prdp_core.core.errors.ConfigError` (invalid or unreadable config) with a message
    naming the offending key, e.g. ``policy.thresholds.EMP: must be a positive number``.
    """
    p = Path(path)
    try:
        if p.exists() and not p.is_dir() and not p.is_file():
            raise ConfigError(f"{p} is not a regular file.", hint="Give the path of a YAML file.")
        if p.stat().st_size > MAX_CONFIG_BYTES:
            raise ConfigError(f"{p.name} is larger than {MAX_CONFIG_BYTES:,} bytes.",
                              hint="A study config is a short text file.")
        raw = p.read_bytes()
    except FileNotFoundError:
        raise ConfigError(f"No config file at {p}.", hint="Check the path.") from None
    except IsADirectoryError:
        raise ConfigError(f"{p} is a folder, not a config file.") from None
    except OSError as exc:
        raise ConfigError(f"The config {p} cannot be read: {exc.strerror or exc}.") from None
    return parse_config(raw, base_dir=p.resolve().parent)
