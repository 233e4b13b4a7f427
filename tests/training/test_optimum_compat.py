"""Optimum's scripts, unmodified but for the import: what Optimum 1.27's ORTTrainer, ORTSeq2SeqTrainer and
ORTTrainingArguments took and transformers 5 removed is mapped (with one FutureWarning) or refused, naming the
field and the way out, before any work."""

from __future__ import annotations

import warnings

import pytest
import transformers
from transformers import HfArgumentParser

from ortnb import ORTSeq2SeqTrainer, ORTSeq2SeqTrainingArguments, ORTTrainer, ORTTrainingArguments
from ortnb.assets import load_model
from ortnb.errors import ConfigError

from .._helpers import classification_dataset

# What Optimum 1.27's ORTTrainingArguments took (transformers 4.53's TrainingArguments fields) and transformers 5
# dropped; read from the optimum 1.27.0 and transformers 4.53.3 wheels.
REMOVED_FIELDS = [
    "overwrite_output_dir", "per_gpu_train_batch_size", "per_gpu_eval_batch_size", "warmup_ratio", "logging_dir",
    "save_safetensors", "no_cuda", "use_mps_device", "jit_mode_eval", "use_ipex", "fp16_opt_level",
    "half_precision_backend", "tpu_num_cores", "tpu_metrics_debug", "past_index", "fsdp_min_num_params",
    "fsdp_transformer_layer_cls_to_wrap", "adafactor", "group_by_length", "use_legacy_prediction_loop",
    "include_inputs_for_metrics", "fp16_backend", "push_to_hub_model_id", "push_to_hub_organization",
    "push_to_hub_token", "mp_parameters", "torchdynamo", "ray_scope", "include_tokens_per_second",
    "evaluation_strategy",  # transformers 4.41-4.45, and every Optimum tutorial before that
]


@pytest.fixture(scope="module")
def tiny():
    return load_model("tiny-bert", "sequence-classification")


def make(tmp_path, **overrides):
    return ORTTrainingArguments(output_dir=str(tmp_path / "out"), report_to=[], **{"backend": "eager", **overrides})


def future_warnings(record) -> list[str]:
    return [str(w.message) for w in record if issubclass(w.category, FutureWarning)]


# -- ORTTrainer / ORTSeq2SeqTrainer -------------------------------------------------------------


@pytest.mark.parametrize("trainer_cls, args_cls", [(ORTTrainer, ORTTrainingArguments),
                                                   (ORTSeq2SeqTrainer, ORTSeq2SeqTrainingArguments)])
def test_tokenizer_becomes_processing_class(tmp_path, tiny, trainer_cls, args_cls):
    model, tokenizer = tiny
    args = args_cls(output_dir=str(tmp_path), report_to=[], backend="eager")
    with pytest.warns(FutureWarning, match=r"tokenizer= was passed on as processing_class= .*transformers 5 calls "
                                           r"it processing_class\): rename it") as record:
        trainer = trainer_cls(model=model, args=args, tokenizer=tokenizer)
    assert trainer.processing_class is tokenizer
    assert len(future_warnings(record)) == 1, future_warnings(record)
    assert future_warnings(record)[0].startswith(f"{trainer_cls.__name__}: tokenizer=")


def test_tokenizer_none_is_renamed_only(tmp_path, tiny):
    with pytest.warns(FutureWarning, match=r"tokenizer= was passed on as processing_class="):
        trainer = ORTTrainer(model=tiny[0], args=make(tmp_path), tokenizer=None)
    assert trainer.processing_class is None


@pytest.mark.parametrize("positional", [False, True])
def test_tokenizer_and_processing_class_refused(tmp_path, tiny, positional):
    model, tokenizer = tiny
    args = make(tmp_path)
    with pytest.raises(ConfigError, match=r"ORTTrainer\(tokenizer=\.\.\., processing_class=\.\.\.\): both were given"
                                          r".*pass only processing_class"):
        if positional:  # processing_class is Trainer's sixth parameter, as tokenizer was Optimum's
            ORTTrainer(model, args, None, None, None, tokenizer, tokenizer=tokenizer)
        else:
            ORTTrainer(model=model, args=args, tokenizer=tokenizer, processing_class=tokenizer)


def test_feature_is_ignored_with_the_tokenizer_in_one_warning(tmp_path, tiny):
    """Optimum 1.27's run_classification.py and its trainer guide still pass feature=."""
    model, tokenizer = tiny
    with pytest.warns(FutureWarning) as record:
        trainer = ORTTrainer(model=model, args=make(tmp_path), tokenizer=tokenizer, feature="text-classification")
    (message,) = future_warnings(record)
    assert "tokenizer= was passed on as processing_class=" in message
    assert "feature='text-classification' is ignored" in message and "remove it" in message
    assert trainer.processing_class is tokenizer


def test_onnx_model_path_refused(tmp_path, tiny):
    with pytest.raises(ConfigError, match=r"ORTTrainer\(onnx_model_path='model.onnx'\): .*evaluates and predicts "
                                          r"in PyTorch. Remove it.*ortnb.export_onnx"):
        ORTTrainer(model=tiny[0], args=make(tmp_path), onnx_model_path="model.onnx")


def test_inference_with_ort(tmp_path, tiny):
    eval_data = classification_dataset(rows=8)
    trainer = ORTTrainer(model=tiny[0], args=make(tmp_path, per_device_eval_batch_size=8), eval_dataset=eval_data)
    with pytest.raises(ConfigError, match=r"ORTTrainer.evaluate\(inference_with_ort=True\): .*ortnb.export_onnx"):
        trainer.evaluate(inference_with_ort=True)
    with pytest.raises(ConfigError, match=r"ORTTrainer.predict\(inference_with_ort=True\)"):
        trainer.predict(eval_data, inference_with_ort=True)
    with pytest.warns(FutureWarning, match=r"evaluate\(inference_with_ort=False\): .*what evaluate always does"):
        metrics = trainer.evaluate(inference_with_ort=False)
    assert "eval_loss" in metrics


def test_logging_dir_reaches_tensorboard(tmp_path, tiny):
    from transformers.integrations import TensorBoardCallback

    callback = TensorBoardCallback.__new__(TensorBoardCallback)  # without tensorboard installed
    callback.tb_writer, callback._SummaryWriter, callback.logging_dir = None, None, None
    with pytest.warns(FutureWarning, match=r"logging_dir='.*tb' -> TensorBoard's log directory"):
        args = make(tmp_path, logging_dir=str(tmp_path / "tb"))
    ORTTrainer(model=tiny[0], args=args, callbacks=[callback])
    assert callback.logging_dir == str(tmp_path / "tb") == args.logging_dir


# -- ORTTrainingArguments ------------------------------------------------------------------------


def test_every_removed_field_is_a_field_again():
    ours, theirs = ORTTrainingArguments.__dataclass_fields__, transformers.TrainingArguments.__dataclass_fields__
    assert [name for name in REMOVED_FIELDS if name not in ours] == []
    # If transformers brings one back, its own definition must win: this test then says which to delete.
    assert [name for name in REMOVED_FIELDS if name in theirs] == []
    assert all(name in ORTSeq2SeqTrainingArguments.__dataclass_fields__ for name in REMOVED_FIELDS)


MAPPED = [
    (dict(evaluation_strategy="steps", eval_steps=5), {"eval_strategy": "steps"},
     r"evaluation_strategy='steps' -> eval_strategy='steps'"),
    (dict(no_cuda=True), {"use_cpu": True}, r"no_cuda=True -> use_cpu=True"),
    (dict(per_gpu_train_batch_size=4, per_gpu_eval_batch_size=6),
     {"per_device_train_batch_size": 4, "per_device_eval_batch_size": 6},
     r"per_gpu_train_batch_size=4 -> per_device_train_batch_size=4; per_gpu_eval_batch_size=6 -> "
     r"per_device_eval_batch_size=6"),
    (dict(warmup_ratio=0.1), {"warmup_steps": 0.1}, r"warmup_ratio=0.1 -> warmup_steps=0.1"),
    (dict(warmup_ratio=0.0), {"warmup_steps": 0}, r"warmup_ratio=0.0 dropped \(0 is the default\)"),
    (dict(optim="adamw_hf"), {"optim": "adamw_torch"}, r"optim='adamw_hf' -> optim='adamw_torch'"),
    (dict(adafactor=True), {"optim": "adafactor"}, r"adafactor=True -> optim='adafactor'"),
    (dict(group_by_length=True), {"train_sampling_strategy": "group_by_length"},
     r"group_by_length=True -> train_sampling_strategy='group_by_length'"),
    (dict(include_inputs_for_metrics=True), {"include_for_metrics": ["inputs"]},
     r"include_inputs_for_metrics=True -> include_for_metrics=\['inputs'\]"),
    (dict(include_tokens_per_second=True), {"include_num_input_tokens_seen": "all"},
     r"include_tokens_per_second=True -> include_num_input_tokens_seen='all'"),
    (dict(tpu_metrics_debug=True), {"debug": ["tpu_metrics_debug"]}, r"tpu_metrics_debug=True -> debug="),
    (dict(torchdynamo="inductor", backend="eager"), {"torch_compile_backend": "inductor", "torch_compile": True},
     r"torchdynamo='inductor' -> torch_compile_backend='inductor'"),
    (dict(fsdp_min_num_params=100, fsdp_transformer_layer_cls_to_wrap="BertLayer"),
     {"fsdp_config.min_num_params": 100, "fsdp_config.transformer_layer_cls_to_wrap": ["BertLayer"]},
     r"fsdp_min_num_params=100 -> fsdp_config\['min_num_params'\]=100; fsdp_transformer_layer_cls_to_wrap="
     r"'BertLayer' -> fsdp_config\['transformer_layer_cls_to_wrap'\]=\['BertLayer'\]"),
    (dict(push_to_hub_token="hf_secret"), {"hub_token": "hf_secret"}, r"push_to_hub_token=\.\.\. -> hub_token=\.\.\."),
    (dict(push_to_hub_model_id="tiny", push_to_hub_organization="org"), {"hub_model_id": "org/tiny"},
     r"push_to_hub_model_id='tiny' and push_to_hub_organization='org' -> hub_model_id='org/tiny'"),
    (dict(push_to_hub_organization="org"), {"hub_model_id": "org/out"},
     r"push_to_hub_organization='org' -> hub_model_id='org/out'"),
    (dict(use_mps_device=True), {}, r"use_mps_device=True dropped \(transformers 5 uses MPS by itself"),
    (dict(save_safetensors=True, half_precision_backend="auto", fp16_backend="cpu_amp", fp16_opt_level="O1",
          jit_mode_eval=False, use_ipex=False, past_index=-1, mp_parameters="", ray_scope="last"), {},
     r"save_safetensors=True dropped \(what transformers 5 does anyway\); half_precision_backend='auto' dropped.*"
     r"ray_scope='last' dropped"),
]


@pytest.mark.parametrize("given, expected, note", MAPPED, ids=[next(iter(m[0])) for m in MAPPED])
def test_removed_field_is_mapped(tmp_path, given, expected, note):
    with pytest.warns(FutureWarning, match=r"ORTTrainingArguments got settings that transformers 5 removed "
                                           r"\(Optimum's ORTTrainingArguments took them\): " + note) as record:
        args = make(tmp_path, **given)
    assert len(future_warnings(record)) == 1, future_warnings(record)
    for name, value in expected.items():
        obj, _, key = name.partition(".")
        actual = getattr(args, obj)[key] if key else getattr(args, name)
        actual = [getattr(v, "value", v) for v in actual] if isinstance(actual, list) else getattr(actual, "value",
                                                                                                    actual)
        assert actual == value, name
    # Consumed: a copy of these arguments (dataclasses.replace, to_dict) does not map them twice.
    assert all(getattr(args, name) is None for name in given if name in REMOVED_FIELDS)


REFUSED = [
    (dict(use_legacy_prediction_loop=True), r"use_legacy_prediction_loop=True: transformers 5 removed "
                                            r"Trainer.prediction_loop; remove it"),
    (dict(save_safetensors=False), r"save_safetensors=False: transformers 5 only writes safetensors"),
    (dict(half_precision_backend="apex"), r"half_precision_backend='apex': transformers 5 removed apex"),
    (dict(fp16_backend="apex"), r"fp16_backend='apex': transformers 5 removed apex"),
    (dict(fp16_opt_level="O2"), r"fp16_opt_level='O2': apex AMP's opt level"),
    (dict(jit_mode_eval=True), r"jit_mode_eval=True: transformers 5 no longer runs evaluation through torch.jit"),
    (dict(use_ipex=True), r"use_ipex=True: transformers 5 removed Intel Extension for PyTorch"),
    (dict(past_index=0), r"past_index=0: transformers 5 removed past_index"),
    (dict(tpu_num_cores=8), r"tpu_num_cores=8: TPU settings have no effect here"),
    (dict(mp_parameters="--x"), r"mp_parameters='--x': transformers 5 removed SageMaker model parallelism"),
    (dict(ray_scope="all"), r"ray_scope='all': .*set RAY_SCOPE instead"),
    (dict(optim="adamw_apex_fused"), r"optim='adamw_apex_fused': transformers 5 removed apex's fused AdamW. Use "
                                     r"optim='adamw_torch_fused'"),
    (dict(warmup_ratio=1.0), r"warmup_ratio=1.0: .*must be in \[0, 1\). For a warmup over the whole run pass "
                             r"warmup_steps="),
    (dict(fsdp_min_num_params=10, fsdp_config="fsdp.json"), r"fsdp_min_num_params=10: .*fsdp_config is a file; "
                                                             r"put \"min_num_params\": 10 into that file"),
    (dict(torchdynamo="inductor", backend="ort"), r"torch_compile=True with backend='ort'.*Use backend='compile'"),
]


@pytest.mark.parametrize("given, problem", REFUSED, ids=[next(iter(r[0])) for r in REFUSED])
def test_removed_field_without_equivalent_is_refused(tmp_path, given, problem):
    with pytest.raises(ConfigError, match=problem):
        make(tmp_path, **given)


BOTH = [
    (dict(evaluation_strategy="steps", eval_strategy="epoch"), "evaluation_strategy='steps'", "eval_strategy='epoch'"),
    (dict(no_cuda=False, use_cpu=True), "no_cuda=False", "use_cpu=True"),
    (dict(per_gpu_train_batch_size=4, per_device_train_batch_size=16), "per_gpu_train_batch_size=4",
     "per_device_train_batch_size=16"),
    (dict(warmup_ratio=0.1, warmup_steps=10), "warmup_ratio=0.1", "warmup_steps=10"),
    (dict(adafactor=True, optim="sgd"), "adafactor=True", "optim='sgd'"),
    (dict(group_by_length=True, train_sampling_strategy="sequential"), "group_by_length=True",
     "train_sampling_strategy='sequential'"),
    (dict(torchdynamo="inductor", torch_compile_backend="eager", backend="eager"), "torchdynamo='inductor'",
     "torch_compile_backend='eager'"),
    (dict(push_to_hub_token="a", hub_token="b"), "push_to_hub_token=...", "hub_token=..."),
    (dict(push_to_hub_model_id="a", hub_model_id="org/b"), "push_to_hub_model_id='a'", "hub_model_id='org/b'"),
]


@pytest.mark.parametrize("given, old, new", BOTH, ids=[next(iter(b[0])) for b in BOTH])
def test_old_and_new_name_both_given_is_refused(tmp_path, given, old, new):
    with pytest.raises(ConfigError) as caught:
        make(tmp_path, **given)
    (problem,) = caught.value.problems
    assert problem.startswith(f"{old} and {new} were both given: "), problem
    assert problem.endswith(f"Pass only {new.split('=')[0]}."), problem
    if "token" in old:
        assert "'a'" not in problem and "'b'" not in problem  # tokens are never printed


def test_refusals_come_all_at_once_with_the_other_problems(tmp_path):
    with pytest.raises(ConfigError) as caught:
        make(tmp_path, use_ipex=True, past_index=1, save_safetensors=False, backend="ortx")
    problems = caught.value.problems
    assert len(problems) == 4, problems
    assert any(p.startswith("Unknown backend: 'ortx'") for p in problems)


def test_kept_fields_for_scripts_warn_nothing(tmp_path):
    """Every Optimum example reads training_args.overwrite_output_dir; trainer_qa.py reads
    args.use_legacy_prediction_loop. Trainer never used the first; False is the only value of the second."""
    with warnings.catch_warnings():
        warnings.simplefilter("error", FutureWarning)
        args = make(tmp_path, overwrite_output_dir=True)
        default = make(tmp_path)
    assert args.overwrite_output_dir is True
    assert default.overwrite_output_dir is False and default.use_legacy_prediction_loop is False
    assert default.logging_dir is None and default.warmup_ratio is None


def test_optimum_readme_command_line_parses(tmp_path):
    """Optimum's example READMEs: HfArgumentParser((..., ORTTrainingArguments)) on their flags."""
    parser = HfArgumentParser(ORTSeq2SeqTrainingArguments)
    with pytest.warns(FutureWarning, match=r"evaluation_strategy='epoch' -> eval_strategy='epoch'.*"
                                           r"logging_dir='.*tb' -> TensorBoard"):
        (args,) = parser.parse_args_into_dataclasses(
            ["--output_dir", str(tmp_path), "--overwrite_output_dir", "--do_train", "--backend", "eager",
             "--evaluation_strategy", "epoch", "--logging_dir", str(tmp_path / "tb"), "--predict_with_generate",
             "--report_to", "none"])
    assert args.overwrite_output_dir is True and args.eval_strategy == "epoch" and args.predict_with_generate


# -- an Optimum-style call, unmodified, trains with ONNX Runtime -----------------------------------


@pytest.mark.ort  # trains with ORTTrainer in this process
def test_optimum_style_call_trains_with_ort(tmp_path):
    """run_glue.py's ORTTrainer call: tokenizer=, no data_collator (padding comes from the tokenizer),
    overwrite_output_dir and evaluation_strategy in the arguments."""
    from datasets import Dataset

    model, tokenizer = load_model("tiny-bert", "sequence-classification")
    texts = ["a fine film", "dull and far too long", "great", "not good at all, sadly", "loved every minute",
             "boring"] * 4
    train = Dataset.from_dict({"text": texts, "label": [1, 0, 1, 0, 1, 0] * 4}).map(
        lambda rows: tokenizer(rows["text"], truncation=True, max_length=32), batched=True, remove_columns=["text"])
    with pytest.warns(FutureWarning, match=r"evaluation_strategy='no' -> eval_strategy='no'"):
        args = ORTTrainingArguments(output_dir=str(tmp_path / "out"), overwrite_output_dir=True, max_steps=2,
                                    evaluation_strategy="no", per_device_train_batch_size=4, report_to=[],
                                    disable_tqdm=True, save_strategy="no", seed=0)
    with pytest.warns(FutureWarning, match=r"tokenizer= was passed on as processing_class="):
        trainer = ORTTrainer(model=model, args=args, train_dataset=train, tokenizer=tokenizer)
    trainer.train()
    report = trainer.engine_report()
    assert report["engine"] == "onnxruntime" and report["fallback"] is None
    assert report["ort_steps"] == 2 and report["pytorch_steps"] == 0
    trainer.save_model()
    assert (tmp_path / "out" / "tokenizer_config.json").exists()  # the tokenizer was the processing_class
