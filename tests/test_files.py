"""The shared small pieces every view and both kinds of run use: atomic writes, tolerant reads, and the one
median / interquartile range (exact values)."""

from __future__ import annotations

import os

import pytest

from ortnb import files, stats


def test_the_median_and_quartiles_every_view_states():
    assert stats.median([3.0, None, 1.0, 2.0]) == 2.0
    assert stats.median([]) is None and stats.median([None]) is None
    assert stats.quartiles([1.0, 2.0, 3.0, 4.0]) == (1.25, 3.75)  # statistics.quantiles' exclusive method
    assert stats.iqr([1.0, 2.0, 3.0, 4.0, None]) == 2.5
    assert stats.quartiles([1.0, 2.0, 3.0]) == (None, None) and stats.iqr([1.0, 2.0, 3.0]) is None


def test_an_atomic_write_leaves_the_old_file_when_it_fails_and_no_temporary(tmp_path, monkeypatch):
    target = tmp_path / "status.json"
    files.write_atomic(target, '{"status": "running"}')
    assert files.read_json_object(target) == {"status": "running"}

    def full_disk(*_args):
        raise OSError(28, os.strerror(28))

    monkeypatch.setattr(os, "replace", full_disk)
    with pytest.raises(OSError, match="No space left"):
        files.write_atomic(target, b'{"status": "failed"}', durable=True)
    assert files.read_json_object(target) == {"status": "running"}
    assert sorted(p.name for p in tmp_path.iterdir()) == ["status.json"]


@pytest.mark.parametrize("content", ['{"pid": 12', "[1, 2]", "\xff\xfe", ""])
def test_a_damaged_state_file_reads_as_absent(tmp_path, content):
    path = tmp_path / "pid-ranks.json"
    path.write_text(content, encoding="latin-1")
    assert files.read_json_object(path) is None
    assert files.read_json_object(tmp_path / "missing.json") is None


def test_checkpoint_names_of_both_kinds_of_run_give_their_step():
    from ortnb.runs.layout import checkpoint_step

    assert checkpoint_step("runs/a/checkpoint-120", "checkpoint") == 120
    assert checkpoint_step("runs/a/checkpoints/step-7", "step") == 7
    for name in ("checkpoint-12.tmp", "checkpoint-", "checkpoints", "step-7", "checkpoint--3"):
        assert checkpoint_step(name, "checkpoint") is None, name
    assert checkpoint_step("step-latest", "step") is None
