"""The glossary: every symbol and term the pages use, in plain words, and where each is used.

One registry (:data:`TERMS`): a term's symbol (what the pages write), its name, a plain definition a first-time
reader can follow, and the pages that use it (``app_pages/<page>.py`` with its ui modules). The Glossary page lists
them all; every other page shows its own terms in the sidebar (:func:`page_terms`, called by app.py after the page)
with a link to the Glossary page. ``tests/unit/test_glossary.py`` scans the pages' texts so that every symbol they
use has an entry that names the page.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import streamlit as st

#: The Glossary page (for :func:`streamlit.page_link`).
PAGE = "app_pages/glossary.py"

#: Greek letters, alone or with one combining accent (ε̌, ε̂, Φ̄), as the pages write symbols.
GREEK = re.compile(r"[\u0370-\u03ff][\u0300-\u036f]?")


@dataclass(frozen=True)
class Term:
    """One glossary entry: ``symbol`` as the pages write it, ``name`` (how to say it), ``plain`` (what it means, in
    plain words) and ``pages`` (the pages using it, by their file name in app_pages/ without ``.py``)."""

    symbol: str
    name: str
    plain: str
    pages: tuple[str, ...]


#: Every symbol and term of the pages, in reading order.
TERMS: tuple[Term, ...] = (
    Term("DP", "differential privacy",
         "A promise about a release: its outputs are almost as likely with or without any one record, so little can "
         "be learned about that record.", ("start_here", "concepts", "personalized", "analyst_tiers", "board")),
    Term("ε", "epsilon",
         "The privacy loss of pure DP: any output is at most e^ε times more likely with a record than without it. "
         "Smaller is more private; 1 is strong, 10 is weak in the worst case.",
         ("start_here", "policy_designer", "budget_functions", "personalized", "run", "analyst_tiers", "study", "board",
          "concepts")),
    Term("δ", "delta",
         "The small chance that an (ε, δ) guarantee fails; chosen far below one over the number of records "
         "(e.g. 10⁻⁶).", ("start_here", "policy_designer", "personalized", "tradeoffs", "run", "analyst_tiers", "study",
                          "board", "concepts")),
    Term("ρ", "rho",
         "The privacy loss of zero-concentrated DP (zCDP). Losses in ρ add up over releases; convert to ε at a δ to "
         "compare with pure DP (the Concepts page converts).",
         ("start_here", "policy_designer", "tradeoffs", "run", "analyst_tiers", "study", "board", "concepts")),
    Term("zCDP", "zero-concentrated differential privacy",
         "A form of DP suited to Gaussian noise, measured in ρ; its losses add up exactly.",
         ("start_here", "policy_designer", "tradeoffs", "board", "concepts")),
    Term("√(2ρ)", "zCDP's own ε",
         "The ε-like number of zCDP's definition (½ε² = ρ). It is not an (ε, δ) guarantee: use the CKS ε for that.",
         ("concepts",)),
    Term("CKS", "Canonne–Kamath–Steinke conversion",
         "The tightest standard way to turn ρ into (ε, δ): same release, smaller ε than the textbook "
         "ρ + 2√(ρ ln(1/δ)).", ("policy_designer", "concepts")),
    Term("PrDP", "per-record differential privacy",
         "DP whose loss depends on the record: small records lose little, large ones more. The policy says how "
         "much each record may lose.", ("budget_functions", "personalized", "study")),
    Term("PrLDP", "local per-record DP",
         "Per-record DP where each party adds its own noise before sending anything.",
         ("budget_functions", "study")),
    Term("PDP", "personalized DP",
         "Each user chooses their own ε; the release gives every user at least their choice.", ("personalized",)),
    Term("r(a)", "a record's value of measure a",
         "For example a firm's payroll. Measures are the numeric columns that are summed.",
         ("policy_designer", "concepts")),
    Term("T(a)", "splitting threshold of measure a",
         "The largest piece a record's value of measure a is cut into. Larger T: fewer records split, more noise.",
         ("start_here", "policy_designer", "concepts")),
    Term("m(r)", "number of pieces of record r",
         "How many pieces unit splitting cuts the record into: the largest ⌈r(a)/T(a)⌉ over its measures, at least "
         "1.", ("start_here", "policy_designer", "run", "concepts")),
    Term("P(r)", "policy loss of record r",
         "What the policy lets the release reveal about record r, in ρ: the flat budgets plus the split budgets "
         "times m(r)². Public as a formula; confidential for a real record.",
         ("start_here", "policy_designer", "concepts")),
    Term("E(r)", "budget function",
         "A record's privacy loss in ε as a function of its value, chosen by the designer (PrDP).",
         ("budget_functions", "personalized", "concepts")),
    Term("ε̌", "epsilon check (smallest budget)",
         "The smallest ε the budget function gives any record; what a record of minimum size is promised.",
         ("budget_functions", "personalized")),
    Term("ε̂", "epsilon hat (largest budget)",
         "The largest ε the budget function or menu of choices gives any record.",
         ("budget_functions", "personalized")),
    Term("ε0", "per-attribute epsilon",
         "The loss when one attribute of one record changes (e.g. income only): a finer promise next to the "
         "whole-record ε.", ("concepts",)),
    Term("base loss", "the loss of a record never split",
         "What every record pays at least: the sum of the budgets of the queries it takes part in.",
         ("start_here", "policy_designer", "run", "study")),
    Term("record owner", "who owns several records (e.g. a firm)",
         "An owner of several records loses at most their number times the sum of their losses.",
         ("start_here", "policy_designer", "concepts")),
    Term("unbounded", "no finite worst case",
         "A split query's loss grows with m(r)²: a record as large as you like pays as much as you like. Only the "
         "real records' largest loss is finite; cap it with larger thresholds or top-coding.", ("run", "study")),
    Term("σ", "sigma",
         "The standard deviation of the Gaussian noise added to an answer; about 95% of answers fall within 2σ of "
         "the truth.", ("start_here", "budget_functions", "tradeoffs", "run", "analyst_tiers", "board")),
    Term("Δ", "Delta (sensitivity)",
         "How much one record can change an answer at most; the noise is scaled to it.",
         ("tradeoffs", "run", "analyst_tiers")),
    Term("Σ", "sum", "The sum of the terms that follow (over queries, records or releases).",
         ("policy_designer", "run", "analyst_tiers", "concepts")),
    Term("τ", "tau (threshold)",
         "A cut-off: in partition selection, the noisy count a cell needs to appear; in the PrDP framework, the "
         "budget level of a step.", ("policy_designer", "budget_functions", "run", "concepts")),
    Term("Φ", "Phi",
         "On the Personalized DP page: the users' privacy choices (each user's ε). Φ⁻¹ (Run page) is the normal "
         "quantile function.", ("personalized", "run", "study")),
    Term("Φ̄", "Phi bar", "The normal distribution's upper tail: the chance a standard normal value exceeds x.",
         ("run",)),
    Term("α", "alpha",
         "A parameter named on the page: the Pareto tail index of simulated values, a sampling rate, or a Rényi "
         "order.", ("budget_functions", "personalized", "tradeoffs")),
    Term("β", "beta", "A failure probability: the guarantee on accuracy holds with probability at least 1 − β.",
         ("budget_functions", "analyst_tiers")),
    Term("γ", "gamma", "The probability with which an accuracy goal must be met.", ("tradeoffs",)),
    Term("λ", "lambda", "The scale of Laplace noise.", ("concepts",)),
    Term("μ", "mu", "A mean (the average of a distribution).", ("budget_functions",)),
    Term("ν", "nu", "The share of records a histogram cell needs to count as heavy (νn records).", ("concepts",)),
    Term("ξ", "xi", "One random draw of the noise added to an answer.", ("analyst_tiers",)),
    Term("π", "pi", "A probability (of keeping or sampling a user) or the number 3.14… in a formula.",
         ("personalized", "analyst_tiers")),
    Term("ARE", "absolute relative error",
         "|noisy answer − true answer| / true answer: 5% means off by one part in 20.",
         ("tradeoffs", "run")),
    Term("MSE", "mean squared error", "The average squared distance of the answers from the truth.",
         ("tradeoffs", "analyst_tiers")),
    Term("CDF", "cumulative distribution function",
         "A curve: at each loss x, the share of records (or owners) losing at most x.",
         ("policy_designer", "run", "board")),
    Term("PctScore", "percentile score",
         "Where a threshold sits among the records' values: the 99th percentile means 1% of records are above it.",
         ("policy_designer", "tradeoffs")),
    Term("CBP", "County Business Patterns",
         "The US Census Bureau's establishment statistics; the default sample imitates them.",
         ("start_here", "policy_designer", "tradeoffs", "run")),
    Term("GRR", "generalized randomized response",
         "Each user reports their true category with a set probability, otherwise a random one.", ("analyst_tiers",)),
    Term("BRR", "binary randomized response", "Randomized response for one yes/no answer.", ("analyst_tiers",)),
    Term("TSG", "two-sided geometric noise", "Integer noise for counts, the discrete cousin of Laplace noise.",
         ("analyst_tiers",)),
)

#: The terms by symbol.
BY_SYMBOL: dict[str, Term] = {t.symbol: t for t in TERMS}


def terms_of(page: str) -> list[Term]:
    """The terms ``page`` uses (``page``: a file name of app_pages/ without ``.py``), in glossary order."""
    return [t for t in TERMS if page in t.pages]


def entry(t: Term) -> str:
    """One term as a Markdown line: symbol, name, plain definition."""
    return f"- **{t.symbol}** ({t.name}): {t.plain}"


#: The pages' titles, by file name (as app.py names them).
TITLES = {"start_here": "Start here", "data": "Data", "policy_designer": "Policy designer",
          "budget_functions": "Budget functions", "personalized": "Personalized DP", "tradeoffs": "Trade-offs",
          "run": "Run", "analyst_tiers": "Analyst tiers", "study": "Study", "board": "Board", "concepts": "Concepts"}


def used_on(t: Term) -> str:
    """Where ``t`` is used, as a caption line."""
    return "_Used on: " + ", ".join(TITLES.get(p, p) for p in t.pages) + "._"


def matching(text: str | None) -> list[Term]:
    """The terms whose symbol, name or definition contains ``text`` (case-insensitive; all for an empty text)."""
    q = (text or "").strip().casefold()
    return [t for t in TERMS if not q or q in f"{t.symbol} {t.name} {t.plain}".casefold()]


def page_terms(page: str) -> None:
    """In the sidebar: the terms of ``page`` behind an expander, and a link to the Glossary page."""
    terms = terms_of(page)
    if not terms:
        return
    with st.sidebar.expander(f"Terms on this page ({len(terms)})", icon=":material/menu_book:"):
        st.markdown("\n".join(entry(t) for t in terms))
        st.page_link(PAGE, label="The whole glossary", icon=":material/menu_book:")


__all__ = ["BY_SYMBOL", "GREEK", "PAGE", "TERMS", "TITLES", "Term", "entry", "matching", "page_terms", "terms_of",
           "used_on"]
