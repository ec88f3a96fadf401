"""growth.breach: a measure judged against its value at the base."""

from __future__ import annotations

import pytest

from runtime.verify.kinds.growth import CROSSED, GREW, NEW, breach


@pytest.mark.parametrize("now,before", [(0, None), (100, None), (100, 100), (99, 120), (100, 500), (50, 0)])
def test_within_the_limit_is_no_breach_whatever_the_base(now, before):
    assert breach(now, before, 100) is None


@pytest.mark.parametrize("now", [101, 5000])
def test_over_the_limit_without_a_base_value_is_new(now):
    assert breach(now, None, 100) == NEW


@pytest.mark.parametrize("now,before", [(101, 100), (101, 0), (300, 99)])
def test_over_the_limit_from_within_it_has_crossed(now, before):
    assert breach(now, before, 100) == CROSSED


@pytest.mark.parametrize("now,before", [(102, 101), (5000, 1075)])
def test_over_the_limit_at_the_base_and_larger_now_grew(now, before):
    assert breach(now, before, 100) == GREW


@pytest.mark.parametrize("now,before", [(500, 500), (400, 500), (101, 101)])
def test_over_the_limit_at_the_base_but_not_larger_is_no_breach(now, before):
    assert breach(now, before, 100) is None


def test_a_limit_of_zero_counts_any_positive_measure_as_over():
    assert breach(0, None, 0) is None
    assert breach(1, None, 0) == NEW
    assert breach(1, 0, 0) == CROSSED


def test_the_three_verdicts_are_distinct():
    assert len({NEW, CROSSED, GREW}) == 3
