"""export_onnx: ONNX Runtime parity on tiny models, task inference, caller's model untouched, bad inputs."""

from __future__ import annotations

from types import SimpleNamespace

import pytest
import torch

pytest.importorskip("onnxruntime")
transformers = pytest.importorskip("transformers")

from ortnb import export as export_mod  # noqa: E402
from ortnb.errors import ConfigError, ExportParityError, MissingDependencyError, OrtnbWarning  # noqa: E402
from ortnb.export import ExportResult, export_onnx  # noqa: E402
from ortnb.runs import layout  # noqa: E402

pytestmark = pytest.mark.ort  # exports models to ONNX and runs them in this process

TINY = dict(hidden_size=64, num_hidden_layers=2, num_attention_heads=2, intermediate_size=128, vocab_size=1000)


@pytest.fixture(scope="module")
def bert_classifier():
    torch.manual_seed(0)
    config = transformers.BertConfig(**TINY, num_labels=3)
    return transformers.BertForSequenceClassification(config)


@pytest.fixture(scope="module")
def llama_lm():
    torch.manual_seed(0)
    config = transformers.LlamaConfig(**TINY, num_key_value_heads=2, max_position_embeddings=64)
    return transformers.LlamaForCausalLM(config)


def _session_inputs(path: str) -> tuple[str, ...]:
    import onnxruntime

    session = onnxruntime.InferenceSession(path, providers=["CPUExecutionProvider"])
    return tuple(i.name for i in session.get_inputs())


def test_sequence_classifier_parity(bert_classifier, tmp_path):
    result = export_onnx(bert_classifier, tmp_path / "cls.onnx")
    assert isinstance(result, ExportResult)
    assert result.task == "sequence-classification"
    assert result.max_abs_diff <= 1e-4
    assert (tmp_path / "cls.onnx").is_file()
    assert result.inputs == ("input_ids", "attention_mask", "token_type_ids")
    assert _session_inputs(result.path) == result.inputs
    assert result.outputs == ("logits",)
    assert result.providers == ("CPUExecutionProvider",)
    assert result.opset == 17


def test_an_export_prints_no_tracer_notes(bert_classifier, tmp_path, capsys):
    # BERT's mask code makes the tracer warn (a Python bool, aten::index in opset 17); the parity check covers both
    import warnings

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        export_onnx(bert_classifier, tmp_path / "quiet.onnx")
    assert [f"{w.category.__name__}: {str(w.message)[:60]}" for w in caught] == []
    assert capsys.readouterr().err == ""


def test_causal_lm_parity_and_dynamic_axes(llama_lm, tmp_path):
    import onnxruntime

    result = export_onnx(llama_lm, tmp_path / "nested" / "lm.onnx")
    assert result.task == "causal-lm"
    assert result.max_abs_diff <= 1e-4
    assert _session_inputs(result.path) == result.inputs == ("input_ids", "attention_mask")
    # the exported logits keep batch and sequence symbolic, beyond the two shapes parity ran
    session = onnxruntime.InferenceSession(result.path, providers=["CPUExecutionProvider"])
    ids = torch.randint(0, 1000, (4, 7))
    (logits,) = session.run(None, {"input_ids": ids.numpy(), "attention_mask": torch.ones_like(ids).numpy()})
    assert logits.shape == (4, 7, 1000)


def test_gpt2_gets_no_token_type_ids(tmp_path):
    # GPT-2 embeds token_type_ids with its word table: feeding zeros would change its outputs
    config = transformers.GPT2Config(n_embd=64, n_layer=2, n_head=2, vocab_size=1000, n_positions=64,
                                     bos_token_id=0, eos_token_id=0)
    result = export_onnx(transformers.GPT2LMHeadModel(config), tmp_path / "gpt2.onnx")
    assert result.task == "causal-lm"
    assert result.max_abs_diff <= 1e-4
    assert _session_inputs(result.path) == result.inputs == ("input_ids", "attention_mask")


def test_export_from_directory_infers_task(bert_classifier, tmp_path):
    bert_classifier.save_pretrained(tmp_path / "out")
    result = export_onnx(str(tmp_path / "out"), tmp_path / "from_dir.onnx")
    assert result.task == "sequence-classification"
    assert result.max_abs_diff <= 1e-4
    assert _session_inputs(result.path) == result.inputs


def test_callers_model_is_unchanged(llama_lm, tmp_path):
    llama_lm.train()
    llama_lm.set_attn_implementation("sdpa")
    before = {k: v.clone() for k, v in llama_lm.state_dict().items()}
    export_onnx(llama_lm, tmp_path / "lm.onnx")
    assert llama_lm.training and all(m.training for m in llama_lm.modules())
    assert llama_lm.config._attn_implementation == "sdpa"
    after = llama_lm.state_dict()
    assert all(torch.equal(before[k], after[k]) for k in before)


def test_parity_failure_raises_and_keeps_file(bert_classifier, tmp_path, monkeypatch):
    real = export_mod._torch_outputs
    monkeypatch.setattr(export_mod, "_torch_outputs", lambda *a: [x + 1.0 for x in real(*a)])
    path = tmp_path / "bad.onnx"
    with pytest.raises(ExportParityError, match=r"'logits'.*max abs difference 1 exceeds atol 0\.0001") as info:
        export_onnx(bert_classifier, path)
    assert str(path) in str(info.value)
    assert path.is_file()


def test_sample_inputs_are_used(bert_classifier, tmp_path):
    ids = torch.randint(0, 1000, (3, 5))
    sample = {"attention_mask": torch.ones_like(ids), "input_ids": ids}  # order must not matter
    result = export_onnx(bert_classifier, tmp_path / "s.onnx", sample_inputs=sample, task="sequence-classification")
    assert result.max_abs_diff <= 1e-4


def test_result_str_is_deterministic():
    result = ExportResult("m.onnx", "causal-lm", 1.5e-6, 17, ("input_ids",), ("logits",), ("CPUExecutionProvider",))
    assert str(result) == ("causal-lm model exported to m.onnx (opset 17); inputs input_ids; outputs logits; "
                           "max abs difference vs PyTorch 1.50e-06 on CPUExecutionProvider")
    assert repr(result) == repr(ExportResult(*vars(result).values()))


def test_wrong_extension(bert_classifier, tmp_path):
    with pytest.raises(ValueError, match=r"path must end in \.onnx"):
        export_onnx(bert_classifier, tmp_path / "model.pt")


def test_directory_without_config(tmp_path):
    with pytest.raises(FileNotFoundError, match=r"no config\.json.*save_pretrained"):
        export_onnx(tmp_path, tmp_path / "m.onnx")


def test_unknown_task(bert_classifier, tmp_path):
    with pytest.raises(ValueError, match=r"unknown task 'translation'.*task= one of: sequence-classification"):
        export_onnx(bert_classifier, tmp_path / "m.onnx", task="translation")


def test_unsupported_architecture(tmp_path):
    config = transformers.BertConfig(**TINY)
    model = transformers.BertForQuestionAnswering(config)
    with pytest.raises(ValueError, match=r"cannot infer the task.*BertForQuestionAnswering.*task= one of"):
        export_onnx(model, tmp_path / "m.onnx")


def test_ort_missing(bert_classifier, tmp_path, monkeypatch):
    monkeypatch.setattr("ortnb._imports.is_ort_training_available", lambda: False)
    with pytest.raises(MissingDependencyError, match=r"export_onnx's parity check.*pip install"):
        export_onnx(bert_classifier, tmp_path / "m.onnx")
    assert not (tmp_path / "m.onnx").exists()


# -- arguments refused up front, run folders, untrained heads -----------------------------------------


@pytest.mark.parametrize("opset", [13, 21, "17", True])
def test_opset_outside_the_supported_range_is_refused_before_any_work(bert_classifier, tmp_path, monkeypatch, opset):
    monkeypatch.setattr("ortnb._imports.is_ort_training_available", lambda: False)  # ConfigError comes first
    message = (rf"opset={opset!r} is outside what export_onnx supports: 14 to 20 \(20 is the newest torch's "
               r"TorchScript exporter writes\); the default is 17")
    with pytest.raises(ConfigError, match=message):
        export_onnx(bert_classifier, tmp_path / "m.onnx", opset=opset)
    assert not (tmp_path / "m.onnx").exists()


def test_every_bad_argument_at_once(bert_classifier, tmp_path):
    with pytest.raises(ConfigError, match=r"(?s)3 problems:.*path must end in \.onnx.*unknown task 'x'.*opset=9"):
        export_onnx(bert_classifier, tmp_path / "m.pt", task="x", opset=9)


@pytest.mark.parametrize("opset", [14, 20])
def test_both_ends_of_the_opset_range_export(bert_classifier, tmp_path, opset):
    import onnx

    result = export_onnx(bert_classifier, tmp_path / "m.onnx", opset=opset)
    assert result.opset == opset and result.max_abs_diff <= 1e-4
    assert {o.version for o in onnx.load(result.path).opset_import if o.domain in ("", "ai.onnx")} == {opset}


def _run_folder(tmp_path, name="20260101-120000-run"):
    from ortnb.config import RunConfig

    run_dir = tmp_path / name
    run_dir.mkdir()
    RunConfig(model="tiny-bert").to_json(run_dir / "config.json")  # a run's config.json is not a model config
    return run_dir


def test_a_run_folder_exports_its_model(bert_classifier, tmp_path):
    run_dir = _run_folder(tmp_path)
    bert_classifier.save_pretrained(run_dir / "model")
    result = export_onnx(run_dir, tmp_path / "run.onnx")
    assert result.task == "sequence-classification" and result.max_abs_diff <= 1e-4
    assert export_onnx(SimpleNamespace(run_dir=run_dir), tmp_path / "run2.onnx").task == result.task  # a Run


def test_a_folder_with_only_checkpoints_exports_the_latest(bert_classifier, llama_lm, tmp_path):
    run_dir = _run_folder(tmp_path)
    llama_lm.save_pretrained(run_dir / "checkpoint-2")
    bert_classifier.save_pretrained(run_dir / "checkpoint-10")  # 10 after 2: numbers, not text, are compared
    for step in (2, 10):
        layout.mark_whole(run_dir / f"checkpoint-{step}")  # as the run's callback does after each save
    bert_classifier.save_pretrained(run_dir / "checkpoint-12")  # a save cut short: never marked whole
    (run_dir / "checkpoint-14").mkdir()
    assert export_mod.find_model_dir(run_dir) == run_dir / "checkpoint-10"


def test_a_run_without_a_model_says_so(tmp_path):
    run_dir = _run_folder(tmp_path)
    with pytest.raises(FileNotFoundError, match=r"the run folder .* holds no model yet \(no model/ and no "
                                                r"checkpoint-\*/\): the run has not finished, or failed before saving"):
        export_onnx(run_dir, tmp_path / "m.onnx")
    with pytest.raises(FileNotFoundError, match=r"no folder '.*nowhere': pass the directory save_pretrained wrote"):
        export_onnx(tmp_path / "nowhere", tmp_path / "m.onnx")


def test_causal_lm_exported_as_classifier_warns_that_the_head_is_untrained(tmp_path):
    torch.manual_seed(0)
    config = transformers.LlamaConfig(**TINY, num_key_value_heads=2, max_position_embeddings=64, pad_token_id=0)
    transformers.LlamaForCausalLM(config).save_pretrained(tmp_path / "lm")
    with pytest.warns(OrtnbWarning, match=r"holds a LlamaForCausalLM checkpoint without score\.weight: exported as "
                                          r"sequence-classification, those weights are new and untrained .* Fine-tune "
                                          r"it for sequence-classification first or export with task='causal-lm'"):
        result = export_onnx(tmp_path / "lm", tmp_path / "cls.onnx", task="sequence-classification")
    assert result.task == "sequence-classification"


def test_an_export_after_ort_trained_in_the_same_process_holds_no_training_only_nodes(bert_classifier, tmp_path):
    """ORTModule registers training symbolics process-wide (ATen nodes only ORT training runs): a model exported
    after it, in the same kernel, failed in every plain onnxruntime ('ATenOperatorExecutor is not initialized')."""
    import torch.onnx

    from ortnb.backends import ort_compat
    from ortnb.backends.ort_symbolics import training_only_nodes

    ort_compat.load_ortmodule()
    from onnxruntime.training.ortmodule._custom_op_symbolic_registry import CustomOpSymbolicRegistry

    CustomOpSymbolicRegistry.register_all(17)  # what ORTModule does when it exports for training
    try:
        result = export_onnx(bert_classifier, tmp_path / "after-ort.onnx")
        assert training_only_nodes(result.path) == [] and result.max_abs_diff <= 1e-4
        # and the training symbolics are back for ORTModule's next export
        from ortnb.backends.ort_symbolics import _exporter_registry

        assert 17 in _exporter_registry().get_function_group("aten::embedding")._functions._overrides
    finally:
        for name in CustomOpSymbolicRegistry._SYMBOLICS:
            torch.onnx.unregister_custom_op_symbolic(f"aten{name}" if name.startswith("::") else name, 17)
