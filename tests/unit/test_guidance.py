"""Plain-language guidance next to extreme values (prdp_core.core.interpret.loss_guidance) and the Concepts page's
exercises, whose answers are computed live and checked with a tolerance."""

from __future__ import annotations

import math

import pytest

from prdp_core.core import interpret
from prdp_core.core.errors import ParameterError
from ui import exercises


def test_an_extreme_loss_reads_as_its_epsilon_what_it_means_and_what_to_change():
    text = interpret.loss_guidance(480_000, 1e-6, pieces=693)
    eps = interpret.zcdp_side_by_side(480_000, 1e-6).eps_cks
    assert f"{eps:,.0f}" in text and "480,000ρ" in text  # ε ≈ 485,144 at δ = 1e-06
    assert "promises nothing useful" in text and "693 pieces" in text and "raise the splitting thresholds" in text
    weak = interpret.loss_guidance(3.0)
    assert "weak" in weak and interpret.percent(interpret.zcdp_inference_accuracy(3.0)) in weak


def test_a_moderate_loss_needs_no_guidance_and_unbounded_is_explained():
    assert interpret.loss_guidance(1.0) is None  # ε ≈ 7.8 at δ = 1e-6: not extreme
    assert interpret.loss_guidance(math.inf) == interpret.UNBOUNDED_NOTE
    assert "as large as you like" in interpret.UNBOUNDED_NOTE and "top-coded" in interpret.UNBOUNDED_NOTE
    with pytest.raises(ParameterError, match="non-negative"):
        interpret.loss_guidance(-1.0)
    with pytest.raises(ParameterError):
        interpret.loss_guidance(5.0, delta=2.0)


def test_each_exercise_checks_its_computed_answer_within_its_tolerance():
    by = {e.name: e for e in exercises.EXERCISES}
    assert by["pieces"].answer() == 7 and by["loss"].answer() == pytest.approx(2.5)
    assert by["cks"].answer() == pytest.approx(interpret.zcdp_side_by_side(1.0, 1e-6).eps_cks)
    assert by["guess"].check(73.1) and not by["guess"].check(50.0) and by["guess"].check(None) is None
    assert by["posterior"].check(60) and not by["posterior"].check(5)
    assert by["pieces"].check(7) and not by["pieces"].check(6.67)
    for e in exercises.EXERCISES:
        assert e.check(e.answer()) and not e.check(e.answer() + 10 * e.tolerance + 1)
        assert "{" not in e.explain()


def test_the_board_explains_an_entrys_extreme_largest_loss_in_teaching_mode_only():
    from types import SimpleNamespace

    from ui.board import extreme_note

    big = SimpleNamespace(summary={"unit": "rho", "records": {"max": 480_000.0}})
    assert "ε ≈" in extreme_note(big, review=False) and extreme_note(big, review=True) is None
    assert extreme_note(SimpleNamespace(summary={"unit": "rho", "records": {"max": 0.5}}), review=False) is None
    eps = SimpleNamespace(summary={"unit": "eps", "records": {"max": 1000.0}})  # pure ε: ρ = ε²/2
    assert "ε ≈" in extreme_note(eps, review=False)
    assert extreme_note(SimpleNamespace(summary={"public": {}}), review=False) is None
