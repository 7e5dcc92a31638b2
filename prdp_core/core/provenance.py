"""Where a release's public parameters came from, and what every export says about its run.

A parameter that sets a sensitivity or a domain — a splitting threshold T(a), a clipping bound,
the list of group keys — must be public: fixed without looking at the records. A design aid that
computes it from the confidential data (a threshold at the data's 99th percentile, a loss-cap
suggestion, a bound left at the column's percentile, the cells present in the table) is useful to
design a policy, but a release that uses it leaks through the parameter itself, whatever noise it
adds. Such values therefore carry a *source*:

* ``"typed"`` — typed in (or confirmed) by the designer as a public value; the default, and what a
  parameter without a recorded source means;
* ``"data: …"`` — computed from the confidential data, saying how (``"data: p99 (rounded)"``,
  ``"data: p97.5"``, ``"data: loss cap 10ρ"``);
* ``"private: …"`` — released by a differentially private suggestion whose cost is in the ledger
  (``"private: DP p97, ε = 0.1"``): public once released, like a typed value.

Releases record the sources in their params (a unit-splitting policy's ``threshold_source``, a
personalized query's ``hi_source`` / ``cutoff_source``, ``keys`` and ``domains``);
:func:`data_derived` reads them back as one list, which the ledger, the answers CSV, the budget
table and the HTML report show. A secure release refuses data-derived thresholds unless it is
explicitly allowed (teaching): see :func:`require_public_thresholds`.

:func:`stamp_answers` adds to an answers table what an export must say about the run that made
it: the app mode (teaching: true values attached, confidential; review), whether the noise came
from the secure samplers, the seed of a seeded run, and the data-derived parameters.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pandas as pd

from .errors import PolicyError

#: Source of a parameter typed in (or confirmed) as a public value.
TYPED = "typed"

#: What ``Release.params["keys"]`` says when the group keys are the cells present in the data.
KEYS_FROM_DATA = "public (the cells present in the data)"

#: What ``Release.params["keys"]`` says when every group-by's cells come from a public key list.
KEYS_LISTED = "public (a listed key set)"

#: Column of :func:`stamp_answers` and of the ledger summary listing data-derived parameters.
DATA_DERIVED_COLUMN = "data-derived parameters"


def data_source(how: str) -> str:
    """The source of a value computed from the confidential data: ``"data: <how>"``."""
    return f"data: {how}"


def private_source(how: str) -> str:
    """The source of a value suggested by a differentially private mechanism whose cost is charged to the
    ledger when the value is adopted (:mod:`prdp_core.mechanisms.dp_quantile`): ``"private: <how>"`` — public once
    released, so not data-derived."""
    return f"private: {how}"


def is_data_derived(source: Any) -> bool:
    """True when ``source`` says the value was computed from the confidential data."""
    return isinstance(source, str) and source.strip().lower().startswith("data")


def is_private(source: Any) -> bool:
    """True when ``source`` says the value was released by a private suggestion charged to the ledger."""
    return isinstance(source, str) and source.strip().lower().startswith("private")


def source_detail(source: str) -> str:
    """What a source says after its kind: ``"data: p99 (rounded)"`` → ``"p99 (rounded)"``."""
    return source.split(":", 1)[-1].strip()


#: Policy parts of a study config whose parameters carry sources, and the policy key holding them: a design
#: that replaces the part replaces its sources too (a link, a board entry), never keeps the reader's.
PART_SOURCES = {"thresholds": "threshold_source"}


def with_part_sources(current: Mapping[str, Any], design: Mapping[str, Any]) -> dict[str, Any]:
    """The policy section ``current`` with the parts of ``design`` put in: a part of ``design`` brings its sources
    (:data:`PART_SOURCES`) — none when it has none, i.e. typed — instead of keeping those of the part it replaces."""
    out = {**current, **design}
    for part, key in PART_SOURCES.items():
        if part in design and key not in design:
            out.pop(key, None)
    return out


def check_sources(sources: Mapping[Any, Any] | None, *, what: str = "threshold_source") -> dict[str, str]:
    """Normalise a parameter → source mapping (names and sources as text; ``"typed"`` entries dropped,
    since a parameter without a source is typed in). Raises :class:`PolicyError` for anything else
    than a mapping of text to text."""
    if sources is None:
        return {}
    if not isinstance(sources, Mapping):
        raise PolicyError(f"{what} must map parameter names to their source (e.g. {{EMP: 'data: p99'}}).")
    out: dict[str, str] = {}
    for k, v in sources.items():
        if not isinstance(v, str) or not v.strip():
            raise PolicyError(f"{what}: the source of '{k}' must be a text such as 'typed' or 'data: p99'.")
        if v.strip() != TYPED:
            out[str(k)] = v.strip()
    return out


def data_derived(params: Mapping[str, Any]) -> list[str]:
    """The parameters of a release (its ``params``) that were computed from the confidential data,
    as short texts such as ``"T(EMP): data: p99 (rounded)"`` or ``"group keys: the cells present in
    the data"``. Empty when every parameter was typed in (or is public by construction)."""
    out: list[str] = []
    pol = params.get("policy")
    if isinstance(pol, Mapping):
        for m, src in (pol.get("threshold_source") or {}).items():
            if is_data_derived(src):
                out.append(f"T({m}): {src}")
    if params.get("keys") == KEYS_FROM_DATA:
        out.append("group keys: the cells present in the data")
    for k, v in params.items():
        if k.endswith("_source") and k != "spec_source" and is_data_derived(v):
            out.append(f"{k[:-len('_source')]}: {str(v).split(' (')[0]}")
    dom = params.get("domains")
    if isinstance(dom, str) and dom.startswith("read from the data"):
        out.append("attribute domains: read from the data")
    return out


def param_sources(value: Any, path: str, names: tuple[str, ...]) -> dict[str, str]:
    """A mechanism's ``param_source`` in a study config: parameter (one of ``names``) → ``"private: …"``, the
    private suggestion (charged to the ledger when adopted) that released its value. Raises
    :class:`~prdp_core.core.errors.ConfigError` for anything else (a value computed from the data is said by
    ``design_defaults``; a typed value needs no source)."""
    from .errors import ConfigError

    if value is None:
        return {}
    if not isinstance(value, Mapping):
        raise ConfigError(f"{path}: must map parameters to their source, e.g. {{{names[0]}: 'private: DP p99, "
                          "ε = 0.1'}.")
    out: dict[str, str] = {}
    for k, v in value.items():
        if k not in names:
            raise ConfigError(f"{path}.{k}: not a parameter with a source here.", hint=f"Use: {', '.join(names)}.")
        if not is_private(v) or len(str(v)) > 200:
            raise ConfigError(f"{path}.{k}: must say which private suggestion released it, e.g. 'private: DP p99, "
                              "ε = 0.1'.")
        out[str(k)] = str(v).strip()
    return out


def mark_sources(release: Any, sources: Mapping[str, str]) -> Any:
    """``release`` (a :class:`~prdp_core.core.release.Release`) with ``<parameter>_source`` in its params and its
    ledger entries' params for each of ``sources`` (e.g. ``hi_source: "private: DP p99, ε = 0.1"``)."""
    from dataclasses import replace

    if not sources:
        return release
    extra = {f"{k}_source": v for k, v in sources.items()}
    entries = tuple(replace(e, params={**e.params, **extra}) for e in release.entries)
    return replace(release, params={**release.params, **extra}, entries=entries)


def require_public_thresholds(sources: Mapping[str, str]) -> None:
    """Refuse thresholds computed from the confidential data (a secure release that is not a teaching run).

    Raises :class:`PolicyError` naming each data-derived threshold and how it was computed."""
    flagged = {m: s for m, s in sources.items() if is_data_derived(s)}
    if not flagged:
        return
    listed = ", ".join(f"T({m}) ({s})" for m, s in flagged.items())
    raise PolicyError(
        f"A secure release cannot use splitting thresholds computed from the confidential data: {listed}. "
        "A threshold sets the noise of every sum, so one read off the records leaks through the release itself.",
        hint="Type public values in (fixed from public knowledge, or public or synthetic data) — on the Run page, "
             "'Type public thresholds', or by editing them on the Policy designer page — or adopt a private (DP) "
             "suggestion charged to the ledger (Policy designer, 'Suggest thresholds').")


def stamp_answers(answers: pd.DataFrame, *, teaching: bool, secure: bool, seed: int | None,
                  derived: list[str] | tuple[str, ...] = ()) -> pd.DataFrame:
    """``answers`` with the columns every answers export carries: ``app mode`` (teaching — true values
    attached, confidential — or review), ``secure`` (exact OpenDP samplers, unseeded) and ``seed`` (of a
    seeded teaching run; empty for a secure one) and :data:`DATA_DERIVED_COLUMN` (empty when none)."""
    out = answers.copy()
    out["app mode"] = "teaching" if teaching else "review"
    out["secure"] = bool(secure)
    out["seed"] = pd.array([None if secure or seed is None else int(seed)] * len(out), dtype="Int64")
    out[DATA_DERIVED_COLUMN] = "; ".join(derived)
    return out


__all__ = ["DATA_DERIVED_COLUMN", "KEYS_FROM_DATA", "KEYS_LISTED", "PART_SOURCES", "TYPED", "check_sources",
           "data_derived", "data_source", "is_data_derived", "is_private", "mark_sources", "param_sources",
           "private_source", "require_public_thresholds", "source_detail", "stamp_answers", "with_part_sources"]
