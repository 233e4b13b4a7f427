"""Bad settings are refused when the arguments are built, naming the field and the way out."""

from __future__ import annotations

import importlib.metadata
import re

import pytest

from ortnb import ORTSeq2SeqTrainingArguments, ORTTrainingArguments
from ortnb.errors import ConfigError, MissingDependencyError


def make(tmp_path, **overrides):
    return ORTTrainingArguments(output_dir=str(tmp_path), report_to=[], **overrides)


def test_defaults_match_transformers(tmp_path):
    from transformers import TrainingArguments

    ours, theirs = make(tmp_path), TrainingArguments(output_dir=str(tmp_path), report_to=[])
    assert ours.optim == theirs.optim and ours.learning_rate == theirs.learning_rate
    assert ours.backend == "ort" and ours.ort_fallback == "error"


def test_adamw_ort_fused_needs_cuda(tmp_path):
    with pytest.raises(ConfigError, match=r"optim='adamw_ort_fused' needs .*CUDA.*use optim='adamw_torch_fused'"):
        make(tmp_path, optim="adamw_ort_fused")


@pytest.mark.parametrize("flag", ["bf16", "fp16"])
def test_mixed_precision_with_ort_on_cpu(tmp_path, flag):
    with pytest.raises(ConfigError, match=rf"{flag}=True with backend='ort' needs the CUDA execution provider.*"
                                          rf"Use backend='eager'"):
        make(tmp_path, **{flag: True})


def test_unknown_backend(tmp_path):
    with pytest.raises(ConfigError, match=r"Unknown backend: 'ortx'. Choose between ort, eager, compile"):
        make(tmp_path, backend="ortx")


def test_unknown_optimizer(tmp_path):
    with pytest.raises(ConfigError, match=r"optim='adamw_fast' is unknown. Choose adamw_ort_fused"):
        make(tmp_path, optim="adamw_fast")


def test_unknown_fallback_and_log_level(tmp_path):
    with pytest.raises(ConfigError) as caught:
        make(tmp_path, ort_fallback="maybe", onnx_log_level="LOUD", ort_memory_optimizer_level=5, onnx_opset=11)
    problems = caught.value.problems
    assert len(problems) == 4, problems  # all reported at once
    assert any("Unknown ort_fallback: 'maybe'. Choose between error, allow" in p for p in problems)
    assert any("onnx_log_level='LOUD'" in p for p in problems)
    assert any("ort_memory_optimizer_level=5" in p for p in problems)
    assert any("onnx_opset=11" in p and "14 to 17" in p for p in problems)


def test_zero_stage_3_with_ort(tmp_path):
    config = {"zero_optimization": {"stage": 3}, "train_micro_batch_size_per_gpu": "auto"}
    with pytest.raises(ConfigError, match=r"zero_optimization.stage=3 with backend='ort' is not supported.*"
                                          r"Use stage 1 or 2"):
        make(tmp_path, deepspeed=config)


def test_torch_compile_and_checkpointing_with_ort(tmp_path):
    with pytest.raises(ConfigError) as caught:
        make(tmp_path, torch_compile=True, gradient_checkpointing=True)
    text = str(caught.value)
    assert "torch_compile=True with backend='ort'" in text and "Use backend='compile'" in text
    assert "checkpointing with backend='ort'" in text and "ort_memory_optimizer_level=1" in text


def test_mixed_precision_is_fine_for_eager_on_cpu(tmp_path):
    args = make(tmp_path, backend="eager", bf16=True, use_cpu=True)
    assert args.bf16 and args.backend == "eager"


def test_compile_backend_turns_on_torch_compile(tmp_path):
    assert make(tmp_path, backend="compile").torch_compile is True


def test_ort_training_missing(tmp_path, monkeypatch):
    real = importlib.metadata.version

    def without_ort(name):
        if name.startswith("onnxruntime-training"):
            raise importlib.metadata.PackageNotFoundError(name)
        return real(name)

    monkeypatch.setattr(importlib.metadata, "version", without_ort)
    with pytest.raises(MissingDependencyError, match=r"backend='ort' needs ONNX Runtime training.*"
                                                     r"pip install 'ortnb\[ort\]'.*onnxruntime-training==1.19.2"):
        make(tmp_path)
    assert make(tmp_path, backend="eager").backend == "eager"  # eager needs no ORT


def test_seq2seq_arguments_have_both(tmp_path):
    args = ORTSeq2SeqTrainingArguments(output_dir=str(tmp_path), report_to=[], predict_with_generate=True,
                                       ort_memory_optimizer_level=1)
    assert args.predict_with_generate and args.ort_memory_optimizer_level == 1 and args.backend == "ort"
    with pytest.raises(ConfigError, match="Unknown backend"):
        ORTSeq2SeqTrainingArguments(output_dir=str(tmp_path), backend="fast")


def test_trainer_refuses_plain_training_arguments(tmp_path, bert):
    from transformers import TrainingArguments

    from ortnb import ORTTrainer

    with pytest.raises(TypeError, match=r"needs ORTTrainingArguments.*ortnb.ORTTrainingArguments"):
        ORTTrainer(model=bert, args=TrainingArguments(output_dir=str(tmp_path), report_to=[]))


@pytest.mark.parametrize("backend", ["ort", "eager"])
def test_deepspeed_that_cannot_be_read_names_the_field(tmp_path, backend):
    broken = tmp_path / "ds.json"
    broken.write_text('{"zero_optimization":\n  {"stage": 2,}}')
    cases = {
        "missing.json": r"deepspeed='missing.json': no such file, and not a JSON string either; pass a path to a "
                        r"DeepSpeed JSON file, a JSON string or a dict",
        '{"zero_optimization": {"stage": 3}': r"deepspeed: the JSON string is not valid JSON \(Expecting ',' "
                                              r"delimiter at line 1 column 35\); fix it",
        str(broken): rf"deepspeed: the file {re.escape(str(broken))} is not valid JSON \(Expecting property name "
                     r"enclosed in double quotes at line 2 column 15\)",
        "[1, 2]": r"deepspeed: the JSON string holds a JSON list, not an object",
        5: r"deepspeed=5 is of type int; pass a path to a DeepSpeed JSON file",
    }
    for value, message in cases.items():
        with pytest.raises(ConfigError, match=message):
            make(tmp_path, backend=backend, deepspeed=value)


def test_zero_stage_3_is_read_from_a_json_string_too(tmp_path):
    with pytest.raises(ConfigError, match=r"stage=3 with backend='ort' is not supported.*ORTModule.*cannot trace"):
        make(tmp_path, deepspeed='{"zero_optimization": {"stage": 3}}')
