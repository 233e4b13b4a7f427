"""Every writer's records come from records.py: the same fields, computed the same way (exact values)."""

from __future__ import annotations

import pytest

from ortnb.runs import records
from ortnb.metrics import STEP_COLUMNS


def test_a_step_record_has_every_column_and_rates_are_work_over_time():
    record = records.step(7, step_time=0.25, samples=16, padded_tokens=2048, real_tokens=1024, seq_len=128.0,
                          loss=0.5, learning_rate=1e-4, peak_rss_mb=[900.0, 910.0], wall_time=100.0)
    assert list(record) == ["kind", *STEP_COLUMNS]
    assert (record["samples_per_s"], record["tokens_per_s"], record["real_tokens_per_s"]) == (64.0, 8192.0, 4096.0)
    assert record["seq_len"] == 128 and isinstance(record["seq_len"], int) and record["wall_time"] == 100.0
    assert record["mfu"] is None and record["grad_norm"] is None  # what this writer cannot know stays None
    with pytest.raises(ValueError, match="step_time=0"):
        records.step(1, step_time=0, samples=4, loss=1.0)


def test_an_evaluation_is_an_event_with_the_metric_it_is_judged_by():
    record = records.evaluation(20, eval_loss=0.41, metric="accuracy", accuracy=0.8, samples=100)
    assert record["kind"] == "event" and record["event"] == "eval" and record["step"] == 20
    assert (record["eval_loss"], record["metric"], record["accuracy"], record["samples"]) == (0.41, "accuracy", 0.8, 100)
    with pytest.raises(ValueError, match="metric='matthews'"):
        records.evaluation(1, eval_loss=0.4, metric="matthews")


def test_the_edge_loop_and_the_live_callback_write_the_trainers_fields():
    import numpy as np

    from ortnb.edge.loop import step_record

    mask = np.array([[1, 1, 1, 0], [1, 1, 0, 0]])
    record = step_record(3, 0.5, {"attention_mask": mask}, 0.7, 1e-3)
    assert list(record) == ["kind", *STEP_COLUMNS]
    assert (record["samples_per_s"], record["tokens_per_s"], record["real_tokens_per_s"], record["seq_len"]) == \
        (4.0, 16.0, 10.0, 4)
