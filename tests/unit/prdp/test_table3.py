"""Table 3 of the paper, synthetic columns, with the paper's protocol (Sec. 8.1): β = 0.1, 50 runs,
relative error averaged after dropping the top and bottom 20% of the runs.

The figures come from ``benchmarks/repro_prdp_table3.py`` (same seeds, timing off), so the test
checks two things: the tables in docs/reproductions/prdp-general-framework.md are exactly what the
documented command prints, and the acceptance criteria hold on those figures — within 2× of the
paper for the columns whose data are identifiable, and the documented deviation for the Zipf data.
"""

from __future__ import annotations

import importlib.util
import math
import re
from pathlib import Path

import numpy as np
import pytest

import prdp_core
from prdp_core.mechanisms.prdp.budget import inverse

ROOT = Path(__file__).resolve().parents[3]
DOC = ROOT / "docs" / "reproductions" / "prdp-general-framework.md"
RUNS = 50  # the paper's protocol


def _repro():
    spec = importlib.util.spec_from_file_location("repro_prdp_table3", ROOT / "benchmarks" / "repro_prdp_table3.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)  # the project's own benchmark script, not user input
    return mod


R = _repro()
NORMAL = ["bank_normal_50k", "bank_normal_500k"]


@pytest.fixture(scope="module")
def ours() -> dict[tuple[str, str, str], float]:
    """RE (%) per (query, mechanism, dataset): the main table and the × 1000 Zipf table."""
    out: dict[tuple[str, str, str], float] = {}
    for names, scale, tag in ((R.DATASETS, 1.0, ""), ([n for n in R.DATASETS if "zipf" in n], 1000.0, " ×1000")):
        res = R.run(names, RUNS, 0, scale, timing=False)
        for (query, label), cells in res.items():
            for name, (re_, _) in zip(names, cells):
                out[(query, label, name + tag)] = re_
    return out


def _paper(query: str, label: str, name: str) -> float:
    return float(R.PAPER[(query, label)][R.DATASETS.index(name.split(" ")[0])])


def _doc_tables() -> list[list[list[str]]]:
    """Markdown tables of the reproduction note that start with '| query | mechanism |'."""
    tables, cur = [], None
    for line in DOC.read_text(encoding="utf-8").splitlines():
        if line.startswith("| query | mechanism |"):
            cur = []
            tables.append(cur)
        elif cur is not None and line.startswith("|"):
            if not re.match(r"^\|(-+\|)+$", line):
                cur.append([c.strip() for c in line.strip("|").split("|")])
        else:
            cur = None
    return tables


def test_docs_tables_are_what_the_command_prints(ours):
    main, scaled = _doc_tables()[:2]
    for rows, names, tag in ((main, R.DATASETS, ""), (scaled, ["bank_zipf_b3", "bank_zipf_b5"], " ×1000")):
        assert len(rows) == len(R.ROWS)
        for row, (query, label, _, _) in zip(rows, R.ROWS):
            assert row[:2] == [query, label]
            for j, name in enumerate(names):
                got, paper = row[2 + 2 * j], row[3 + 2 * j]
                assert got == R._fmt(ours[(query, label, name + tag)]), (query, label, name + tag)
                assert paper == str(R.PAPER[(query, label)][R.DATASETS.index(name)])


@pytest.mark.parametrize("name", NORMAL)
@pytest.mark.parametrize("query, label", [("count", "PrDP count (Alg. 1)"), ("sum", "PrDP extension (Sec. 5.2)"),
                                          ("sum", "PrDP framework (Alg. 2)"), ("max", "PrDP framework (Alg. 2)")])
def test_identifiable_columns_within_a_factor_2_of_the_paper(ours, name, query, label):
    got, paper = ours[(query, label, name)], _paper(query, label, name)
    assert paper / 2 <= got <= 2 * paper, (name, query, label, got, paper)


def test_acceptance_bank_normal_50k(ours):
    n = "bank_normal_50k"
    assert _paper("count", "PrDP count (Alg. 1)", n) / 2 <= ours[("count", "PrDP count (Alg. 1)", n)] \
        <= 2 * _paper("count", "PrDP count (Alg. 1)", n)
    assert ours[("sum", "PrDP framework (Alg. 2)", n)] <= 2 * _paper("sum", "PrDP framework (Alg. 2)", n)
    assert ours[("sum", "PrDP extension (Sec. 5.2)", n)] < ours[("sum", "PrDP framework (Alg. 2)", n)]  # Sec. 8.2.1


def test_acceptance_bank_zipf_b3_and_the_documented_deviation(ours):
    n = "bank_zipf_b3"
    count, paper_count = ours[("count", "PrDP count (Alg. 1)", n)], _paper("count", "PrDP count (Alg. 1)", n)
    assert ours[("sum", "PrDP framework (Alg. 2)", n)] <= 2 * _paper("sum", "PrDP framework (Alg. 2)", n)
    # the count is not within 2× of the paper: it is far smaller (docs: ≈ 160×), because the stated
    # distribution puts almost every account in the last domain (ε = ε̂), where counting is near exact
    assert count <= 2 * paper_count and paper_count / count > 100
    b = inverse(1e4, "BALANCE")
    idx = b.domains().index(b(prdp_core.data.samples.load(n)))
    assert np.mean(idx == b.domains().L) >= 0.9999
    # with balances × 1000 the count lands within 2× of the paper's figure (docs, second table)
    scaled = ours[("count", "PrDP count (Alg. 1)", n + " ×1000")]
    assert paper_count / 2 <= scaled <= 2 * paper_count


@pytest.mark.parametrize("name", ["bank_normal_50k", "bank_zipf_b3"])
def test_naive_baseline_is_useless(ours, name):
    assert ours[("count", "naive", name)] > 100
    assert ours[("max", "naive", name)] > 100 and math.isinf(ours[("max", "naive", name)])  # declined
    # the paper prints 100.0 for naive sums: at ε̌ the clipped answer is ≈ 0 on the Normal data
    assert ours[("sum", "naive", name)] >= 99
