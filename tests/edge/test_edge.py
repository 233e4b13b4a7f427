"""ortnb.edge without training: which weights train, and every bad input refused before any work starts."""

from __future__ import annotations

import shutil

import pytest
import torch

from ortnb.edge import trainable
from ortnb.errors import ConfigError

from .._helpers import tiny_bert

pytest.importorskip("onnxruntime.training")


@pytest.fixture(scope="module")
def names():
    return [name for name, _ in tiny_bert().named_parameters()]


@pytest.fixture(scope="module")
def counts():
    return {name: p.numel() for name, p in tiny_bert().named_parameters()}


def test_head_is_the_classifier(names, counts):
    chosen = trainable.resolve("head", names)
    assert chosen == ["classifier.weight", "classifier.bias"]
    assert sum(counts[n] for n in chosen) == 64 * 2 + 2


def test_last_layer_is_its_block_and_what_follows(names, counts):
    chosen = trainable.resolve("last_layers:1", names)
    assert all(n.startswith(("bert.encoder.layer.1.", "bert.pooler.", "classifier.")) for n in chosen)
    assert len([n for n in chosen if n.startswith("bert.encoder.layer.1.")]) == 16
    assert "bert.encoder.layer.0.output.dense.weight" not in chosen
    assert len(chosen) == 16 + 2 + 2
    two = trainable.resolve("last_layers:2", names)
    assert len(two) == 2 * 16 + 4 and not any(n.startswith("bert.embeddings.") for n in two)


def test_all_and_names(names):
    assert trainable.resolve("all", names) == names
    picked = trainable.resolve(["classifier.bias", "bert.pooler.dense.weight"], names)
    assert picked == ["bert.pooler.dense.weight", "classifier.bias"]  # in model order


@pytest.mark.parametrize("spec, words", [
    (["classifier.weigth"], ["classifier.weight", "close"]),
    (["bert.encoder.layer.7.output.dense.weight"], ["does not have"]),
    ("last_layers:3", ["only 2 layers", "last_layers:2"]),
    ("last_layers:0", ["1 or more"]),
    ("heads", ["not a choice", '"head"']),
    (42, ["use"]),
])
def test_bad_trainable_says_why(names, spec, words):
    with pytest.raises(ConfigError) as caught:
        trainable.resolve(spec, names)
    assert all(word in str(caught.value) for word in words), str(caught.value)


def test_model_without_head_or_layers():
    with pytest.raises(ConfigError, match="no classification head"):
        trainable.resolve("head", ["encoder.weight"])
    with pytest.raises(ConfigError, match="no numbered layer stack"):
        trainable.resolve("last_layers:1", ["encoder.weight"])


def test_a_model_over_2_gb_is_refused_before_export(tmp_path):
    from transformers import BertConfig, BertForSequenceClassification

    from ortnb.edge import export_artifacts

    with torch.device("meta"):  # sized, never allocated
        big = BertForSequenceClassification(BertConfig(hidden_size=2048, num_hidden_layers=12,
                                                       intermediate_size=8192, num_attention_heads=16))
    with pytest.raises(ConfigError, match=r"2 GB.*ORTTrainer"):
        export_artifacts(big, tmp_path / "big")
    assert not (tmp_path / "big").exists()


@pytest.mark.parametrize("kwargs, field", [({"loss": "hinge"}, "loss="), ({"optimizer": "lamb"}, "optimizer="),
                                           ({"opset": 21}, "opset="), ({"seq_len": 0}, "seq_len=")])
def test_bad_export_arguments(tmp_path, kwargs, field):
    from ortnb.edge import export_artifacts

    with pytest.raises(ConfigError, match=field):
        export_artifacts(tiny_bert(), tmp_path / "a", **kwargs)
    assert not (tmp_path / "a").exists()


def test_an_op_without_gradient_is_named(tmp_path):
    """Atan has no gradient builder in ORT 1.19.2: training through it is refused with the op, the node and
    the way out; training only the head after it works."""
    from ortnb.edge import export_artifacts

    class Atan(torch.nn.Module):
        def forward(self, x):
            return torch.atan(x)

    model = tiny_bert()
    model.bert.pooler.activation = Atan()
    with pytest.raises(ConfigError) as caught:
        export_artifacts(model, tmp_path / "all", trainable="all")
    message = str(caught.value)
    assert "no gradient for the Atan op" in message and "pooler" in message and 'trainable="head"' in message
    assert export_artifacts(model, tmp_path / "head", trainable="head").trainable_parameters == 130


def test_a_broadcast_whose_shapes_stay_unclear_is_refused_where_a_gradient_flows(tmp_path, monkeypatch):
    """Where symbolic shape inference cannot mend them (here: left out), the broadcasts ORT 1.19.2 would
    differentiate wrongly are named before generation; training only the head, after them, still exports."""
    from ortnb.edge import export_artifacts, fixes

    monkeypatch.setattr(fixes, "BEFORE_GRADIENT",
                        tuple(f for f in fixes.BEFORE_GRADIENT if f.name != "symbolic_shapes"))
    with pytest.raises(ConfigError, match=r"cannot tell which inputs of .*/model/bert/embeddings/Add.* broadcast"
                                          r".*trainable=\"head\""):
        export_artifacts(tiny_bert(), tmp_path / "all", trainable="all")
    assert not (tmp_path / "all").exists()
    assert export_artifacts(tiny_bert(), tmp_path / "head", trainable="head").fixes == (
        "ir_version_clamp (optimizer_model.onnx)",)


# -- train(): refused before a run folder exists (edge_artifacts: conftest) --------------------------------

ROWS = [{"text": "a fine film", "label": 1}, {"text": "a dull film", "label": 0}]


def refused(tmp_path, artifacts_dir, dataset=ROWS, **kwargs):
    from ortnb.edge import train

    runs = tmp_path / "runs"
    with pytest.raises((ConfigError, FileNotFoundError)) as caught:
        train(artifacts_dir, dataset, output_dir=runs, **{"steps": 5, **kwargs})
    assert not runs.exists(), "a run folder was created before the input was checked"
    return str(caught.value)


def test_steps_must_be_positive(tmp_path, edge_artifacts):
    assert "steps=0" in refused(tmp_path, edge_artifacts, steps=0)
    assert "learning_rate" in refused(tmp_path, edge_artifacts, learning_rate=-1.0)


def test_missing_or_incomplete_artifacts(tmp_path, edge_artifacts):
    assert "export_artifacts" in refused(tmp_path, tmp_path / "nowhere")
    partial = tmp_path / "partial"
    shutil.copytree(edge_artifacts, partial)
    (partial / "optimizer_model.onnx").unlink()
    message = refused(tmp_path, partial)
    assert "incomplete" in message and "optimizer_model.onnx" in message


def test_columns_that_do_not_match_the_graph(tmp_path, edge_artifacts):
    message = refused(tmp_path, edge_artifacts, dataset=[{"review": "fine", "stars": 4}])
    # the words runs get for the same rows (data_columns): edge reads the columns runs read
    assert "dataset has no 'text' column for the text to classify (columns found: 'review', 'stars')" in message
    assert "Or give input_ids instead of text." in message
    assert "dataset has no 'label' column for each row's class" in message


@pytest.mark.parametrize("label, words", [(2, ["label 2", "LABEL_0, LABEL_1"]), ("great", ["'great'"])])
def test_labels_the_model_does_not_have(tmp_path, edge_artifacts, label, words):
    message = refused(tmp_path, edge_artifacts, dataset=[{"text": "ok", "label": label}])
    assert "row 1" in message and all(w in message for w in words)


def test_resume_needs_a_checkpoint(tmp_path, edge_artifacts):
    empty = tmp_path / "empty"
    empty.mkdir()
    assert "holds no checkpoint" in refused(tmp_path, edge_artifacts, resume_from=empty)


def test_cli_refuses_bad_input_with_exit_2(tmp_path, edge_artifacts, capsys):
    from ortnb.cli import main

    assert main(["edge", "train", str(edge_artifacts), str(tmp_path / "none.jsonl"), "--steps", "3",
                 "--runs", str(tmp_path / "runs")]) == 2
    assert "no file" in capsys.readouterr().err and not (tmp_path / "runs").exists()
    assert main(["edge", "export", str(tmp_path / "nowhere"), str(tmp_path / "out")]) == 2
    assert "no folder" in capsys.readouterr().err


@pytest.mark.slow
def test_cli_trains_and_reports(tmp_path, edge_artifacts, capsys):
    import json

    from ortnb.cli import main

    data = tmp_path / "rows.jsonl"
    data.write_text("\n".join(json.dumps(r) for r in ROWS * 4))
    assert main(["edge", "train", str(edge_artifacts), str(data), "--steps", "3", "--batch-size", "4",
                 "--eval", str(data), "--runs", str(tmp_path / "runs")]) == 0
    out = capsys.readouterr().out
    assert out.count("step ") >= 3 and "eval at step 3" in out and "completed; engine onnxruntime-training-api" in out
