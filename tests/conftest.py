"""Shared fixtures: tiny models built from configs and small deterministic datasets."""

from __future__ import annotations

import os

import pytest
import torch

# The Hub is unreachable on CI; fail fast instead of retrying downloads.
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

VOCAB = 1000
SEQ = 32

requires_cuda = pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")


def tiny_bert(num_labels: int = 2, seed: int = 0, vocab_size: int = VOCAB):
    from transformers import BertConfig, BertForSequenceClassification

    torch.manual_seed(seed)
    config = BertConfig(hidden_size=64, num_hidden_layers=2, num_attention_heads=2, intermediate_size=128,
                        vocab_size=vocab_size, hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0,
                        num_labels=num_labels)
    return BertForSequenceClassification(config)


def classification_dataset(rows: int = 160, seq: int = SEQ, seed: int = 0):
    """Random token ids whose label is a function of the first token, so a model can learn it."""
    from datasets import Dataset

    generator = torch.Generator().manual_seed(seed)
    ids = torch.randint(5, VOCAB, (rows, seq), generator=generator)
    return Dataset.from_dict({"input_ids": ids.tolist(), "attention_mask": [[1] * seq] * rows,
                              "labels": (ids[:, 0] % 2).tolist()})


def lm_dataset(rows: int = 32, seq: int = SEQ, seed: int = 0):
    from datasets import Dataset

    generator = torch.Generator().manual_seed(seed)
    ids = torch.randint(5, VOCAB, (rows, seq), generator=generator).tolist()
    return Dataset.from_dict({"input_ids": ids, "attention_mask": [[1] * seq] * rows, "labels": ids})


@pytest.fixture
def bert():
    return tiny_bert()


@pytest.fixture
def train_data():
    return classification_dataset()


@pytest.fixture
def eval_data():
    return classification_dataset(rows=48, seed=1)
