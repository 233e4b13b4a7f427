"""ORTTrainingArguments: transformers' TrainingArguments plus the ONNX Runtime options.

Every setting is checked when the arguments are built, before any model is touched, and all
problems are reported at once, each naming the field and the way out. The fields Optimum's
ORTTrainingArguments took and transformers 5 removed are accepted too: mapped onto their
transformers 5 equivalent (one FutureWarning lists how) or refused with the other problems.
"""

from __future__ import annotations

import base64
import binascii
import json
import os
import warnings
from dataclasses import dataclass, field
from enum import Enum

from transformers import Seq2SeqTrainingArguments, TrainingArguments
from transformers.training_args import OptimizerNames

from .. import _imports
from ..backends.options import ORT_LOG_LEVELS, TRAINER_NAMES, option_problems
from ..errors import ConfigError
from .distributed import fix_cpu_deepspeed_world, imply_use_cpu_for_ddp

TRAINING_DEFAULTS = TrainingArguments.__dataclass_fields__


class Backend(str, Enum):
    """What runs the forward and backward passes."""

    ORT = "ort"  # ONNX Runtime through ORTModule
    EAGER = "eager"  # plain PyTorch
    COMPILE = "compile"  # torch.compile (inductor)


class OrtOptimizerNames(str, Enum):
    ADAMW_ORT_FUSED = "adamw_ort_fused"  # onnxruntime.training.optim.FusedAdam (CUDA only)


def _choices(enum) -> str:
    return ", ".join(member.value for member in enum)


def _plain(value):
    """An enum member's value, anything else as it is (for comparing settings)."""
    return getattr(value, "value", value)


def _removed(what: str, default=None):
    """A field Optimum's ORTTrainingArguments took (on transformers 4.36 to 4.53) and transformers 5 removed."""
    return field(default=default,
                 metadata={"help": f"Removed in transformers 5, accepted for Optimum's scripts: {what}"})


# optim names transformers 5 removed: the replacement, or why there is none (refused, naming the way out).
ADAMW_HF_NOTE = ("optim='adamw_hf' -> optim='adamw_torch' (transformers 5 removed its own AdamW; PyTorch's is the "
                 "same algorithm, with eps added after the bias correction)")
REMOVED_OPTIMIZERS = {
    "adamw_apex_fused": "optim='adamw_apex_fused': transformers 5 removed apex's fused AdamW. Use "
                        "optim='adamw_torch_fused' (PyTorch's fused AdamW) or, on a CUDA GPU, optim='adamw_ort_fused'.",
}

# Removed fields whose effect is gone: (the values that change nothing, so are dropped; why and what instead).
AMP_BACKENDS = ("auto", "amp", "cpu_amp", "cuda_amp")
REFUSED_UNLESS = {
    "save_safetensors": ((True,), "transformers 5 only writes safetensors checkpoints (the torch .bin format is "
                                  "gone); remove it"),
    "half_precision_backend": (AMP_BACKENDS, "transformers 5 removed apex; fp16/bf16 always use torch.autocast. "
                                             "Remove it"),
    "fp16_backend": (AMP_BACKENDS, "transformers 5 removed apex; fp16/bf16 always use torch.autocast. Remove it"),
    "fp16_opt_level": (("O1",), "apex AMP's opt level, and transformers 5 removed apex; fp16/bf16 use "
                                "torch.autocast. Remove it"),
    "jit_mode_eval": ((False,), "transformers 5 no longer runs evaluation through torch.jit.trace; remove it "
                                "(backend='compile' compiles the model with torch.compile)"),
    "use_ipex": ((False,), "transformers 5 removed Intel Extension for PyTorch support; remove it (backend='ort' is "
                           "ortnb's CPU speed-up)"),
    "past_index": ((-1,), "transformers 5 removed past_index (feeding a model's mems back between steps, for "
                          "TransformerXL/XLNet); remove it, there is no equivalent"),
    "tpu_num_cores": ((), "TPU settings have no effect here (ortnb trains on CPUs and CUDA GPUs, and transformers 5 "
                          "removed the field); remove it"),
    "mp_parameters": (("",), "transformers 5 removed SageMaker model parallelism; remove it (DDP and DeepSpeed "
                             "ZeRO 1/2 work with backend='ort')"),
    "ray_scope": (("last",), "transformers 5 reads the scope of a Ray Tune search from the RAY_SCOPE environment "
                             "variable; remove it and set RAY_SCOPE instead"),
}
# Removed fields that are dropped whatever their value, because transformers 5 does what they asked by itself.
IGNORED = {"use_mps_device": "transformers 5 uses MPS by itself when there is one"}


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

    # -- Optimum 1.27's ORTTrainingArguments took these (transformers 4.36 to 4.53); transformers 5 removed them.
    # Each is mapped onto its transformers 5 equivalent (one FutureWarning lists the mappings) or refused with the
    # other problems, naming the way out. Mapped fields are reset to None; the two kept ones stay for scripts.
    overwrite_output_dir: bool = _removed("kept for the scripts that read it (Optimum's and transformers 4's "
                                          "examples); Trainer never used it.", default=False)
    use_legacy_prediction_loop: bool = _removed("kept for scripts that read it; only False (the legacy loop is "
                                                "gone).", default=False)
    evaluation_strategy: str | None = _removed("-> eval_strategy.")
    no_cuda: bool | None = _removed("-> use_cpu.")
    per_gpu_train_batch_size: int | None = _removed("-> per_device_train_batch_size.")
    per_gpu_eval_batch_size: int | None = _removed("-> per_device_eval_batch_size.")
    warmup_ratio: float | None = _removed("-> warmup_steps (below 1 it is the fraction of the training steps).")
    logging_dir: str | None = _removed("-> the TensorBoard log directory (ORTTrainer hands it to TensorBoardCallback; "
                                       "transformers 5 reads TENSORBOARD_LOGGING_DIR).")
    adafactor: bool | None = _removed("-> optim='adafactor'.")
    group_by_length: bool | None = _removed("-> train_sampling_strategy='group_by_length'.")
    include_inputs_for_metrics: bool | None = _removed("-> include_for_metrics=['inputs'].")
    include_tokens_per_second: bool | None = _removed("-> include_num_input_tokens_seen='all' (which logs "
                                                      "train_tokens_per_second).")
    torchdynamo: str | None = _removed("-> torch_compile_backend.")
    fsdp_min_num_params: int | None = _removed("-> fsdp_config['min_num_params'].")
    fsdp_transformer_layer_cls_to_wrap: str | None = _removed("-> fsdp_config['transformer_layer_cls_to_wrap'].")
    push_to_hub_model_id: str | None = _removed("-> hub_model_id.")
    push_to_hub_organization: str | None = _removed("-> hub_model_id='organization/name'.")
    push_to_hub_token: str | None = _removed("-> hub_token.")
    tpu_metrics_debug: bool | None = _removed("-> debug='tpu_metrics_debug'.")
    use_mps_device: bool | None = _removed("ignored: transformers 5 uses MPS by itself.")
    save_safetensors: bool | None = _removed("only True (transformers 5 always writes safetensors).")
    half_precision_backend: str | None = _removed("only auto/cpu_amp/cuda_amp (apex is gone).")
    fp16_backend: str | None = _removed("only auto/cpu_amp/cuda_amp (apex is gone).")
    fp16_opt_level: str | None = _removed("only 'O1' (apex is gone).")
    jit_mode_eval: bool | None = _removed("only False.")
    use_ipex: bool | None = _removed("only False.")
    past_index: int | None = _removed("only -1.")
    tpu_num_cores: int | None = _removed("refused (no TPUs here).")
    mp_parameters: str | None = _removed("only '' (SageMaker model parallelism is gone).")
    ray_scope: str | None = _removed("only 'last'; set the RAY_SCOPE environment variable instead.")

    def __post_init__(self):
        problems: list[str] = []
        mapped = self._map_removed_fields(problems)
        ort_optim = self.optim == OrtOptimizerNames.ADAMW_ORT_FUSED.value
        self.backend = self._check_ort_settings(ort_optim, problems)
        if mapped:
            warnings.warn(f"{type(self).__name__} got settings that transformers 5 removed (Optimum's "
                          f"ORTTrainingArguments took them): {'; '.join(mapped)}. Use the transformers 5 names to "
                          "silence this warning.", FutureWarning, stacklevel=3)
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

    def _check_ort_settings(self, ort_optim: bool, problems: list[str]) -> Backend:
        """Collect every problem with the settings (after those already in ``problems``), then raise once."""
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
        if str(_plain(self.optim)) in REMOVED_OPTIMIZERS:
            problems.append(REMOVED_OPTIMIZERS[str(_plain(self.optim))])
        elif not ort_optim and str(_plain(self.optim)) not in known:
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

    # -- fields transformers 5 removed ---------------------------------------------------------

    def _map_removed_fields(self, problems: list[str]) -> list[str]:
        """Move each removed field that was given onto its transformers 5 equivalent, or add a problem naming the
        way out. Returns what was mapped or dropped, for the one FutureWarning."""
        removed = _RemovedFields(self, problems)
        if _plain(self.optim) == "adamw_hf":
            self.optim = OptimizerNames.ADAMW_TORCH.value
            removed.mapped.append(ADAMW_HF_NOTE)
        for old, new in RENAMED:
            if getattr(self, old) is not None:
                removed.move(old, new)
        if self.torchdynamo is not None:
            removed.move("torchdynamo", "torch_compile_backend")
            self.torch_compile = True  # as transformers 4 did (so backend='ort' refuses it with the way out)
        removed.warmup_ratio()
        for name, switch_on in removed.switches():
            if getattr(self, name):
                switch_on()
            elif getattr(self, name) is not None:
                removed.drop(name, "False is the default")
        if self.fsdp_min_num_params == 0:
            removed.drop("fsdp_min_num_params", "0 is the default")
        self._map_fsdp_fields(problems, removed.mapped)
        if self.push_to_hub_token is not None:
            removed.move("push_to_hub_token", "hub_token", secret=True)
        self._map_hub_model_id(problems, removed.mapped)
        if self.logging_dir is not None:  # kept: ORTTrainer hands it to TensorBoardCallback
            self.logging_dir = os.path.expanduser(os.fspath(self.logging_dir))
            removed.mapped.append(f"logging_dir={self.logging_dir!r} -> TensorBoard's log directory (transformers 5 "
                                  "reads TENSORBOARD_LOGGING_DIR; ORTTrainer passes logging_dir to its "
                                  "TensorBoardCallback)")
        removed.refuse_or_drop_the_rest()
        return removed.mapped

    def _map_fsdp_fields(self, problems: list[str], mapped: list[str]) -> None:
        for old, key in (("fsdp_min_num_params", "min_num_params"),
                         ("fsdp_transformer_layer_cls_to_wrap", "transformer_layer_cls_to_wrap")):
            value = getattr(self, old)
            if value is None:
                continue
            if self.fsdp_config is not None and not isinstance(self.fsdp_config, dict):
                problems.append(f"{old}={value!r}: transformers 5 removed it and fsdp_config is a file; put "
                                f'"{key}": {json.dumps(value if key == "min_num_params" else [value])} into that file.')
                continue
            self.fsdp_config = dict(self.fsdp_config or {})
            self.fsdp_config[key] = value if key == "min_num_params" else [
                *self.fsdp_config.get(key, []), value]
            mapped.append(f"{old}={value!r} -> fsdp_config[{key!r}]={self.fsdp_config[key]!r}")
            setattr(self, old, None)

    def _map_hub_model_id(self, problems: list[str], mapped: list[str]) -> None:
        model_id, organization = self.push_to_hub_model_id, self.push_to_hub_organization
        if model_id is None and organization is None:
            return
        name = model_id if model_id is not None else os.path.basename(os.path.normpath(self.output_dir))
        hub_model_id = f"{organization}/{name}" if organization is not None else name
        given = " and ".join(f"{field_name}={value!r}" for field_name, value in (
            ("push_to_hub_model_id", model_id), ("push_to_hub_organization", organization)) if value is not None)
        if self.hub_model_id is not None and self.hub_model_id != hub_model_id:
            problems.append(f"{given} and hub_model_id={self.hub_model_id!r} were both given: transformers 5 removed "
                            "the push_to_hub_* fields in favour of hub_model_id='organization/name'. Pass only "
                            "hub_model_id.")
        else:
            self.hub_model_id = hub_model_id
            mapped.append(f"{given} -> hub_model_id={hub_model_id!r}")
        self.push_to_hub_model_id = self.push_to_hub_organization = None


# Removed fields transformers 5 renamed, old name -> new name.
RENAMED = (("evaluation_strategy", "eval_strategy"), ("no_cuda", "use_cpu"),
           ("per_gpu_train_batch_size", "per_device_train_batch_size"),
           ("per_gpu_eval_batch_size", "per_device_eval_batch_size"))


class _RemovedFields:
    """The removed fields of one ORTTrainingArguments being mapped: ``mapped`` says what was mapped or dropped (for
    the FutureWarning), ``problems`` receives the fields refused."""

    def __init__(self, args: ORTTrainingArguments, problems: list[str]):
        self.args, self.problems, self.mapped = args, problems, []

    def move(self, old: str, new: str, value=None, secret: bool = False) -> None:
        """``old``'s value (or ``value``) onto ``new``, unless ``new`` was given a different value too."""
        given = getattr(self.args, old)
        value = given if value is None else value
        current = getattr(self.args, new)
        shown = "..." if secret else repr(given)
        if _plain(current) not in (_plain(TRAINING_DEFAULTS[new].default), _plain(value)):
            self.problems.append(f"{old}={shown} and {new}={'...' if secret else repr(_plain(current))} were both "
                                 f"given: {old} is the transformers 4 name of {new}, which transformers 5 removed. "
                                 f"Pass only {new}.")
        else:
            setattr(self.args, new, value)
            self.mapped.append(f"{old}={shown} -> {new}={'...' if secret else repr(value)}")
        setattr(self.args, old, None)

    def drop(self, name: str, why: str) -> None:
        self.mapped.append(f"{name}={getattr(self.args, name)!r} dropped ({why})")
        setattr(self.args, name, None)

    def warmup_ratio(self) -> None:
        ratio = self.args.warmup_ratio
        if ratio is None:
            return
        if not 0 <= ratio < 1:
            self.problems.append(f"warmup_ratio={ratio!r}: transformers 5 removed warmup_ratio, and a warmup_steps "
                                 "below 1 is now the fraction of the training steps, so the ratio must be in [0, 1). "
                                 "For a warmup over the whole run pass warmup_steps=<number of steps>.")
        elif ratio:
            self.move("warmup_ratio", "warmup_steps")
        else:
            self.drop("warmup_ratio", "0 is the default")

    def switches(self):
        """The removed on/off fields, in order, each with what True maps onto (False, the default, is dropped)."""
        return (("adafactor", lambda: self.move("adafactor", "optim", "adafactor")),
                ("group_by_length", lambda: self.move("group_by_length", "train_sampling_strategy", "group_by_length")),
                ("include_inputs_for_metrics", self.include_inputs),
                ("include_tokens_per_second", self.include_tokens_per_second),
                ("tpu_metrics_debug", self.tpu_metrics_debug))

    def include_inputs(self) -> None:
        args = self.args
        args.include_for_metrics = [*args.include_for_metrics,
                                    *(["inputs"] if "inputs" not in args.include_for_metrics else [])]
        self.mapped.append(f"include_inputs_for_metrics=True -> include_for_metrics={args.include_for_metrics!r}")
        args.include_inputs_for_metrics = None

    def include_tokens_per_second(self) -> None:
        args = self.args
        if _plain(args.include_num_input_tokens_seen) in ("no", False):
            args.include_num_input_tokens_seen = "all"
        self.mapped.append("include_tokens_per_second=True -> include_num_input_tokens_seen="
                           f"{args.include_num_input_tokens_seen!r} (logs train_tokens_per_second)")
        args.include_tokens_per_second = None

    def tpu_metrics_debug(self) -> None:
        args = self.args
        debug = args.debug
        args.debug = f"{debug} tpu_metrics_debug".strip() if isinstance(debug, str) else [*debug, "tpu_metrics_debug"]
        self.mapped.append(f"tpu_metrics_debug=True -> debug={args.debug!r}")
        args.tpu_metrics_debug = None

    def refuse_or_drop_the_rest(self) -> None:
        """The removed fields whose effect is gone: dropped where harmless (IGNORED, REFUSED_UNLESS's harmless
        values), else a problem naming the way out."""
        for name, why in IGNORED.items():
            if getattr(self.args, name) is not None:
                self.drop(name, why)
        if self.args.use_legacy_prediction_loop:
            self.problems.append("use_legacy_prediction_loop=True: transformers 5 removed Trainer.prediction_loop; "
                                 "remove it (evaluate and predict use evaluation_loop).")
        for name, (harmless, why) in REFUSED_UNLESS.items():
            value = getattr(self.args, name)
            if value is None:
                continue
            if value in harmless:
                self.drop(name, "what transformers 5 does anyway")
            else:
                self.problems.append(f"{name}={value!r}: {why}.")


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
