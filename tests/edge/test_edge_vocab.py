"""ortnb.edge on a 1,000-token BERT (issue 20). With trainable="all" its artifacts used to corrupt memory at the
first steps (NaN losses, "Shape of gradient and momentum_1 mismatch", a dead worker): ORT's gradient of the
broadcast position embeddings lacked its ReduceSum (fixes.symbolic_shapes; tests/edge/test_edge_fixes.py shows the
graph). Now every weight trains, and token ids the embedding has no row for (text from a larger tokenizer) are
refused by name before any export or run starts, instead of stopping the first step inside ONNX Runtime's Gather."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from ortnb import assets
from ortnb.edge import batches
from ortnb.edge.manifest import Manifest
from ortnb.errors import ConfigError

from .._helpers import tiny_bert

api = pytest.importorskip("onnxruntime.training.api")

VOCAB = 1000


@pytest.fixture(scope="module")
def tokenizer():
    from transformers import AutoTokenizer

    return AutoTokenizer.from_pretrained(assets.MODELS["minilm"].locate())


@pytest.fixture(scope="module")
def model():
    return tiny_bert(vocab_size=VOCAB)


@pytest.fixture(scope="module")
def artifacts(tmp_path_factory, model):
    from ortnb.edge import export_artifacts

    folder = tmp_path_factory.mktemp("edge") / "vocab1000"
    result = export_artifacts(model, folder, trainable="all", seq_len=128)
    assert result.trainable_parameters == sum(p.numel() for p in model.parameters())
    assert Manifest.read(folder).vocab_size == VOCAB
    return folder


@pytest.fixture(scope="module")
def text_ids(tokenizer):
    """Rotten Tomatoes rows tokenized by MiniLM's tokenizer: (raw rows with ids up to 30,521, the same rows
    with each distinct id renumbered below 1,000, padding kept at 0)."""
    frame = assets.rotten_tomatoes_frame().iloc[:16]
    encoded = tokenizer(list(frame["text"]), truncation=True, max_length=128)["input_ids"]
    compact = {tokenizer.pad_token_id: 0}
    for ids in encoded:
        for token in ids:
            compact.setdefault(token, len(compact))
    assert len(compact) < VOCAB and max(max(ids) for ids in encoded) >= VOCAB
    labels = frame["label"].tolist()
    raw = [{"input_ids": ids, "label": label} for ids, label in zip(encoded, labels)]
    fitted = [{"input_ids": [compact[t] for t in ids], "label": label} for ids, label in zip(encoded, labels)]
    return raw, fitted


def test_a_tokenizer_with_more_ids_than_the_embedding_is_refused_before_export(tmp_path, model, tokenizer):
    from ortnb.edge import export_artifacts

    with pytest.raises(ConfigError, match=r"up to 30,521 \(30,522 tokens\).*1,000 rows.*resize_token_embeddings"):
        export_artifacts(model, tmp_path / "a", trainable="all", tokenizer=tokenizer)
    assert not (tmp_path / "a").exists()


def test_ids_outside_the_vocabulary_are_refused_before_a_run_starts(tmp_path, artifacts, text_ids):
    from ortnb.edge import train

    runs = tmp_path / "runs"
    with pytest.raises(ConfigError) as caught:
        train(artifacts, text_ids[0], steps=3, output_dir=runs)
    message = str(caught.value)
    assert "dataset row 1 has token id" in message and "ids 0 to 999" in message, message
    assert "more rows have token ids outside 0 to 999" in message, message
    assert not runs.exists()


@pytest.mark.slow
def test_every_weight_of_a_1000_token_bert_trains(tmp_path, artifacts, model, text_ids):
    """The case of issue 20: trainable="all", vocabulary 1,000, hidden 64, sequences up to 128 tokens. Step 1's
    loss is PyTorch's on the same batch, the loss stays finite and falls, and the word embeddings moved."""
    from ortnb.edge import train

    rows = text_ids[1]
    run = train(artifacts, rows, steps=20, batch_size=16, learning_rate=3e-3, output_dir=tmp_path)
    assert run.status == "completed"
    losses = run.metrics["loss"].tolist()
    assert len(losses) == 20 and np.isfinite(losses).all(), losses
    assert np.mean(losses[-5:]) < 0.8 * np.mean(losses[:5]), losses

    info = Manifest.read(artifacts)
    inputs, labels = batches.Batches(batches.encode(rows, info, None), 16, 0, info.pad_token_id).batch(1)
    with torch.no_grad():
        logits = model(**{k: torch.from_numpy(v) for k, v in inputs.items()}).logits
    assert losses[0] == pytest.approx(torch.nn.functional.cross_entropy(logits, torch.from_numpy(labels)).item(),
                                      abs=1e-4)
    trained = api.CheckpointState.load_checkpoint(str(run.checkpoint)).parameters
    embeddings = np.array(trained["bert.embeddings.word_embeddings.weight"].data)
    assert embeddings.shape == (VOCAB, 64)
    assert not np.allclose(embeddings, model.bert.embeddings.word_embeddings.weight.detach().numpy())
