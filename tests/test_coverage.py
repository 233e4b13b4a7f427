"""Tiny configs of the common architectures train under ORTTrainer, with ONNX Runtime really running them."""

from __future__ import annotations

import math

import pytest
import torch
from datasets import Dataset

from ortnb import ORTSeq2SeqTrainer, ORTSeq2SeqTrainingArguments, ORTTrainer, ORTTrainingArguments

from ._helpers import VOCAB

SMALL = dict(hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0)


def _ids(rows=8, seq=16, seed=0):
    return torch.randint(5, VOCAB, (rows, seq), generator=torch.Generator().manual_seed(seed))


def _classification(ids):
    return Dataset.from_dict({"input_ids": ids.tolist(), "attention_mask": torch.ones_like(ids).tolist(),
                              "labels": (ids[:, 0] % 2).tolist()})


def _causal(ids):
    return Dataset.from_dict({"input_ids": ids.tolist(), "attention_mask": torch.ones_like(ids).tolist(),
                              "labels": ids.tolist()})


def _seq2seq(ids):
    return Dataset.from_dict({"input_ids": ids.tolist(), "attention_mask": torch.ones_like(ids).tolist(),
                              "labels": ids[:, :8].tolist()})


def _images(rows=8):
    pixels = torch.randn(rows, 3, 32, 32, generator=torch.Generator().manual_seed(0))
    return Dataset.from_dict({"pixel_values": pixels.tolist(), "labels": [0, 1] * (rows // 2)}).with_format("torch")


def bert():
    from transformers import BertConfig, BertForSequenceClassification
    return BertForSequenceClassification(BertConfig(hidden_size=64, num_hidden_layers=2, num_attention_heads=2,
                                                    intermediate_size=128, vocab_size=VOCAB, **SMALL))


def distilbert():
    from transformers import DistilBertConfig, DistilBertForSequenceClassification
    return DistilBertForSequenceClassification(DistilBertConfig(dim=64, n_layers=2, n_heads=2, hidden_dim=128,
                                                                vocab_size=VOCAB, dropout=0.0, attention_dropout=0.0))


def roberta():
    from transformers import RobertaConfig, RobertaForSequenceClassification
    return RobertaForSequenceClassification(RobertaConfig(hidden_size=64, num_hidden_layers=2, num_attention_heads=2,
                                                          intermediate_size=128, vocab_size=VOCAB, **SMALL))


def gpt2():
    from transformers import GPT2Config, GPT2LMHeadModel
    return GPT2LMHeadModel(GPT2Config(n_embd=64, n_layer=2, n_head=2, vocab_size=VOCAB, n_positions=64,
                                      resid_pdrop=0.0, embd_pdrop=0.0, attn_pdrop=0.0))


def llama():
    from transformers import LlamaConfig, LlamaForCausalLM
    return LlamaForCausalLM(LlamaConfig(hidden_size=64, num_hidden_layers=2, num_attention_heads=2,
                                        num_key_value_heads=1, intermediate_size=128, vocab_size=VOCAB,
                                        max_position_embeddings=64))


def bart():
    from transformers import BartConfig, BartForConditionalGeneration
    return BartForConditionalGeneration(BartConfig(d_model=64, encoder_layers=1, decoder_layers=1,
                                                   encoder_attention_heads=2, decoder_attention_heads=2,
                                                   encoder_ffn_dim=128, decoder_ffn_dim=128, vocab_size=VOCAB,
                                                   max_position_embeddings=64, dropout=0.0))


def t5():
    from transformers import T5Config, T5ForConditionalGeneration
    # T5 needs decoder_start_token_id to shift labels into decoder inputs.
    return T5ForConditionalGeneration(T5Config(d_model=64, d_ff=128, d_kv=32, num_layers=1, num_heads=2,
                                               vocab_size=VOCAB, dropout_rate=0.0, decoder_start_token_id=0))


def vit():
    from transformers import ViTConfig, ViTForImageClassification
    return ViTForImageClassification(ViTConfig(image_size=32, patch_size=8, hidden_size=64, num_hidden_layers=2,
                                               num_attention_heads=2, intermediate_size=128, num_labels=2, **SMALL))


CASES = {
    "bert": (bert, _classification, False),
    "distilbert": (distilbert, _classification, False),
    "roberta": (roberta, _classification, False),
    "gpt2": (gpt2, _causal, False),
    "llama": (llama, _causal, False),
    "bart": (bart, _seq2seq, True),
    "t5": (t5, _seq2seq, True),
    "vit": (vit, None, False),
}


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(CASES))
def test_architecture_trains_under_ort(tmp_path, name):
    build, make_data, seq2seq = CASES[name]
    torch.manual_seed(0)
    data = _images() if make_data is None else make_data(_ids())
    args_cls, trainer_cls = ((ORTSeq2SeqTrainingArguments, ORTSeq2SeqTrainer) if seq2seq
                             else (ORTTrainingArguments, ORTTrainer))
    args = args_cls(output_dir=str(tmp_path), max_steps=2, per_device_train_batch_size=4, report_to=[],
                    disable_tqdm=True, save_strategy="no", logging_steps=1)
    trainer = trainer_cls(model=build(), args=args, train_dataset=data)
    result = trainer.train()
    assert math.isfinite(result.training_loss)
    report = trainer.engine_report()
    assert report["engine"] == "onnxruntime", report
    assert report["ort_steps"] == 2 and report["fallback"] is None
