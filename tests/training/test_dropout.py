"""RunConfig.dropout: every dropout of the model set before training (layers, attention, the head, the config),
checked on the label, by validation, on real models, and as an axis of the race to a target."""

from __future__ import annotations

import torch

from ortnb.config import RunConfig
from ortnb.runner.worker import set_dropout
from ortnb.validation import validate

from .._helpers import tiny_bert


def test_the_label_names_dropout_and_bad_values_are_refused_with_the_field_named():
    assert RunConfig(backend="eager", dropout=0.0).label == "eager + AdamW + no dropout"
    assert RunConfig(backend="eager", dropout=0.05).label == "eager + AdamW + dropout 0.05"
    assert RunConfig(backend="eager").label == "eager + AdamW"  # None: the model's own, not named
    for bad in (1.0, -0.1, True, "0.1"):
        [problem] = [p for p in validate(RunConfig(dropout=bad)) if p.field == "dropout"]
        assert "must be a probability from 0 (off) to below 1, or None for the model's own" in problem.message
    assert not [p for p in validate(RunConfig(dropout=0)) if p.field == "dropout"]
    assert RunConfig.from_json(RunConfig(dropout=0.0).to_json()).dropout == 0.0


def test_off_means_a_training_forward_is_deterministic_and_the_saved_config_says_so():
    from transformers import BertConfig, BertForSequenceClassification

    torch.manual_seed(0)
    model = BertForSequenceClassification(BertConfig(
        hidden_size=32, num_hidden_layers=2, num_attention_heads=2, intermediate_size=64, vocab_size=100,
        hidden_dropout_prob=0.5, attention_probs_dropout_prob=0.5, classifier_dropout=0.5))
    ids = torch.randint(5, 100, (4, 12))
    model.train()
    assert not torch.equal(model(ids).logits, model(ids).logits)  # dropout on: two passes differ
    assert set_dropout(model, 0.0) >= 2 * 3 + 2  # per layer: attention, its output, the feed-forward; embeddings, head
    assert torch.equal(model(ids).logits, model(ids).logits)
    assert (model.config.hidden_dropout_prob, model.config.attention_probs_dropout_prob,
            model.config.classifier_dropout) == (0.0, 0.0, 0.0)
    assert all(m.p == 0.0 for m in model.modules() if isinstance(m, torch.nn.Dropout))


def test_attention_code_that_reads_a_float_follows_too():
    from transformers import LlamaConfig, LlamaForCausalLM

    model = LlamaForCausalLM(LlamaConfig(hidden_size=32, intermediate_size=64, num_hidden_layers=1,
                                         num_attention_heads=2, num_key_value_heads=2, vocab_size=100,
                                         attention_dropout=0.3))
    set_dropout(model, 0.1)
    assert [m.attention_dropout for m in model.modules() if hasattr(m, "attention_dropout")] == [0.1]
    assert model.config.attention_dropout == 0.1
    set_dropout(tiny_bert(), 0.0)  # a model with nothing at 0.3 is fine too


def test_the_race_to_a_target_may_turn_dropout_off():
    from ortnb.tuning.quality import default_axes

    axes = {axis.name: axis.choices for axis in default_axes(RunConfig(), bf16_native=False, ort_available=True)}
    assert axes["dropout"] == (None, 0.0)
    from ortnb.tuning.space import _NOT_AN_AXIS

    assert "would always turn it off" in _NOT_AN_AXIS["dropout"]
