"""ORTTrainer keeps everything of transformers' Trainer working, with ONNX Runtime running the steps."""

from __future__ import annotations

import json

import numpy as np
import pytest
import torch
from transformers import (AutoModelForSequenceClassification, BertForSequenceClassification, Trainer,
                          TrainingArguments)

from ortnb import ORTTrainer, ORTTrainingArguments
from ortnb.errors import OrtFallbackError, OrtnbWarning

from .._helpers import (COMMON, ModelWithCustomFunction, classification_dataset, custom_function_data, ort_args,
                       record_losses, tiny_bert)

pytestmark = pytest.mark.ort  # trains with ORTTrainer in this process


def accuracy(prediction):
    return {"accuracy": float((np.argmax(prediction.predictions, -1) == prediction.label_ids).mean())}


def test_migration_equivalence(tmp_path, train_data):
    """Trainer -> ORTTrainer and TrainingArguments -> ORTTrainingArguments: same losses, ORT really ran."""
    losses = {}
    for name, trainer_cls, args_cls in (("torch", Trainer, TrainingArguments),
                                        ("ort", ORTTrainer, ORTTrainingArguments)):
        record = record_losses()
        args = args_cls(output_dir=str(tmp_path / name), max_steps=10, **COMMON)
        trainer = trainer_cls(model=tiny_bert(), args=args, train_dataset=train_data, callbacks=[record])
        trainer.train()
        losses[name] = record.losses
    assert len(losses["ort"]) == 10
    np.testing.assert_allclose(losses["ort"], losses["torch"], atol=1e-4, rtol=0)
    report = trainer.engine_report()
    assert report["engine"] == "onnxruntime" and report["fallback"] is None
    assert report["ort_steps"] == 10 and report["pytorch_steps"] == 0
    assert report["providers"] == ["CPUExecutionProvider"]
    # The first step is timed whole (forward with export and graph build, backward, optimizer), and ORT's
    # own phases account for part of its first forward.
    phases = report["first_forward_phases_s"]
    assert set(phases) == {"export", "build_graph", "create_session", "initialisation"}
    assert phases["export"] + phases["build_graph"] + phases["create_session"] <= phases["initialisation"]
    assert 0 < phases["initialisation"] <= report["first_forward_s"] < report["time_to_first_step_s"]
    on_disk = json.loads((tmp_path / "ort" / ".ortnb" / "engine_report.json").read_text())
    assert on_disk["engine"] == "onnxruntime" and on_disk["backend"] == "ort" and on_disk["forward_state_changes"] == []
    # output_dir holds what Trainer's holds (nothing, with save_strategy="no") and ortnb's dot-folder
    assert [p.name for p in (tmp_path / "ort").iterdir()] == [".ortnb"]


def test_eager_backend_reports_pytorch(tmp_path, bert, train_data):
    trainer = ORTTrainer(model=bert, args=ort_args(tmp_path, backend="eager"), train_dataset=train_data)
    trainer.train()
    report = trainer.engine_report()
    assert (report["backend"], report["engine"], report["providers"]) == ("eager", "pytorch", [])


def test_evaluate_predict_with_metrics(tmp_path, bert, train_data, eval_data):
    trainer = ORTTrainer(model=bert, args=ort_args(tmp_path, max_steps=30), train_dataset=train_data,
                         eval_dataset=eval_data, compute_metrics=accuracy)
    before = trainer.evaluate()["eval_accuracy"]
    trainer.train()
    metrics = trainer.evaluate()
    assert 0.0 <= metrics["eval_accuracy"] <= 1.0 and np.isfinite(metrics["eval_loss"])
    prediction = trainer.predict(eval_data)
    assert prediction.predictions.shape == (len(eval_data), 2)
    assert prediction.metrics["test_accuracy"] == pytest.approx(metrics["eval_accuracy"])
    # The label is the parity of the first token: 30 steps are enough to move away from chance.
    assert metrics["eval_accuracy"] != before
    assert trainer.engine_report()["engine"] == "onnxruntime"


def test_model_is_plain_pytorch_after_training(tmp_path, bert, train_data):
    trainer = ORTTrainer(model=bert, args=ort_args(tmp_path), train_dataset=train_data)
    trainer.train()
    assert "forward" not in vars(trainer.model)  # the ORT dispatcher is gone
    assert trainer.model.config._attn_implementation == "sdpa"  # and the user's attention is back
    trainer.train()  # a second train() reuses the exported graph
    assert trainer.engine_report()["ort_steps"] == 4


def test_attached_model_can_be_deep_copied(tmp_path, bert, train_data):
    """EMA-style callbacks deep-copy the model mid-training; the copy is a plain PyTorch model."""
    import copy

    from transformers import TrainerCallback

    copies = []

    class DeepCopies(TrainerCallback):
        def on_step_end(self, args, state, control, model=None, **kwargs):
            copies.append(copy.deepcopy(model))

    trainer = ORTTrainer(model=bert, args=ort_args(tmp_path), train_dataset=train_data, callbacks=[DeepCopies()])
    trainer.train()
    assert len(copies) == 2 and trainer.engine_report()["ort_steps"] == 2
    batch = {k: torch.tensor(train_data[:4][k]) for k in ("input_ids", "attention_mask", "labels")}
    copies[-1].train()
    assert torch.isfinite(copies[-1](**batch).loss)  # runs in PyTorch: the copy has no ORT engine


def test_save_model_round_trip(tmp_path, bert, train_data):
    trainer = ORTTrainer(model=bert, args=ort_args(tmp_path), train_dataset=train_data)
    trainer.train()
    trainer.save_model()
    out = tmp_path / "out"
    assert (out / "model.safetensors").exists() and (out / "config.json").exists()
    reloaded = AutoModelForSequenceClassification.from_pretrained(out)
    for (name, saved), (_, trained) in zip(reloaded.state_dict().items(), trainer.model.state_dict().items()):
        assert torch.equal(saved, trained), name
    assert not any(key.startswith(("_torch_module", "forward.")) for key in reloaded.state_dict())


def test_resume_from_checkpoint(tmp_path, train_data):
    args = ort_args(tmp_path, max_steps=6, save_strategy="steps", save_steps=3)
    record = record_losses()
    ORTTrainer(model=tiny_bert(), args=args, train_dataset=train_data, callbacks=[record]).train()
    full = record.losses
    checkpoint = tmp_path / "out" / "checkpoint-3"
    assert (checkpoint / "optimizer.pt").exists()
    record = record_losses()
    resumed = ORTTrainer(model=tiny_bert(seed=1), args=args, train_dataset=train_data, callbacks=[record])
    resumed.train(resume_from_checkpoint=str(checkpoint))
    assert resumed.state.global_step == 6
    np.testing.assert_allclose(record.losses, full[3:], atol=1e-4, rtol=0)


def test_hyperparameter_search_with_model_init(tmp_path, train_data):
    pytest.importorskip("optuna")
    trainer = ORTTrainer(model_init=lambda *_: tiny_bert(), args=ort_args(tmp_path), train_dataset=train_data,
                         eval_dataset=classification_dataset(rows=16, seed=2))
    best = trainer.hyperparameter_search(direction="minimize", backend="optuna", n_trials=2,
                                         hp_space=lambda trial: {"learning_rate": trial.suggest_float("lr", 1e-4, 1e-3)})
    assert np.isfinite(best.objective)


def test_use_module_with_loss_matches(tmp_path, train_data):
    losses = {}
    for flag in (False, True):
        record = record_losses()
        args = ort_args(tmp_path / str(flag), max_steps=4, use_module_with_loss=flag, label_smoothing_factor=0.1)
        ORTTrainer(model=tiny_bert(), args=args, train_dataset=train_data, callbacks=[record]).train()
        losses[flag] = record.losses
    np.testing.assert_allclose(losses[True], losses[False], atol=1e-4, rtol=0)


def test_save_onnx_dumps_graphs(tmp_path, bert, train_data):
    trainer = ORTTrainer(model=bert, args=ort_args(tmp_path, save_onnx=True, onnx_prefix="tiny"),
                         train_dataset=train_data)
    trainer.train()
    graphs = trainer.engine_report()["graphs"]
    assert graphs and all("tiny" in g and g.endswith(".onnx") for g in graphs)


def test_custom_autograd_function_is_a_clear_error(tmp_path):
    trainer = ORTTrainer(model=ModelWithCustomFunction(), args=ort_args(tmp_path), train_dataset=custom_function_data())
    with pytest.raises(OrtFallbackError, match=r"(?s)custom torch.autograd.Function .*_StraightThroughRound.*"
                                               r"backend='eager'"):
        trainer.train()


def test_custom_autograd_function_allowed_fallback_is_recorded(tmp_path):
    trainer = ORTTrainer(model=ModelWithCustomFunction(), args=ort_args(tmp_path, ort_fallback="allow"),
                         train_dataset=custom_function_data())
    trainer.train()
    report = trainer.engine_report()
    assert report["engine"] == "pytorch" and report["pytorch_steps"] == 2 and report["ort_steps"] == 0
    assert "_StraightThroughRound" in report["fallback"]


def test_no_args_means_trainers_defaults(tmp_path, monkeypatch, bert):
    monkeypatch.chdir(tmp_path)
    trainer = ORTTrainer(bert)  # transformers' Trainer(model) accepts this too
    assert isinstance(trainer.args, ORTTrainingArguments) and trainer.args.backend == "ort"
    assert trainer.args.output_dir == Trainer(tiny_bert()).args.output_dir == "tmp_trainer"
    assert ORTTrainer(tiny_bert(), None, train_dataset=classification_dataset(16)).args.output_dir == "tmp_trainer"


class CountingBert(BertForSequenceClassification):
    """A model whose forward keeps Python-side state: a call counter and a reassigned buffer."""

    def __init__(self, config):
        super().__init__(config)
        self.calls = 0
        self.register_buffer("seen", torch.zeros(()))

    def forward(self, input_ids=None, attention_mask=None, labels=None):
        self.calls += 1
        self.seen = self.seen + 1
        return super().forward(input_ids=input_ids, attention_mask=attention_mask, labels=labels)


def test_state_a_forward_changes_under_ort_is_named_with_the_way_out(tmp_path, train_data):
    model = CountingBert(tiny_bert().config)
    trainer = ORTTrainer(model=model, args=ort_args(tmp_path, max_steps=3), train_dataset=train_data)
    with pytest.warns(OrtnbWarning, match=r"CountingBert.forward changed Python-side state while ONNX Runtime "
                                          r"exported it \(seen: buffer 0 -> buffer 1; calls: 0 -> 1\)\. Under "
                                          r"backend='ort' .* will not change again during training; use "
                                          r"backend='eager' to keep it changing"):
        trainer.train()
    assert model.calls == 1  # three steps, one Python forward: what the warning is about
    report = json.loads((tmp_path / "out" / ".ortnb" / "engine_report.json").read_text())
    assert report["forward_state_changes"] == ["seen: buffer 0 -> buffer 1", "calls: 0 -> 1"]
