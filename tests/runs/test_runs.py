"""ortnb.attach opens any run folder by the kind its config.json names, and a config.json it cannot read is
named with its path and what can still be done (pure: no training)."""

from __future__ import annotations

import json

import pytest

import ortnb
from ortnb import runs
from ortnb.edge.config import EdgeConfig
from ortnb.errors import RunFolderError

from .._helpers import tiny


def trainer_folder(tmp_path, text: str | None = None):
    run_dir = tmp_path / "runs" / "20260101-000000-eager"
    run_dir.mkdir(parents=True)
    (run_dir / "config.json").write_text(tiny(tmp_path).to_json() if text is None else text)
    (run_dir / "metrics.jsonl").write_text('{"kind": "event", "event": "completed", "time": 1.0}\n')
    return run_dir


def test_a_trainer_folder_says_its_kind_and_attach_reads_it(tmp_path):
    run_dir = trainer_folder(tmp_path)
    assert json.loads((run_dir / "config.json").read_text())["kind"] == "trainer"
    run = ortnb.attach(run_dir)
    assert type(run).__name__ == "Run" and run.config == tiny(tmp_path) and run.status == "completed"


def test_a_folder_from_before_kinds_is_a_trainer_run(tmp_path):
    run_dir = trainer_folder(tmp_path, json.dumps(tiny(tmp_path).to_dict()))
    assert runs.read_config(run_dir)[0] == "trainer"
    assert ortnb.attach(run_dir).config == tiny(tmp_path)


def test_an_edge_folder_is_opened_as_an_edge_run(tmp_path):
    run_dir = tmp_path / "edge-run"
    run_dir.mkdir()
    EdgeConfig(artifacts_dir=str(tmp_path / "artifacts"), dataset=str(tmp_path / "rows.jsonl"), steps=3).to_json(
        run_dir / "config.json")
    run = ortnb.attach(run_dir)
    assert type(run).__name__ == "EdgeRun" and run.config.steps == 3


@pytest.mark.parametrize("text, words", [
    ('{"kind": "trainer", "model": "tiny-be', "is damaged: it is not JSON (Unterminated string starting at: line 1 column 30"),
    ("", "is damaged: it is not JSON (Expecting value: line 1 column 1"),
    ("[1, 2]", "is damaged: it holds a JSON list, not the run's settings"),
    ('{"kind": "quantum", "model": "x"}', "is a run of kind 'quantum', which this ortnb"),
    ('{"kind": "trainer", "model": "tiny-bert", "colour": "red"}', "Unknown RunConfig field(s): colour"),
])
def test_a_damaged_or_foreign_config_is_named_with_its_path(tmp_path, text, words):
    run_dir = trainer_folder(tmp_path, text)
    with pytest.raises(RunFolderError) as caught:
        ortnb.attach(run_dir)
    message = str(caught.value)
    assert str(run_dir / "config.json") in message and words in message, message


def test_a_damaged_config_says_what_is_left_to_do(tmp_path):
    with pytest.raises(RunFolderError, match="its metrics.jsonl and checkpoints are still there to copy"):
        ortnb.attach(trainer_folder(tmp_path, '{"kind": "trai'))


def test_an_edge_config_is_not_taken_for_a_run_config(tmp_path):
    with pytest.raises(ortnb.ConfigError, match="an edge run's config.json; ortnb.attach"):
        ortnb.RunConfig.from_dict({"kind": "edge", "model": "tiny-bert"})
    with pytest.raises(ortnb.ConfigError, match="EdgeConfig field\\(s\\) missing: artifacts_dir, dataset"):
        EdgeConfig.from_dict({"kind": "edge"})


def test_a_folder_without_config_is_not_a_run_folder(tmp_path):
    with pytest.raises(FileNotFoundError, match="is not a run folder: it holds no config.json"):
        ortnb.attach(tmp_path)
