import pytest

from helpers.timing import median_seconds


def test_median_seconds_counts_calls_and_is_positive():
    calls = []
    t = median_seconds(lambda: calls.append(1), repeats=3, warmup=2)
    assert len(calls) == 5
    assert t >= 0


def test_min_seconds_loops_until_enough_time_passed():
    calls = []
    median_seconds(lambda: calls.append(1), repeats=1, warmup=0, min_seconds=0.01)
    assert len(calls) > 1


def test_repeats_must_be_positive():
    with pytest.raises(ValueError, match="repeats should be at least 1"):
        median_seconds(lambda: None, repeats=0)
