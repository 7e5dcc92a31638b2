"""The contract of a mechanism entry of a study: a typed, frozen run configuration per kind.

A :class:`RunConfig` subclass owns everything about one mechanism kind of the study config
(``mechanisms[i]``): it parses and validates its entry (:meth:`RunConfig.parse`, the messages name
the offending key), writes it back (:meth:`RunConfig.to_config`, the normalised mapping the
schema documents), checks the columns it reads against the data, runs it (:meth:`RunConfig.run`),
writes its reproduction code (:meth:`RunConfig.code`) and tells the study's tables and report how
its releases are accounted. Subclasses are registered by :func:`register` into :data:`RUN_KINDS`;
the parser, the runner, the reproduction script, the tables and the report dispatch through it.

A run configuration is also a read-only mapping over :meth:`RunConfig.to_config`, so code that
reads an entry as the config's mapping (``m["kind"]``, ``m.get("seed")``, ``dict(m)``) reads the
same values; reading a nested value gives a fresh copy (the configuration cannot be changed).
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Callable, ClassVar, TypeGuard, TypeVar

from ...core.errors import PolicyError
from ...core.noise_source import Noise
from ..config.fields import _bool, _choice, _err, _int, _mapping, _text
from ..config.keys import MAX_SEED

if TYPE_CHECKING:
    from ...core.release import Release
    from ...engines import EngineDataset
    from ..config.study import Study

#: A released result of a run: (label suffix, Release); the suffix names one of several releases
#: of an entry (the PrDP algorithms compared side by side), empty for an entry's only release.
Output = tuple[str, "Release"]

#: A budget-table row of a release: (query, group level, measure "rho" or "eps", budget, how a
#: record is charged).
BudgetRow = tuple[str, str, str, float, str]

#: Checks that a column the study names is in the data: ``need(column, key, measure=False)``.
ColumnCheck = Callable[..., None]

#: The keys every mechanism entry may hold besides its own.
COMMON_KEYS = ("kind", "label", "seed")


@dataclass(frozen=True)
class ParseContext:
    """What an entry's validation may depend on besides its own keys.

    ``policy`` holds the study's normalised policy sections (thresholds, budget, specification,
    tiers), ``has_workload`` whether the study has a workload, ``engine`` the study's
    ``data.engine`` (records held by an engine leave out the algorithms that need them)."""

    policy: Mapping[str, Any]
    has_workload: bool = False
    engine: str = "memory"


@dataclass(frozen=True, eq=False, kw_only=True)
class RunConfig(Mapping[str, Any]):
    """One validated mechanism entry of a study, of the kind :attr:`kind`.

    ``label`` names its releases in every output (default "i. kind"); ``seed`` fixes its noise
    (teaching and review runs only: a seeded release is reproducible by whoever knows the seed);
    ``secure`` runs it with exact samplers and a system random source, unseeded (the only form
    fit for a real release; a secure entry has no seed)."""

    #: The value of the entry's ``kind`` key.
    kind: ClassVar[str]
    #: The entry's own keys (besides ``kind``, ``label``, ``seed`` and ``secure``), in the order
    #: an unknown-key message lists them.
    KEYS: ClassVar[tuple[str, ...]] = ()
    #: Keys the entry must hold.
    REQUIRED: ClassVar[tuple[str, ...]] = ()
    #: What the kind releases, in a sentence of the product's own (the reproduction notebook's explanation).
    ABOUT: ClassVar[str] = ""
    #: Import lines the reproduction code of this kind needs.
    IMPORTS: ClassVar[tuple[str, ...]] = ()
    #: True when a release's per-record losses are those of the study's policy (shown once, from the
    #: policy, in the report's CDFs and the (ε, δ) table) rather than each release's own.
    LOSS_FROM_POLICY: ClassVar[bool] = False
    #: True when the report draws one answers figure per query of a release.
    FIGURE_PER_QUERY: ClassVar[bool] = False
    #: The policy section the entry releases under (``thresholds``, ``budget``, ``specification``, ``tiers``;
    #: None for a kind with no policy part): a study without that section is refused, and the app's page
    #: that designs the part runs the study's first entry of this kind.
    POLICY_PART: ClassVar[str | None] = None

    label: str | None = None
    seed: int | None = None
    secure: bool = False

    # -- the config entry --------------------------------------------------------------

    @classmethod
    def parse(cls, entry: Mapping[str, Any], path: str, context: ParseContext) -> RunConfig:
        """Validate ``entry`` (the mapping at ``path``, e.g. ``mechanisms[2]``); ConfigError names the key."""
        d = _mapping(entry, path, COMMON_KEYS + cls.KEYS + ("secure",), required=cls.REQUIRED)
        fields = cls.parse_fields(d, path, context)
        label = None if d.get("label") is None else _text(d["label"], f"{path}.label", max_len=200)
        seed = None if d.get("seed") is None else _int(d["seed"], f"{path}.seed", hi=MAX_SEED)
        secure = "secure" in d and _bool(d["secure"], f"{path}.secure")
        if secure and seed is not None:
            raise _err(f"{path}.seed", "a secure release is unseeded: drop the seed or the secure flag.")
        return cls(label=label, seed=seed, secure=secure, **fields)

    @classmethod
    def parse_fields(cls, d: Mapping[str, Any], path: str, context: ParseContext) -> dict[str, Any]:
        """The kind's own fields from the entry ``d`` (its keys already checked against :attr:`KEYS`)."""
        return {}

    def config_fields(self) -> dict[str, Any]:
        """The kind's own keys of :meth:`to_config`, in the schema's order (plain values, fresh copies)."""
        return {}

    def to_config(self) -> dict[str, Any]:
        """The normalised entry: ``kind``, the kind's keys, then ``label``, ``seed`` and ``secure`` when set
        (``parse_config`` reads it back to an equal configuration)."""
        out: dict[str, Any] = {"kind": self.kind, **self.config_fields()}
        if self.label is not None:
            out["label"] = self.label
        if self.seed is not None:
            out["seed"] = self.seed
        if self.secure:
            out["secure"] = True
        return out

    def describe(self) -> str:
        """A short description of what the entry releases (its label, else its kind)."""
        return self.label or self.kind.replace("_", " ")

    def release_label(self, i: int) -> str:
        """The label of the releases of entry ``i``: its ``label``, else "i+1. kind"."""
        return self.label or f"{i + 1}. {self.kind}"

    def noise_seed(self, study_seed: int, i: int) -> int:
        """The seed of entry ``i``: its own ``seed``, else the study seed + i (distinct noise per release)."""
        return self.seed if self.seed is not None else (study_seed + i) % (MAX_SEED + 1)

    def check_columns(self, need: ColumnCheck, path: str) -> None:
        """Check the columns the entry names against the data (``need(column, key, measure=...)``)."""

    # -- running -------------------------------------------------------------------------

    def run(self, study: Study, ds: Any, seed: int, reveal: bool) -> list[Output]:
        """Run the entry on the dataset ``ds`` with the noise of :func:`mechanism_noise` (``Noise.teaching(seed)``,
        or ``Noise.secure()``, unseeded, when :attr:`secure`); ``reveal`` attaches true answers and per-record
        losses (teaching mode)."""
        raise NotImplementedError

    def code(self, study: Study, i: int, table: str) -> list[str]:
        """The reproduction lines of entry ``i``: the same engine calls as :meth:`run`, each release
        appended to ``releases`` as (label, Release). ``table`` is what the mechanisms read (``ds.table``,
        or ``ds`` for a table held by an engine). User text only as ``repr`` literals."""
        raise NotImplementedError

    # -- accounting in the study's tables ------------------------------------------------

    def budget_rows(self, study: Study, rel: Release) -> list[BudgetRow]:
        """The budget-table rows of one release: by default one per ledger entry, at its worst-case loss."""
        rows: list[BudgetRow] = []
        for e in rel.entries:
            bound = e.loss.supremum()
            if not math.isfinite(bound):
                bound = self.unbounded_budget(rel)
            q = str(rel.answers["query"].iloc[0]) if "query" in rel.answers.columns and len(rel.answers) else e.label
            rows.append((q, "(all records)", e.measure, bound, e.loss.describe()))
        return rows

    def unbounded_budget(self, rel: Release) -> float:
        """The budget shown for a release whose loss has no finite public bound (NaN: none)."""
        return float("nan")

    def splitting_policy(self, rel: Release) -> Any:
        """The unit-splitting policy a release was made under (None for other kinds)."""
        return None

    def comparison(self, run: Any, label: str, rel: Release, teaching: bool) -> list[tuple[str, Any]]:
        """Titled tables (pandas DataFrames) the report sets beside the policy's releases for this release
        (``run`` — the :class:`~prdp_core.study.runner.StudyRun`, ``teaching`` — the report's mode): none by
        default; the legacy methods' comparison gives its summary per method and its cells."""
        return []

    # -- the read-only mapping -------------------------------------------------------------

    def __getitem__(self, key: str) -> Any:
        return self.to_config()[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self.to_config())

    def __len__(self) -> int:
        return len(self.to_config())


RUN_KINDS: dict[str, type[RunConfig]] = {}

R = TypeVar("R", bound=type[RunConfig])


def register(cls: R) -> R:
    """Class decorator: add a :class:`RunConfig` subclass to :data:`RUN_KINDS` under its ``kind``."""
    kind = cls.__dict__.get("kind")
    if not isinstance(kind, str) or not kind:
        raise TypeError(f"{cls.__name__} must set its kind.")
    if RUN_KINDS.get(kind, cls) is not cls:
        raise ValueError(f"the mechanism kind '{kind}' is already registered by {RUN_KINDS[kind].__name__}.")
    RUN_KINDS[kind] = cls
    return cls


def parse_run(entry: Any, i: int, context: ParseContext) -> RunConfig:
    """Validate ``mechanisms[i]`` of a study by the class registered for its ``kind``."""
    path = f"mechanisms[{i}]"
    kinds = tuple(RUN_KINDS)
    if not isinstance(entry, Mapping) or "kind" not in entry:
        raise _err(path, f"must be a mapping with a 'kind' ({', '.join(kinds)}).")
    kind = _choice(entry["kind"], f"{path}.kind", kinds)
    return RUN_KINDS[kind].parse(entry, path, context)


def held_by_engine(ds: Any) -> TypeGuard[EngineDataset]:
    """True for a dataset whose table is held by an engine (statistics computed where the data lives)."""
    return getattr(ds, "engine", None) is not None


def needs_records(ds: Any, what: str) -> None:
    """Refuse a mechanism that works on the records themselves for a table held by an engine."""
    if held_by_engine(ds) and ds.engine.name != "memory":
        raise PolicyError(f"{what} works on the records themselves; this table is held by the {ds.engine.name} engine.",
                          hint="Use data.engine: memory (or a sample of the table) for this mechanism.")


def mechanism_noise(secure: bool, seed: int) -> Noise:
    """The noise of a mechanism entry: the exact samplers, unseeded, when it is ``secure``; else its seed."""
    return Noise.secure() if secure else Noise.teaching(seed)


SECURE_NOTE = "# secure mode: exact samplers and a system random source — unseeded, so every run differs"


def noise_lines(secure: bool, seed: int) -> list[str]:
    """The reproduction code's noise source ``noise``, the :class:`~prdp_core.core.noise_source.Noise` value the
    runner uses: ``Noise.secure()`` (unseeded, said in a comment) or ``Noise.teaching(seed)``."""
    return [SECURE_NOTE, "noise = Noise.secure()"] if secure else [f"noise = Noise.teaching({int(seed)})"]
