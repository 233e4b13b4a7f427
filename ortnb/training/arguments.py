"""ORTTrainingArguments: transformers' TrainingArguments plus the ONNX Runtime options.

Every setting is checked when the arguments are built, before any model is touched, and all
problems are reported at once, each naming the field and the way out.
"""

from __future__ import annotations

import base64
import binascii
import json
import os
from dataclasses import dataclass, field
from enum import Enum

from transformers import Seq2SeqTrainingArguments, TrainingArguments
from transformers.training_args import OptimizerNames

from .. import _imports
from ..backends.options import ORT_LOG_LEVELS, TRAINER_NAMES, option_problems
from ..errors import ConfigError
from .distributed import fix_cpu_deepspeed_world, imply_use_cpu_for_ddp


class Backend(str, Enum):
    """What runs the forward and backward passes."""

    ORT = "ort"  # ONNX Runtime through ORTModule
    EAGER = "eager"  # plain PyTorch
    COMPILE = "compile"  # torch.compile (inductor)


class OrtOptimizerNames(str, Enum):
    ADAMW_ORT_FUSED = "adamw_ort_fused"  # onnxruntime.training.optim.FusedAdam (CUDA only)


def _choices(enum) -> str:
    return ", ".join(member.value for member in enum)


@dataclass
class ORTTrainingArguments(TrainingArguments):
    """TrainingArguments for ORTTrainer. The ORT fields are named as in Hugging Face Optimum."""

    backend: str = field(default="ort", metadata={"help": "ort (ONNX Runtime), eager (PyTorch) or compile "
                                                          "(torch.compile); eager and compile exist for comparisons."})
    # The same default as transformers' TrainingArguments, so the two-edit migration changes nothing else.
    optim: str = field(default=TrainingArguments.__dataclass_fields__["optim"].default, metadata={
        "help": "The optimizer: adamw_ort_fused (ONNX Runtime's FusedAdam, CUDA), adamw_torch, adamw_torch_fused "
                "or any other transformers optimizer name."})
    ort_fallback: str = field(default="error", metadata={
        "help": "error: fail loudly if ONNX Runtime cannot run the model; allow: run PyTorch instead and record it."})
    use_module_with_loss: bool = field(default=False, metadata={
        "help": "Put the loss computation (label smoothing, compute_loss_func) inside the ONNX graph and return only "
                "the loss from it, so ORT never materialises other outputs for the backward pass."})
    save_onnx: bool = field(default=False, metadata={
        "help": "Dump ORTModule's ONNX graphs (exported, pre-gradient, optimized, training) into output_dir/onnx."})
    onnx_prefix: str | None = field(default=None, metadata={
        "help": "File name prefix of the dumped graphs; defaults to the model class name."})
    onnx_log_level: str = field(default="WARNING", metadata={"help": "ORTModule's log level: " +
                                                                     ", ".join(ORT_LOG_LEVELS)})
    ort_memory_optimizer_level: int = field(default=0, metadata={
        "help": "ORT memory optimizer: 0 off, 1 recompute whole transformer layers, 2 also recompute compromised "
                "subgraphs. Trades compute for activation memory."})
    onnx_opset: int = field(default=17, metadata={"help": "ONNX opset for ORTModule's export (14 to 17)."})

    def __post_init__(self):
        ort_optim = self.optim == OrtOptimizerNames.ADAMW_ORT_FUSED.value
        self.backend = self._check_ort_settings(ort_optim)
        if self.backend == Backend.COMPILE:
            self.torch_compile = True  # transformers' own torch.compile path
        if ort_optim:
            self.optim = OptimizerNames.ADAMW_TORCH.value  # stand-in while TrainingArguments validates
        imply_use_cpu_for_ddp(self)
        if not _imports.cuda_available():
            # Pinned memory speeds copies to an accelerator; without one torch warns on every dataloader.
            self.dataloader_pin_memory = False
            # DeepSpeed probes for an accelerator on import and warns when it settles on the CPU: tell it.
            os.environ.setdefault("DS_ACCELERATOR", "cpu")
        super().__post_init__()
        if fix_cpu_deepspeed_world(self.distributed_state) and self.hf_deepspeed_config is not None:
            self.hf_deepspeed_config.trainer_config_process(self)  # batch sizes with the real world size
        if ort_optim:
            self.optim = OrtOptimizerNames.ADAMW_ORT_FUSED

    # -- checks -----------------------------------------------------------------------------

    def _check_ort_settings(self, ort_optim: bool) -> Backend:
        """Collect every problem with the settings, then raise once."""
        problems: list[str] = []
        backend = _parse_enum(Backend, self.backend, "backend", problems)
        problems += option_problems(self.ort_fallback, self.onnx_log_level, self.ort_memory_optimizer_level,
                                    self.onnx_opset, names=TRAINER_NAMES)
        self._check_optimizer(ort_optim, problems)
        deepspeed = _deepspeed_config(self.deepspeed, problems)
        if backend == Backend.ORT:
            self._check_ort_backend(deepspeed, problems)
        if problems:
            raise ConfigError(problems)
        return backend

    def _check_optimizer(self, ort_optim: bool, problems: list[str]) -> None:
        known = {name.value for name in OptimizerNames}
        if not ort_optim and str(getattr(self.optim, "value", self.optim)) not in known:
            problems.append(f"optim={self.optim!r} is unknown. Choose adamw_ort_fused (CUDA), adamw_torch, "
                            "adamw_torch_fused, or another transformers optimizer name.")
        if ort_optim and not (_imports.cuda_available() and _imports.ort_has_cuda()):
            problems.append("optim='adamw_ort_fused' needs ONNX Runtime's FusedAdam, a CUDA kernel: a CUDA GPU and "
                            "onnxruntime-training (the CUDA wheel). On this machine use optim='adamw_torch_fused' "
                            "(PyTorch's fused AdamW, runs on the CPU) or optim='adamw_torch'.")

    def _check_ort_backend(self, deepspeed: dict | None, problems: list[str]) -> None:
        _imports.require_ort_training("backend='ort'")
        on_cuda = _imports.cuda_available() and _imports.ort_has_cuda() and not self.use_cpu
        for flag in ("bf16", "fp16"):
            if getattr(self, flag) and not on_cuda:
                problems.append(f"{flag}=True with backend='ort' needs the CUDA execution provider: ONNX Runtime's "
                                f"CPU provider has no {flag} MatMul kernel. Use backend='eager' for {flag} on the "
                                f"CPU, set {flag}=False, or train on a GPU with onnxruntime-training.")
        if self.torch_compile:
            problems.append("torch_compile=True with backend='ort': ONNX Runtime already compiles the model's graph. "
                            "Use backend='compile' for torch.compile, or drop torch_compile.")
        if self.activation_checkpointing or self.gradient_checkpointing:
            problems.append("gradient (activation) checkpointing with backend='ort' cannot be traced by ORTModule; use "
                            "ort_memory_optimizer_level=1, ORT's own layer-wise recompute, instead.")
        stage = (deepspeed or {}).get("zero_optimization", {}).get("stage", 0)
        if str(stage) == "3":
            problems.append("deepspeed zero_optimization.stage=3 with backend='ort' is not supported: ZeRO-3 "
                            "partitions parameters, which ORTModule 1.19 on this torch cannot trace. Use stage 1 or 2, "
                            "or backend='eager' for stage 3.")


def _parse_enum(enum, value, name: str, problems: list[str]):
    try:
        return enum(getattr(value, "value", value))
    except ValueError:
        problems.append(f"Unknown {name}: {value!r}. Choose between {_choices(enum)}.")
        return None


DEEPSPEED_FORMS = "a path to a DeepSpeed JSON file, a JSON string or a dict"


def _deepspeed_config(value, problems: list[str]) -> dict | None:
    """The `deepspeed=` argument as a dict, read the way accelerate reads it (a dict, an existing file, a JSON
    string, base64 JSON), so a bad one is reported here, naming the field, instead of deep inside accelerate."""
    if value is None or isinstance(value, dict):
        return value
    if not isinstance(value, (str, os.PathLike)):
        problems.append(f"deepspeed={value!r} is of type {type(value).__name__}; pass {DEEPSPEED_FORMS}.")
        return None
    text, source = _deepspeed_text(os.fspath(value), problems)
    if text is None:
        return None
    try:
        config = json.loads(text)
    except json.JSONDecodeError as error:
        problems.append(f"deepspeed: {source} is not valid JSON ({error.msg} at line {error.lineno} column "
                        f"{error.colno}); fix it.")
        return None
    if not isinstance(config, dict):
        problems.append(f"deepspeed: {source} holds a JSON {type(config).__name__}, not an object "
                        '{"zero_optimization": {...}, ...}; fix it.')
        return None
    return config


def _deepspeed_text(value: str, problems: list[str]) -> tuple[str | None, str]:
    """The JSON text and where it came from (for messages)."""
    if os.path.isfile(value):
        try:
            with open(value, encoding="utf-8") as handle:
                return handle.read(), f"the file {value}"
        except (OSError, UnicodeDecodeError) as error:
            problems.append(f"deepspeed: cannot read {value} ({error}); pass {DEEPSPEED_FORMS}.")
            return None, value
    if value.lstrip().startswith(("{", "[")):
        return value, "the JSON string"
    try:  # accelerate also takes base64-encoded JSON (how some launchers pass configs)
        decoded = base64.urlsafe_b64decode(value).decode("utf-8")
    except (binascii.Error, UnicodeDecodeError, ValueError):
        decoded = ""
    if decoded.lstrip().startswith("{"):
        return decoded, "the base64 string"
    problems.append(f"deepspeed={value!r}: no such file, and not a JSON string either; pass {DEEPSPEED_FORMS}.")
    return None, value


@dataclass
class ORTSeq2SeqTrainingArguments(Seq2SeqTrainingArguments, ORTTrainingArguments):
    """Seq2SeqTrainingArguments (generation during evaluate/predict) plus the ORT options."""
