"""Resuming an edge run from a checkpoint ONNX Runtime cannot use: a file cut short, or one saved from other
artifacts, is refused before the run starts, naming the file, why, and the way out (not ORT's C++ words)."""

from __future__ import annotations

import shutil

import pytest

from ortnb.edge import resume
from ortnb.errors import ConfigError


def test_a_mismatch_is_said_per_kind_on_exact_values():
    expected = {"a": ((2, 3), True), "b": ((4,), False), "c": ((1,), False)}
    assert resume.mismatch(dict(expected), expected) == []
    found = {"a": ((3, 3), True), "b": ((4,), True), "d": ((1,), False)}
    assert resume.mismatch(found, expected) == [
        "it lacks 1 weights (c)", "it holds 1 weights (d), which the artifacts do not",
        "weights differ: a [3, 3] trained here, [2, 3] trained in the artifacts, b [4] trained here, [4] frozen in "
        "the artifacts"]
    many = {f"w{i}": ((1,), False) for i in range(5)}
    assert resume.mismatch({}, many) == ["it lacks 5 weights (w0, w1, w2 ...)"]


@pytest.fixture(scope="module")
def exported(tmp_path_factory):
    """Two artifacts folders of tiny BERT: two labels, and three (another export: other head shapes)."""
    pytest.importorskip("onnxruntime.training.api")
    from transformers import AutoTokenizer

    from ortnb import assets
    from ortnb.edge import export_artifacts

    from .._helpers import tiny_bert

    tokenizer = AutoTokenizer.from_pretrained(assets.MODELS["minilm"].locate())
    work = tmp_path_factory.mktemp("edge-resume")
    for name, labels in (("two", 2), ("three", 3)):
        export_artifacts(tiny_bert(num_labels=labels, vocab_size=tokenizer.vocab_size), work / name,
                         trainable="head", tokenizer=tokenizer, seq_len=32)
    return work / "two", work / "three"


ROWS = [{"text": "a fine film", "label": 1}, {"text": "dull", "label": 0}] * 4


@pytest.mark.slow
@pytest.mark.ort
def test_a_checkpoint_cut_short_is_named_before_the_run_starts(exported, tmp_path):
    from ortnb.edge import train

    two, _ = exported
    cut = tmp_path / "step-4"
    cut.write_bytes((two / "checkpoint").read_bytes()[:5000])
    with pytest.raises(ConfigError) as refused:
        train(two, ROWS, steps=6, batch_size=2, resume_from=cut, output_dir=tmp_path / "runs")
    message = str(refused.value)
    assert message.startswith(f"the checkpoint {cut} cannot be read (5,000 bytes; ONNX Runtime says: ")
    assert message.endswith("it is cut short or damaged, as a copy or a save that did not finish leaves it. Resume "
                            "from an earlier checkpoint of that run (its checkpoints/step-N files), or start again "
                            "without resume_from")
    assert not (tmp_path / "runs").exists() or not any(p.name != "edge-data" for p in (tmp_path / "runs").iterdir())


@pytest.mark.slow
@pytest.mark.ort
def test_a_checkpoint_from_other_artifacts_is_named_with_what_differs(exported, tmp_path):
    from ortnb.edge import train

    two, three = exported
    other = tmp_path / "step-2"
    shutil.copyfile(three / "checkpoint", other)
    with pytest.raises(ConfigError) as refused:
        train(two, ROWS, steps=6, batch_size=2, resume_from=other, output_dir=tmp_path / "runs")
    assert str(refused.value) == (
        f"the checkpoint {other} was not saved from the artifacts in {two} (weights differ: classifier.bias [3] "
        "trained here, [2] trained in the artifacts, classifier.weight [3, 64] trained here, [2, 64] trained in the "
        "artifacts): resume it with the artifacts its run trained (the run's config.json names them in "
        "artifacts_dir), or start again on these artifacts without resume_from")


@pytest.mark.slow
@pytest.mark.ort
def test_the_worker_names_a_checkpoint_damaged_after_the_run_was_checked(exported, tmp_path):
    """The same check where the checkpoint is opened: a file changed between train()'s check and the worker."""
    from onnxruntime.training import api

    from ortnb.edge import loop
    from ortnb.edge.config import EdgeConfig

    two, _ = exported
    cut = tmp_path / "step-4"
    cut.write_bytes(b"\0" * 64)
    cfg = EdgeConfig(artifacts_dir=str(two), dataset="", steps=6, resume_from=str(cut))
    with pytest.raises(ConfigError, match=rf"the checkpoint {cut} cannot be read \(64 bytes"):
        loop.open_session(api, cfg)
