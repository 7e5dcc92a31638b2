"""Personalized differential privacy (PDP): every user publicly chooses an ε.

Jorgensen, Yu and Cormode, "Conservative or Liberal? Personalized Differential Privacy"
(ICDE 2015). A *privacy specification* Φ : U → ℝ⁺ (Def. 5) gives each user u of a
public universe U its own ε, Φ^u (smaller = stronger privacy). A mechanism M is
**Φ-PDP** (Def. 6) when, for neighbouring datasets D ∼ D′ that differ in one tuple x
owned by user u, Pr[M(D) ∈ O] ≤ exp(Φ^u) · Pr[M(D′) ∈ O] (in both directions).

Neighbour notions (they differ between mechanisms, and the app says so):

* :class:`Minimum`, :class:`Threshold`, :class:`Sample` and :class:`Stretching` are proved
  under **add/remove** neighbours (Def. 2: D′ = D plus or minus one tuple);
* :class:`PE` is proved only under **substitution** neighbours (Sec. IV-C: one tuple's
  *value* changes, n is public). A substitution is a removal plus an addition, so a
  substitution-ε is roughly twice as weak as an add/remove-ε; releases of the two
  kinds should not be totalled in one ledger as if they were the same unit.

The guarantee is per **tuple**: a user owning k tuples is protected at about k·Φ^u
(group privacy), which the specification builders report.

**Where the roster comes from** (:attr:`PrivacySpec.roster`). The add/remove proofs need
the roster U and every Φ^u to be fixed in advance, independently of the data: α, the
named thresholds and Sample's π are statistics of U. A specification built from the
table itself (:func:`spec_from_column`, :func:`spec_from_labels`,
:func:`generate_tiers_for`: roster ``"table"``) changes when a tuple is added (one
added user with Φ = 0.01 moves α from 1 to 0.01: unbounded loss). Releases under such a
specification are therefore stated under **substitution** neighbours — n, the users and
their Φ are public, one tuple's value changes — with the per-user loss recomputed for
that notion (:func:`substitution_factor`; Sample by the amplification bound of
:func:`sample_delivered_substitution`). A roster declared independently of the data
(:func:`spec_from_values`, :func:`generate_tiers` over a number or a list of user ids:
roster ``"public"``) keeps the paper's add/remove statements.

Mechanisms (Sec. IV):

* :class:`Minimum` (Def. 7) — any ε-DP mechanism at α = min_u Φ^u;
* :class:`Threshold` (Def. 8) — drop users with Φ^u < t, run at ε = t;
* :class:`Sample` (Def. 9, Thm 5) — keep tuple x with probability
  π_x = (e^{Φ^x} − 1)/(e^t − 1) (1 if Φ^x ≥ t), then run a t-DP mechanism on the kept
  tuples; user x receives exactly min(Φ^x, t);
* :class:`PE` (Def. 10, Thm 6) — the personalized exponential mechanism with score
  d_f(D, r, Φ) (Eq. 5), for count, median and min, computed with the fast formulas of
  Sec. IV-C (sign-corrected, tie-safe for the median; brute-force verified in tests);
* :class:`Stretching` (Alaggan et al., as translated in Sec. V-A) — scale each value by
  Φ^x/ε_ref and add Laplace(Δ/ε_ref); for sums and counts.

The black-box ε-DP mechanisms wrapped by Minimum, Threshold and Sample are add/remove
DP and cope with any input size (also empty): Laplace (or the two-sided geometric)
for count and sum, a split-budget ratio for the mean, and the exponential mechanism
for the median (rank score, sensitivity ½) and the minimum (change-count score,
sensitivity 1). Any other ε-DP mechanism can be wrapped instead: a :class:`BlackBox`
on the :class:`Query` (it must be ε-DP under add/remove neighbours for any input size).

Thresholds and the Minimum's α are computed from the specification over its roster U
(:class:`PrivacySpec`), never from the users present in one query's tuples (see
:meth:`PrivacySpec.threshold`). The output range of median and min is the query's declared
value type (:attr:`Query.integer`), never inferred from the values.

The module also holds the analytic error formulas (closed forms where the noise allows),
vectorised simulations, the paper's synthetic experiments (Sec. V-A, Table I) and the
PDP → PrDP reduction E(r) = c·v_bud of the general framework paper (Sec. 3.4).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace
from typing import Any, Callable, ClassVar, Iterable, Literal, Sequence

import numpy as np
import pandas as pd

from ..accounting import LedgerEntry, RecordLoss
from ..errors import ParameterError, PolicyError
from ..validate import positive
from ..release import Release
from .. import noise as _noise

QueryKind = Literal["count", "sum", "mean", "median", "min"]
QUERY_KINDS: tuple[str, ...] = ("count", "sum", "mean", "median", "min")
Neighbours = Literal["add/remove", "substitution"]
ThresholdSpec = float | Literal["max", "mean", "min"]
MEDIAN_SCORES = ("rank", "changes")

#: Plain-language statement of each neighbour notion, for docstrings and the UI.
NEIGHBOUR_TEXT: dict[str, str] = {
    "add/remove": "add/remove neighbours (datasets differ by one tuple being present or absent)",
    "substitution": "substitution neighbours (datasets differ in the value of one tuple; the number of "
                    "tuples n is public)",
}

TIER_NAMES = ("conservative", "moderate", "liberal")

Roster = Literal["public", "table"]
ROSTERS: tuple[str, ...] = ("public", "table")

#: Plain-language provenance of a specification's roster, for release params, the ledger and the UI.
ROSTER_TEXT: dict[str, str] = {
    "public": "the roster of users and their Φ were fixed independently of the data (public)",
    "table": "the roster of users and their Φ were read from the table itself and are treated as public; only "
             "substitution neighbours are protected (n, the users and their Φ fixed; one tuple's value changes)",
}

#: The range of choices used in the paper's experiments (Sec. V); the public fallback for the PrDP
#: reduction's ε̌ and ε̂ when a specification declares no range of its own.
PAPER_CHOICE_RANGE = (0.01, 1.0)


# ---------------------------------------------------------------------------
# Privacy specifications (Def. 5, Sec. V)
# ---------------------------------------------------------------------------


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
            out = df.groupby("tier", sort=False)["eps"].agg(users="size", min="min", mean="mean", max="max")
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


# ---------------------------------------------------------------------------
# Queries
# ---------------------------------------------------------------------------


BlackBoxFn = Callable[[np.ndarray, float, np.random.Generator], float]


@dataclass(frozen=True)
class BlackBox:
    """A caller-supplied ε-DP mechanism DP_f (Sec. IV) for Minimum, Threshold and Sample to wrap.

    The paper's wrappers take *any* ε-DP mechanism for f as a black box; the built-in ones
    (Laplace or geometric counts and sums, the split-budget mean, the exponential-mechanism
    median and minimum) are used when a :class:`Query` has no ``black_box``.

    fn:
        ``fn(values, eps, rng) -> float``. ``values`` are the prepared per-tuple inputs of the
        query (0/1 bits for a count, values clipped to [lo, hi] otherwise) of the tuples the
        wrapper passes on — all of them (Minimum), those with Φ ≥ t (Threshold) or the secret
        random sample (Sample); ``eps`` is the ε it may spend; ``rng`` the generator it must
        draw its randomness from. **Privacy meaning:** ``fn`` must be ε-DP under
        **add/remove** neighbours (one input present or absent) for every input size, empty
        included — the proofs of Defs. 7–9 and Thm 5 use exactly that. The engine cannot
        check it; a black box that is not ε-DP voids every per-user ε reported for it.
    substitution:
        k such that ``fn`` run at ε is k·ε-DP under **substitution** neighbours (one input's
        value changes, the number of inputs fixed). Used only when the roster is read from
        the table (releases then stated under substitution): the wrapper runs ``fn`` at ε/max(k, 1)
        and reports the per-user ε for k. The default 2 holds for every add/remove ε-DP ``fn``
        (a substitution is a removal followed by an addition); declare less only with a proof.
    name:
        Shown in labels, release parameters and the ledger.
    """

    name: str
    fn: BlackBoxFn
    substitution: float = 2.0

    def __post_init__(self) -> None:
        if not isinstance(self.name, str) or not self.name.strip():
            raise ParameterError("A black-box mechanism needs a name.")
        if not callable(self.fn):
            raise ParameterError(f"The black box '{self.name}' is not callable.",
                                 hint="Pass a function fn(values, eps, rng) -> float.")
        k = self.substitution
        if isinstance(k, bool) or not isinstance(k, (int, float)) or not (math.isfinite(k) and 0 < k <= 2):
            raise ParameterError(f"The substitution factor of '{self.name}' must be in (0, 2] (got {k!r}).",
                                 hint="2 is valid for every add/remove ε-DP mechanism.")

    def __call__(self, values: np.ndarray, eps: float, rng: np.random.Generator) -> float:
        """Run ``fn`` on ``values`` at ``eps``; its failures become a :class:`ParameterError`."""
        e = _check_eps(eps, "ε")
        try:
            out = self.fn(np.asarray(values, dtype=float), e, rng)
            est = float(out)
        except Exception as exc:  # noqa: BLE001 - a user's function: report, never crash the app
            raise ParameterError(f"The black-box mechanism '{self.name}' failed: {exc}") from None
        if not math.isfinite(est):
            raise ParameterError(f"The black-box mechanism '{self.name}' returned {est!r}, not a finite number.")
        return est


@dataclass(frozen=True)
class Query:
    """What is asked of the data.

    kind:
        ``count`` (tuples with value ≥ ``cutoff``; every tuple when ``column`` is None),
        ``sum``, ``mean``, ``median`` or ``min`` of ``column``.
    column:
        The value column.
    cutoff:
        For count: a tuple counts when its value is ≥ ``cutoff`` (1 for a 0/1 column —
        the paper's setting).
    median_score:
        Score of the black-box ε-DP median used by Minimum, Threshold and Sample:
        ``"rank"`` (default; −(max(L, G) − n/2)⁺, add/remove sensitivity ½, so weights
        exp(ε·s)) or ``"changes"`` (the change-count score of Eq. 3, sensitivity 1, weights
        exp(ε·s/2) — twice as flat; what the paper's uniform-Φ PE reduces to). Both are
        ε-DP under add/remove neighbours (brute-force checked in the tests).
    lo, hi:
        Public bounds of the values for sum, mean, median and min: values are clipped
        to [lo, hi] (a per-tuple step, no privacy cost). They set the sensitivity of
        sums (max(|lo|, |hi|)) and the output range R of median and min. Choose them
        without looking at the data in a real release.
    integer:
        Declared value type of ``column`` (**public**, like lo and hi): ``True`` when the
        values are whole numbers by definition (counts of employees, ages in years…).
        Median and min then answer on the integers of [lo, hi] (lo and hi must be whole
        numbers) and every value is rounded to the nearest integer before the mechanism
        (a per-tuple step, no privacy cost). ``False`` (default): the continuum [lo, hi].
        The output range is never inferred from the values: if it were, changing one
        tuple from 4 to 4.5 would switch every answer from integers to non-integers and
        the two output laws would have disjoint supports (unbounded loss).
    black_box:
        Optional :class:`BlackBox`: the ε-DP mechanism that Minimum, Threshold and Sample run
        on the prepared values instead of the built-in one for ``kind`` (``kind`` still says
        how values are prepared and what the true answer is). It must be ε-DP under
        add/remove neighbours; PE and Stretching have their own mechanisms and refuse it.
    """

    kind: str = "count"
    column: str | None = None
    cutoff: float = 1.0
    lo: float = 0.0
    hi: float | None = None
    median_score: str = "rank"
    integer: bool = False
    black_box: BlackBox | None = None

    def __post_init__(self) -> None:
        if self.black_box is not None and not isinstance(self.black_box, BlackBox):
            raise ParameterError("The query's black box must be a BlackBox(name, fn, substitution).")
        if self.median_score not in MEDIAN_SCORES:
            raise ParameterError(f"Unknown median score '{self.median_score}'.",
                                 hint="Use 'rank' (sensitivity ½) or 'changes' (the paper's Eq. 3, sensitivity 1).")
        if self.kind not in QUERY_KINDS:
            raise ParameterError(f"Unknown query '{self.kind}'.", hint=f"Use one of: {', '.join(QUERY_KINDS)}.")
        if self.kind != "count":
            if self.column is None:
                raise ParameterError(f"A {self.kind} needs a value column.")
            if self.hi is None or not math.isfinite(float(self.hi)) or not math.isfinite(float(self.lo)):
                raise ParameterError(f"A {self.kind} needs finite public bounds lo and hi for the values.")
            if float(self.hi) <= float(self.lo):
                raise ParameterError(f"The value bounds must satisfy lo < hi (got {self.lo:g} and {self.hi:g}).")
        elif not math.isfinite(float(self.cutoff)):
            raise ParameterError("The count cut-off must be a finite number.")
        if not isinstance(self.integer, (bool, np.bool_)):
            raise ParameterError("The declared value type 'integer' must be True or False.")
        if self.integer and self.kind in ("median", "min"):
            _integer_bounds(float(self.lo), float(self.hi))

    @property
    def bound(self) -> float:
        """Add/remove sensitivity of a sum of clipped values: max(|lo|, |hi|) (1 for count)."""
        if self.kind == "count":
            return 1.0
        return float(max(abs(self.lo), abs(self.hi or 0.0)))

    def describe(self) -> str:
        if self.kind == "count":
            base = "count of tuples" if self.column is None else f"count of {self.column} ≥ {self.cutoff:g}"
            return base + self._via()
        grid = " (integers)" if self.integer and self.kind in ("median", "min") else ""
        return f"{self.kind} of {self.column} in [{self.lo:g}, {self.hi:g}]{grid}{self._via()}"

    def _via(self) -> str:
        return f" via {self.black_box.name}" if self.black_box is not None else ""

    def raw(self, table: pd.DataFrame) -> np.ndarray:
        """The column as numbers (for true answers)."""
        if self.column is None:
            return np.ones(len(table))
        if self.column not in table.columns:
            raise ParameterError(f"'{self.column}' is not a column of the table.")
        v = pd.to_numeric(table[self.column], errors="coerce").to_numpy(dtype=float)
        if np.isnan(v).any():
            raise ParameterError(f"'{self.column}' has {int(np.isnan(v).sum()):,} missing or non-numeric value(s).",
                                 hint="Choose a measure column (the Data page cleans measures).")
        return v

    def prepare(self, raw: np.ndarray) -> np.ndarray:
        """Per-tuple inputs of the mechanisms: 0/1 bits for count, clipped values otherwise
        (rounded to the nearest integer first for a median or min of declared integers)."""
        v = np.asarray(raw, dtype=float)
        if self.kind == "count":
            return (v >= self.cutoff).astype(float) if self.column is not None else np.ones(v.size)
        return _on_grid(v, float(self.lo), float(self.hi), self.on_integers)

    @property
    def on_integers(self) -> bool:
        """Whether median and min answer on the integers of [lo, hi] (the declared value type; public)."""
        return bool(self.integer) and self.kind in ("median", "min")

    def truth(self, raw: np.ndarray) -> float:
        """True answer on the unclipped values (so errors include any clipping bias)."""
        v = np.asarray(raw, dtype=float)
        if self.kind == "count":
            return float(self.prepare(v).sum())
        if v.size == 0:
            return float("nan")
        if self.kind == "sum":
            return float(v.sum())
        if self.kind == "mean":
            return float(v.mean())
        if self.kind == "median":
            return float(np.sort(v)[v.size // 2])  # upper median, as the mechanisms (0-indexed rank ⌊n/2⌋)
        return float(v.min())



def _integer_bounds(lo: float, hi: float) -> None:
    if lo != round(lo) or hi != round(hi):
        raise ParameterError(f"An integer output range needs whole-number bounds (got lo = {lo:g}, hi = {hi:g}).",
                             hint="Round the public bounds to whole numbers, or declare the values continuous.")


def _on_grid(values: np.ndarray, lo: float, hi: float, integer: bool) -> np.ndarray:
    """Values moved onto the public output range: clipped to [lo, hi], and rounded to the nearest
    integer first when the range is the integers (a per-tuple step that depends on nothing but
    the tuple and the public bounds)."""
    v = np.asarray(values, dtype=float)
    if integer:
        _integer_bounds(lo, hi)
        v = np.rint(v)
    return np.clip(v, lo, hi)


# ---------------------------------------------------------------------------
# Output-range pieces (Sec. IV-C "for large R"): data points and the open gaps between them
# ---------------------------------------------------------------------------


@dataclass(frozen=True)
class Pieces:
    """The output range [lo, hi] cut at the data values.

    Every r inside one piece has the same counts L(r) = #{x < r} and G(r) = #{x > r},
    hence the same score. ``size`` is the number of integers (integer grid) or the
    length (continuous range) of each piece; points have size 1 on an integer grid and
    are left out of a continuous range (measure zero).
    """

    start: np.ndarray
    end: np.ndarray
    size: np.ndarray
    L: np.ndarray
    G: np.ndarray
    is_point: np.ndarray
    n: int
    integer: bool


def _pieces(xs_sorted: np.ndarray, lo: float, hi: float, integer: bool) -> Pieces:
    xs = np.asarray(xs_sorted, dtype=float)
    n = xs.size
    if n == 0:
        size = (hi - lo + 1) if integer else (hi - lo)
        return Pieces(np.array([lo]), np.array([hi]), np.array([max(size, 0.0)]), np.array([0]), np.array([0]),
                      np.array([False]), 0, integer)
    change = np.empty(n, dtype=bool)
    change[0] = True
    np.not_equal(xs[1:], xs[:-1], out=change[1:])
    first = np.flatnonzero(change)
    u = xs[first]
    cnt = np.diff(np.append(first, n))
    cum = np.cumsum(cnt)
    before = cum - cnt
    k = u.size
    step = 1.0 if integer else 0.0
    # points
    p_start, p_end = u, u
    p_size = np.full(k, 1.0 if integer else 0.0)
    p_L, p_G = before, n - cum
    # gaps: below u0, between consecutive values, above the last value
    g_start = np.concatenate(([lo], u + step))
    g_end = np.concatenate((u - step, [hi]))
    g_size = (g_end - g_start + 1.0) if integer else (g_end - g_start)
    g_L = np.concatenate(([0], cum))
    g_G = n - g_L
    start = np.concatenate((p_start, g_start))
    end = np.concatenate((p_end, g_end))
    size = np.concatenate((p_size, g_size))
    L = np.concatenate((p_L, g_L)).astype(np.int64)
    G = np.concatenate((p_G, g_G)).astype(np.int64)
    is_point = np.concatenate((np.ones(k, bool), np.zeros(k + 1, bool)))
    keep = size > 0
    order = np.argsort(start[keep], kind="stable")
    return Pieces(start[keep][order], end[keep][order], size[keep][order], L[keep][order], G[keep][order],
                  is_point[keep][order], n, integer)


def _log_weights(pieces: Pieces, logits: np.ndarray) -> np.ndarray:
    return np.log(pieces.size) + logits


def _draw_from_pieces(pieces: Pieces, logits: np.ndarray, rng: np.random.Generator) -> float:
    """Pick a piece with probability ∝ size·exp(logit) (Gumbel-max), then a value uniformly in it."""
    if pieces.size.size == 0:
        raise ParameterError("The output range is empty.", hint="Choose bounds with lo < hi.")
    lw = _log_weights(pieces, logits)
    i = int(np.argmax(lw + rng.gumbel(size=lw.size)))
    if pieces.integer:
        return float(pieces.start[i] + math.floor(rng.random() * pieces.size[i]))
    return float(pieces.start[i] + rng.random() * (pieces.end[i] - pieces.start[i]))


def _pieces_probs(pieces: Pieces, logits: np.ndarray) -> np.ndarray:
    lw = _log_weights(pieces, logits)
    w = np.exp(lw - lw.max())
    return w / w.sum()


def _pieces_mse(pieces: Pieces, probs: np.ndarray, target: float) -> tuple[float, float]:
    """Exact mean and mean squared error (about ``target``) of a value drawn from the pieces."""
    mid = (pieces.start + pieces.end) / 2
    if pieces.integer:
        var_in = (pieces.size ** 2 - 1) / 12
    else:
        var_in = (pieces.end - pieces.start) ** 2 / 12
    mean = float(np.sum(probs * mid))
    mse = float(np.sum(probs * (var_in + (mid - target) ** 2)))
    return mean, mse


def expand_pieces(pieces: Pieces, probs: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The full pmf over the integer range (small ranges only; for audits and plots)."""
    if not pieces.integer:
        raise ParameterError("Only integer output ranges can be expanded to a pmf.")
    r = np.arange(int(pieces.start.min()), int(pieces.end.max()) + 1)
    idx = np.searchsorted(pieces.start, r, side="right") - 1
    return r, probs[idx] / pieces.size[idx]


# ---------------------------------------------------------------------------
# Black-box ε-DP mechanisms (add/remove neighbours, any input size)
# ---------------------------------------------------------------------------

CountNoise = Literal["laplace", "geometric"]


def noise_variance(eps: float, sensitivity: float = 1.0, noise: CountNoise = "laplace") -> float:
    """Variance of the noise of an ε-DP count or sum: 2(Δ/ε)² (Laplace) or 2a/(1 − a)², a = e^{−ε} (geometric, Δ = 1)."""
    e = _check_eps(eps, "ε")
    if noise == "geometric":
        a = math.exp(-e)
        return 2 * a / (1 - a) ** 2
    r = sensitivity / e
    return 2.0 * r * r  # inf for a vanishing ε (float ** would raise OverflowError)


def dp_count(bits: np.ndarray, eps: float, *, rng: np.random.Generator, noise: CountNoise = "laplace") -> float:
    """ε-DP count (add/remove, sensitivity 1): Σ bits + Laplace(1/ε) or two-sided geometric(ε)."""
    e = _check_eps(eps, "ε")
    c = float(np.sum(bits))
    if noise == "geometric":
        return c + float(_noise.two_sided_geometric(e, rng=rng))
    return c + float(_noise.laplace(1.0 / e, rng=rng))


def dp_sum(values: np.ndarray, eps: float, bound: float, *, rng: np.random.Generator) -> float:
    """ε-DP sum of values clipped to |v| ≤ ``bound``: Σ v + Laplace(bound/ε)."""
    e = _check_eps(eps, "ε")
    return float(np.sum(values)) + float(_noise.laplace(_check_eps(bound, "The value bound") / e, rng=rng))


def dp_mean(values: np.ndarray, eps: float, lo: float, hi: float, *, rng: np.random.Generator) -> float:
    """ε-DP mean: noisy sum (ε/2, Laplace) over noisy count (ε/2, Laplace), clamped to [lo, hi].

    Both parts are add/remove DP, so the ratio is ε-DP (sequential composition); an
    empty or tiny input gives a clamped, very noisy answer rather than an error.
    """
    e = _check_eps(eps, "ε")
    bound = max(abs(lo), abs(hi))
    s = float(np.sum(values)) + float(_noise.laplace(2 * bound / e, rng=rng))
    c = float(np.size(values)) + float(_noise.laplace(2.0 / e, rng=rng))
    return float(np.clip(s / max(c, 1.0), lo, hi))


def median_scores(pieces: Pieces, score: str = "rank") -> np.ndarray:
    """Scores of the black-box median.

    ``"rank"``: s(D, r) = −(max(L(r), G(r)) − n/2)⁺. Adding or removing one tuple moves
    max(L, G) by at most 1 and n/2 by ½ in the same direction, so the sensitivity is ½;
    s = 0 exactly on the median(s).
    ``"changes"``: s(D, r) = −[(L − a)⁺ + (G − b)⁺], a = ⌊n/2⌋, b = n − 1 − a — the number
    of tuples to change for r to become the (upper) median (Eq. 3); sensitivity 1.
    """
    if score == "changes":
        n = pieces.n
        a = n // 2
        b = n - 1 - a
        if n == 0:
            return np.zeros(pieces.L.size)
        return -(np.maximum(pieces.L - a, 0) + np.maximum(pieces.G - b, 0)).astype(float)
    return -np.maximum(np.maximum(pieces.L, pieces.G) - pieces.n / 2.0, 0.0)


def min_scores(pieces: Pieces) -> np.ndarray:
    """Change-count score of the minimum: −#{x < r}, and −1 below the minimum (−1 everywhere if empty).

    Sensitivity 1 under add/remove (and under substitution: it is Eq. 3 for min).
    """
    below = (pieces.L == 0) & ~(pieces.is_point & (pieces.n > 0))
    return -(pieces.L.astype(float) + below)


def _em_logits(kind: str, pieces: Pieces, eps: float, score: str = "rank") -> np.ndarray:
    if kind == "median":
        if score == "changes":
            return eps * median_scores(pieces, "changes") / 2.0  # Δ = 1
        return eps * median_scores(pieces)  # ε·s/(2Δ) with Δ = ½
    return eps * min_scores(pieces) / 2.0  # Δ = 1


def em_pieces(kind: str, values: np.ndarray, eps: float, lo: float, hi: float, *, integer: bool = False,
              presorted: bool = False, score: str = "rank") -> tuple[Pieces, np.ndarray]:
    """Pieces and exact piece probabilities of the ε-DP exponential mechanism for median or min.

    ``integer`` (public, declared): the output range is the integers of [lo, hi] (values are
    rounded onto it) rather than the continuum; it is never inferred from the values.
    """
    e = _check_eps(eps, "ε")
    v = np.asarray(values, dtype=float)
    xs = _on_grid(v if presorted else np.sort(v), lo, hi, bool(integer))  # rounding keeps the order
    pcs = _pieces(xs, lo, hi, bool(integer))
    return pcs, _pieces_probs(pcs, _em_logits(kind, pcs, e, score))


def dp_quantile_em(kind: str, values: np.ndarray, eps: float, lo: float, hi: float, *, rng: np.random.Generator,
                   integer: bool = False, presorted: bool = False, score: str = "rank") -> float:
    """ε-DP median or min by the exponential mechanism over [lo, hi] (add/remove, any input size).

    ``integer`` (public, declared): draw from the integers of [lo, hi] instead of the
    continuum. An empty input gives a uniform draw from the range.
    """
    e = _check_eps(eps, "ε")
    v = np.asarray(values, dtype=float)
    xs = _on_grid(v if presorted else np.sort(v), lo, hi, bool(integer))
    pcs = _pieces(xs, lo, hi, bool(integer))
    return _draw_from_pieces(pcs, _em_logits(kind, pcs, e, score), rng)


def dp_answer(kind: str, values: np.ndarray, eps: float, query: Query, *, rng: np.random.Generator,
              noise: CountNoise = "laplace", presorted: bool = False) -> float:
    """Run the ε-DP black box of ``kind`` on prepared values (bits or clipped values).

    The output range of median and min comes from the query's public declaration
    (``query.integer``), never from the values. A query with a :class:`BlackBox` runs it
    instead of the built-in mechanism.
    """
    if query.black_box is not None:
        return query.black_box(values, eps, rng)
    if kind == "count":
        return dp_count(values, eps, rng=rng, noise=noise)
    if kind == "sum":
        return dp_sum(values, eps, query.bound, rng=rng)
    if kind == "mean":
        return dp_mean(values, eps, float(query.lo), float(query.hi), rng=rng)
    return dp_quantile_em(kind, values, eps, float(query.lo), float(query.hi), rng=rng, integer=query.on_integers,
                          presorted=presorted, score=query.median_score)


# ---------------------------------------------------------------------------
# Sample mechanism helpers (Def. 9, Thm 5)
# ---------------------------------------------------------------------------


def sample_probability(phi: np.ndarray | float, t: float) -> np.ndarray:
    """π_x = (e^{Φ^x} − 1)/(e^t − 1) if Φ^x < t, else 1 (computed with expm1 for small ε)."""
    tt = _check_eps(t, "The threshold t")
    p = np.minimum(np.asarray(phi, dtype=float), tt)
    # (e^Φ − 1)/(e^t − 1) = e^{Φ−t}·(1 − e^{−Φ})/(1 − e^{−t}): accurate for tiny ε and no overflow for huge ε
    return np.where(p < tt, np.exp(p - tt) * -np.expm1(-p) / -math.expm1(-tt), 1.0)


def sample_delivered(phi: np.ndarray | float, t: float) -> np.ndarray:
    """ln(1 + π_x(e^t − 1)) = min(Φ^x, t): the ε each user receives from Sample(t)."""
    return np.minimum(np.asarray(phi, dtype=float), _check_eps(t, "The threshold t"))


# ---------------------------------------------------------------------------
# Substitution neighbours (a roster read from the table)
# ---------------------------------------------------------------------------


def substitution_factor(query: Query) -> float:
    """k: the ε-DP black box of ``query`` run at ε (add/remove) is k·ε-DP under substitution.

    Substitution neighbours keep n and change one tuple's (clipped) value:

    * count — a bit flips: sensitivity 1 either way, k = 1;
    * sum — the value moves across [lo, hi] instead of appearing: k = (hi − lo)/max(|lo|, |hi|)
      (1 for lo = 0; up to 2 when lo < 0 < hi);
    * mean — only the noisy sum (run at ε/2 with Laplace(2·max(|lo|, |hi|)/ε)) moves, the
      count is n: k = (hi − lo)/(2·max(|lo|, |hi|)) ≤ 1;
    * median with the rank score — sensitivity ½ under add/remove but 1 under substitution
      (L and G can both move by one): k = 2; with the change-count score of Eq. 3 (built for
      substitution, sensitivity 1 both ways) k = 1;
    * min — the change-count score has sensitivity 1 under both notions: k = 1.

    All brute-force checked in the tests. A caller-supplied :class:`BlackBox` declares its own
    k (default 2, valid for any add/remove ε-DP mechanism).
    """
    if query.black_box is not None:
        return float(query.black_box.substitution)
    if query.kind == "count":
        return 1.0
    lo, hi, b = float(query.lo), float(query.hi), query.bound
    if query.kind == "sum":
        return (hi - lo) / b
    if query.kind == "mean":
        return (hi - lo) / (2.0 * b)
    if query.kind == "median" and query.median_score == "rank":
        return 2.0
    return 1.0


def noise_calibration(query: Query, spec: PrivacySpec) -> float:
    """c: the black boxes of Minimum, Threshold, Sample and Stretching run at ε/c.

    c = 1 when the roster is public (add/remove, as in the paper). With a roster read from
    the table the releases are stated under substitution, where the black box of ``query``
    costs k·ε (:func:`substitution_factor`); c = max(k, 1) recalibrates it so that every user
    still receives at most their Φ (k > 1 only for the rank-score median, k = 2, and for sums
    with lo < 0 < hi). Public: it depends on the query and the roster's provenance only.
    """
    return max(substitution_factor(query), 1.0) if spec.roster == "table" else 1.0


def sample_delivered_substitution(phi: np.ndarray | float, t: float, k: float = 1.0) -> np.ndarray:
    """Sample(t)'s per-user ε under substitution neighbours when its black box runs at t/c,
    c = max(k, 1) (:func:`noise_calibration`): a = t/c under add/remove, s = k·t/c ≤ t under
    substitution (0 ≤ k ≤ 2, :func:`substitution_factor`).

    With A the output law when x is not kept, B and B′ when x is kept with its two values
    (B ≤ e^a·A, A ≤ e^a·B′, B ≤ e^s·B′), the ratio ((1 − π)A + πB)/((1 − π)A + πB′) is
    largest at A = e^{s−a}·B′, B = e^s·B′, which gives

        ε_x = ln(1 + π(e^a − 1)) − ln(1 + π(e^{a−s} − 1)).

    k = 1 (counts, min, the change-count median): min(Φ^x, t), as under add/remove; k < 1
    (means, sums with lo > 0): less; k > 1 (recalibrated): at most min(Φ^x, t) (with
    u = π(e^a − 1) the claim reduces to u ≤ e^a − 1, i.e. π ≤ 1). Checked against exact
    output laws in the audits.
    """
    tt = _check_eps(t, "The threshold t")
    kk = float(k)
    if not (math.isfinite(kk) and 0 <= kk <= 2):
        raise ParameterError(f"The substitution factor k must be in [0, 2] (got {k!r}).")
    pi = sample_probability(phi, tt)
    c = max(kk, 1.0)
    a, s_ = tt / c, kk * tt / c
    first = np.minimum(np.asarray(phi, dtype=float), tt) if c == 1.0 else _log_mix(pi, a)
    return np.maximum(first - _log_mix(pi, a - s_), 0.0)


def _log_mix(pi: np.ndarray, x: float) -> np.ndarray:
    """ln(1 + π(e^x − 1)) = ln((1 − π) + π·e^x), also where π·(e^x − 1) rounds to −1 (π = 1 and a
    large negative x: log1p(−1) would give −∞ instead of x)."""
    p = np.asarray(pi, dtype=float)
    u = p * math.expm1(x)
    with np.errstate(divide="ignore"):
        stable = np.logaddexp(np.log1p(-p), np.log(p) + x)
    return np.where(u > -0.5, np.log1p(np.maximum(u, -0.5)), stable)


# ---------------------------------------------------------------------------
# PE: personalized exponential mechanism (Def. 10, Eqs. 4–5, Sec. IV-C)
# ---------------------------------------------------------------------------


def k_smallest_prefix_sums(phi: np.ndarray, p: np.ndarray, k: np.ndarray) -> np.ndarray:
    """out[j] = sum of the k[j] smallest entries of phi[:p[j]] (0 ≤ k[j] ≤ p[j] ≤ len(phi)).

    All queries at once with a wavelet matrix over the distinct levels of phi:
    O((n + q)·log K) numpy work for K distinct values (no loop over records).
    """
    phi = np.asarray(phi, dtype=float)
    p = np.asarray(p, dtype=np.int64)
    kk = np.asarray(k, dtype=np.int64).copy()
    out = np.zeros(p.size)
    n = phi.size
    if n == 0 or p.size == 0:
        return out
    if (kk < 0).any() or (kk > p).any() or (p > n).any():
        raise ParameterError("k_smallest_prefix_sums needs 0 ≤ k ≤ p ≤ n.")
    levels, codes = np.unique(phi, return_inverse=True)
    nbits = max(1, int(levels.size - 1).bit_length())
    cur_codes = codes.astype(np.int64)
    cur_phi = phi.copy()
    lo = np.zeros(p.size, dtype=np.int64)
    hi = p.copy()
    c0 = np.zeros(n + 1, dtype=np.int64)
    s0 = np.zeros(n + 1)
    for bit in range(nbits - 1, -1, -1):
        is0 = ((cur_codes >> bit) & 1) == 0
        np.cumsum(is0, out=c0[1:])
        np.cumsum(np.where(is0, cur_phi, 0.0), out=s0[1:])
        z = c0[-1]
        c0_lo, c0_hi = c0[lo], c0[hi]
        n0 = c0_hi - c0_lo
        go0 = n0 >= kk
        out += np.where(go0, 0.0, s0[hi] - s0[lo])
        kk = np.where(go0, kk, kk - n0)
        lo, hi = np.where(go0, c0_lo, z + lo - c0_lo), np.where(go0, c0_hi, z + hi - c0_hi)
        order = np.concatenate((np.flatnonzero(is0), np.flatnonzero(~is0)))
        cur_codes = cur_codes[order]
        cur_phi = cur_phi[order]
    has = kk > 0
    out[has] += kk[has] * cur_phi[lo[has]]
    return out


def d_count(bits: np.ndarray, phi: np.ndarray, r: np.ndarray | None = None) -> np.ndarray:
    """Personalized score d_count(D, r, Φ) (Eq. 5, Sec. IV-C, sign-corrected) for r ∈ {0..n} (or given r).

    With x = count(D): r > x costs the r − x smallest Φ among the 0-tuples, r < x the
    x − r smallest Φ among the 1-tuples, r = x costs 0; d is minus that cost.
    """
    b = np.asarray(bits, dtype=float) > 0
    ph = np.asarray(phi, dtype=float)
    n = b.size
    x = int(b.sum())
    rr = np.arange(n + 1) if r is None else np.asarray(r, dtype=np.int64)
    ones = np.concatenate(([0.0], np.cumsum(np.sort(ph[b]))))
    zeros = np.concatenate(([0.0], np.cumsum(np.sort(ph[~b]))))
    up = np.clip(rr - x, 0, n - x)
    down = np.clip(x - rr, 0, x)
    return -(zeros[up] + ones[down])


def _median_side_costs(phi_sorted: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """SL[p] = Σ of the (p − a)⁺ smallest Φ among the p smallest values; SR[q] likewise for the q largest."""
    n = phi_sorted.size
    a = n // 2
    b = n - 1 - a
    p = np.arange(n + 1)
    SL = k_smallest_prefix_sums(phi_sorted, p, np.maximum(p - a, 0))
    SR = k_smallest_prefix_sums(phi_sorted[::-1], p, np.maximum(p - b, 0))
    return SL, SR


def _sorted_pieces(values: np.ndarray, phi: np.ndarray, lo: float, hi: float,
                   integer: bool) -> tuple[Pieces, np.ndarray]:
    """Values moved onto the public range and sorted, cut into output pieces; Φ in the same order."""
    v = _on_grid(np.asarray(values, dtype=float), lo, hi, bool(integer))
    if v.size == 0:
        raise ParameterError("PE needs at least one tuple (n is public under substitution neighbours).")
    order = np.argsort(v, kind="stable")
    xs, ps = v[order], np.asarray(phi, dtype=float)[order]
    return _pieces(xs, lo, hi, bool(integer)), ps


def d_median_pieces(values: np.ndarray, phi: np.ndarray, lo: float, hi: float, *,
                    integer: bool = False) -> tuple[Pieces, np.ndarray]:
    """d_med over the output range, piece by piece (tie-safe form of Sec. IV-C).

    With L(r) = #{x < r}, G(r) = #{x > r}, a = ⌊n/2⌋, b = n − 1 − a:
    d = −[Σ of the (L − a)⁺ smallest Φ among {x < r}] − [Σ of the (G − b)⁺ smallest Φ
    among {x > r}]. For even n this prices the upper median (rank ⌊n/2⌋, 0-indexed).
    """
    pcs, ps = _sorted_pieces(values, phi, lo, hi, integer)
    SL, SR = _median_side_costs(ps)
    return pcs, -(SL[pcs.L] + SR[pcs.G])


def d_min_pieces(values: np.ndarray, phi: np.ndarray, lo: float, hi: float, *,
                 integer: bool = False) -> tuple[Pieces, np.ndarray]:
    """d_min over the output range: r > min costs Σ{Φ : x < r}, r < min costs min Φ, r = min costs 0."""
    pcs, ps = _sorted_pieces(values, phi, lo, hi, integer)
    cum = np.concatenate(([0.0], np.cumsum(ps)))
    d = -cum[pcs.L]
    below = (pcs.L == 0) & ~pcs.is_point
    d = np.where(below, -float(ps.min()), d)
    return pcs, d


def d_median(values: np.ndarray, phi: np.ndarray, r: np.ndarray) -> np.ndarray:
    """d_med(D, r, Φ) at given points r (for checks against brute force and plots)."""
    v = np.asarray(values, dtype=float)
    order = np.argsort(v, kind="stable")
    xs, ps = v[order], np.asarray(phi, dtype=float)[order]
    SL, SR = _median_side_costs(ps)
    rr = np.asarray(r, dtype=float)
    L = np.searchsorted(xs, rr, side="left")
    G = v.size - np.searchsorted(xs, rr, side="right")
    return -(SL[L] + SR[G])


def d_min(values: np.ndarray, phi: np.ndarray, r: np.ndarray) -> np.ndarray:
    """d_min(D, r, Φ) at given points r."""
    v = np.asarray(values, dtype=float)
    order = np.argsort(v, kind="stable")
    xs, ps = v[order], np.asarray(phi, dtype=float)[order]
    cum = np.concatenate(([0.0], np.cumsum(ps)))
    rr = np.asarray(r, dtype=float)
    L = np.searchsorted(xs, rr, side="left")
    return np.where(rr < xs[0], -float(ps.min()), -cum[L])


def pe_distribution(kind: str, values: np.ndarray, phi: np.ndarray, *, lo: float = 0.0, hi: float | None = None,
                    integer: bool = False) -> tuple[Pieces, np.ndarray, np.ndarray]:
    """PE's exact output distribution (Eq. 4): pieces, d per piece, probability per piece.

    For count the pieces are the points 0..n. For median and min, ``integer`` (public,
    declared) chooses the integers of [lo, hi] over the continuum.
    """
    if kind == "count":
        b = np.asarray(values, dtype=float)
        n = b.size
        r = np.arange(n + 1, dtype=float)
        pcs = Pieces(r, r, np.ones(n + 1), np.zeros(n + 1, np.int64), np.zeros(n + 1, np.int64),
                     np.ones(n + 1, bool), n, True)
        d = d_count(b, phi)
    elif kind in ("median", "min"):
        if hi is None:
            raise ParameterError(f"PE for {kind} needs the output range [lo, hi].")
        fn = d_median_pieces if kind == "median" else d_min_pieces
        pcs, d = fn(values, phi, float(lo), float(hi), integer=integer)
    else:
        raise ParameterError(f"PE is defined for count, median and min, not for {kind}.",
                             hint="Use Sample, Threshold, Minimum or Stretching for sums and means.")
    return pcs, d, _pieces_probs(pcs, d / 2.0)


def pe_draw(kind: str, values: np.ndarray, phi: np.ndarray, *, rng: np.random.Generator, lo: float = 0.0,
            hi: float | None = None, integer: bool = False) -> float:
    """One draw of PE: piece ∝ size·exp(d/2), then uniform inside the piece."""
    pcs, d, _ = pe_distribution(kind, values, phi, lo=lo, hi=hi, integer=integer)
    return _draw_from_pieces(pcs, d / 2.0, rng)


# ---------------------------------------------------------------------------
# Mechanisms
# ---------------------------------------------------------------------------


@dataclass(frozen=True)
class Answer:
    """A mechanism's answer and what it may say about it publicly."""

    estimate: float
    eps_used: float | None = None
    scale: float | None = None
    private: dict[str, Any] = field(default_factory=dict)


class PDPMechanism:
    """Common interface: ``answer`` on prepared arrays, ``delivered`` ε per tuple, ``release`` on a table."""

    name: ClassVar[str] = "pdp"
    title: ClassVar[str] = "PDP mechanism"
    neighbours: ClassVar[Neighbours] = "add/remove"
    kinds: ClassVar[tuple[str, ...]] = QUERY_KINDS
    #: Whether the mechanism wraps an ε-DP black box (a query's :class:`BlackBox` may replace it).
    wraps_black_box: ClassVar[bool] = True

    def label(self, spec: PrivacySpec | None = None) -> str:
        return self.title

    def check_kind(self, kind: str) -> None:
        if kind not in self.kinds:
            raise ParameterError(f"{self.title} does not answer a {kind} query.",
                                 hint=f"It supports: {', '.join(self.kinds)}.")

    def supports(self, query: Query) -> bool:
        """Whether this mechanism answers ``query`` (its kind, and its black box if it has one)."""
        return query.kind in self.kinds and (query.black_box is None or self.wraps_black_box)

    def check_query(self, query: Query) -> None:
        """Refuse a query this mechanism does not answer, with a message saying why."""
        self.check_kind(query.kind)
        if query.black_box is not None and not self.wraps_black_box:
            raise ParameterError(f"{self.title} has its own mechanism and cannot run the black box "
                                 f"'{query.black_box.name}'.",
                                 hint="Black boxes are wrapped by Minimum, Threshold and Sample.")

    def answer(self, values: np.ndarray, phi: np.ndarray, query: Query, spec: PrivacySpec, *,
               rng: np.random.Generator) -> Answer:
        raise NotImplementedError

    def delivered(self, phi: np.ndarray, spec: PrivacySpec) -> np.ndarray:
        """The ε each tuple's owner receives from this mechanism under its own neighbour notion
        (:attr:`neighbours`; a function of the public Φ)."""
        raise NotImplementedError

    def delivered_substitution(self, phi: np.ndarray, spec: PrivacySpec, query: Query) -> np.ndarray:
        """The ε each tuple's owner receives under substitution neighbours (n, the roster and Φ
        fixed; one tuple's value changes), with the black box recalibrated at ε/c
        (:func:`noise_calibration`): (k/c)·(add/remove ε) = min(k, 1)·(add/remove ε)."""
        return min(substitution_factor(query), 1.0) * self.delivered(phi, spec)

    def neighbours_for(self, spec: PrivacySpec) -> Neighbours:
        """The neighbour notion a release under ``spec`` is stated in: the mechanism's own when
        the roster was fixed independently of the data, substitution when it was read from the
        table (α, t and π then move with the table; only value changes are protected)."""
        return self.neighbours if spec.roster == "public" else "substitution"

    def delivered_for(self, phi: np.ndarray, spec: PrivacySpec, query: Query) -> np.ndarray:
        """Per-user ε of a release of ``query`` under ``spec``, in the notion of :meth:`neighbours_for`."""
        if self.neighbours_for(spec) == self.neighbours:
            return self.delivered(phi, spec)
        return self.delivered_substitution(phi, spec, query)

    def promise(self, spec: PrivacySpec) -> str:
        """Public form of the per-user loss under the mechanism's own neighbour notion."""
        return f"{self._promise_core(spec, 1.0)} ({self.neighbours})"

    def promise_for(self, spec: PrivacySpec, query: Query) -> str:
        """Public form of the per-user loss of a release of ``query`` under ``spec``."""
        if self.neighbours_for(spec) == self.neighbours:
            return self.promise(spec)
        k = substitution_factor(query)
        c = noise_calibration(query, spec)
        calib = f"; noise calibrated at ε/{c:.3g} for the substitution sensitivity" if c > 1 else ""
        return f"{self._promise_core(spec, k)} (substitution; roster read from the table{calib})"

    def _promise_core(self, spec: PrivacySpec, k: float) -> str:
        """The per-user loss in words, for a black box costing k·ε (recalibrated to min(k, 1)·ε)."""
        raise NotImplementedError

    def release(self, table: pd.DataFrame, spec: PrivacySpec, query: Query, *, rng: np.random.Generator,
                seed: int | None = None, reveal: bool = False, label: str | None = None) -> Release:
        return release(table, spec, query, self, rng=rng, seed=seed, reveal=reveal, label=label)

    def params(self, spec: PrivacySpec) -> dict[str, Any]:
        return {}


@dataclass(frozen=True)
class Minimum(PDPMechanism):
    """Minimum (Def. 7, baseline "M"): a standard ε-DP mechanism at α = min_u Φ^u over U.

    α ≤ Φ^x for every x, so the result is Φ-PDP. Neighbours: add/remove.
    ``noise``: count noise, ``"laplace"`` or the discrete ``"geometric"``.
    """

    noise: CountNoise = "laplace"
    name: ClassVar[str] = "minimum"
    title: ClassVar[str] = "Minimum (M)"

    def answer(self, values, phi, query, spec, *, rng):
        a = spec.min_eps / noise_calibration(query, spec)
        est = dp_answer(query.kind, values, a, query, rng=rng, noise=self.noise)
        return Answer(est, eps_used=a, scale=_scale(query, a))

    def delivered(self, phi, spec):
        return np.full(np.size(phi), spec.min_eps)

    def _promise_core(self, spec, k):
        a = spec.min_eps
        if k >= 1.0:
            return f"α = min Φ = {a:.4g} for every user"
        return f"{k:.3g}·α = {k * a:.4g} for every user (α = min Φ = {a:.4g})"

    def params(self, spec):
        return {"alpha": spec.min_eps, "noise": self.noise}


@dataclass(frozen=True)
class Threshold(PDPMechanism):
    """Threshold (Def. 8, baseline "T"): drop tuples with Φ < t, run a t-DP mechanism on the rest.

    ``t``: ``"max"`` (the paper's εL), ``"mean"``, ``"min"`` or a number; resolved on the
    public specification. Users below t receive 0 (their data is not used), the others
    t ≤ Φ. Neighbours: add/remove. The count of the kept subset is not rescaled (as in
    the paper), so it is biased low.
    """

    t: ThresholdSpec = "max"
    noise: CountNoise = "laplace"
    name: ClassVar[str] = "threshold"
    title: ClassVar[str] = "Threshold (T)"

    def label(self, spec=None):
        return f"Threshold (T, t = {_t_label(self.t, spec)})"

    def answer(self, values, phi, query, spec, *, rng):
        t = spec.threshold(self.t)
        keep = np.asarray(phi) >= t
        e = t / noise_calibration(query, spec)
        est = dp_answer(query.kind, np.asarray(values)[keep], e, query, rng=rng, noise=self.noise)
        return Answer(est, eps_used=e, scale=_scale(query, e), private={"kept": int(keep.sum())})

    def delivered(self, phi, spec):
        t = spec.threshold(self.t)
        return np.where(np.asarray(phi) >= t, t, 0.0)

    def promise(self, spec):
        t = spec.threshold(self.t)
        return f"t = {t:.4g} for users with Φ ≥ t, 0 for the others (their data is dropped; add/remove)"

    def _promise_core(self, spec, k):
        t = spec.threshold(self.t)
        head = f"t = {t:.4g}" if k >= 1.0 else f"{k:.3g}·t = {k * t:.4g}"
        return f"{head} for users with Φ ≥ t = {t:.4g}, 0 for the others (their data is dropped)"

    def params(self, spec):
        return {"t": spec.threshold(self.t), "t_rule": str(self.t), "noise": self.noise}


@dataclass(frozen=True)
class Sample(PDPMechanism):
    """Sample (Def. 9, Thm 5, "S"; "S-avg" with ``t="mean"``): amplification by sampling.

    Each tuple x is kept independently with π_x = (e^{Φ^x} − 1)/(e^t − 1) (1 when
    Φ^x ≥ t); a t-DP black box (add/remove, any input size) runs on the kept tuples.
    User x receives ln(1 + π_x(e^t − 1)) = **min(Φ^x, t)** exactly (Eq. 2), in both
    directions. Any t > 0 is valid (the paper's range [min Φ, max Φ] is not needed by
    the proof); t = max Φ gives everyone exactly their Φ, t = min Φ is Minimum.
    The kept set must stay secret: only the answer is released.

    ``t``: threshold (``"max"``, ``"mean"``, ``"min"`` or a number; named ones from the
    public spec). ``rescale`` (ours, not the paper's): divide count and sum answers by the
    mean π over the public universe U — post-processing of public quantities only,
    unbiased when values are independent of Φ. Neighbours: add/remove.
    """

    t: ThresholdSpec = "max"
    noise: CountNoise = "laplace"
    rescale: bool = False
    name: ClassVar[str] = "sample"
    title: ClassVar[str] = "Sample (S)"

    def label(self, spec=None):
        base = "S-avg" if self.t in ("mean", "avg") else "S"
        resc = ", rescaled" if self.rescale else ""
        return f"Sample ({base}, t = {_t_label(self.t, spec)}{resc})"

    def answer(self, values, phi, query, spec, *, rng):
        t = spec.threshold(self.t)
        pi = sample_probability(phi, t)
        keep = rng.random(pi.size) < pi
        e = t / noise_calibration(query, spec)
        est = dp_answer(query.kind, np.asarray(values)[keep], e, query, rng=rng, noise=self.noise)
        if self.rescale and query.kind in ("count", "sum"):
            est = est / self.rescale_factor(spec)
        return Answer(est, eps_used=e, scale=_scale(query, e), private={"kept": int(keep.sum())})

    def rescale_factor(self, spec: PrivacySpec) -> float:
        """Mean π over the public universe U (the expected share of tuples kept)."""
        return float(sample_probability(spec.eps, spec.threshold(self.t)).mean())

    def delivered(self, phi, spec):
        return sample_delivered(phi, spec.threshold(self.t))

    def delivered_substitution(self, phi, spec, query):
        return sample_delivered_substitution(phi, spec.threshold(self.t), substitution_factor(query))

    def _promise_core(self, spec, k):
        t = spec.threshold(self.t)
        if k == 1.0:
            return f"min(Φ, t) with t = {t:.4g}"
        return f"at most min(Φ, t) with t = {t:.4g}"

    def params(self, spec):
        t = spec.threshold(self.t)
        return {"t": t, "t_rule": str(self.t), "noise": self.noise, "rescale": self.rescale,
                "expected_share_kept": float(sample_probability(spec.eps, t).mean())}


@dataclass(frozen=True)
class PE(PDPMechanism):
    """PE, the personalized exponential mechanism (Def. 10, Thm 6) for count, median and min.

    Pr[PE(D) = r] ∝ exp(½ d_f(D, r, Φ)), d_f = −(cheapest total Φ of the tuples that
    must change for r to be the answer) (Eq. 5; the paper's "sum of …" descriptions of
    d_count and d_min miss the minus sign). Every user gets at most Φ^x.
    Neighbours: **substitution** only (one tuple's value changes, n is public; PE-count's
    output range {0..n} itself reveals n). Not comparable one-to-one with the add/remove
    mechanisms.
    """

    name: ClassVar[str] = "pe"
    title: ClassVar[str] = "PE (personalized exponential)"
    neighbours: ClassVar[Neighbours] = "substitution"
    kinds: ClassVar[tuple[str, ...]] = ("count", "median", "min")
    wraps_black_box: ClassVar[bool] = False

    def answer(self, values, phi, query, spec, *, rng):
        self.check_query(query)
        est = pe_draw(query.kind, values, phi, rng=rng, lo=float(query.lo),
                      hi=None if query.hi is None else float(query.hi), integer=query.on_integers)
        return Answer(est)

    def delivered(self, phi, spec):
        return np.asarray(phi, dtype=float).copy()

    def delivered_substitution(self, phi, spec, query):
        return self.delivered(phi, spec)

    def promise(self, spec):
        return "at most Φ for every user (substitution neighbours, n public)"

    def _promise_core(self, spec, k):
        return "at most Φ for every user"


@dataclass(frozen=True)
class Stretching(PDPMechanism):
    """Stretching (Alaggan et al., "Alag." in Sec. V-A) for sums and counts.

    Each tuple's value is multiplied by Φ^x/ε_ref, then f(D′) + Laplace(Δ/ε_ref) is
    released. A tuple contributes at most Δ·Φ^x/ε_ref, so its owner receives Φ^x whatever
    ε_ref is; ``reference`` (``"max"`` = the paper's ε_L, or a number) only moves the
    bias/noise balance. The answer is biased (Σ v·Φ/ε_ref ≠ Σ v) unless ``rescale``
    (ours) divides by the mean Φ/ε_ref over U. Neighbours: add/remove.
    """

    reference: ThresholdSpec = "max"
    rescale: bool = False
    name: ClassVar[str] = "stretching"
    title: ClassVar[str] = "Stretching (Alag.)"
    kinds: ClassVar[tuple[str, ...]] = ("count", "sum")
    wraps_black_box: ClassVar[bool] = False

    def label(self, spec=None):
        resc = ", rescaled" if self.rescale else ""
        return f"Stretching (Alag., ε_ref = {_t_label(self.reference, spec)}{resc})"

    def answer(self, values, phi, query, spec, *, rng):
        self.check_query(query)
        ref = spec.threshold(self.reference)
        scaled = np.asarray(values, dtype=float) * (np.asarray(phi, dtype=float) / ref)
        scale = query.bound * noise_calibration(query, spec) / ref
        est = float(scaled.sum()) + float(_noise.laplace(scale, rng=rng))
        if self.rescale:
            est = est / float(np.mean(spec.eps / ref))
        return Answer(est, eps_used=ref, scale=scale)

    def delivered(self, phi, spec):
        return np.asarray(phi, dtype=float).copy()

    def _promise_core(self, spec, k):
        return "Φ for every user" if k >= 1.0 else f"{k:.3g}·Φ for every user"

    def params(self, spec):
        return {"eps_ref": spec.threshold(self.reference), "rescale": self.rescale}


def _t_label(t: ThresholdSpec, spec: PrivacySpec | None) -> str:
    if isinstance(t, str):
        name = {"max": "max Φ", "mean": "mean Φ", "avg": "mean Φ", "min": "min Φ"}.get(t, t)
        return f"{name} = {spec.threshold(t):.3g}" if spec is not None else name
    return f"{float(t):.3g}"


def _scale(query: Query, eps: float) -> float | None:
    if query.kind in ("count", "sum") and query.black_box is None:
        return query.bound / eps
    return None


def paper_mechanisms(kind: str) -> dict[str, PDPMechanism]:
    """The mechanisms of the paper's count/median comparison (Sec. V-A) under their short names."""
    mechs: dict[str, PDPMechanism] = {"M": Minimum(), "T": Threshold("max"), "S": Sample("max"),
                                      "S-avg": Sample("mean")}
    if kind in PE.kinds:
        mechs["PE"] = PE()
    if kind in Stretching.kinds:
        mechs["Alag"] = Stretching()
    return mechs


# ---------------------------------------------------------------------------
# Releases (ledger-ready)
# ---------------------------------------------------------------------------


def release(table: pd.DataFrame, spec: PrivacySpec, query: Query, mechanism: PDPMechanism, *,
            rng: np.random.Generator, seed: int | None = None, reveal: bool = False,
            label: str | None = None) -> Release:
    """Run ``mechanism`` on ``table`` under ``spec`` and return a ledger-ready :class:`Release`.

    ``loss`` is the delivered ε of each tuple's owner (aligned with the rows),
    ``requested`` their Φ; the ledger entry carries them as a :class:`RecordLoss` in
    pure ε. The neighbour notion is the mechanism's own when the roster is public, and
    substitution when it was read from the table (:meth:`PDPMechanism.neighbours_for`); the
    losses, the params, the promise and the ledger entry all state it.
    ``reveal=True`` (teaching mode) adds the true answer and the error.
    """
    mechanism.check_query(query)
    phi = spec.phi_for(table)
    raw = query.raw(table)
    vals = query.prepare(raw)
    ans = mechanism.answer(vals, phi, query, spec, rng=rng)
    notion = mechanism.neighbours_for(spec)
    delivered = mechanism.delivered_for(phi, spec, query)
    promise = mechanism.promise_for(spec, query)
    row: dict[str, Any] = {"query": query.describe(), "estimate": ans.estimate}
    if ans.scale is not None:
        row["scale"] = ans.scale
    if reveal:
        truth = query.truth(raw)
        row.update({"true": truth, "error": ans.estimate - truth, "abs_error": abs(ans.estimate - truth)})
    params = {"mechanism": mechanism.label(spec), "query": query.kind, "column": query.column,
              "cutoff": query.cutoff, "lo": query.lo, "hi": query.hi, "integer": bool(query.integer),
              "neighbours": notion, "roster": spec.roster, "spec_source": spec.source, **mechanism.params(spec)}
    if query.black_box is not None:
        params["black_box"] = query.black_box.name
        params["black_box_substitution"] = float(query.black_box.substitution)
    if notion != mechanism.neighbours:
        params["substitution_factor"] = substitution_factor(query)
        params["noise_calibration"] = noise_calibration(query, spec)
    sup = float(mechanism.delivered_for(spec.eps, spec, query).max()) if spec.n_users else 0.0
    note = f"{promise}; PDP, {NEIGHBOUR_TEXT[notion]}"
    if spec.roster == "table":
        note += f"; {ROSTER_TEXT['table']}"
    entry = LedgerEntry(label=label or f"{mechanism.label(spec)} · {query.describe()}",
                        mechanism=f"personalized.{mechanism.name}",
                        loss=RecordLoss(delivered, "eps", note=note, bound=sup), params=params, seed=seed,
                        neighbours=notion)
    extras: dict[str, Any] = {"neighbours": notion, "promise": promise, "roster": ROSTER_TEXT[spec.roster]}
    if ans.eps_used is not None:
        extras["eps_used"] = ans.eps_used
    if reveal:
        extras.update({f"private_{k}": v for k, v in ans.private.items()})
    return Release(mechanism=f"personalized.{mechanism.name}", answers=pd.DataFrame([row]), measure="eps",
                   loss=delivered, entries=(entry,), params=params, seed=seed, requested=phi,
                   truth_included=reveal, extras=extras)


# ---------------------------------------------------------------------------
# Error analysis: closed forms, exact pmfs, simulations
# ---------------------------------------------------------------------------


def example1_errors(n: int = 200, density: float = 0.1, share_conservative: float = 0.65, eps_c: float = 0.1,
                    t: float = 1.0) -> dict[str, float]:
    """Example 1 (Sec. IV-B): squared error of Sample's count split into sampling and Laplace parts.

    k = n·share·density conservative 1-tuples are each kept with π_C; sampling MSE =
    k·π_C(1 − π_C) + (k(1 − π_C))², Laplace variance 2/t². The paper's figures:
    t = 1 → ≈ 150 + 2 = 152; t = 0.2 → ≈ 50 + 50 = 100.
    """
    pi = float(sample_probability(eps_c, t))
    k = n * share_conservative * density
    sampling = k * pi * (1 - pi) + (k * (pi - 1)) ** 2
    lap = noise_variance(t)
    return {"pi_c": pi, "k": k, "sampling_mse": sampling, "laplace_var": lap, "total": sampling + lap}


def linear_moments(mechanism: PDPMechanism, values: np.ndarray, phi: np.ndarray, query: Query,
                   spec: PrivacySpec) -> tuple[float, float]:
    """Exact mean and variance of a count or sum answer on fixed data (closed forms).

    Sample: Σ v·π and Σ v²·π(1 − π) + noise variance; Threshold: Σ_{Φ≥t} v and the noise;
    Minimum: Σ v and the noise at α; Stretching: Σ v·Φ/ε_ref and 2(Δ/ε_ref)². The noise is at
    ε/c (:func:`noise_calibration`), as in the releases.
    """
    if query.black_box is not None:
        raise ParameterError(f"No closed form for the black box '{query.black_box.name}'.",
                             hint="Its error is simulated (simulate_answers, evaluate).")
    v = np.asarray(values, dtype=float)
    ph = np.asarray(phi, dtype=float)
    nz = getattr(mechanism, "noise", "laplace") if query.kind == "count" else "laplace"
    cal = noise_calibration(query, spec)
    if isinstance(mechanism, Minimum):
        a = spec.min_eps
        return float(v.sum()), noise_variance(a / cal, query.bound, nz)
    if isinstance(mechanism, Threshold):
        t = spec.threshold(mechanism.t)
        return float(v[ph >= t].sum()), noise_variance(t / cal, query.bound, nz)
    if isinstance(mechanism, Sample):
        t = spec.threshold(mechanism.t)
        pi = sample_probability(ph, t)
        mean = float(np.sum(v * pi))
        var = float(np.sum(v * v * pi * (1 - pi))) + noise_variance(t / cal, query.bound, nz)
        if mechanism.rescale:
            c = mechanism.rescale_factor(spec)
            mean, var = mean / c, var / c ** 2
        return mean, var
    if isinstance(mechanism, Stretching):
        ref = spec.threshold(mechanism.reference)
        mean = float(np.sum(v * ph / ref))
        var = noise_variance(ref, query.bound * cal)
        if mechanism.rescale:
            c = float(np.mean(spec.eps / ref))
            mean, var = mean / c, var / c ** 2
        return mean, var
    raise ParameterError(f"No closed form for {mechanism.title} on a {query.kind}.")


def exact_mse(mechanism: PDPMechanism, values: np.ndarray, phi: np.ndarray, query: Query, spec: PrivacySpec,
              truth: float) -> tuple[float, float] | None:
    """(bias, MSE) exactly, where the output law on fixed data is known; ``None`` otherwise.

    Closed forms for count and sum (all but PE), exact pmfs for PE (count, median,
    min) and for Minimum/Threshold on median and min. Sample on median/min/mean and
    everything on mean need simulation.
    """
    kind = query.kind
    if query.black_box is not None:
        return None
    if kind in ("count", "sum") and not isinstance(mechanism, PE):
        mean, var = linear_moments(mechanism, values, phi, query, spec)
        return mean - truth, var + (mean - truth) ** 2
    if isinstance(mechanism, PE):
        pcs, _, probs = pe_distribution(kind, values, phi, lo=float(query.lo),
                                        hi=None if query.hi is None else float(query.hi), integer=query.on_integers)
        mean, mse = _pieces_mse(pcs, probs, truth)
        return mean - truth, mse
    if kind in ("median", "min") and isinstance(mechanism, (Minimum, Threshold)):
        if isinstance(mechanism, Minimum):
            eps, sub = spec.min_eps, np.asarray(values)
        else:
            eps = spec.threshold(mechanism.t)
            sub = np.asarray(values)[np.asarray(phi) >= eps]
        pcs, probs = em_pieces(kind, sub, eps / noise_calibration(query, spec), float(query.lo), float(query.hi),
                               integer=query.on_integers, score=query.median_score)
        mean, mse = _pieces_mse(pcs, probs, truth)
        return mean - truth, mse
    return None


def simulate_answers(mechanism: PDPMechanism, values: np.ndarray, phi: np.ndarray, query: Query,
                     spec: PrivacySpec, *, runs: int, rng: np.random.Generator) -> np.ndarray:
    """``runs`` independent answers on fixed data (vectorised over runs where the noise allows),
    with the black boxes at ε/c (:func:`noise_calibration`) as in the releases."""
    v = np.asarray(values, dtype=float)
    ph = np.asarray(phi, dtype=float)
    R = int(runs)
    if R < 1:
        raise ParameterError("The number of runs must be at least 1.")
    if query.black_box is not None:  # an opaque mechanism: one release's code path per run
        mechanism.check_query(query)
        return np.array([mechanism.answer(v, ph, query, spec, rng=rng).estimate for _ in range(R)])
    kind = query.kind
    cal = noise_calibration(query, spec)
    if isinstance(mechanism, Sample):
        t = spec.threshold(mechanism.t)
        pi = sample_probability(ph, t)
        t_run = t / cal
        if kind in ("count", "sum"):
            # independent Bernoulli inclusions: the kept total is Σ v·Bernoulli(π), drawn in batches
            totals = _bernoulli_weighted_sums(v, pi, R, rng)
            if kind == "count" and mechanism.noise == "geometric":
                nz = _noise.two_sided_geometric(t_run, R, rng=rng).astype(float)
            else:
                nz = rng.laplace(0.0, query.bound / t_run, R)
            est = totals + nz
            if mechanism.rescale:
                est = est / mechanism.rescale_factor(spec)
            return est
        order = np.argsort(v, kind="stable")
        vs, pis = v[order], pi[order]
        out = np.empty(R)
        for i in range(R):  # loop over runs (each run is vectorised over tuples)
            keep = rng.random(vs.size) < pis
            out[i] = dp_answer(kind, vs[keep], t_run, query, rng=rng, noise=mechanism.noise, presorted=True)
        return out
    if kind in ("count", "sum") and not isinstance(mechanism, PE):
        if isinstance(mechanism, Minimum):
            eps, base, back = spec.min_eps, float(v.sum()), 1.0
        elif isinstance(mechanism, Threshold):
            eps = spec.threshold(mechanism.t)
            base, back = float(v[ph >= eps].sum()), 1.0
        elif isinstance(mechanism, Stretching):
            eps = spec.threshold(mechanism.reference)
            base = float(np.sum(v * ph / eps))
            back = float(np.mean(spec.eps / eps)) if mechanism.rescale else 1.0
        else:
            raise ParameterError(f"No simulation for {mechanism.title}.")
        if kind == "count" and getattr(mechanism, "noise", "laplace") == "geometric":
            nz = _noise.two_sided_geometric(eps / cal, R, rng=rng).astype(float)
        else:
            nz = rng.laplace(0.0, query.bound * cal / eps, R)
        return (base + nz) / back
    if isinstance(mechanism, PE) or (kind in ("median", "min") and isinstance(mechanism, (Minimum, Threshold))):
        if isinstance(mechanism, PE):
            pcs, _, probs = pe_distribution(kind, v, ph, lo=float(query.lo),
                                            hi=None if query.hi is None else float(query.hi),
                                            integer=query.on_integers)
        else:
            eps = spec.min_eps if isinstance(mechanism, Minimum) else spec.threshold(mechanism.t)
            sub = v if isinstance(mechanism, Minimum) else v[ph >= eps]
            pcs, probs = em_pieces(kind, sub, eps / cal, float(query.lo), float(query.hi), integer=query.on_integers,
                                   score=query.median_score)
        idx = rng.choice(probs.size, size=R, p=probs)
        u = rng.random(R)
        if pcs.integer:
            return pcs.start[idx] + np.floor(u * pcs.size[idx])
        return pcs.start[idx] + u * (pcs.end[idx] - pcs.start[idx])
    # mean with Minimum / Threshold
    eps = spec.min_eps if isinstance(mechanism, Minimum) else spec.threshold(getattr(mechanism, "t", "max"))
    sub = v if isinstance(mechanism, Minimum) else v[ph >= eps]
    bound = query.bound
    e_run = eps / cal
    s = sub.sum() + rng.laplace(0.0, 2 * bound / e_run, R)
    c = sub.size + rng.laplace(0.0, 2.0 / e_run, R)
    return np.clip(s / np.maximum(c, 1.0), float(query.lo), float(query.hi))


def _bernoulli_weighted_sums(v: np.ndarray, pi: np.ndarray, runs: int, rng: np.random.Generator,
                             max_cells: int = 4_000_000) -> np.ndarray:
    """Σ_i v_i·Bernoulli(π_i) for ``runs`` independent draws (grouped by distinct (v, π) when that is smaller)."""
    keyed = pd.DataFrame({"v": v, "p": pi}).groupby(["v", "p"], sort=False).size().reset_index(name="c")
    out = np.zeros(runs)
    if len(keyed) <= max(1, v.size // 4):
        cnt, pv, vv = keyed["c"].to_numpy(), keyed["p"].to_numpy(), keyed["v"].to_numpy()
        step = max(1, max_cells // len(keyed))
        for s in range(0, runs, step):  # batches of runs, vectorised over groups
            m = min(step, runs - s)
            out[s:s + m] = rng.binomial(cnt[None, :], pv[None, :], size=(m, cnt.size)) @ vv
        return out
    step = max(1, max_cells // max(v.size, 1))
    for s in range(0, runs, step):
        m = min(step, runs - s)
        out[s:s + m] = (rng.random((m, v.size)) < pi[None, :]) @ v
    return out


def evaluate(mechanism: PDPMechanism, values: np.ndarray, phi: np.ndarray, query: Query, spec: PrivacySpec,
             truth: float, *, runs: int = 200, rng: np.random.Generator) -> dict[str, Any]:
    """RMSE of one mechanism on fixed data: exact when possible, else simulated with a 95% interval."""
    ex = exact_mse(mechanism, values, phi, query, spec, truth)
    if ex is not None:
        bias, mse = ex
        r = math.sqrt(max(mse, 0.0))
        return {"rmse": r, "bias": bias, "ci_low": r, "ci_high": r, "method": "exact"}
    est = simulate_answers(mechanism, values, phi, query, spec, runs=runs, rng=rng)
    sq = (est - truth) ** 2
    mse = float(sq.mean())
    half = 1.96 * float(sq.std(ddof=1)) / math.sqrt(sq.size) if sq.size > 1 else float("nan")
    return {"rmse": math.sqrt(mse), "bias": float(est.mean() - truth),
            "ci_low": math.sqrt(max(mse - half, 0.0)), "ci_high": math.sqrt(mse + half),
            "method": f"simulated ({sq.size} runs)"}


def compare(table: pd.DataFrame, spec: PrivacySpec, query: Query,
            mechanisms: dict[str, PDPMechanism] | None = None, *, runs: int = 200,
            rng: np.random.Generator) -> pd.DataFrame:
    """RMSE of several mechanisms on ``table`` (uses the private data: for design and teaching only).

    One row per mechanism: RMSE (exact or simulated with a 95% interval), bias, the
    neighbour notion, and what users receive (share of users given their full Φ).
    """
    mechs = mechanisms or paper_mechanisms(query.kind)
    phi = spec.phi_for(table)
    raw = query.raw(table)
    vals = query.prepare(raw)
    truth = query.truth(raw)
    rows = []
    for name, m in mechs.items():
        if not m.supports(query):
            continue
        res = evaluate(m, vals, phi, query, spec, truth, runs=runs, rng=rng)
        dl = m.delivered_for(spec.eps, spec, query)
        rows.append({"mechanism": name, "label": m.label(spec), **res, "neighbours": m.neighbours_for(spec),
                     "users_full_phi": float(np.mean(dl >= spec.eps * (1 - 1e-12))),
                     "mean_delivered": float(dl.mean())})
    out = pd.DataFrame(rows)
    if len(out):
        out["truth"] = truth
    return out


def threshold_curve(table: pd.DataFrame, spec: PrivacySpec, query: Query, ts: Sequence[float], *,
                    mechanism: Literal["sample", "threshold"] = "sample", runs: int = 100,
                    rng: np.random.Generator, noise: CountNoise = "laplace") -> pd.DataFrame:
    """RMSE against the threshold t on the actual data (**oracle: uses the private data**).

    Count and sum: closed form, split into the sampling (or dropping) part and the noise
    variance. Mean, median and min: vectorised simulation (``runs`` per t) for Sample;
    exact pmfs for Threshold on median and min. Choosing t from this curve leaks
    information about the data (Sec. IV-B); use :func:`count_mse_proxy` or old/public
    data for a private choice.
    """
    phi = spec.phi_for(table)
    raw = query.raw(table)
    vals = query.prepare(raw)
    truth = query.truth(raw)
    rows = []
    for t in ts:
        tt = _check_eps(t, "The threshold t")
        m: PDPMechanism = Sample(tt, noise=noise) if mechanism == "sample" else Threshold(tt, noise=noise)
        if query.kind in ("count", "sum"):
            mean, var = linear_moments(m, vals, phi, query, spec)
            nv = noise_variance(tt / noise_calibration(query, spec), query.bound,
                                noise if query.kind == "count" else "laplace")
            mse = var + (mean - truth) ** 2
            rows.append({"t": tt, "rmse": math.sqrt(mse), "data_part_mse": mse - nv, "noise_var": nv,
                         "method": "closed form"})
        else:
            res = evaluate(m, vals, phi, query, spec, truth, runs=runs, rng=rng)
            rows.append({"t": tt, "rmse": res["rmse"], "data_part_mse": float("nan"), "noise_var": float("nan"),
                         "method": res["method"], "ci_low": res["ci_low"], "ci_high": res["ci_high"]})
    return pd.DataFrame(rows)


def count_mse_proxy(phi_universe: np.ndarray, ts: Sequence[float], *, density: float,
                    noise: CountNoise = "laplace") -> pd.DataFrame:
    """Sample's count MSE with an *assumed* density δ of 1s (no private data used).

    With bits i.i.d. Bernoulli(δ), independent of Φ, over the public universe U:
    MSE(t) = Σ_i δ(1 − π_i)(1 − δ(1 − π_i)) + δ²(Σ_i(1 − π_i))² + Var(noise at t).
    """
    d = float(density)
    if not 0 <= d <= 1:
        raise ParameterError("The assumed density must be between 0 and 1.")
    return _mse_proxy(phi_universe, ts, d, d, 1.0, noise)


def sum_mse_proxy(phi_universe: np.ndarray, ts: Sequence[float], *, mean: float, sd: float,
                  bound: float) -> pd.DataFrame:
    """Sample's sum MSE with values assumed i.i.d. (mean m₁, standard deviation s), independent of Φ.

    With m₂ = m₁² + s²: MSE(t) = Σ_i [m₂(1 − π_i) − m₁²(1 − π_i)²] + (m₁ Σ_i (1 − π_i))² +
    2(Δ/t)²; for a count m₁ = m₂ = δ. Uses only the public specification and the assumed
    moments (e.g. from old or public data, as the paper suggests): choosing t from it is safe.
    """
    m, sd_ = float(mean), float(sd)
    if not (math.isfinite(m) and math.isfinite(sd_)) or sd_ < 0:
        raise ParameterError("The assumed mean and standard deviation must be finite (standard deviation ≥ 0).")
    return _mse_proxy(phi_universe, ts, m, m * m + sd_ * sd_, bound, "laplace")


def _mse_proxy(phi_universe: np.ndarray, ts: Sequence[float], m1: float, m2: float, bound: float,
               noise: CountNoise) -> pd.DataFrame:
    ph = np.asarray(phi_universe, dtype=float)
    rows = []
    for t in ts:
        tt = _check_eps(t, "The threshold t")
        q = 1.0 - sample_probability(ph, tt)
        with np.errstate(over="ignore", invalid="ignore"):
            data = float(np.sum(m2 * q - (m1 * m1) * (q * q)) + np.square(m1 * q.sum()))
        nv = noise_variance(tt, bound, noise)
        if not (math.isfinite(data) and math.isfinite(nv)):
            raise ParameterError("The error curve overflows: the bounds or the assumed values are too large "
                                 f"(sensitivity {bound:g}, assumed mean {m1:g}).",
                                 hint="Use public bounds lo and hi of a realistic size (and assumed values within them).")
        rows.append({"t": tt, "rmse": math.sqrt(data + nv), "data_part_mse": data, "noise_var": nv,
                     "method": "closed form (assumed data)"})
    return pd.DataFrame(rows)


def delivered_table(spec: PrivacySpec, mechanisms: dict[str, PDPMechanism],
                    query: Query | None = None) -> pd.DataFrame:
    """Per mechanism: what users receive relative to what they asked for (over the roster U), in
    the neighbour notion of a release under ``spec`` (``query``: a count when not given)."""
    q = query or Query("count")
    rows = []
    for name, m in mechanisms.items():
        d = m.delivered_for(spec.eps, spec, q)
        rows.append({"mechanism": name, "label": m.label(spec), "neighbours": m.neighbours_for(spec),
                     "mean_delivered": float(d.mean()), "mean_requested": spec.mean_eps,
                     "users_full_phi": float(np.mean(d >= spec.eps * (1 - 1e-12))),
                     "users_unused": float(np.mean(d == 0)),
                     "mean_excess_protection": float(np.mean(spec.eps - d))})
    return pd.DataFrame(rows)


def delivered_by_mechanism(spec: PrivacySpec, mechanisms: dict[str, PDPMechanism],
                           query: Query | None = None) -> dict[str, np.ndarray]:
    """Delivered ε of every user of U under each mechanism (for CDF plots; ``query``: a count when not given)."""
    q = query or Query("count")
    return {name: m.delivered_for(spec.eps, spec, q) for name, m in mechanisms.items()}


def pi_curves(thresholds: dict[str, float], upto: float, points: int = 200) -> tuple[np.ndarray, dict[str, np.ndarray]]:
    """Sample's keep probability π(Φ; t) on a grid of Φ in (0, upto] for each named threshold."""
    grid = np.linspace(_check_eps(upto, "The largest ε") / points, upto, points)
    return grid, {name: sample_probability(grid, t) for name, t in thresholds.items()}


#: The worked example of Sec. IV-C: D = ⟨3, 5, 6, 9, 11⟩ with Φ = ⟨0.1, 1, 1, 0.5, 1⟩.
PE_EXAMPLE = (np.array([3.0, 5, 6, 9, 11]), np.array([0.1, 1.0, 1.0, 0.5, 1.0]))


def pe_profile(kind: str, values: np.ndarray, phi: np.ndarray, *, lo: float = 0.0, hi: float | None = None,
               integer: bool = False, max_points: int = 2000) -> pd.DataFrame:
    """PE's score d and output probability density over the range, for plots.

    ``integer``: the declared (public) value type, as in :class:`Query`. Integer ranges up
    to ``max_points`` values are expanded value by value; otherwise one row per piece (its
    start), with the probability spread over the piece's size.
    """
    pcs, d, probs = pe_distribution(kind, values, phi, lo=lo, hi=hi, integer=integer)
    if pcs.integer and (pcs.end.max() - pcs.start.min() + 1) <= max_points:
        r, pmf = expand_pieces(pcs, probs)
        idx = np.searchsorted(pcs.start, r, side="right") - 1
        return pd.DataFrame({"r": r, "d": d[idx], "probability": pmf})
    return pd.DataFrame({"r": pcs.start, "d": d, "probability": probs / np.maximum(pcs.size, 1e-300)})


def neighbour_table(mechanisms: dict[str, PDPMechanism], spec: PrivacySpec,
                    query: Query | None = None) -> pd.DataFrame:
    """What each mechanism promises and under which neighbour notion, for a release of ``query``
    (a count when not given) under ``spec`` (for the UI)."""
    q = query or Query("count")
    return pd.DataFrame([{"mechanism": name, "promise to each user": m.promise_for(spec, q),
                          "neighbours": m.neighbours_for(spec)} for name, m in mechanisms.items()])


# ---------------------------------------------------------------------------
# The paper's synthetic experiments (Sec. V-A, Table I)
# ---------------------------------------------------------------------------


@dataclass(frozen=True)
class ExperimentConfig:
    """Table I defaults: count on n = 1,000 bits of density δ = 0.15; median on n = 1,001
    values ~ N(μ = 500, σ = 200) rounded and clipped to [1, 1000]; tiers f_C = 0.54,
    f_M = 0.37, ε_C = 0.01, ε_M = 0.2, ε_L = 1. Each run draws a new dataset and a new
    specification (bits are i.i.d. Bernoulli(δ): the paper does not say whether the
    fraction is exact)."""

    n_count: int = 1000
    n_median: int = 1001
    density: float = 0.15
    mu: float = 500.0
    sigma: float = 200.0
    lo: int = 1
    hi: int = 1000
    tiers: TierConfig = field(default_factory=TierConfig)
    median_score: str = "rank"


def _paper_run(task: str, cfg: ExperimentConfig, mechs: dict[str, PDPMechanism],
               rng: np.random.Generator) -> dict[str, float]:
    if task == "count":
        n = cfg.n_count
        vals = (rng.random(n) < cfg.density).astype(float)
        query = Query("count")
        truth = float(vals.sum())
    else:
        n = cfg.n_median
        vals = np.clip(np.rint(rng.normal(cfg.mu, cfg.sigma, n)), cfg.lo, cfg.hi)
        query = Query("median", column="x", lo=cfg.lo, hi=cfg.hi, median_score=cfg.median_score, integer=True)
        truth = float(np.sort(vals)[n // 2])
    spec = generate_tiers(n, cfg.tiers, rng=rng)
    out = {}
    for name, m in mechs.items():
        out[name] = m.answer(vals, spec.eps, query, spec, rng=rng).estimate - truth
    return out


def paper_experiment(task: Literal["count", "median"], *, runs: int = 1000, rng: np.random.Generator,
                     config: ExperimentConfig | None = None,
                     progress: Callable[[float], None] | None = None) -> pd.DataFrame:
    """RMSE of M, T, S, S-avg, PE (and Alag for count) over ``runs`` runs (Sec. V-A protocol).

    Returns one row per mechanism with RMSE, a 95% interval (delta method on the MSE),
    the mean error (bias) and the neighbour notion.
    """
    if task not in ("count", "median"):
        raise ParameterError("The paper's synthetic experiments are 'count' and 'median'.")
    cfg = config or ExperimentConfig()
    mechs = paper_mechanisms(task)
    errs: dict[str, list[float]] = {k: [] for k in mechs}
    for i in range(int(runs)):
        for k, e in _paper_run(task, cfg, mechs, rng).items():
            errs[k].append(e)
        if progress is not None and (i + 1) % max(1, runs // 50) == 0:
            progress((i + 1) / runs)
    rows = []
    for k, e in errs.items():
        a = np.asarray(e)
        sq = a ** 2
        mse = float(sq.mean())
        half = 1.96 * float(sq.std(ddof=1)) / math.sqrt(a.size) if a.size > 1 else float("nan")
        rows.append({"mechanism": k, "rmse": math.sqrt(mse), "ci_low": math.sqrt(max(mse - half, 0.0)),
                     "ci_high": math.sqrt(mse + half), "bias": float(a.mean()),
                     "neighbours": mechs[k].neighbours, "runs": a.size})
    return pd.DataFrame(rows)


# ---------------------------------------------------------------------------
# PDP → PrDP reduction (general framework paper, Sec. 3.4)
# ---------------------------------------------------------------------------

BUDGET_COLUMN = "v_bud"


@dataclass(frozen=True)
class PrdpReduction:
    """The same users under PrDP: each tuple carries its ε as an attribute v_bud and the
    budget function is E(r) = c·v_bud. Unlike PDP, the choices stay private (only E is
    published). ε̌ and ε̂ are published with E, so they come from public values — c times
    the range of choices offered (:attr:`PrivacySpec.choice_range`) or declared bounds —
    never from the smallest and largest Φ in the table; ``bounds_source`` says which."""

    table: pd.DataFrame
    expression: str
    c: float
    eps_min: float
    eps_max: float
    column: str = BUDGET_COLUMN
    bounds_source: str = ""


def public_choice_range(spec: PrivacySpec) -> tuple[tuple[float, float], str]:
    """The public range of ε users could choose, and where it comes from.

    The specification's declared range (:attr:`PrivacySpec.choice_range`: a generated tier
    config, an expert label table) when there is one; otherwise the paper's range
    [0.01, 1] widened to include ε_def. Never the smallest or largest Φ actually chosen.
    """
    if spec.choice_range is not None:
        return spec.choice_range, "the specification's public range of choices"
    lo, hi = PAPER_CHOICE_RANGE
    return ((min(lo, spec.default_eps), max(hi, spec.default_eps)),
            "the paper's range of choices [0.01, 1] with ε_def (no range was declared)")


def to_prdp(table: pd.DataFrame, spec: PrivacySpec, *, c: float = 1.0, column: str = BUDGET_COLUMN,
            eps_min: float | None = None, eps_max: float | None = None) -> PrdpReduction:
    """Reduce a PDP problem to PrDP: add the budget column and the expression ``c * v_bud``.

    ``eps_min``/``eps_max`` (ε̌, ε̂): public bounds of the possible budgets, published with E.
    By default c times the public range of choices (:func:`public_choice_range`) — never
    the smallest and largest Φ in the table, which under PrDP are private.
    """
    cc = _check_eps(c, "The constant c")
    if column in table.columns:
        raise ParameterError(f"The table already has a column '{column}'.", hint="Name the budget column differently.")
    phi = spec.phi_for(table)
    out = table.copy()
    out[column] = phi
    (r_lo, r_hi), where = public_choice_range(spec)
    lo = cc * r_lo if eps_min is None else _check_eps(eps_min, "ε̌")
    hi = cc * r_hi if eps_max is None else _check_eps(eps_max, "ε̂")
    if lo > hi:
        raise ParameterError("ε̌ must not exceed ε̂.")
    declared = [name for name, v in (("ε̌", eps_min), ("ε̂", eps_max)) if v is not None]
    src = f"c × {where}" if not declared else (
        f"{' and '.join(declared)} declared" + (f"; otherwise c × {where}" if len(declared) < 2 else ""))
    return PrdpReduction(out, f"{cc:g} * {column}", cc, lo, hi, column, src)


def prdp_available() -> bool:
    """Whether the PrDP framework (:mod:`prdp_core.mechanisms.prdp`) and budget functions can be imported."""
    try:
        from . import prdp  # noqa: F401
        from .prdp import budget  # noqa: F401
    except ImportError:
        return False
    return True


def run_prdp(table: pd.DataFrame, spec: PrivacySpec, query: Query, *, c: float = 1.0, beta: float = 0.1,
             rng: np.random.Generator, seed: int | None = None, reveal: bool = False,
             eps_min: float | None = None, eps_max: float | None = None) -> Release:
    """Answer ``query`` with the PrDP framework (Algorithm 2) under E(r) = c·v_bud.

    The table gets the budget column v_bud = Φ (:func:`to_prdp`); the budget function is
    parsed with the public ε̌, ε̂ of :func:`to_prdp` (declared, or c times the public range of
    choices) and U = the query's public upper bound. A tuple whose c·Φ is below ε̌ cannot be
    honoured: declare a smaller ε̌ (the smallest choice offered). A count
    with a cut-off runs on the tuples meeting it (a per-tuple filter: a tuple failing it
    never influences the answer, so each tuple's guarantee is unchanged); a sum uses the
    framework's clipped sum on the value column. Neighbours: add/remove, like PDP's
    Sample; the users' choices stay private (only E is public).
    """
    if query.kind not in ("count", "sum"):
        raise ParameterError("The PDP vs PrDP comparison covers count and sum.",
                             hint="The PrDP framework has no median; pick count or sum.")
    try:
        from .prdp import budget as _budget
        from . import prdp as _prdp
    except ImportError:
        raise ParameterError("The PrDP framework is not available in this installation.") from None
    red = to_prdp(table, spec, c=c, eps_min=eps_min, eps_max=eps_max)
    low = int((red.table[red.column].to_numpy() * red.c < red.eps_min * (1 - 1e-9)).sum())
    if low:
        raise PolicyError(f"{low:,} user(s) chose an ε below the public ε̌ = {red.eps_min:.4g} of the PrDP budget "
                          f"function ({red.bounds_source}).",
                          hint="Declare ε̌ as the smallest choice offered to users (a public value), not one read "
                               "from the data.")
    t = red.table
    if query.kind == "count" and query.column is not None:
        t = t.loc[query.prepare(query.raw(t)) > 0]
    U = float(query.hi) if query.hi is not None else max(1.0, float(query.cutoff))
    bud = _budget.parse_budget(red.expression, eps_min=red.eps_min, eps_max=red.eps_max, U=U)
    q = "count" if query.kind == "count" else f"sum:{query.column}"
    return _prdp.framework(t, bud, q, beta=beta, rng=rng, reveal=reveal, seed=seed)


#: What a release records about a query parameter left at a design default computed from the data.
DATA_DEFAULT_NOTE = ("data: the column's 99th percentile (a design default computed from the confidential data; not "
                     "a public value — a real release must set it from public knowledge)")

#: Query parameters whose design default may come from the data.
DESIGN_DEFAULT_PARAMS = ("hi", "cutoff")


def flag_design_defaults(rel: Release, names: Iterable[str]) -> Release:
    """The release with its params (and its ledger entries' params) stating which query parameters
    (``hi``, ``cutoff``) are design defaults computed from the confidential data, so they are never
    published as if they were public."""
    names = [n for n in names if n in DESIGN_DEFAULT_PARAMS]
    if not names:
        return rel
    extra = {f"{n}_source": DATA_DEFAULT_NOTE for n in names}
    entries = tuple(replace(e, params={**e.params, **extra}) for e in rel.entries)
    return replace(rel, params={**rel.params, **extra}, entries=entries)


def compare_with_prdp(table: pd.DataFrame, spec: PrivacySpec, query: Query, *, c: float = 1.0,
                      beta: float = 0.1, rng: np.random.Generator, reveal: bool = False,
                      runs: int = 1, eps_min: float | None = None, eps_max: float | None = None) -> pd.DataFrame:
    """The same users and query under PDP (Minimum, Sample with t = max and mean Φ, PE/Stretching)
    and under PrDP (the framework with E(r) = c·v_bud and public ε̌, ε̂), one seeded run each (or
    the RMSE over ``runs`` runs when ``reveal``).

    Columns: mechanism, model, estimate (first run), are the users' choices public, the
    neighbour notion (PDP: substitution when the roster was read from the table), the largest
    delivered ε and whether every tuple got at most its request; with ``reveal`` also the true
    answer, the error and the RMSE.
    """
    if query.kind not in ("count", "sum"):
        raise ParameterError("The PDP vs PrDP comparison covers count and sum.")
    raw = query.raw(table)
    truth = query.truth(raw)
    pdp_mechs = {k: v for k, v in paper_mechanisms(query.kind).items() if k in ("M", "S", "S-avg", "PE", "Alag")}
    rows = []
    R = max(1, int(runs)) if reveal else 1
    for name, m in pdp_mechs.items():
        rels = [m.release(table, spec, query, rng=rng, reveal=reveal) for _ in range(R)]
        rows.append(_compare_row(f"PDP · {m.label(spec)}", "PDP", rels, truth, "public (published)",
                                 m.neighbours_for(spec), reveal))
    rels = [run_prdp(table, spec, query, c=c, beta=beta, rng=rng, reveal=reveal, eps_min=eps_min, eps_max=eps_max)
            for _ in range(R)]
    rows.append(_compare_row(f"PrDP framework · E(r) = {c:g}·v_bud", "PrDP", rels, truth, "private", "add/remove",
                             reveal))
    return pd.DataFrame(rows)


def _compare_row(label: str, model: str, rels: list[Release], truth: float, choices: str, neighbours: str,
                 reveal: bool) -> dict[str, Any]:
    first = rels[0]
    row: dict[str, Any] = {"mechanism": label, "model": model, "estimate": float(first.answers["estimate"].iloc[0]),
                           "users' ε": choices, "neighbours": neighbours}
    if first.loss is not None and first.requested is not None:
        row["largest delivered ε"] = float(np.max(first.loss)) if first.loss.size else 0.0
        row["within request"] = bool(first.check_delivered_within_requested())
    if reveal:
        est = np.array([float(r.answers["estimate"].iloc[0]) for r in rels])
        row.update({"true": truth, "error": row["estimate"] - truth,
                    "rmse": float(np.sqrt(np.mean((est - truth) ** 2))), "runs": est.size})
    return row
