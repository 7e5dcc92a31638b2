"""Privacy specifications Φ of personalized DP: each user of a public roster U has its own ε (Def. 5, Sec. V).

A :class:`PrivacySpec` gives each user u of the universe U its Φ^u (smaller = stronger
privacy); the Minimum's α, the named thresholds and Sample's π are statistics of U, never of
the users present in one query's tuples (:meth:`PrivacySpec.threshold`).

**Where the roster comes from** (:attr:`PrivacySpec.roster`). The add/remove proofs need the
roster U and every Φ^u to be fixed in advance, independently of the data. A specification
built from the table itself (:func:`spec_from_column`, :func:`spec_from_labels`,
:func:`generate_tiers_for`: roster ``"table"``) changes when a tuple is added, so releases
under it are stated under substitution neighbours
(:mod:`~prdp_core.mechanisms.personalized.neighbours`). A roster declared independently of the
data (:func:`spec_from_values`, :func:`generate_tiers` over a number or a list of user ids:
roster ``"public"``) keeps the paper's add/remove statements.

The guarantee is per **tuple**: a user owning k tuples is protected at about k·Φ^u (group
privacy), which the specification builders report.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from typing import Any, Literal, Sequence

import numpy as np
import pandas as pd

from ...core.errors import ParameterError, PolicyError
from ...core.validate import positive

ThresholdSpec = float | Literal["max", "mean", "min"]

TIER_NAMES = ("conservative", "moderate", "liberal")

Roster = Literal["public", "table"]
ROSTERS: tuple[str, ...] = ("public", "table")

#: Plain-language provenance of a specification's roster, for release params, the ledger and the UI.
ROSTER_TEXT: dict[str, str] = {
    "public": "the roster of users and their Φ were fixed independently of the data (public)",
    "table": "the roster of users and their Φ were read from the table itself and are treated as public; only "
             "substitution neighbours are protected (n, the users and their Φ fixed; one tuple's value changes)",
}


def _check_eps(value: float, name: str) -> float:
    return positive(name, value, hint="Privacy parameters ε are strictly positive; the paper uses values in "
                                      "(0.01, 1].")


@dataclass(frozen=True)
class TierConfig:
    """Generated three-tier specification of the paper's Sec. V (defaults of Table I).

    Users are split at random into *conservative* (share ``f_c``), *moderate*
    (``f_m``) and *liberal* (1 − f_c − f_m) groups. Conservative users draw
    Φ ~ U[ε_C, ε_M], moderate users Φ ~ U[ε_M, ε_L], both rounded to ``round_to``
    (0.01 in the paper) and kept within their range; liberal users get ε_L. Smaller ε = stronger privacy. Group
    sizes are exact (⌊f·|U|⌉), assigned by a random permutation (the paper does not say
    whether shares are exact or multinomial).
    """

    f_c: float = 0.54
    f_m: float = 0.37
    eps_c: float = 0.01
    eps_m: float = 0.2
    eps_l: float = 1.0
    round_to: float = 0.01

    def __post_init__(self) -> None:
        for name in ("f_c", "f_m"):
            v = getattr(self, name)
            if not (isinstance(v, (int, float)) and math.isfinite(v) and 0 <= v <= 1):
                raise ParameterError(f"The share {name} must be between 0 and 1 (got {v!r}).")
        if self.f_c + self.f_m > 1 + 1e-12:
            raise ParameterError(f"The conservative and moderate shares add up to {self.f_c + self.f_m:.3g} > 1.",
                                 hint="Lower one of them: the liberal share is 1 − f_C − f_M.")
        ec, em, el = (_check_eps(self.eps_c, "ε_C"), _check_eps(self.eps_m, "ε_M"), _check_eps(self.eps_l, "ε_L"))
        if not ec <= em <= el:
            raise ParameterError(f"The tier ranges need ε_C ≤ ε_M ≤ ε_L (got {ec:g}, {em:g}, {el:g}).")
        if not (math.isfinite(self.round_to) and self.round_to >= 0):
            raise ParameterError("The rounding step must be 0 (no rounding) or a positive number.")

    @property
    def f_l(self) -> float:
        return max(0.0, 1.0 - self.f_c - self.f_m)

    def choice_range(self) -> tuple[float, float]:
        """Smallest and largest Φ the generator can give (after rounding): public, from the config only."""
        return float(self.eps_c), float(self.eps_l)  # rounded draws are kept within their tier's range

    def expected_mean(self) -> float:
        """Expected mean Φ over users (before rounding), e.g. 0.369 at the defaults."""
        return (self.f_c * (self.eps_c + self.eps_m) / 2 + self.f_m * (self.eps_m + self.eps_l) / 2
                + self.f_l * self.eps_l)


@dataclass(frozen=True)
class PrivacySpec:
    """A privacy specification Φ over the public universe U of users (Def. 5).

    Attributes
    ----------
    users:
        The public roster U (unique user ids). With ``user_col=None`` each row of the
        table the spec is applied to is its own user and ``users`` are row positions.
    eps:
        Φ^u for each user of ``users`` (strictly positive; missing choices already
        replaced by ``default_eps``). **Public** under PDP, like ε in DP: a user's
        choice must not depend on their sensitive values.
    default_eps:
        ε_def given to users who did not choose (Def. 5 discussion; 1.0 in the paper).
    user_col:
        Column of a table naming each tuple's owner, or ``None`` (one tuple per user).
    tiers:
        Tier label of each user for generated specifications, else ``None``.
    source:
        How the specification was obtained (shown in the UI and in release params).
    n_defaulted:
        Number of users who received ``default_eps``.
    notes:
        Warnings for the designer (several tuples per user, values outside (0.01, 1]…).
    roster:
        Provenance of the roster and its Φ: ``"public"`` when they were fixed
        independently of the data (given values, tiers generated over a given number or
        list of users) — releases keep each mechanism's own neighbour notion (add/remove
        for M, T, S, Stretching); ``"table"`` when they were read from the table being
        released (a column of ε, or tiers over the table's rows or users) — α, the
        thresholds and π are then functions of the table, so releases are stated under
        substitution neighbours only (n, the users and their Φ public).
    choice_range:
        Public range (smallest, largest) of the ε users could choose — the menu offered to
        them, or ``None`` when not declared. Used for ε̌ and ε̂ of the PrDP reduction,
        instead of the smallest and largest Φ actually chosen.
    """

    users: np.ndarray
    eps: np.ndarray
    default_eps: float = 1.0
    user_col: str | None = None
    tiers: np.ndarray | None = None
    source: str = ""
    n_defaulted: int = 0
    notes: tuple[str, ...] = ()
    tuples_per_user_max: int = 1
    roster: str = "public"
    choice_range: tuple[float, float] | None = None

    def __post_init__(self) -> None:
        e = np.asarray(self.eps, dtype=float)
        if e.ndim != 1 or e.size == 0:
            raise PolicyError("A privacy specification needs at least one user.")
        if not np.isfinite(e).all() or (e <= 0).any():
            raise PolicyError("Every ε of a privacy specification must be a positive finite number.")
        object.__setattr__(self, "eps", e)
        object.__setattr__(self, "users", np.asarray(self.users))
        _check_eps(self.default_eps, "The default ε")
        if self.roster not in ROSTERS:
            raise ParameterError(f"Unknown roster provenance '{self.roster}'.",
                                 hint="Use 'public' (fixed independently of the data) or 'table' (read from it).")
        if self.choice_range is not None:
            lo, hi = (_check_eps(v, "The range of choices") for v in self.choice_range)
            if lo > hi:
                raise ParameterError("The range of choices needs smallest ≤ largest.")
            object.__setattr__(self, "choice_range", (lo, hi))

    @property
    def n_users(self) -> int:
        return int(self.eps.size)

    @property
    def min_eps(self) -> float:
        """min_u Φ^u over the public universe U (the Minimum mechanism's α)."""
        return float(self.eps.min())

    @property
    def max_eps(self) -> float:
        """max_u Φ^u over U (the paper's default threshold for S and T)."""
        return float(self.eps.max())

    @property
    def mean_eps(self) -> float:
        """(1/|U|) Σ_u Φ^u over U (the paper's S-avg threshold)."""
        return float(self.eps.mean())

    def threshold(self, t: ThresholdSpec) -> float:
        """Resolve a threshold: ``"max"``, ``"mean"``, ``"min"`` or a positive number.

        The named thresholds are computed over the roster U of the specification, never
        over the users whose tuples happen to be in one query. If they moved with the
        tuples present, adding one conservative user's tuple would change t (or α) and
        with it the noise scale of everybody's answer: the output distributions on D and
        D + x would then differ by more than e^{Φ^x} (two Laplace laws with different
        scales have an unbounded likelihood ratio), and the proofs of Defs. 7–9 no longer
        apply. The roster and its choices are public under PDP, so statistics of it are
        free to use (notes §5.7) — provided the roster itself was fixed independently of
        the data (``roster="public"``). A roster read from the table (``roster="table"``)
        moves with the table, which is why such releases claim substitution neighbours only.
        """
        if isinstance(t, str):
            key = t.strip().lower()
            if key == "max":
                return self.max_eps
            if key in ("mean", "avg", "average"):
                return self.mean_eps
            if key == "min":
                return self.min_eps
            raise ParameterError(f"Unknown threshold '{t}'.", hint="Use 'max', 'mean', 'min' or a positive number.")
        return _check_eps(t, "The threshold t")

    def phi_for(self, table: pd.DataFrame | int) -> np.ndarray:
        """Φ of the owner of every tuple (row) of ``table``, aligned with its rows."""
        n = table if isinstance(table, (int, np.integer)) else len(table)
        if self.user_col is None:
            if n != self.eps.size:
                raise PolicyError(f"The specification lists {self.eps.size:,} users but the table has {n:,} rows.",
                                  hint="Rebuild the specification for this table, or name a user column.")
            return self.eps.copy()
        if isinstance(table, (int, np.integer)):
            raise PolicyError("This specification maps users through a column; pass the table.")
        if self.user_col not in table.columns:
            raise PolicyError(f"The specification's user column '{self.user_col}' is not in the table.")
        idx = pd.Index(self.users).get_indexer(table[self.user_col].to_numpy())
        missing = idx < 0
        if missing.any():
            ex = ", ".join(map(str, pd.unique(table[self.user_col].to_numpy()[missing])[:3]))
            raise PolicyError(f"{int(missing.sum()):,} tuple(s) belong to users outside the specification "
                              f"(e.g. {ex}).", hint="Every user of the universe U needs an ε (or the default).")
        return self.eps[idx]

    def tier_table(self) -> pd.DataFrame:
        """Users, share and ε range per tier (or per distinct ε when there are no tiers)."""
        if self.tiers is not None:
            df = pd.DataFrame({"tier": self.tiers, "eps": self.eps})
            order = {name: i for i, name in enumerate(TIER_NAMES)}
            out = df.groupby("tier", sort=False).agg(users=("eps", "size"), min=("eps", "min"), mean=("eps", "mean"),
                                                     max=("eps", "max"))
            out = out.reset_index()
            out["order"] = out["tier"].map(order).fillna(99)
            out = out.sort_values("order").drop(columns="order").reset_index(drop=True)
        else:
            q = pd.Series(self.eps)
            out = pd.DataFrame({"tier": ["all users"], "users": [q.size], "min": [q.min()], "mean": [q.mean()],
                                "max": [q.max()]})
        out.insert(2, "share", out["users"] / self.n_users)
        return out

    def summary(self) -> dict[str, Any]:
        return {"users": self.n_users, "min": self.min_eps, "mean": self.mean_eps, "max": self.max_eps,
                "defaulted": self.n_defaulted, "source": self.source, "roster": self.roster}


def _finish_spec(users: np.ndarray, eps: np.ndarray, *, default_eps: float, user_col: str | None, source: str,
                 n_defaulted: int, roster: str, tiers: np.ndarray | None = None, tuples_max: int = 1,
                 extra_notes: Sequence[str] = (), choice_range: tuple[float, float] | None = None) -> PrivacySpec:
    notes = list(extra_notes)
    if n_defaulted:
        notes.append(f"{n_defaulted:,} user(s) had no ε and received the default ε_def = {default_eps:g}.")
    out_of_range = int(((eps < 0.01 - 1e-12) | (eps > 1.0 + 1e-12)).sum())
    if out_of_range:
        notes.append(f"{out_of_range:,} user(s) chose ε outside the paper's range [0.01, 1] — allowed, but check "
                     "the units of the column.")
    if tuples_max > 1:
        notes.append(f"Some users own several tuples (up to {tuples_max}). PDP protects single tuples: a user with "
                     f"k tuples is protected at about k·Φ (group privacy).")
    return PrivacySpec(users=users, eps=eps, default_eps=default_eps, user_col=user_col, tiers=tiers, source=source,
                       n_defaulted=n_defaulted, notes=tuple(notes), tuples_per_user_max=tuples_max, roster=roster,
                       choice_range=choice_range)


def spec_from_values(eps: Sequence[float] | np.ndarray, *, default_eps: float = 1.0,
                     source: str = "given values", roster: Roster = "public",
                     choice_range: tuple[float, float] | None = None) -> PrivacySpec:
    """A specification with one user per value (missing values get ``default_eps``).

    ``roster``: ``"public"`` (default) when the values were fixed independently of the data
    being released — the caller vouches for it; pass ``"table"`` when they were read from
    that table. ``choice_range``: the public range of choices offered, if declared.
    """
    d = _check_eps(default_eps, "The default ε")
    e = pd.to_numeric(pd.Series(np.asarray(eps, dtype=object)), errors="coerce").to_numpy(dtype=float)
    _check_column_eps(e, source)
    miss = np.isnan(e)
    e = np.where(miss, d, e)
    return _finish_spec(np.arange(e.size), e, default_eps=d, user_col=None, source=source,
                        n_defaulted=int(miss.sum()), roster=roster, choice_range=choice_range)


def _check_column_eps(e: np.ndarray, what: str) -> None:
    bad = np.isfinite(e) & (e <= 0)
    if bad.any():
        raise PolicyError(f"{int(bad.sum()):,} value(s) of {what} are zero or negative; ε must be positive.",
                          hint="Fix those values or blank them so that they receive the default ε.")
    if np.isinf(e).any():
        raise PolicyError(f"{what} contains infinite values.", hint="Blank them so they receive the default ε.")


def spec_from_column(table: pd.DataFrame, column: str, *, user_col: str | None = None,
                     default_eps: float = 1.0, choice_range: tuple[float, float] | None = None) -> PrivacySpec:
    """Read Φ from a numeric column of the data (one row per tuple).

    ``column``: each tuple's owner's ε (non-numbers and blanks → ``default_eps``).
    ``user_col``: the owner of each tuple (the user the ε belongs to). When a user has
    several tuples with different ε, the smallest (most protective) is used and a
    note says so. ``choice_range``: the public range of choices offered to users, if
    declared (for the PrDP reduction's ε̌, ε̂).

    The users present in the table are taken as the roster U and their choices are
    published (Def. 5), which the UI states. Because roster and Φ are read from the table
    (``roster="table"``), they change when a tuple is added or removed: releases under this
    specification are stated under substitution neighbours only.
    """
    if column not in table.columns:
        raise PolicyError(f"'{column}' is not a column of the table.")
    d = _check_eps(default_eps, "The default ε")
    e = pd.to_numeric(table[column], errors="coerce").to_numpy(dtype=float)
    _check_column_eps(e, f"'{column}'")
    miss = np.isnan(e)
    src = f"column '{column}'"
    if user_col is None:
        e = np.where(miss, d, e)
        return _finish_spec(np.arange(e.size), e, default_eps=d, user_col=None, source=src,
                            n_defaulted=int(miss.sum()), roster="table", choice_range=choice_range)
    if user_col not in table.columns:
        raise PolicyError(f"The user column '{user_col}' is not in the table.")
    owners = table[user_col].to_numpy()
    if pd.isna(owners).any():
        raise PolicyError(f"The user column '{user_col}' has missing values.", hint="Every tuple needs an owner.")
    codes, users = pd.factorize(owners, sort=False)
    m = users.size
    vals = np.where(miss, np.inf, e)
    per_user = np.full(m, np.inf)
    np.minimum.at(per_user, codes, vals)
    hi = np.full(m, -np.inf)
    np.maximum.at(hi, codes, np.where(miss, -np.inf, e))
    conflicting = int(((np.isfinite(hi)) & (hi > per_user + 1e-12)).sum())
    defaulted = ~np.isfinite(per_user)
    per_user = np.where(defaulted, d, per_user)
    counts = np.bincount(codes, minlength=m)
    notes = []
    if conflicting:
        notes.append(f"{conflicting:,} user(s) have tuples with different ε; each gets the smallest of them.")
    return _finish_spec(np.asarray(users), per_user, default_eps=d, user_col=user_col, source=f"{src} per '{user_col}'",
                        n_defaulted=int(defaulted.sum()), tuples_max=int(counts.max()) if m else 1,
                        extra_notes=notes, roster="table", choice_range=choice_range)


def spec_from_labels(table: pd.DataFrame, column: str, mapping: dict[Any, float], *, user_col: str | None = None,
                     default_eps: float = 1.0) -> PrivacySpec:
    """Map friendly labels (e.g. low / medium / high privacy) to ε with an expert table (Sec. III).

    Labels missing from ``mapping`` (and blanks) receive ``default_eps``. The expert table
    is the public menu of choices (``choice_range`` = its smallest and largest ε, with
    ε_def); the roster is read from the table (``roster="table"``).
    """
    if column not in table.columns:
        raise PolicyError(f"'{column}' is not a column of the table.")
    clean = {}
    for k, v in mapping.items():
        clean[k] = _check_eps(v, f"ε for label '{k}'")
    e = table[column].map(clean).astype(float)
    mapped = pd.DataFrame({"_eps": e.to_numpy()})
    if user_col is not None:
        mapped[user_col] = table[user_col].to_numpy()
    menu = list(clean.values()) + [_check_eps(default_eps, "The default ε")]
    spec = spec_from_column(mapped, "_eps", user_col=user_col, default_eps=default_eps,
                            choice_range=(min(menu), max(menu)))
    return replace(spec, source=f"labels of '{column}' mapped to ε")


def generate_tiers(users: int | Sequence[Any] | np.ndarray, config: TierConfig | None = None, *,
                   rng: np.random.Generator, user_col: str | None = None,
                   default_eps: float = 1.0, roster: Roster = "public") -> PrivacySpec:
    """Generate a conservative / moderate / liberal specification (paper Sec. V).

    ``users``: the number of users (one tuple each, ``user_col=None``) or the roster of
    user ids (with ``user_col`` naming the owner column of the tables it will be
    applied to). The draw uses only ``rng``, ``config`` and ``users``; when the number or
    the ids are fixed independently of the data (a declared universe), the result is a
    legitimate public specification (``roster="public"``). :func:`generate_tiers_for`
    takes them from a table and marks the roster ``"table"``. The public range of
    choices is the config's (:meth:`TierConfig.choice_range`).
    """
    cfg = config or TierConfig()
    if isinstance(users, (int, np.integer)):
        n = int(users)
        ids = np.arange(n)
        if user_col is not None:
            raise ParameterError("Give the roster of user ids when the specification maps users by a column.")
    else:
        ids = np.asarray(users)
        n = ids.size
        if pd.Index(ids).has_duplicates:
            raise ParameterError("The roster of users has duplicate ids.")
    if n < 1:
        raise ParameterError("A specification needs at least one user.")
    n_c = int(round(cfg.f_c * n))
    n_m = min(int(round(cfg.f_m * n)), n - n_c)
    tier_idx = np.zeros(n, dtype=np.int8)
    perm = rng.permutation(n)
    tier_idx[perm[n_c:n_c + n_m]] = 1
    tier_idx[perm[n_c + n_m:]] = 2
    eps = np.full(n, float(cfg.eps_l))
    u = rng.random(n)
    lo = np.where(tier_idx == 0, cfg.eps_c, cfg.eps_m)
    hi = np.where(tier_idx == 0, cfg.eps_m, cfg.eps_l)
    draw = lo + u * (hi - lo)
    if cfg.round_to > 0:
        draw = np.round(np.round(draw / cfg.round_to) * cfg.round_to, 10)
        # rounding never leaves the tier's range (nor gives ε = 0): with ε_C below the step, a draw of
        # [0.001, 0.2] rounded to 0.00 would otherwise become 0.01 — above a liberal ε_L = 0.005
        draw = np.clip(draw, lo, hi)
    eps = np.where(tier_idx == 2, eps, draw)
    labels = np.asarray(TIER_NAMES, dtype=object)[tier_idx]
    src = (f"generated tiers (f_C={cfg.f_c:g}, f_M={cfg.f_m:g}, ε_C={cfg.eps_c:g}, ε_M={cfg.eps_m:g}, "
           f"ε_L={cfg.eps_l:g})")
    return _finish_spec(ids, eps, default_eps=default_eps, user_col=user_col, source=src, n_defaulted=0,
                        tiers=labels, roster=roster, choice_range=cfg.choice_range())


def generate_tiers_for(table: pd.DataFrame, config: TierConfig | None = None, *, rng: np.random.Generator,
                       user_col: str | None = None) -> PrivacySpec:
    """Generated tiers for the users of ``table`` (one per row, or one per value of ``user_col``).

    The roster (the number of rows, or the owners present) is read from the table, so the
    specification is marked ``roster="table"``: adding a row changes every draw. Releases
    under it are stated under substitution neighbours (n and the users public). For
    add/remove statements, call :func:`generate_tiers` with a universe fixed in advance.
    """
    if user_col is None:
        return generate_tiers(len(table), config, rng=rng, roster="table")
    if user_col not in table.columns:
        raise PolicyError(f"The user column '{user_col}' is not in the table.")
    owners = table[user_col].to_numpy()
    users = pd.unique(owners)
    counts = pd.Series(owners).value_counts()
    spec = generate_tiers(users, config, rng=rng, user_col=user_col, roster="table")
    if len(counts) and int(counts.max()) > 1:
        spec = replace(spec, tuples_per_user_max=int(counts.max()),
                       notes=spec.notes + (f"Some users own several tuples (up to {int(counts.max())}). PDP protects "
                                           "single tuples: a user with k tuples is protected at about k·Φ.",))
    return spec
