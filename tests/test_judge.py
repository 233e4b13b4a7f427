"""The one judge of speed measurements (ortnb/judge.py), on exact values."""

from __future__ import annotations

import pytest

from ortnb import judge


def run(label, speed, steps=20, iqr=1.0, **extra):
    return {"label": label, "samples_per_s": speed, "samples_per_s_iqr": iqr, "steps_measured": steps, **extra}


def test_a_quiet_comparison_states_its_speed_up():
    verdicts = judge.judge([run("eager", 20.0), run("ort", 30.0)])
    assert [(v.text, v.conclusive, v.baseline) for v in verdicts] == [("baseline", True, True), ("1.50x", True, False)]
    assert judge.fastest_line([run("eager", 20.0), run("ort", 30.0)], verdicts, ["pytorch", "onnxruntime"]) == (
        "Fastest here: ort (onnxruntime), 30.00 samples/s, 1.50x the baseline.")


def test_too_few_steps_give_no_figure_and_the_baseline_moves_to_the_first_usable_run():
    verdicts = judge.judge([run("eager", 20.0, steps=3), run("ort", 30.0), run("ort fused", 36.0)])
    assert verdicts[0].text == "too few steps (3 measured)" and verdicts[0].speedup is None
    assert verdicts[1].baseline and verdicts[2].text == "1.20x"
    assert judge.judge([run("a", 20.0), run("b", 30.0)], baseline=1)[0].speedup == pytest.approx(2 / 3)


def test_a_noisy_baseline_makes_every_speed_up_inconclusive_in_the_same_words():
    summaries = [run("eager", 22.9, iqr=39.0), run("ort", 42.4)]
    verdicts = judge.judge(summaries)
    assert verdicts[1].text == "1.85x, not conclusive: the baseline is noisy (spread 170% of its median, over 15%)"
    assert verdicts[0].text.startswith("baseline, not conclusive: this run is noisy")
    assert judge.fastest_line(summaries, verdicts).endswith(
        "not conclusive: the baseline is noisy (spread 170% of its median, over 15%).")


def test_noise_is_judged_on_padded_tokens_when_the_run_has_them():
    steady_tokens = run("longest", 20.0, iqr=8.0, tokens_per_s=2000.0, tokens_per_s_iqr=100.0)  # 5%: quiet
    assert not judge.judge([steady_tokens])[0].noisy
    assert judge.relative_spread(steady_tokens) == 0.05


def test_a_contended_run_is_flagged():
    verdicts = judge.judge([run("eager", 20.0), run("ort", 220.0, contended=True, contended_share=0.48)])
    assert verdicts[1].text == ("11.00x, not conclusive: this run was measured while other processes used the CPU "
                                "(48% of the CPU)")


def test_spread_is_a_range_not_a_plus_minus():
    assert judge.spread_text(16.1, 9.0, 26.8) == "16.1 (p25–p75: 9–26.8)"
    assert judge.spread_text(16.1, None, None) == "16.1" and judge.spread_text(None, 1, 2) == "–"
