"""ortnb.wording: one way to say a ratio of speeds, on exact values."""

import pytest

from ortnb.wording import speed_sentence, speed_words, speedup_from_times


def test_a_shorter_time_is_a_higher_speed():
    assert speedup_from_times(1284, 1502) == pytest.approx(1.16978, abs=1e-5)
    assert speedup_from_times(492, 444) == pytest.approx(0.90244, abs=1e-5)


@pytest.mark.parametrize("time, other", [(0, 1), (1, -2)])
def test_times_must_be_positive(time, other):
    with pytest.raises(ValueError, match="times must be positive"):
        speedup_from_times(time, other)


@pytest.mark.parametrize("speedup, words", [
    (1.1698, "faster: 1.17x the speed of eager"),
    (0.9024, "slower: 0.90x the speed of eager"),
    (1.004, "as fast: 1.00x the speed of eager"),  # the direction follows the figure as shown
    (0.996, "as fast: 1.00x the speed of eager"),
    (3.7415, "faster: 3.74x the speed of eager"),
])
def test_the_direction_comes_first(speedup, words):
    assert speed_words(speedup, "eager") == words


def test_one_decimal_when_asked():
    assert speed_words(4.0478, "(a)", digits=1) == "faster: 4.0x the speed of (a)"


def test_a_sentence_from_two_times_quotes_them():
    assert speed_sentence("ORT", "eager", times=(1284.33, 1501.86), unit="ms", per="a step") == \
        "ORT was faster: 1.17x the speed of eager (1284 against 1502 ms a step)"
    assert speed_sentence("ORT", "eager", times=(492.1, 444.3), unit="ms", per="a step") == \
        "ORT was slower: 0.90x the speed of eager (492 against 444 ms a step)"
    assert speed_sentence("(b)", "(d)", times=(72.6, 100.9)) == "(b) was faster: 1.39x the speed of (d) (72.6 against 101 s)"


def test_a_sentence_from_a_speedup():
    assert speed_sentence("ORTTrainer", "Trainer", 1.2378) == "ORTTrainer was faster: 1.24x the speed of Trainer"


@pytest.mark.parametrize("kwargs", [{}, {"speedup": 1.2, "times": (1, 2)}])
def test_either_a_speedup_or_times(kwargs):
    with pytest.raises(ValueError, match="give either speedup or times"):
        speed_sentence("a", "b", **kwargs)
