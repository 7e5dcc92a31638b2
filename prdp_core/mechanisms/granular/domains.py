"""Public domains of attributes: size classes, the "(other)" catch-all, the samples' categories.

Every category set here is public by construction (a generator's design or a public code list),
never read from the records: :data:`SAMPLE_DOMAINS` documents the registered samples' group columns.
"""

from __future__ import annotations

# ---------------------------------------------------------------------------
# Attribute data (the records as d attributes)
# ---------------------------------------------------------------------------

#: Public, data-independent size classes for numeric columns (decades).
SIZE_CLASS_EDGES = tuple(10.0**k for k in range(0, 10))
SIZE_CLASS_LABELS = ("<1", "1–9", "10–99", "100–999", "1k–9.9k", "10k–99k", "100k–999k", "1M–9.9M",
                     "10M–99M", "100M–999M", "≥1B")
MISSING = "(missing)"
#: The public catch-all category of a declared domain: values outside the declared list go here.
OTHER = "(other)"
#: Where the categories came from (``AttributeData.domain_source``).
DOMAIN_PUBLIC = "public (declared)"
DOMAIN_FROM_DATA = "read from the data — teaching only: the set of categories is not protected"

_US_STATES = ("AL", "AK", "AZ", "AR", "CA", "CO", "CT", "DE", "DC", "FL", "GA", "HI", "ID", "IL", "IN", "IA", "KS",
              "KY", "LA", "ME", "MD", "MA", "MI", "MN", "MS", "MO", "MT", "NE", "NV", "NH", "NJ", "NM", "NY", "NC",
              "ND", "OH", "OK", "OR", "PA", "RI", "SC", "SD", "TN", "TX", "UT", "VT", "VA", "WA", "WV", "WI", "WY")
_NAICS_SECTORS = ("11", "21", "22", "23", "31-33", "42", "44-45", "48-49", "51", "52", "53", "54", "55", "56", "61",
                  "62", "71", "72", "81")
#: Documented (public) categories of the registered samples' group columns: fixed by the generator's
#: construction or by a public code list, never read from the records. Columns not listed here need a
#: declared domain (or size classes, for numbers).
SAMPLE_DOMAINS: dict[str, dict[str, tuple[str, ...]]] = {
    "cbp_like": {"STATE": _US_STATES, "NAICS2": _NAICS_SECTORS},
    "sim_pareto": {"CatIX": tuple(str(i) for i in range(1, 1001))},
    **{name: {"BRANCH": tuple(f"B{i:02d}" for i in range(1, 51))}
       for name in ("bank_normal_50k", "bank_normal_500k", "bank_zipf_b3", "bank_zipf_b5")},
    "table2_example": {"Industry": ("Agriculture", "Mining", "Retail")},
    "us_county_labor_2009": {"region": ("Northeast", "Midwest", "South", "West", "Puerto Rico"),
                             "state": _US_STATES + ("PR",)},
    "world_cities": {"continent": ("Africa", "Antarctica", "Asia", "Europe", "North America", "Oceania",
                                   "South America")},
    "gapminder": {"continent": ("Africa", "Americas", "Asia", "Europe", "Oceania"),
                  "year": tuple(str(y) for y in range(1952, 2008, 5))},
}


def sample_domains(name: str) -> dict[str, tuple[str, ...]]:
    """The documented public categories of a registered sample's group columns ({} if none)."""
    return dict(SAMPLE_DOMAINS.get(str(name), {}))
