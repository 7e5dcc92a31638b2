"""Numbers in words (prdp_core.core.wording) and the steps of number inputs (ui.common.scale_step)."""

from __future__ import annotations

import numpy as np
import pytest

from prdp_core.core.errors import ParameterError
from prdp_core.core.loss_profile import LossProfile
from prdp_core.core.wording import ordinal, percent, share_in_words
from ui.common import scale_step


@pytest.mark.parametrize("x, text", [
    (1, "1st"), (2, "2nd"), (3, "3rd"), (4, "4th"), (10, "10th"), (11, "11th"), (12, "12th"), (13, "13th"),
    (21, "21st"), (22, "22nd"), (23, "23rd"), (99, "99th"), (101, "101st"), (111, "111th"), (112, "112th"),
    (98.3, "98.3rd"), (97.5, "97.5th"), (99.9, "99.9th"), (99.1, "99.1st"), (99.0, "99th"), (97.04, "97th"),
    (0, "0th"),
])
def test_ordinal_follows_the_number_as_read(x, text):
    assert ordinal(x) == text


def test_ordinal_refuses_what_is_not_a_number():
    with pytest.raises(ParameterError, match="finite"):
        ordinal(float("nan"))


@pytest.mark.parametrize("share, text", [
    (0.01, "1 in 100 records pays"),
    (0.5, "1 in 2 records pays"),
    (1 / 3, "1 in 3 records pays"),
    (0.0001, "1 in 10,000 records pays"),
    (0.0123, "about 1 in 81 records pays"),  # 1/81 = 0.01235
    (0.34, "about 1 in 3 records pays"),
    (0.62, "62% of records pay"),  # never "1 in 2"
    (0.4, "40% of records pay"),  # 1 in 2.5: neither 1 in 2 nor 1 in 3
    (0.75, "75% of records pay"),
    (0.999, "99.9% of records pay"),
    (0.9996, "over 99.9% of records pay"),
    (1.0, "100% of records pay"),
    (0.0, "0% of records pay"),
])
def test_share_in_words_says_1_in_n_only_when_it_is(share, text):
    assert share_in_words(share, "records", singular="pays", plural="pay") == text


def test_share_in_words_refuses_what_is_not_a_share():
    for bad in (-0.1, 1.5, float("nan")):
        with pytest.raises(ParameterError, match="between 0 and 1"):
            share_in_words(bad, "records", singular="pays", plural="pay")


def test_percent_never_rounds_to_none_or_all():
    assert percent(0.0004) == "0.04%"
    assert percent(0.004) == "0.4%"
    assert percent(0.995) == "99.5%"
    assert percent(0.25) == "25%"


def test_the_loss_read_out_of_62_percent_is_not_1_in_2():
    values = np.array([1.0] * 38 + [4.0] * 62)
    assert LossProfile(values).plain_language(1.0) == "62% of records pay more than 1ρ; the largest loss is 4ρ."
    assert LossProfile(np.array([1.0] * 80 + [4.0] * 20)).plain_language(1.0).startswith("1 in 5 records pays")


@pytest.mark.parametrize("value, step", [
    (1234.0, 100.0), (37.0, 1.0), (0.37, 0.01), (5.0, 0.1), (100.0, 10.0), (63_000.0, 1000.0), (2e-5, 1e-6),
    (0.0, 1.0), (float("nan"), 1.0), (None, 1.0), ("x", 1.0), (-250.0, 10.0),
])
def test_scale_step_is_a_unit_of_the_second_significant_digit(value, step):
    assert scale_step(value) == pytest.approx(step)
