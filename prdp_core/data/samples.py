"""Sample datasets: the synthetic generators of the papers and small real tables.

``names()`` lists them, ``info(name)`` describes one (source, schema, documented
properties), ``load(name, n=None, seed=0)`` returns its table and
``load_dataset(...)`` a checked :class:`~prdp_core.data.Dataset` with the sample's
schema. Every synthetic generator is deterministic for a given ``(n, seed)``.

Synthetic samples (see sample_data/README.md for their calibration):

* ``cbp_like`` – establishments shaped like the County Business Patterns use case of
  the per-record zCDP paper (Sec. 6.4), calibrated to the percentiles of its Table 8;
* ``sim_pareto`` – the SIM data of that paper's Table 4;
* ``bank_normal_50k``, ``bank_normal_500k``, ``bank_zipf_b3``, ``bank_zipf_b5`` – the
  synthetic balances of the general PrDP framework paper (Sec. 8.1);
* ``table2_example`` – the five establishments of Table 2(a) of the per-record zCDP paper.

Real samples are files under ``sample_data/`` (public-domain or openly licensed;
the README there names each source and licence). No sample is downloaded at run time.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any, Callable

import numpy as np
import pandas as pd

from ..core.errors import ParameterError
from .dataset import Dataset, Schema, load_table, prepare_dataset

_SAMPLE_DIR_ENV = "PRDP_SAMPLE_DATA"


def sample_dir() -> Path:
    """Folder of the shipped sample files: ``PRDP_SAMPLE_DATA`` if set, else ``prdp_core/sample_data/`` of an
    installed wheel (setup.py copies them there), else ``sample_data/`` at the top of the checkout."""
    env = os.environ.get(_SAMPLE_DIR_ENV)
    if env:
        return Path(env)
    package = Path(__file__).resolve().parents[1]
    installed = package / "sample_data"
    return installed if installed.is_dir() else package.parent / "sample_data"


@dataclass(frozen=True)
class SampleInfo:
    """Description of one sample dataset."""

    name: str
    title: str
    description: str
    kind: str  # "synthetic" or "real"
    schema: Schema
    default_n: int | None
    source: str
    properties: tuple[str, ...] = ()
    generator: Callable[[int, int], pd.DataFrame] | None = field(default=None, repr=False, compare=False)
    filename: str | None = None
    max_n: int | None = 10_000_000


# ---------------------------------------------------------------------------
# Helpers for calibrated synthetic marginals
# ---------------------------------------------------------------------------


def _rank_uniform(z: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """Map latent scores to (0, 1) uniforms by rank (ties broken at random).

    Rank transforms keep any dependence built into ``z`` (sector effects, correlation
    between measures) while giving every column exactly its target marginal.
    """
    n = z.size
    order = np.lexsort((rng.random(n), z))
    u = np.empty(n)
    u[order] = (np.arange(n) + rng.random(n)) / n
    return np.clip(u, 1e-12, 1 - 1e-12)


def _knot_quantile(u: np.ndarray, values: list[float], cdf: list[float], tail_alpha: float,
                   cap: float) -> np.ndarray:
    """Quantile function: log-linear between (value, cdf) knots, Pareto tail beyond the last knot.

    Below the first knot values are log-linear down to ``values[0] / 3`` at cdf 0.
    """
    v = np.log(np.asarray(values, dtype=float))
    c = np.asarray(cdf, dtype=float)
    v = np.concatenate(([v[0] - np.log(3.0)], v))
    c = np.concatenate(([0.0], c))
    x = np.exp(np.interp(u, c, v))
    last_v, last_c = values[-1], cdf[-1]
    tail = u > last_c
    if tail.any():
        surv = (1.0 - u[tail]) / (1.0 - last_c)  # in (0, 1]
        x[tail] = last_v * surv ** (-1.0 / tail_alpha)
    return np.minimum(x, cap)


# Target marginals of cbp_like (Table 8 of the per-record zCDP paper gives the anchors
# EMP 2/5/100 at 47/66/97%, PAYANN 104/500/10000 at 50/79/99%, PAYQTR1 24/125/2500 at 50/80/99%;
# the other knots shape a lognormal-like body and a Pareto tail).
_EMP_KNOTS = ([1.0, 2.0, 5.0, 20.0, 100.0, 500.0, 2000.0], [0.20, 0.47, 0.66, 0.86, 0.97, 0.993, 0.999])
_PAYANN_KNOTS = ([1.0, 10.0, 50.0, 104.0, 500.0, 2000.0, 10000.0, 50000.0],
                 [0.01, 0.11, 0.35, 0.50, 0.79, 0.93, 0.99, 0.998])
_PAYQTR1_KNOTS = ([1.0, 2.5, 12.0, 24.0, 125.0, 500.0, 2500.0, 12500.0],
                  [0.03, 0.11, 0.35, 0.50, 0.80, 0.93, 0.99, 0.998])

# (NAICS sector, share of establishments, relative size effect, relative wage effect)
_SECTORS = [
    ("11", 0.004, 0.0, -0.4), ("21", 0.004, 0.6, 0.6), ("22", 0.003, 0.8, 0.8),
    ("23", 0.100, -0.1, 0.2), ("31-33", 0.040, 0.9, 0.3), ("42", 0.050, 0.2, 0.4),
    ("44-45", 0.130, 0.2, -0.5), ("48-49", 0.035, 0.3, 0.1), ("51", 0.020, 0.3, 0.8),
    ("52", 0.065, -0.1, 0.7), ("53", 0.050, -0.6, 0.0), ("54", 0.110, -0.5, 0.6),
    ("55", 0.007, 0.9, 1.0), ("56", 0.050, 0.1, -0.2), ("61", 0.013, 0.2, -0.2),
    ("62", 0.110, 0.3, 0.1), ("71", 0.020, -0.1, -0.6), ("72", 0.085, 0.6, -0.9),
    ("81", 0.104, -0.5, -0.5),
]

_STATES = ["AL", "AK", "AZ", "AR", "CA", "CO", "CT", "DE", "DC", "FL", "GA", "HI", "ID", "IL", "IN", "IA",
           "KS", "KY", "LA", "ME", "MD", "MA", "MI", "MN", "MS", "MO", "MT", "NE", "NV", "NH", "NJ", "NM",
           "NY", "NC", "ND", "OH", "OK", "OR", "PA", "RI", "SC", "SD", "TN", "TX", "UT", "VT", "VA", "WA",
           "WV", "WI", "WY"]


@lru_cache(maxsize=1)
def _naics_tree() -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """A fixed synthetic NAICS hierarchy: 6-digit leaves per sector with popularity weights.

    Returns (leaf codes, sector index of each leaf, within-sector weight of each leaf).
    Independent of the user's seed so that codes are stable across samples.
    """
    rng = np.random.default_rng(20_240_601)
    codes: list[str] = []
    sec_idx: list[int] = []
    weights: list[float] = []
    for si, (sector, *_rest) in enumerate(_SECTORS):
        prefixes = [sector[:2]] if "-" not in sector else [str(p) for p in range(int(sector[:2]),
                                                                                int(sector[-2:]) + 1)]
        for p in prefixes:
            for d3 in range(1, rng.integers(2, 6) + 1):
                for d4 in range(1, rng.integers(1, 4) + 1):
                    for d5 in range(1, rng.integers(1, 3) + 1):
                        for d6 in range(0, rng.integers(1, 3)):
                            codes.append(f"{p}{d3}{d4}{d5}{d6}")
                            sec_idx.append(si)
                            weights.append(float(rng.pareto(1.2) + 0.1))
    sec = np.asarray(sec_idx)
    w = np.asarray(weights)
    for si in range(len(_SECTORS)):
        m = sec == si
        w[m] /= w[m].sum()
    return np.asarray(codes), sec, w


def generate_cbp_like(n: int = 100_000, seed: int = 0) -> pd.DataFrame:
    """Synthetic establishments in the shape of County Business Patterns.

    Columns: ESTAB_ID (record id), FIRM_ID (owner: most firms have one establishment,
    some large chains many), STATE, COUNTY (5-digit FIPS-like code), NAICS2..NAICS6
    (industry at levels 2-6), EMP (employees), PAYANN (annual payroll, $1,000s),
    PAYQTR1 (first-quarter payroll, $1,000s). Marginals hit the percentiles of Table 8 of
    the per-record zCDP paper (EMP ≤ 2/5/100 for 47/66/97% of establishments, PAYANN ≤
    104/500/10000 for 50/79/99%, PAYQTR1 ≤ 24/125/2500 for 50/80/99%) by construction
    (rank transform of correlated latent scores), and sector, county and firm effects
    make group-by answers realistically uneven.
    """
    if n < 1:
        raise ParameterError("The number of establishments must be at least 1.")
    rng = np.random.default_rng(seed)
    # geography: counties with heavy-tailed sizes, grouped into states
    n_counties = int(np.clip(n // 100, 20, 3100))
    county_state = rng.integers(0, len(_STATES), size=n_counties)
    county_num = np.zeros(n_counties, dtype=int)
    for s in range(len(_STATES)):
        m = county_state == s
        county_num[m] = 2 * np.arange(1, m.sum() + 1) - 1  # FIPS county codes are odd numbers
    county_w = rng.lognormal(0.0, 1.4, size=n_counties)
    county = rng.choice(n_counties, size=n, p=county_w / county_w.sum())
    state_codes = np.asarray(_STATES)[county_state[county]]
    state_fips = county_state[county] + 1
    county_codes = np.char.add(np.char.zfill(state_fips.astype(str), 2),
                               np.char.zfill(county_num[county].astype(str), 3))
    # industry
    shares = np.array([s[1] for s in _SECTORS])
    sector = rng.choice(len(_SECTORS), size=n, p=shares / shares.sum())
    leaves, leaf_sec, leaf_w = _naics_tree()
    leaf = np.empty(n, dtype=int)
    for si in range(len(_SECTORS)):
        m = sector == si
        if m.any():
            idx = np.flatnonzero(leaf_sec == si)
            leaf[m] = rng.choice(idx, size=int(m.sum()), p=leaf_w[idx])
    naics6 = leaves[leaf]
    size_eff = np.array([s[2] for s in _SECTORS])[sector]
    wage_eff = np.array([s[3] for s in _SECTORS])[sector]
    county_eff = np.log(county_w)[county] * 0.15
    # correlated latent scores -> calibrated marginals
    z_emp = size_eff * 0.6 + county_eff + rng.standard_normal(n)
    z_pay = 0.88 * z_emp + 0.30 * wage_eff + 0.40 * rng.standard_normal(n)
    z_q1 = z_pay + 0.25 * rng.standard_normal(n)
    emp = np.ceil(_knot_quantile(_rank_uniform(z_emp, rng), *_EMP_KNOTS, tail_alpha=1.3, cap=6.0e4))
    payann = np.maximum(1.0, np.rint(_knot_quantile(_rank_uniform(z_pay, rng), *_PAYANN_KNOTS,
                                                     tail_alpha=1.2, cap=8.0e6)))
    payqtr1 = np.maximum(0.0, np.rint(_knot_quantile(_rank_uniform(z_q1, rng), *_PAYQTR1_KNOTS,
                                                      tail_alpha=1.2, cap=2.0e6)))
    # firms: about 20% of establishments belong to multi-establishment firms, more often large ones
    firm = np.full(n, -1, dtype=np.int64)
    w_multi = np.log2(2.0 + emp)
    n_multi = int(0.2 * n)
    next_firm = 0
    if n_multi >= 2:
        chosen = rng.choice(n, size=n_multi, replace=False, p=w_multi / w_multi.sum())
        chosen = chosen[np.lexsort((rng.random(n_multi), sector[chosen]))]  # chains mostly within a sector
        sizes = np.minimum(np.floor(2.0 * (1.0 - rng.random(n_multi)) ** (-1.0 / 1.3)).astype(np.int64),
                           max(2, n_multi // 20))
        ends = np.cumsum(sizes)
        k = int(np.searchsorted(ends, n_multi, side="left")) + 1
        sizes = sizes[:k]
        sizes[-1] -= int(ends[k - 1] - n_multi)
        firm_of = np.repeat(np.arange(k), sizes)
        firm[chosen] = firm_of
        next_firm = k
    single = firm < 0
    firm[single] = next_firm + np.arange(int(single.sum()))
    # shuffle firm numbers so that ids do not reveal chain membership
    perm = rng.permutation(int(firm.max()) + 1)
    firm = perm[firm]
    return pd.DataFrame({
        "ESTAB_ID": np.char.add("E", np.char.zfill(np.arange(1, n + 1).astype(str), 8)),
        "FIRM_ID": np.char.add("F", np.char.zfill((firm + 1).astype(str), 8)),
        "STATE": state_codes,
        "COUNTY": county_codes,
        "NAICS2": np.asarray([s[0] for s in _SECTORS])[sector],
        "NAICS3": np.char.ljust(naics6, 6).astype("U3"),
        "NAICS4": naics6.astype("U4"),
        "NAICS5": naics6.astype("U5"),
        "NAICS6": naics6,
        "EMP": emp.astype(np.int64),
        "PAYANN": payann.astype(np.int64),
        "PAYQTR1": payqtr1.astype(np.int64),
    })


def generate_sim_pareto(n: int = 100_000, seed: int = 0) -> pd.DataFrame:
    """The SIM data of Table 4 (per-record zCDP paper, Sec. 6.1).

    CatIX ~ Categorical over {1..1000} (the paper leaves φ unspecified: uniform here),
    HT1 ~ Pareto(1, 1.2) and HT2 ~ Pareto(1, 1.5) on [1, ∞) (infinite variance).
    """
    if n < 1:
        raise ParameterError("The number of records must be at least 1.")
    rng = np.random.default_rng(seed)
    cat = rng.integers(1, 1001, size=n)
    ht1 = (1.0 - rng.random(n)) ** (-1.0 / 1.2)
    ht2 = (1.0 - rng.random(n)) ** (-1.0 / 1.5)
    return pd.DataFrame({"ID": np.arange(1, n + 1), "CatIX": cat, "HT1": ht1, "HT2": ht2})


def _bank_frame(balance: np.ndarray, rng: np.random.Generator) -> pd.DataFrame:
    n = balance.size
    return pd.DataFrame({
        "ACCOUNT_ID": np.arange(1, n + 1),
        "BRANCH": np.char.add("B", np.char.zfill(rng.integers(1, 51, size=n).astype(str), 2)),
        "BALANCE": balance.astype(np.int64),
    })


def _truncated_normal_ints(n: int, mu: float, sigma: float, rng: np.random.Generator) -> np.ndarray:
    out = np.empty(0, dtype=np.int64)
    while out.size < n:
        draw = np.rint(rng.normal(mu, sigma, size=int((n - out.size) * 1.25) + 16)).astype(np.int64)
        out = np.concatenate((out, draw[draw >= 0]))
    return out[:n]


def _normal_bank(mu: float) -> Callable[[int, int], pd.DataFrame]:
    def gen(n: int = 200_000, seed: int = 0) -> pd.DataFrame:
        if n < 1:
            raise ParameterError("The number of accounts must be at least 1.")
        rng = np.random.default_rng(seed)
        return _bank_frame(_truncated_normal_ints(n, mu, mu, rng), rng)

    gen.__doc__ = (f"Integer balances ~ Normal(μ = σ = {mu:,.0f}) with negative draws removed (resampled), "
                   "as in Sec. 8.1 of the general PrDP framework paper.")
    return gen


def _zipf_bank(b: float) -> Callable[[int, int], pd.DataFrame]:
    def gen(n: int = 200_000, seed: int = 0) -> pd.DataFrame:
        if n < 1:
            raise ParameterError("The number of accounts must be at least 1.")
        rng = np.random.default_rng(seed)
        # f(x) ∝ (x + 1)^(-b) on x ∈ {0, 1, 2, ...}: x + 1 is Zipf(b) on {1, 2, ...}
        x = rng.zipf(b, size=n).astype(np.int64) - 1
        return _bank_frame(np.minimum(x, 10**12), rng)

    gen.__doc__ = (f"Integer balances with f(x) ∝ (x + 1)^-{b:g} on x ∈ {{0, 1, 2, …}} (Zipf, a = 1, b = {b:g}), "
                   "capped at U = 10^12, as in Sec. 8.1 of the general PrDP framework paper.")
    return gen


def table2_example(n: int = 5, seed: int = 0) -> pd.DataFrame:
    """The five establishments of Table 2(a) of the per-record zCDP paper (payroll in dollars)."""
    if n != 5:
        raise ParameterError("table2_example has exactly 5 records; leave the size unset.")
    return pd.DataFrame({
        "ID": [1, 2, 3, 4, 5],
        "Industry": ["Agriculture", "Agriculture", "Mining", "Mining", "Retail"],
        "Employees": [150, 50, 100, 50, 20],
        "Payroll": [10_000_000, 15_000_000, 10_000_000, 10_000_000, 1_000_000],
    })


#: Table 8 of the per-record zCDP paper: the splitting schemes of the CBP use case.
CBP_SPLIT_SCHEMES: dict[str, dict[str, float]] = {
    "Conservative": {"EMP": 100, "PAYANN": 10_000, "PAYQTR1": 2_500},
    "Moderate": {"EMP": 5, "PAYANN": 500, "PAYQTR1": 125},
    "Median": {"EMP": 2, "PAYANN": 104, "PAYQTR1": 24},
}
#: Table 7 of the per-record zCDP paper: the top-coding (clamping) schemes of the CBP use case.
CBP_TOPCODE_SCHEMES: dict[str, dict[str, float]] = {
    "Conservative": {"EMP": 1e3, "PAYANN": 1e5, "PAYQTR1": 2.5e4},
    "Moderate": {"EMP": 3e2, "PAYANN": 1e4, "PAYQTR1": 2.5e3},
    "Aggressive": {"EMP": 1e2, "PAYANN": 1e3, "PAYQTR1": 2.5e2},
}

_BANK_SCHEMA = Schema(id_col="ACCOUNT_ID", measures=("BALANCE",), groups=("BRANCH",))

_REGISTRY: dict[str, SampleInfo] = {}


def _register(info: SampleInfo) -> None:
    _REGISTRY[info.name] = info


_register(SampleInfo(
    name="cbp_like", title="County Business Patterns-like establishments (synthetic)",
    description="Establishments with employment and payroll, nested in firms, counties and NAICS industries; "
                "heavy-tailed like the CBP use case of the per-record zCDP paper.",
    kind="synthetic",
    schema=Schema(id_col="ESTAB_ID", measures=("EMP", "PAYANN", "PAYQTR1"),
                  groups=("STATE", "COUNTY", "NAICS2", "NAICS3", "NAICS4", "NAICS5", "NAICS6"),
                  owner_col="FIRM_ID"),
    default_n=100_000, source="Generator calibrated to Table 8 of the per-record zCDP paper (Sec. 6.4).",
    properties=("EMP ≤ 2 / 5 / 100 for ≈ 47% / 66% / 97% of establishments",
                "PAYANN ≤ 104 / 500 / 10,000 ($1,000s) for ≈ 50% / 79% / 99%",
                "PAYQTR1 ≤ 24 / 125 / 2,500 ($1,000s) for ≈ 50% / 80% / 99%",
                "most firms own one establishment; about 20% of establishments belong to multi-establishment firms"),
    generator=generate_cbp_like,
))
_register(SampleInfo(
    name="sim_pareto", title="SIM: Pareto heavy tails by category (synthetic)",
    description="CatIX over 1..1000, HT1 ~ Pareto(1, 1.2), HT2 ~ Pareto(1, 1.5) (Table 4 of the per-record "
                "zCDP paper).",
    kind="synthetic", schema=Schema(id_col="ID", measures=("HT1", "HT2"), groups=("CatIX",)),
    default_n=100_000, source="Table 4 of the per-record zCDP paper; φ taken uniform.",
    properties=("HT1 ≥ 1 with P(HT1 > x) = x^-1.2", "HT2 ≥ 1 with P(HT2 > x) = x^-1.5", "CatIX uniform on 1..1000"),
    generator=generate_sim_pareto,
))
for _mu, _nm in ((50_000.0, "bank_normal_50k"), (500_000.0, "bank_normal_500k")):
    _register(SampleInfo(
        name=_nm, title=f"Bank balances ~ Normal(μ = σ = {_mu/1000:,.0f}k) (synthetic)",
        description="Integer account balances, negatives removed (general PrDP framework paper, Sec. 8.1).",
        kind="synthetic", schema=_BANK_SCHEMA, default_n=200_000,
        source="Sec. 8.1 of the general PrDP framework paper.",
        properties=(f"balances are integers ≥ 0 from Normal({_mu:,.0f}, {_mu:,.0f}²) truncated at 0",),
        generator=_normal_bank(_mu),
    ))
for _b, _nm in ((3.0, "bank_zipf_b3"), (5.0, "bank_zipf_b5")):
    _register(SampleInfo(
        name=_nm, title=f"Bank balances ~ Zipf(a = 1, b = {_b:g}) (synthetic)",
        description="Integer balances with f(x) ∝ (x+1)^-b on {0, 1, 2, ...} (general PrDP framework paper, "
                    "Sec. 8.1; the paper does not state the support, we take the non-negative integers).",
        kind="synthetic", schema=_BANK_SCHEMA, default_n=200_000,
        source="Sec. 8.1 of the general PrDP framework paper.",
        properties=(f"P(balance = 0) = 1/ζ({_b:g})", "balances are integers ≥ 0, capped at 10^12"),
        generator=_zipf_bank(_b),
    ))
_register(SampleInfo(
    name="table2_example", title="Table 2(a): five establishments",
    description="The worked example of unit splitting in the per-record zCDP paper (Sec. 5).",
    kind="synthetic", schema=Schema(id_col="ID", measures=("Employees", "Payroll"), groups=("Industry",)),
    default_n=5, source="Table 2(a) of the per-record zCDP paper.", generator=table2_example, max_n=5,
))


def _register_real_samples() -> None:
    """Real tables are described in sample_data/real_samples.csv (one row per file)."""
    index = sample_dir() / "real_samples.csv"
    if not index.exists():
        return
    meta = pd.read_csv(index, dtype=str, keep_default_na=False)
    row: Any  # every field a string (dtype=str, empty cells kept as "")
    for row in meta.itertuples(index=False):
        split = lambda s: tuple(x.strip() for x in s.split(";") if x.strip())  # noqa: E731
        _register(SampleInfo(
            name=row.name, title=row.title, description=row.description, kind="real",
            schema=Schema(id_col=row.id_col or None, measures=split(row.measures), groups=split(row.groups),
                          owner_col=row.owner_col or None),
            default_n=None, source=f"{row.source} Licence: {row.licence}.", filename=row.file,
            properties=split(row.properties),
        ))


_register_real_samples()


def names(kind: str | None = None) -> list[str]:
    """Names of the available samples (optionally only ``"synthetic"`` or ``"real"`` ones)."""
    return [k for k, v in _REGISTRY.items() if kind is None or v.kind == kind]


def info(name: str) -> SampleInfo:
    """The :class:`SampleInfo` of a sample."""
    try:
        return _REGISTRY[name]
    except KeyError:
        raise ParameterError(f"Unknown sample '{name}'.", hint=f"Choose one of: {', '.join(names())}.") from None


def load(name: str, *, n: int | None = None, seed: int = 0) -> pd.DataFrame:
    """Load sample ``name``.

    For synthetic samples ``n`` is the number of records (default: the sample's
    default size) and ``seed`` fixes the draw. For real samples ``n`` (if given)
    draws that many rows without replacement using ``seed``.
    """
    meta = info(name)
    if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)) or not 0 <= int(seed) < 2**63:
        raise ParameterError(f"The sample seed must be a whole number from 0 to 2^63 − 1 (got {seed!r}).")
    if n is not None:
        if not isinstance(n, (int, np.integer)) or isinstance(n, bool) or n < 1:
            raise ParameterError("The sample size must be a whole number ≥ 1.")
        if meta.max_n is not None and n > meta.max_n:
            raise ParameterError(f"'{name}' can have at most {meta.max_n:,} records.")
    if meta.generator is not None:
        size = n if n is not None else meta.default_n
        if size is None:
            raise ParameterError(f"'{name}' has no default size: give the number of records.")
        df = meta.generator(int(size), int(seed))
    else:
        df = _load_real(meta.filename or "")
        if n is not None:
            if n > len(df):
                raise ParameterError(f"'{name}' has only {len(df):,} rows; ask for at most that many.")
            df = df.sample(n=int(n), random_state=int(seed)).sort_index().reset_index(drop=True)
    df.attrs["prdp_source"] = f"sample:{name}"
    return df


@lru_cache(maxsize=8)
def _load_real_cached(path: str) -> pd.DataFrame:
    return load_table(path)


def _load_real(filename: str) -> pd.DataFrame:
    return _load_real_cached(str(sample_dir() / filename)).copy()


#: Rows generated at a time by :func:`write_sample` (one Parquet row group each).
WRITE_CHUNK_ROWS = 1_000_000
#: Most rows :func:`write_sample` writes (a 10⁹-row CBP-like Parquet file is about 24 GB).
MAX_WRITE_ROWS = 1_000_000_000


def write_sample(name: str, path: str | os.PathLike, *, rows: int, seed: int = 0,
                 chunk_rows: int = WRITE_CHUNK_ROWS, progress: Callable[[int, int, str], None] | None = None,
                 force: bool = False) -> Path:
    """Write ``rows`` records of a synthetic sample to a Parquet (or CSV) file, chunk by chunk.

    Never holds the table: each chunk of ``chunk_rows`` records is an independent draw of the
    generator (chunk 0 with ``seed``, so a file of at most one chunk holds ``load(name, n=rows,
    seed=seed)``), appended with pyarrow's writers. Record ids continue across chunks and are
    zero-padded to one width, so the id column stays sorted; owners (a CBP-like firm) belong to one
    chunk. For benchmarks and tests of the engines: ``prdp samples write cbp_like --rows 1e8 --out
    cbp.parquet``. The file is written as every output of prdp (:func:`prdp_core.io.outputs.new_file`):
    never through a symbolic link, over an existing file only if prdp wrote it (or ``force``), and
    in place only once complete."""
    import pyarrow as pa

    from ..io.outputs import new_file

    meta = info(name)
    if meta.generator is None:
        raise ParameterError(f"'{name}' is a real sample: only synthetic samples are written in chunks.",
                             hint=f"Choose one of: {', '.join(names('synthetic'))}.")
    if isinstance(rows, bool) or not isinstance(rows, (int, np.integer)) or not 1 <= rows <= MAX_WRITE_ROWS:
        raise ParameterError(f"The number of rows must be a whole number from 1 to {MAX_WRITE_ROWS:,} (got {rows!r}).")
    if meta.max_n is not None and meta.max_n < 1000 and rows > meta.max_n:
        raise ParameterError(f"'{name}' has at most {meta.max_n:,} records.")
    if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)) or not 0 <= int(seed) < 2**63:
        raise ParameterError(f"The sample seed must be a whole number from 0 to 2^63 − 1 (got {seed!r}).")
    out = Path(path)
    kind = out.suffix.lower()
    if kind not in (".parquet", ".pq", ".csv"):
        raise ParameterError(f"Write the sample as .parquet or .csv (got '{out.name}').")
    chunk = max(1, min(int(chunk_rows), meta.max_n or int(chunk_rows)))
    width = len(str(int(rows)))
    ids, owner = meta.schema.id_col, meta.schema.owner_col
    writer: Any = None
    done, owners_so_far = 0, 0
    say = progress or (lambda *_: None)
    with new_file(out, force=force) as sink:
        try:
            while done < rows:
                k = min(chunk, rows - done)
                part = done // chunk
                df = meta.generator(k, int(seed) if part == 0 else (int(seed) * 1_000_003 + part) % 2**63)
                if part == 0:  # keep the generator's zero padding unless more digits are needed
                    width = max([width] + [len(str(df[c].iloc[0])) - len(str(df[c].iloc[0]).rstrip("0123456789"))
                                           for c in (ids, owner) if c is not None and c in df.columns and len(df)])
                if ids is not None and ids in df.columns:
                    df[ids] = _renumber(df[ids], done, width)
                if owner is not None and owner in df.columns:
                    nums = _id_numbers(df[owner])
                    df[owner] = _renumber(df[owner], owners_so_far, width, nums)
                    owners_so_far += int(nums.max()) if len(nums) else 0
                table = pa.Table.from_pandas(df, preserve_index=False)
                if writer is None:
                    writer = _table_writer(sink, kind, table.schema)
                writer.write_table(table)
                done += k
                say(done, rows, f"rows written to {out.name}")
        finally:
            if writer is not None:
                writer.close()
    return out


def _table_writer(sink: Any, kind: str, schema: Any) -> Any:
    if kind == ".csv":
        import pyarrow.csv as pacsv

        return pacsv.CSVWriter(sink, schema)
    import pyarrow.parquet as pq

    return pq.ParquetWriter(sink, schema)


def _id_numbers(col: pd.Series) -> np.ndarray:
    """The number of each id: the id itself, or the digits after a text prefix ("F00000042" → 42)."""
    if pd.api.types.is_integer_dtype(col):
        return col.to_numpy(dtype=np.int64)
    return col.astype(str).str.lstrip("ABCDEFGHIJKLMNOPQRSTUVWXYZ").astype(np.int64).to_numpy()


def _renumber(col: pd.Series, offset: int, width: int, nums: np.ndarray | None = None) -> Any:
    """Ids shifted by ``offset``, text ids re-padded to ``width`` digits (so they sort as numbers)."""
    n = _id_numbers(col) if nums is None else nums
    if pd.api.types.is_integer_dtype(col):
        return n + offset
    prefix = str(col.iloc[0]).rstrip("0123456789") if len(col) else ""
    return np.char.add(prefix, np.char.zfill((n + offset).astype(str), width))


def load_dataset(name: str, *, n: int | None = None, seed: int = 0) -> Dataset:
    """Load a sample as a checked :class:`Dataset` with its documented schema."""
    meta = info(name)
    return prepare_dataset(load(name, n=n, seed=seed), meta.schema, name=name)
