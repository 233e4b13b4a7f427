"""ORTTrainer and ORTSeq2SeqTrainer: transformers' Trainer with ONNX Runtime running the training steps.

No training loop is copied. The trainer overrides a few hooks:
- ``_wrap_model`` (called once the model exists, before DDP/DeepSpeed wrap it) attaches the backend;
- ``train`` detaches it afterwards, so ``trainer.model`` is a plain PyTorch model again;
- ``get_optimizer_cls_and_kwargs`` adds ``adamw_ort_fused``;
- ``compute_loss`` routes ``use_module_with_loss`` through the ORT graph;
- ``__init__``, ``evaluate`` and ``predict`` take what Optimum's ORTTrainer took (``tokenizer=`` becomes
  ``processing_class=``) or refuse it, naming the way out.
Everything else (evaluate, predict, callbacks, checkpoints, resume, save_model, hyperparameter
search, DDP, DeepSpeed) is Trainer's own code acting on the user's model.
"""

from __future__ import annotations

import json
import logging
import os
import time
import warnings

import torch
from transformers import Seq2SeqTrainer, Trainer, TrainerCallback

from .. import files
from .._imports import ort_version
from ..backends import ortmodule as ort_backend
from ..backends.options import TRAINER_WAY_OUT
from ..errors import ConfigError, OrtnbWarning
from . import forward_state
from .arguments import Backend, ORTSeq2SeqTrainingArguments, ORTTrainingArguments, OrtOptimizerNames

logger = logging.getLogger("ortnb")

# Kept in a dot-folder of output_dir, apart from Trainer's own files: output_dir then holds the entries Trainer
# writes (checkpoint-N/, model files), so tools that count or glob them see what they see under Trainer.
ORTNB_FOLDER = ".ortnb"
ENGINE_REPORT = "engine_report.json"
# transformers' Trainer(model) with no args builds TrainingArguments(output_dir="tmp_trainer"); ORTTrainer(model)
# picks the same (tests/training/test_trainer.py compares the two).
DEFAULT_OUTPUT_DIR = "tmp_trainer"

_NOT_GIVEN = object()
ARGS_POSITION = 1  # model, args, ...


def engine_report_path(output_dir: str | os.PathLike) -> str:
    """Where ORTTrainer writes its engine report: ``output_dir/.ortnb/engine_report.json``."""
    return os.path.join(output_dir, ORTNB_FOLDER, ENGINE_REPORT)
PROCESSING_CLASS_POSITION = 5  # model, args, data_collator, train_dataset, eval_dataset, processing_class


class _ORTTrainerMixin:
    """What ORTTrainer and ORTSeq2SeqTrainer add to their transformers base class."""

    _default_args_class = ORTTrainingArguments  # built when no args are given, as Trainer builds its own

    def __init__(self, *args, tokenizer=_NOT_GIVEN, feature=_NOT_GIVEN, onnx_model_path=None, **kwargs):
        # Optimum's ORTTrainer took these; transformers 5's Trainer does not (checked before any work).
        mapped = _optimum_trainer_arguments(type(self).__name__, args, kwargs, tokenizer, feature, onnx_model_path)
        if mapped:
            warnings.warn(f"{type(self).__name__}: {' '.join(mapped)}", FutureWarning, stacklevel=2)
        args, kwargs = _default_arguments(args, kwargs, self._default_args_class)
        super().__init__(*args, **kwargs)
        if not isinstance(self.args, ORTTrainingArguments):
            raise TypeError(f"{type(self).__name__} needs ORTTrainingArguments, got {type(self.args).__name__}. "
                            "Replace `TrainingArguments(...)` with `ortnb.ORTTrainingArguments(...)` (same fields).")
        if self.args.logging_dir is not None:  # transformers 5 removed the field; its TensorBoardCallback reads env
            from transformers.integrations import TensorBoardCallback

            for callback in self.callback_handler.callbacks:
                if isinstance(callback, TensorBoardCallback):
                    callback.logging_dir = self.args.logging_dir
        self._ort_engine: ort_backend.OrtEngine | None = None
        self.forward_state_changes: list[str] = []  # Python-side state ORT's export changed (forward_state.py)
        self.first_step_s: float | None = None  # the first optimizer step of train(), export and graph build included
        self.batch_tokens = BatchTokens()  # what the engine computed since the last take(): padded and real tokens
        # First in line, so that the other callbacks' step-end work is not counted in the first step.
        self.callback_handler.callbacks.insert(0, _EngineReportCallback(self))

    # -- backend life cycle ---------------------------------------------------------------------

    def _wrap_model(self, model, training=True, dataloader=None):
        if training and self.args.backend == Backend.ORT:
            self._attach_ort(self.accelerator.unwrap_model(model, keep_torch_compile=False))
        return super()._wrap_model(model, training=training, dataloader=dataloader)

    def train(self, *args, **kwargs):
        try:
            return super().train(*args, **kwargs)
        finally:
            if self.model is not None:
                ort_backend.detach(self.model)  # the user's forward and attention (e.g. sdpa) are back
            self.write_engine_report()

    def _attach_ort(self, model: torch.nn.Module) -> None:
        if ort_backend.is_attached(model):
            return
        self._ort_engine = ort_backend.attach(model, self._ort_options(), self._ort_engine)

    def _ort_options(self) -> ort_backend.OrtOptions:
        args = self.args
        return ort_backend.OrtOptions(
            fallback=args.ort_fallback, log_level=args.onnx_log_level,
            save_onnx_dir=os.path.join(args.output_dir, "onnx") if args.save_onnx else None,
            onnx_prefix=args.onnx_prefix, memory_optimizer_level=args.ort_memory_optimizer_level,
            opset=args.onnx_opset, loss_fn=self._loss_inside_graph if args.use_module_with_loss else None,
            way_out=TRAINER_WAY_OUT)

    # -- evaluation (Optimum 1.13 and older took inference_with_ort) ----------------------------

    def evaluate(self, *args, inference_with_ort=_NOT_GIVEN, **kwargs):
        _no_inference_with_ort(type(self).__name__, "evaluate", inference_with_ort)
        return super().evaluate(*args, **kwargs)

    def predict(self, *args, inference_with_ort=_NOT_GIVEN, **kwargs):
        _no_inference_with_ort(type(self).__name__, "predict", inference_with_ort)
        return super().predict(*args, **kwargs)

    # -- optimizer and loss -------------------------------------------------------------------

    @staticmethod
    def get_optimizer_cls_and_kwargs(args, model=None):
        if args.optim == OrtOptimizerNames.ADAMW_ORT_FUSED:
            from onnxruntime.training.optim import AdamWMode, FusedAdam

            return FusedAdam, {"lr": args.learning_rate, "betas": (args.adam_beta1, args.adam_beta2),
                               "eps": args.adam_epsilon, "adam_w_mode": AdamWMode.ADAMW_TORCH}
        return Trainer.get_optimizer_cls_and_kwargs(args, model)

    def training_step(self, model, inputs, num_items_in_batch=None):
        # Counted here, on the batch the step really trains: the dataloader runs one batch ahead.
        self.batch_tokens.add(inputs)
        return super().training_step(model, inputs, num_items_in_batch)

    def _loss_inside_graph(self, outputs, inputs):
        if self.label_smoother is not None and "labels" in inputs:
            return self.label_smoother(outputs, inputs["labels"])
        return outputs["loss"] if isinstance(outputs, dict) else outputs[0]

    def compute_loss(self, model, inputs, return_outputs=False, num_items_in_batch=None):
        if self.args.use_module_with_loss and self.args.backend == Backend.ORT and model.training:
            outputs = model(**inputs)  # the ORT graph returns {"loss": loss}
            return (outputs["loss"], outputs) if return_outputs else outputs["loss"]
        return super().compute_loss(model, inputs, return_outputs=return_outputs,
                                    num_items_in_batch=num_items_in_batch)

    # -- what ran -------------------------------------------------------------------------------

    def engine_report(self) -> dict:
        """What was asked for and what really executed the training steps."""
        args = self.args
        report = {
            "backend": args.backend.value,
            "engine": "pytorch",
            "fallback": None,
            "ort_version": ort_version(),
            "providers": [],
            "graphs": [],
            "compiler": "inductor" if args.backend == Backend.COMPILE else None,
            "attention": getattr(getattr(self.model, "config", None), "_attn_implementation", None),
            "optimizer": str(getattr(args.optim, "value", args.optim)),
            "precision": "bf16" if args.bf16 else "fp16" if args.fp16 else "fp32",
            "device": str(args.device),
            "time_to_first_step_s": self.first_step_s,
            # what forward changed in Python while ORT exported it; under ORT it changes no more
            "forward_state_changes": list(self.forward_state_changes),
            **ort_backend.run_facts(),
        }
        if args.backend == Backend.ORT:
            if self._ort_engine is None:
                report.update(engine=None, fallback="not trained yet")
            else:
                report.update(self._ort_engine.report())
        return report

    def write_engine_report(self) -> str | None:
        """Write the report to ``output_dir/.ortnb/engine_report.json`` (rank 0); returns its path."""
        if not self.is_world_process_zero():
            return None
        path = engine_report_path(self.args.output_dir)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        files.write_atomic(path, json.dumps(self.engine_report(), indent=2))
        return path

    def _note_forward_state(self, before: dict) -> None:
        """After the first ORT step: name the Python-side state its export changed, in the report and a warning."""
        if self._ort_engine is None or self._ort_engine.report().get("engine") != "onnxruntime":
            return  # PyTorch ran forward (eager, compile, or ORT fell back): the state keeps changing
        self.forward_state_changes = forward_state.changes(before, self.accelerator.unwrap_model(self.model))
        if self.forward_state_changes:
            warnings.warn(forward_state.warning_text(self.forward_state_changes, type(self.model).__name__),
                          OrtnbWarning, stacklevel=2)


def _default_arguments(args: tuple, kwargs: dict, args_class) -> tuple[tuple, dict]:
    """``ORTTrainer(model)`` with no args works as ``Trainer(model)`` does: default arguments, output_dir as
    Trainer picks it."""
    given = args[ARGS_POSITION] if len(args) > ARGS_POSITION else kwargs.get("args")
    if given is not None:
        return args, kwargs
    logger.info("No ORTTrainingArguments passed, using output_dir=%s.", DEFAULT_OUTPUT_DIR)
    default = args_class(output_dir=DEFAULT_OUTPUT_DIR)
    if len(args) > ARGS_POSITION:
        return (args[0], default, *args[ARGS_POSITION + 1:]), kwargs
    return args, {**kwargs, "args": default}


def _optimum_trainer_arguments(name: str, args: tuple, kwargs: dict, tokenizer, feature, onnx_model_path) -> list[str]:
    """Map Optimum's ORTTrainer arguments onto Trainer's (in ``kwargs``) or raise ConfigError naming the way out.
    Returns what was mapped, for one FutureWarning."""
    mapped, problems = [], []
    if tokenizer is not _NOT_GIVEN:
        given = kwargs.get("processing_class", args[PROCESSING_CLASS_POSITION]
                           if len(args) > PROCESSING_CLASS_POSITION else None)
        if tokenizer is not None and given is not None:
            problems.append(f"{name}(tokenizer=..., processing_class=...): both were given. tokenizer is the name "
                            "Optimum's ORTTrainer and transformers 4 used for processing_class; pass only "
                            "processing_class.")
        elif tokenizer is not None:
            kwargs["processing_class"] = tokenizer
        mapped.append("tokenizer= was passed on as processing_class= (tokenizer is the name Optimum's ORTTrainer and "
                      "transformers 4 used; transformers 5 calls it processing_class): rename it to silence this "
                      "warning.")
    if onnx_model_path is not None:
        problems.append(f"{name}(onnx_model_path={os.fspath(onnx_model_path)!r}): Optimum 1.13 and older evaluated "
                        "that ONNX model with inference_with_ort=True; ORTTrainer evaluates and predicts in PyTorch. "
                        "Remove it; for ONNX Runtime inference export the trained model with "
                        "ortnb.export_onnx(output_dir, 'model.onnx').")
    if problems:
        raise ConfigError(problems)
    if feature is not _NOT_GIVEN:
        mapped.append(f"feature={feature!r} is ignored (Optimum 1.13 and older: the ONNX export task for "
                      "inference_with_ort; ORTModule exports the model's own forward, so no task is needed): remove "
                      "it.")
    return mapped


def _no_inference_with_ort(name: str, method: str, inference_with_ort) -> None:
    if inference_with_ort is _NOT_GIVEN:
        return
    if inference_with_ort:
        raise ConfigError(f"{name}.{method}(inference_with_ort=True): Optimum 1.13 and older ran evaluation in ONNX "
                          "Runtime; ORTTrainer evaluates and predicts in PyTorch. Remove it; for ONNX Runtime "
                          "inference export the trained model with ortnb.export_onnx(output_dir, 'model.onnx') and "
                          "run it with onnxruntime.InferenceSession.")
    warnings.warn(f"{name}.{method}(inference_with_ort=False): removed from Optimum 1.14 on; it is what {method} "
                  "always does. Remove it to silence this warning.", FutureWarning, stacklevel=3)


class BatchTokens:
    """Tokens of the batches trained since the last ``take()``: padded (the work the engine did) and real
    (the text it trained on, from the attention mask), and the longest padded row (for the attention FLOPs)."""

    def __init__(self):
        self.padded, self.real, self.longest = 0, 0, 0

    def add(self, inputs: dict) -> None:
        ids = inputs.get("input_ids")
        if not torch.is_tensor(ids) or ids.dim() != 2:
            return
        mask = inputs.get("attention_mask")
        self.padded += ids.numel()
        self.real += int(mask.sum()) if torch.is_tensor(mask) else ids.numel()
        self.longest = max(self.longest, ids.shape[1])

    def take(self) -> tuple[int, int, int]:
        counts = (self.padded, self.real, self.longest)
        self.padded, self.real, self.longest = 0, 0, 0
        return counts


class _EngineReportCallback(TrainerCallback):
    """Times the first optimizer step (forward with ORT's export and graph build, backward, optimizer)
    and writes the engine report right after it, so even a crashed run has one."""

    def __init__(self, trainer: _ORTTrainerMixin):
        self.trainer = trainer
        self._started: float | None = None
        self._state_before: dict | None = None  # the model's Python-side state before ORT's export

    def on_step_begin(self, args, state, control, model=None, **kwargs):
        if self._started is None:
            self._started = time.perf_counter()
            if args.backend == Backend.ORT and self.trainer.first_step_s is None:
                self._state_before = forward_state.snapshot(self.trainer.accelerator.unwrap_model(self.trainer.model))

    def on_step_end(self, args, state, control, **kwargs):
        if self.trainer.first_step_s is None and self._started is not None:
            self.trainer.first_step_s = time.perf_counter() - self._started
            if self._state_before is not None:
                self.trainer._note_forward_state(self._state_before)
                self._state_before = None
            self.trainer.write_engine_report()


class ORTTrainer(_ORTTrainerMixin, Trainer):
    """A drop-in ``transformers.Trainer`` whose training steps run in ONNX Runtime.

    Use it with :class:`ORTTrainingArguments` (none: the defaults, as Trainer); ``trainer.engine_report()``
    (also written to ``output_dir/.ortnb/engine_report.json``) says which engine really ran.
    """

    _default_args_class = ORTTrainingArguments


class ORTSeq2SeqTrainer(_ORTTrainerMixin, Seq2SeqTrainer):
    """``Seq2SeqTrainer`` (generation in evaluate/predict) with ONNX Runtime training steps."""

    _default_args_class = ORTSeq2SeqTrainingArguments
