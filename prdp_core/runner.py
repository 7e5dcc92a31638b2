"""Running a study: load its data and run every mechanism of its config, each with its seed (or
securely, unseeded), into a :class:`StudyRun` (the releases and the session's ledger).

One runner per mechanism kind of the study config (unit_splitting, prdp, personalized, multitier,
granular); records a mechanism needs that an engine does not hand over are refused with a message.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Mapping

from .accounting import Ledger
from .config import (
    ConfigError,
    Study,
    load_data,
    resolve_data_path,
)
from .data import Dataset
from .engines.spark_engine import is_uri
from .errors import PolicyError, PrdpError
from .noise_source import Noise
from .release import Release

#: A progress callback: (steps done, steps in all, what is being done).
Progress = Callable[[int, int, str], None]


@dataclass
class StudyRun:
    """The outcome of :func:`run_study`: the dataset, every release (label, mechanism config,
    Release) and the ledger of the run."""

    study: Study
    dataset: Dataset
    releases: list[tuple[str, dict[str, Any], Release]] = field(default_factory=list)
    ledger: Ledger = field(default_factory=Ledger)
    data_file: str | None = None

    @property
    def teaching(self) -> bool:
        return self.study.mode == "teaching"


def prdp_query(m: Mapping[str, Any]) -> str:
    """The query string of a ``prdp`` mechanism entry (``"count"``, ``"sum:BALANCE"``, …)."""
    return m["query"] if m["query"] == "count" else f"{m['query']}:{m['column']}"


PRDP_LABELS = {"count": "PrDP count (Alg. 1)", "framework": "PrDP framework (Alg. 2)",
               "sum_extension": "PrDP extension (Sec. 5.2)", "naive": "naive ε̌"}
PRDP_LOCAL_LABELS = {"count": "PrLDP count (Alg. 3–4)", "framework": "PrLDP framework (Alg. 5)",
                     "naive": "naive ε̌ (local)"}


def mechanism_noise(m: Mapping[str, Any], seed: int) -> Noise:
    """The noise of a mechanism entry: the exact samplers, unseeded, when it is ``secure``; else its seed."""
    return Noise.secure() if m.get("secure") else Noise.teaching(seed)


def _run_unit_splitting(study: Study, ds: Dataset, m: Mapping[str, Any], seed: int, reveal: bool
                        ) -> list[tuple[str, Release]]:
    from .mechanisms import unit_splitting

    policy = study.validate_policy(ds)
    # owners' realized losses are not part of the outputs: a table held by an engine skips computing them
    own = {"owner_realized": False} if _held_by_engine(ds) else {}
    # review mode refuses thresholds computed from the data in a secure release (teaching runs may use them)
    rel = unit_splitting.release(ds, policy, noise=mechanism_noise(m, seed), reveal=reveal,
                                 partition_delta=m["partition_delta"], allow_data_derived=reveal, **own)
    return [("", rel)]


def _held_by_engine(ds: Any) -> bool:
    return getattr(ds, "engine", None) is not None


def _needs_records(ds: Any, what: str) -> None:
    """Refuse a mechanism that works on the records themselves for a table held by an engine."""
    if _held_by_engine(ds) and ds.engine.name != "memory":
        raise PolicyError(f"{what} works on the records themselves; this table is held by the {ds.engine.name} engine.",
                          hint="Use data.engine: memory (or a sample of the table) for this mechanism.")


def _run_prdp(study: Study, ds: Dataset, m: Mapping[str, Any], seed: int, reveal: bool) -> list[tuple[str, Release]]:
    from .config import data_columns
    from .mechanisms import prdp
    from .mechanisms.prdp import local as prldp

    E = study.budget_function()
    E.check_columns(data_columns(ds))
    engine = _held_by_engine(ds)
    if m["model"] == "local":
        _needs_records(ds, "The local model (PrLDP)")
    for alg in m["algorithms"]:
        if alg == "sum_extension":
            _needs_records(ds, "The Sec. 5.2 sum extension")
    t = ds if engine else ds.table
    q, beta = prdp_query(m), m["beta"]
    # one generator for the algorithms compared side by side; secure runs draw from OpenDP, unseeded
    run: dict[str, Any] = {"noise": mechanism_noise(m, seed)}
    out = []
    for alg in m["algorithms"]:
        if m["model"] == "local":
            th = m.get("threshold", "paper")
            if alg == "count":
                rel = prldp.count(E(t), eps_min=E.eps_min, eps_max=E.eps_max, beta=beta, threshold=th,
                                  reveal=reveal, **run)
            elif alg == "framework":
                rel = prldp.framework(t, E, q, beta=beta, threshold=th, reveal=reveal, **run)
            else:
                rel = prldp.naive(t, E, q, beta=beta, reveal=reveal, **run)
            out.append((PRDP_LOCAL_LABELS[alg], rel))
            continue
        if alg == "count":
            rel = prdp.count_of(t, E, beta=beta, reveal=reveal, **run)
        elif alg == "framework":
            rel = prdp.framework(t, E, q, beta=beta, reveal=reveal, **run)
        elif alg == "sum_extension":
            rel = prdp.sum_extension(t, E, column=m["column"], beta=beta, reveal=reveal, **run)
        else:
            rel = prdp.naive(t, E, q, beta=beta, reveal=reveal, **run)
        out.append((PRDP_LABELS[alg], rel))
    return out


def pdp_mechanism(m: Mapping[str, Any]) -> Any:
    """The personalized DP mechanism object of a ``personalized`` entry."""
    from .mechanisms import personalized

    name, t = m["mechanism"], m["t"]
    if name == "minimum":
        return personalized.Minimum()
    if name == "threshold":
        return personalized.Threshold(t)
    if name == "sample":
        return personalized.Sample(t, rescale=m["rescale"])
    if name == "pe":
        return personalized.PE()
    return personalized.Stretching(rescale=m["rescale"])


def _run_personalized(study: Study, ds: Dataset, m: Mapping[str, Any], seed: int, reveal: bool
                      ) -> list[tuple[str, Release]]:
    from .mechanisms import personalized

    _needs_records(ds, "Personalized DP")
    spec = study.privacy_spec(ds.table)
    q = personalized.PersonalizedQuery(**m["query"])
    if m.get("secure") and not reveal:  # review mode: bounds computed from the data are refused (teaching: flagged)
        personalized.require_public_bounds(m.get("design_defaults", ()))
    rel = pdp_mechanism(m).release(ds.table, spec, q, noise=mechanism_noise(m, seed), reveal=reveal)
    return [("", personalized.flag_design_defaults(rel, m.get("design_defaults", ())))]


def multitier_filter(m: Mapping[str, Any]) -> Any:
    from .mechanisms import multitier as mt

    f = m.get("filter")
    return None if f is None else mt.RecordFilter(f["column"], f["op"], f["value"])


def _run_multitier(study: Study, ds: Dataset, m: Mapping[str, Any], seed: int, reveal: bool
                   ) -> list[tuple[str, Release]]:
    from .mechanisms import multitier as mt

    _needs_records(ds, "A multi-tier release")
    tiers = study.tiers()
    f = multitier_filter(m)
    secure = bool(m.get("secure"))
    # a secure release is unseeded: exact samplers and a system random source
    mode: dict[str, Any] = {"noise": mechanism_noise(m, seed)}
    if m["model"] == "central":
        integer = m["family"] in ("geometric", "multiscale_geometric")
        q = mt.central_query(ds.table, m["query"], measure=m.get("measure"), clip=m.get("clip"), filter=f,
                             integer=integer)
        plan = mt.plan_central(tiers, m["family"], sensitivity=float(q.sensitivity), delta=m["delta"])
        if secure:
            mode["contributions"] = q.contributions
        rel = mt.release_central(plan, q.value, reveal=reveal, records=q.mask, query=q.label, **mode)
        return [("", rel)]
    codes, labels = mt.local_categories(ds.table, m["measure"], m["d"], scale=m["scale"], top=m.get("top"), filter=f)
    plan = mt.plan_local(tiers, len(labels), variant=m["variant"])
    rel = mt.release_local(plan, codes, reveal=reveal, labels=labels, **mode)
    return [("", rel)]


def granular_domains(study: Study, m: Mapping[str, Any]) -> dict[str, Any]:
    """The declared public categories of a ``granular`` entry: a sample's documented ones, then the typed ones."""
    from .mechanisms import granular

    out: dict[str, Any] = dict(granular.sample_domains(study.data.sample)) if study.data.sample else {}
    out.update(m.get("categories", {}))
    return {a: out[a] for a in m["attributes"] if a in out}


def _run_granular(study: Study, ds: Dataset, m: Mapping[str, Any], seed: int, reveal: bool
                  ) -> list[tuple[str, Release]]:
    from .mechanisms import granular

    _needs_records(ds, "A granular-DP histogram")
    data = granular.encode_attributes(ds.table, list(m["attributes"]), granular_domains(study, m))
    how: dict[str, Any] = {"noise": mechanism_noise(m, seed)}
    if m["histogram"] == "heavy_hitter":
        rel = granular.heavy_hitter_histogram(data, eps0=m["eps"], nu=m["nu"], method=m["method"], reveal=reveal,
                                              **how)
    else:
        rel = granular.standard_histogram(data, eps=m["eps"], threshold=m.get("threshold"), reveal=reveal, **how)
    return [("", rel)]


_RUNNERS = {"unit_splitting": _run_unit_splitting, "prdp": _run_prdp, "personalized": _run_personalized,
            "multitier": _run_multitier, "granular": _run_granular}


def run_study(study: Study, data: str | os.PathLike | None = None, *, dataset: Dataset | None = None,
              progress: Progress | None = None) -> StudyRun:
    """Load the study's data and run each of its mechanisms with its seed.

    ``data`` replaces the config's data file (the config's column roles still apply);
    ``dataset`` skips loading altogether (the app passes its active dataset). Mechanism i
    draws its noise from ``numpy.random.default_rng(study.mechanism_seed(i))``: seeded runs
    are for teaching and review only. True answers are attached in teaching mode only.
    Raises ConfigError (the study does not fit the data), DataError/SchemaError (data
    problems) or another PrdpError.
    """
    total = len(study.mechanisms) + 1
    say = progress or (lambda *_: None)
    say(0, total, "loading the data")
    ds = dataset if dataset is not None else load_data(study, data)
    data_file = None
    if dataset is None and data is not None:
        data_file = str(data) if is_uri(data) else str(Path(data))
    elif dataset is None and study.data.path is not None and not is_uri(study.data.path):
        data_file = str(resolve_data_path(study))
    study.check_against(ds)
    run = StudyRun(study=study, dataset=ds, data_file=data_file)
    reveal = study.mode == "teaching"
    for i, m in enumerate(study.mechanisms):
        label = study.mechanism_label(i)
        say(i + 1, total, f"running {label}")
        try:
            outs = _RUNNERS[m["kind"]](study, ds, m, study.mechanism_seed(i), reveal)
        except ConfigError:
            raise
        except PrdpError as err:
            raise type(err)(f"mechanisms[{i}] ({m['kind']}): {err.message}", hint=err.hint) from None
        for sub, rel in outs:
            run.releases.append((f"{label}: {sub}" if sub else label, dict(m), rel))
            run.ledger.extend(rel.entries)
    say(total, total, "done")
    return run
