"""Exercises of the Concepts page: questions whose answers the app checks, with feedback.

Each :class:`Exercise` computes its answer live from prdp_core (split counts, a policy's loss, the CKS conversion,
inference bounds), never from a copied number; the reader's answer is right within the exercise's tolerance.
Keys in ``st.session_state``: ``ex_<name>`` (the reader's answers).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import pandas as pd
import streamlit as st

from prdp_core.core import interpret
from prdp_core.core.conversions import zcdp_to_approx_dp
from prdp_core.core.splitting import as_thresholds, split_counts
from prdp_core.core.workload import SplittingPolicy, default_workload


@dataclass(frozen=True)
class Exercise:
    """One question: ``name`` (its widget key is ``ex_<name>``), the question, the unit of the answer, how far from
    the answer a reply may be (``tolerance``, absolute), the answer (computed when asked) and the explanation shown
    with the feedback (``{answer}`` in it: the answer computed)."""

    name: str
    question: str
    unit: str
    tolerance: float
    answer: Callable[[], float]
    explanation: str

    def explain(self) -> str:
        """The explanation, with the answer computed now."""
        return self.explanation.format(answer=self.answer())

    def check(self, reply: float | None) -> bool | None:
        """Whether ``reply`` is right (None: no reply yet)."""
        if reply is None:
            return None
        return abs(float(reply) - self.answer()) <= self.tolerance


def _pieces() -> float:
    return float(split_counts(pd.DataFrame({"EMP": [1000.0]}), {"EMP": 150.0})[0])


def _policy_loss() -> float:
    pol = SplittingPolicy(as_thresholds({"PAYANN": 100.0}), default_workload(["PAYANN"], rho_count=0.25,
                                                                               rho_sum=0.25))
    return float(pol(pd.DataFrame({"PAYANN": [250.0]}))[0])


#: The exercises, from the pieces of a record to what an attacker could infer.
EXERCISES: tuple[Exercise, ...] = (
    Exercise("pieces", "A record has EMP = 1,000 and the threshold is T(EMP) = 150. Into how many pieces m(r) is it "
             "cut?", "pieces", 0.0, _pieces,
             "m(r) rounds r(a)/T(a) up: 1,000/150 = 6.67, so {answer:g} pieces of at most 150."),
    Exercise("loss", "A policy has a COUNT with ρ = 0.25 and a SUM of PAYANN on split data with ρ = 0.25, and "
             "T(PAYANN) = 100. What is P(r) of a record with PAYANN = 250, in ρ?", "ρ", 1e-9, _policy_loss,
             "250/100 rounds up to m(r) = 3 pieces. The COUNT charges 0.25; the SUM charges 0.25 × 3² = 2.25; "
             "together {answer:g}ρ."),
    Exercise("cks", "What ε does ρ = 1 give at δ = 10⁻⁶ by the CKS conversion? (two decimals)", "ε", 0.05,
             lambda: zcdp_to_approx_dp(1.0, 1e-6),
             "The calculator (zCDP ↔ (ε, δ)) gives it: about {answer:.2f}. zCDP's own ε = √(2ρ) ≈ 1.41 is not an "
             "(ε, δ) guarantee."),
    Exercise("guess", "At ε = 1 (pure DP), what is the best chance, in %, of guessing one yes/no fact about a "
             "record right?", "%", 0.5, lambda: 100 * interpret.inference_accuracy(1.0),
             "e^ε/(1 + e^ε) = 2.718/3.718 ≈ {answer:.1f}%: better than a coin flip, far from certainty."),
    Exercise("posterior", "A suspicion is held with 1% certainty. At ε = 5, how high can it rise at most, in %?",
             "%", 1.0, lambda: 100 * interpret.posterior_bound(5.0, 0.01),
             "The odds 1 : 99 are multiplied by at most e^5 ≈ 148: 148 : 99, about {answer:.0f}%."),
)


def render() -> None:
    """The Exercises tab: each question with a number box and the app's feedback."""
    st.subheader("Exercises")
    st.caption("Type an answer; the app checks it with the same functions the pages use.")
    for i, ex in enumerate(EXERCISES, start=1):
        reply = st.number_input(f"{i}. {ex.question}", value=None, format="%g", key=f"ex_{ex.name}",
                                placeholder=f"your answer ({ex.unit})")
        ok = ex.check(reply)
        if ok is True:
            st.success(f"Right. {ex.explain()}", icon=":material/check_circle:")
        elif ok is False:
            st.warning(f"Not yet: {reply:g} is not the answer. Try again, or see the explanation below.",
                       icon=":material/help:")
            with st.expander("Explanation"):
                st.markdown(f"{ex.explain()} The answer is **{ex.answer():.4g} {ex.unit}**.")


__all__ = ["EXERCISES", "Exercise", "render"]
