"""freeze_embeddings: the word embeddings left untrained. Its label, its check, config.json and the form carry it;
a real run leaves the embeddings bit-identical and trains the rest."""

from __future__ import annotations

import pytest
import torch

from ortnb import validate
from ortnb.comparison import grid
from ortnb.config import RunConfig
from ortnb.ui import form

from ._helpers import tiny


def test_the_label_names_frozen_embeddings_only_when_they_are():
    assert RunConfig(backend="eager").label == "eager + AdamW"
    assert RunConfig(backend="eager", freeze_embeddings=True).label == "eager + AdamW + frozen embeddings"
    assert RunConfig(freeze_embeddings=True, num_processes=2).label == "ort + AdamW + frozen embeddings x2"
    labels = [c.label for c in grid(RunConfig(backend="eager"), {"freeze_embeddings": [False, True]})]
    assert labels == ["eager + AdamW", "eager + AdamW + frozen embeddings"]  # told apart, no "(freeze_...=True)"


def test_freeze_embeddings_survives_config_json_and_a_non_boolean_is_refused(tmp_path):
    config = RunConfig(model="tiny-bert", freeze_embeddings=True)
    assert RunConfig.from_json(config.to_json()).freeze_embeddings is True
    config.to_json(tmp_path / "config.json")
    assert RunConfig.from_json(tmp_path / "config.json") == config
    assert RunConfig.from_dict({"model": "tiny-bert"}).freeze_embeddings is False  # older config.json files
    problems = validate(RunConfig(model="tiny-bert", freeze_embeddings="yes"))
    assert [(p.field, p.message) for p in problems] == [("freeze_embeddings", "must be True or False, got 'yes'.")]
    assert validate(config) == []
    assert "15%" in RunConfig.help("freeze_embeddings")


def test_the_form_shows_and_reads_the_toggle():
    values = form.form_values(RunConfig(freeze_embeddings=True))
    assert values["freeze_embeddings"] is True and "freeze_embeddings" in form.FORM_FIELDS
    assert form.read_form({**values, "freeze_embeddings": False}, RunConfig(freeze_embeddings=True)).config == \
        RunConfig()
    assert form.CONTROL_LABELS["freeze_embeddings"] == "frozen embeddings"


@pytest.mark.ort  # trains tiny BERT with ORTModule in this process
def test_a_run_with_frozen_embeddings_leaves_them_bit_identical_and_trains_the_rest(tmp_path, monkeypatch):
    from safetensors.torch import load_file

    from ortnb.runner import worker
    from ortnb.runs import layout

    loaded = {}
    freeze = worker.freeze_word_embeddings

    def keep_the_loaded_weights(model):
        loaded.update({name: p.detach().clone() for name, p in model.named_parameters()})
        freeze(model)

    monkeypatch.setattr(worker, "freeze_word_embeddings", keep_the_loaded_weights)
    config = tiny(tmp_path, freeze_embeddings=True, max_steps=4, evaluate=False, learning_rate=1e-3)
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    config.to_json(run_dir / layout.CONFIG)
    assert worker.run(run_dir, rank=0, world=1) == "completed"
    trained = load_file(str(run_dir / layout.MODEL / "model.safetensors"))
    embeddings = "bert.embeddings.word_embeddings.weight"
    assert torch.equal(trained[embeddings], loaded[embeddings])
    changed = [name for name in loaded if name != embeddings and not torch.equal(trained[name], loaded[name])]
    assert "bert.embeddings.position_embeddings.weight" in changed and "classifier.weight" in changed
    assert len(changed) == len(loaded) - 1  # everything else trained
