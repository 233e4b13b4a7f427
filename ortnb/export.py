"""Export a fine-tuned model to an inference ONNX file and prove ONNX Runtime agrees with PyTorch.

``export_onnx`` takes a model (or the directory ``save_pretrained`` wrote, a Trainer's ``output_dir``
or an ortnb run folder, where it finds ``model/`` or the latest checkpoint), traces it with the
TorchScript exporter, and then runs the file with ``onnxruntime.InferenceSession`` twice, at two
different shapes, so a broken graph or a dynamic axis that was baked in as a constant fails here
rather than in production.

onnxruntime and onnx are imported inside the functions: ``import ortnb.export`` stays light.
"""

from __future__ import annotations

import inspect
import warnings
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch

from . import _imports, files
from .backends.ort_symbolics import training_only_nodes, without_training_symbolics
from .errors import ConfigError, ExportParityError, OrtnbWarning
from .vocabulary import Task

# task -> (transformers' name table used to recognise architectures, Auto class, output field)
TASKS = {
    Task.SEQUENCE_CLASSIFICATION: ("MODEL_FOR_SEQUENCE_CLASSIFICATION_MAPPING_NAMES",
                                   "AutoModelForSequenceClassification", "logits"),
    "token-classification": ("MODEL_FOR_TOKEN_CLASSIFICATION_MAPPING_NAMES", "AutoModelForTokenClassification", "logits"),
    "masked-lm": ("MODEL_FOR_MASKED_LM_MAPPING_NAMES", "AutoModelForMaskedLM", "logits"),
    Task.CAUSAL_LM: ("MODEL_FOR_CAUSAL_LM_MAPPING_NAMES", "AutoModelForCausalLM", "logits"),
    "feature-extraction": ("MODEL_MAPPING_NAMES", "AutoModel", "last_hidden_state"),
}
_SEED = 1234  # fixed so two exports of the same model see the same sample inputs
# 20 is the newest opset torch's TorchScript exporter writes (torch 2.13 warns "not supported" at 21; onnxruntime
# 1.19.2 would run up to 21); 14 is the oldest that ortnb uses and tests (ORTModule's range starts there too).
# Both ends are exported and checked in tests/test_export.py.
OPSETS = range(14, 21)


@dataclass(frozen=True)
class ExportResult:
    """Where the ONNX file is and how closely it matched PyTorch (worst of both parity checks)."""

    path: str
    task: str
    max_abs_diff: float
    opset: int
    inputs: tuple[str, ...]
    outputs: tuple[str, ...]
    providers: tuple[str, ...]

    def __str__(self) -> str:
        return (f"{self.task} model exported to {self.path} (opset {self.opset}); inputs {', '.join(self.inputs)}; "
                f"outputs {', '.join(self.outputs)}; max abs difference vs PyTorch {self.max_abs_diff:.2e} "
                f"on {', '.join(self.providers)}")


class _Wrapper(torch.nn.Module):
    """Takes plain tensors and returns one plain tensor, so the traced graph has no dicts or caches."""

    def __init__(self, model: torch.nn.Module, output: str, input_names: tuple[str, ...], use_cache: bool):
        super().__init__()
        self.model, self.output, self.input_names, self.use_cache = model, output, input_names, use_cache

    def forward(self, *tensors: torch.Tensor) -> torch.Tensor:
        kwargs = dict(zip(self.input_names, tensors), return_dict=True)
        if self.use_cache:  # only models whose forward has the argument get it
            kwargs["use_cache"] = False
        return getattr(self.model(**kwargs), self.output)


def _unsupported(what: str) -> ValueError:
    return ValueError(f"{what}; pass task= one of: {', '.join(TASKS)}")


def _check_arguments(path, task, opset) -> Path:
    """Every problem with the arguments at once, before anything is loaded or traced."""
    problems = []
    if Path(path).suffix != ".onnx":
        problems.append(f"path must end in .onnx, got {str(path)!r}")
    if task is not None and task not in TASKS:
        problems.append(str(_unsupported(f"unknown task {task!r}")))
    if not (isinstance(opset, int) and not isinstance(opset, bool) and opset in OPSETS):
        problems.append(f"opset={opset!r} is outside what export_onnx supports: {OPSETS[0]} to {OPSETS[-1]} "
                        f"({OPSETS[-1]} is the newest torch's TorchScript exporter writes); the default is 17")
    if problems:
        raise ConfigError(problems)
    return Path(path)


def _task_for(class_names: list[str]) -> str:
    from transformers.models.auto import modeling_auto

    for name in class_names:  # the class first, then its bases (a user's subclass still counts)
        for task, (table, _, _) in TASKS.items():
            values = getattr(modeling_auto, table).values()
            if any(name == v or (isinstance(v, tuple) and name in v) for v in values):
                return task
    raise _unsupported(f"cannot infer the task from architecture {class_names[0]!r}")


def _read_config(folder: Path) -> dict:
    return files.read_json_object(folder / "config.json") or {}


def _is_model_dir(folder: Path) -> bool:
    """A save_pretrained folder: its config.json is a transformers config (an ortnb run's is a RunConfig)."""
    return "model_type" in _read_config(folder)


def find_model_dir(folder: Path) -> Path:
    """The save_pretrained folder in ``folder``: itself, an ortnb run's ``best/`` (the best evaluation's weights)
    or ``model/`` (its final model), or the latest complete ``checkpoint-N`` (a Trainer's output_dir, or a
    stopped run)."""
    if not folder.is_dir():
        raise FileNotFoundError(f"no folder {str(folder)!r}: pass the directory save_pretrained wrote, a Trainer's "
                                "output_dir, an ortnb run folder, or the model itself")
    if _is_model_dir(folder):
        return folder
    from .runs import layout

    best = layout.best(folder)  # an ortnb run that evaluated: its best weights, and saying so
    if best is not None and _is_model_dir(Path(best["folder"])):
        print(f"ortnb: exporting the best evaluation's weights (step {best['step']}, {best['metric']} "
              f"{best['value']:.4g}) from {best['folder']}")
        return Path(best["folder"])
    final = layout.final_model(folder)  # whole saves only: a model/ cut short is never exported
    if final is not None and _is_model_dir(final):
        return final
    checkpoints = [p for p in layout.checkpoints(folder) if _is_model_dir(p)]  # whole saves only, oldest first
    if checkpoints:
        return checkpoints[-1]
    if "backend" in _read_config(folder):  # an ortnb run folder (config.json holds its RunConfig)
        cut = layout.cut_final_model(folder)
        if cut:
            raise FileNotFoundError(f"the run folder {str(folder)!r} holds no whole model: {cut}, and no whole "
                                    "checkpoint-*/; launch the run again, or pass another run")
        raise FileNotFoundError(f"the run folder {str(folder)!r} holds no model yet (no model/ and no checkpoint-*/): "
                                "the run has not finished, or failed before saving; wait for it or pass another run")
    raise FileNotFoundError(f"no config.json in {str(folder)!r}: pass the directory save_pretrained wrote "
                            "(a Trainer's output_dir or one of its checkpoint-* folders, or an ortnb run folder), "
                            "or the model itself")


def _load(folder: Path, task: str | None):
    """Load a saved model in fp32 (the tolerance is an fp32 one) with the class its task needs."""
    import transformers

    from .progress import without_progress_bars

    from .models.weights import check_folder

    model_dir = find_model_dir(folder)
    check_folder(model_dir)  # a cut or foreign weight file is named here, not met as a bare SafetensorError
    config = transformers.AutoConfig.from_pretrained(model_dir)
    if task is None:
        if not config.architectures:
            raise _unsupported(f"config.json in {str(model_dir)!r} names no architectures")
        task = _task_for([config.architectures[0]])
    auto_class = getattr(transformers, TASKS[task][1])
    with without_progress_bars():  # a bar for weights the caller named says nothing
        model, loading = auto_class.from_pretrained(model_dir, dtype=torch.float32, output_loading_info=True)
    _warn_untrained(sorted(loading["missing_keys"]), model_dir, config, task)
    return model, task


def _warn_untrained(missing: list[str], model_dir: Path, config, task: str) -> None:
    """Weights the checkpoint lacks are freshly initialised: a causal LM exported as a classifier gets a new,
    random head, which exports and passes parity but predicts nothing."""
    if not missing:
        return
    saved = (config.architectures or ["model"])[0]
    try:
        natural = f" or export with task={_task_for([saved])!r}"
    except ValueError:
        natural = ""
    shown = ", ".join(missing[:3]) + (f" and {len(missing) - 3} more" if len(missing) > 3 else "")
    warnings.warn(f"{model_dir} holds a {saved} checkpoint without {shown}: exported as {task}, those weights are "
                  f"new and untrained (a classification head on a causal LM, for example), so its outputs are "
                  f"random. Fine-tune it for {task} first{natural}.", OrtnbWarning, stacklevel=3)


def _make_inputs(config, input_names, batch_size: int, seq_len: int, device) -> dict[str, torch.Tensor]:
    """Deterministic ids, with right padding in the second row so the mask path is traced and checked."""
    generator = torch.Generator().manual_seed(_SEED + batch_size * 1000 + seq_len)
    inputs = {"input_ids": torch.randint(0, config.vocab_size, (batch_size, seq_len), generator=generator),
              "attention_mask": torch.ones(batch_size, seq_len, dtype=torch.long)}
    if batch_size > 1:
        inputs["attention_mask"][1, seq_len // 2 + 1:] = 0
    if "token_type_ids" in input_names:
        inputs["token_type_ids"] = torch.zeros(batch_size, seq_len, dtype=torch.long)
    return {k: v.to(device) for k, v in inputs.items()}


def _input_names(config, accepted, sample_inputs) -> tuple[str, ...]:
    names = ["input_ids", "attention_mask"]
    # GPT-2 accepts token_type_ids but embeds them with its word table, so zeros are not "no types":
    # only models with a segment-embedding table (BERT-like) get the input unless the caller passes it.
    wants_types = getattr(config, "type_vocab_size", 0) or "token_type_ids" in (sample_inputs or {})
    if "token_type_ids" in accepted and wants_types:
        names.append("token_type_ids")
    return tuple(names)


def _check_sample_inputs(sample_inputs, input_names, device) -> dict[str, torch.Tensor]:
    missing = [n for n in ("input_ids", "attention_mask") if n not in sample_inputs]
    if missing:
        raise ValueError(f"sample_inputs lacks {missing}; pass a dict of (batch, sequence) tensors with at least "
                         "input_ids and attention_mask")
    ids = torch.as_tensor(sample_inputs["input_ids"])
    # in input_names order: the wrapper and the exporter take the tensors positionally
    return {n: torch.as_tensor(sample_inputs[n]).to(device) if n in sample_inputs else torch.zeros_like(ids).to(device)
            for n in input_names}


def _torch_outputs(wrapper: torch.nn.Module, inputs: dict[str, torch.Tensor]) -> list[np.ndarray]:
    """The PyTorch reference the ONNX outputs are compared against."""
    with torch.no_grad():
        out = wrapper(*inputs.values())
    return [t.detach().float().cpu().numpy() for t in (out if isinstance(out, tuple) else (out,))]


def _max_abs_diff(expected: np.ndarray, actual: np.ndarray) -> float:
    if expected.shape != actual.shape:
        return float("inf")
    diff = np.abs(expected.astype(np.float64) - actual.astype(np.float64))
    diff[np.isnan(expected) & np.isnan(actual)] = 0.0  # NaN in both is agreement, NaN in one is not
    return float("inf") if np.isnan(diff).any() else float(diff.max(initial=0.0))


def _parity(session, wrapper, inputs, output_names, atol: float, path: Path) -> float:
    feeds = {name: t.cpu().numpy() for name, t in inputs.items()}
    worst = 0.0
    for name, expected, actual in zip(output_names, _torch_outputs(wrapper, inputs), session.run(None, feeds)):
        diff = _max_abs_diff(expected, actual)
        if not diff <= atol:
            shape = tuple(inputs["input_ids"].shape)
            raise ExportParityError(
                f"ONNX output {name!r} differs from PyTorch: max abs difference {diff:.3g} exceeds atol {atol:g} "
                f"(inputs of shape {shape}). The file is kept for inspection at {path}; a model not in fp32 may "
                "need a larger atol.")
        worst = max(worst, diff)
    return worst


def _export(wrapper, inputs, path: Path, task: str, output_names, opset: int) -> None:
    names = list(inputs)
    dynamic_axes = {n: {0: "batch", 1: "sequence"} for n in names}
    # every task but sequence classification returns one row per token
    out_axes = {0: "batch"} if task == Task.SEQUENCE_CLASSIFICATION else {0: "batch", 1: "sequence"}
    dynamic_axes.update({n: out_axes for n in output_names})
    path.parent.mkdir(parents=True, exist_ok=True)
    with warnings.catch_warnings():
        # torch >= 2.9 warns that dynamo=False is the legacy exporter; we choose it on purpose
        # because it handles Transformers' masks with dynamic axes reliably.
        warnings.simplefilter("ignore", DeprecationWarning)
        warnings.simplefilter("ignore", FutureWarning)
        # The tracer's notes on Transformers' mask code (a Python bool, advanced indexing in opset 17) are about
        # inputs the parity check below tries for real: every export is compared with PyTorch before it returns.
        warnings.simplefilter("ignore", torch.jit.TracerWarning)
        warnings.filterwarnings("ignore", message="Exporting aten::index operator of advanced indexing")
        with without_training_symbolics():  # ORT training's ATen nodes run nowhere else
            torch.onnx.export(wrapper, tuple(inputs.values()), str(path), dynamo=False, opset_version=opset,
                              do_constant_folding=True, input_names=names, output_names=output_names,
                              dynamic_axes=dynamic_axes)
    foreign = training_only_nodes(path)
    if foreign:
        raise RuntimeError(f"{path} holds nodes only ONNX Runtime training runs ({', '.join(foreign)}): no "
                                "inference runtime can load it. Export in a fresh Python process (restart the "
                                "kernel, or run ortnb.export_onnx from a script) and report this as a bug.")


def export_onnx(model_or_dir, path, *, task: str | None = None, sample_inputs: dict | None = None, opset: int = 17,
                atol: float = 1e-4, seq_len: int = 16, batch_size: int = 2) -> ExportResult:
    """Export ``model_or_dir`` for inference to ``path`` and check ONNX Runtime matches PyTorch within ``atol``.

    ``model_or_dir``: a model, a save_pretrained folder, a Trainer's output_dir or an ortnb run folder (or Run).
    ``opset``: 14 to 20. Exporting a checkpoint for a task it was not trained for (a causal LM as a
    classifier) warns (OrtnbWarning) that the new head is untrained.

    Raises ExportParityError (leaving the file on disk) when any output differs by more than ``atol``.
    The caller's model keeps its train/eval modes, attention implementation and weights.
    """
    path = _check_arguments(path, task, opset)
    _imports.require_ort_training("export_onnx's parity check")
    model_or_dir = getattr(model_or_dir, "run_dir", model_or_dir)  # an ortnb Run exports its run folder
    if isinstance(model_or_dir, (str, Path)):
        model, task = _load(Path(model_or_dir), task)
    else:
        model = model_or_dir
        task = task or _task_for([c.__name__ for c in type(model).__mro__])

    modes = {module: module.training for module in model.modules()}
    attn = getattr(model.config, "_attn_implementation", None)
    try:
        model.eval()
        if attn not in (None, "eager"):  # sdpa/flash kernels do not trace to portable ONNX
            model.set_attn_implementation("eager")
        return _export_and_check(model, path, task, sample_inputs, opset, atol, seq_len, batch_size)
    finally:
        if attn not in (None, "eager"):
            model.set_attn_implementation(attn)
        for module, training in modes.items():
            module.training = training


def _export_and_check(model, path, task, sample_inputs, opset, atol, seq_len, batch_size) -> ExportResult:
    _imports.choose_deepspeed_cpu_quietly()  # the training build of onnxruntime imports DeepSpeed
    import onnxruntime

    # feature-extraction of a model with a head exports its encoder (base_model is the model itself otherwise)
    target = model.base_model if task == "feature-extraction" else model
    accepted = inspect.signature(target.forward).parameters
    input_names = _input_names(model.config, accepted, sample_inputs)
    wrapper = _Wrapper(target, TASKS[task][2], input_names, "use_cache" in accepted).eval()
    device = next(model.parameters()).device
    inputs = (_check_sample_inputs(sample_inputs, input_names, device) if sample_inputs is not None
              else _make_inputs(model.config, input_names, batch_size, seq_len, device))
    output_names = [TASKS[task][2]]
    _export(wrapper, inputs, path, task, output_names, opset)

    session = onnxruntime.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    diff = _parity(session, wrapper, inputs, output_names, atol, path)
    # a second shape proves the batch and sequence axes are dynamic, not baked in by the trace
    b, s = inputs["input_ids"].shape
    diff = max(diff, _parity(session, wrapper, _make_inputs(model.config, input_names, b + 1, s + 3, device),
                             output_names, atol, path))
    return ExportResult(path=str(path), task=task, max_abs_diff=diff, opset=opset,
                        inputs=tuple(i.name for i in session.get_inputs()),
                        outputs=tuple(o.name for o in session.get_outputs()),
                        providers=tuple(session.get_providers()))
