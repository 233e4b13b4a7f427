"""ONNX Runtime training for a hand-written loop: ``ort_model(model)``, the role ORTModule played alone.

diffusers, vision and speech projects train with their own loop (often with accelerate), not Trainer.
``ort_model`` gives such a loop the engine ORTTrainer uses (``backends/ortmodule.py``: the compatibility
fixes, the fallback policy, the phase listeners, the counters) and ``engine_report`` the same report.
The model stays the user's object, so the change to an existing loop is one line, and accelerate, DDP,
the optimizer and ``save_pretrained`` see a plain PyTorch model::

    model = ortnb.ort_model(model)          # before the optimizer, accelerator.prepare or DDP
    ...the loop, unchanged (model.train() first)...
    ortnb.engine_report(model)              # which engine really ran
"""

from __future__ import annotations

import os

import torch

from . import _imports
from .backends import ortmodule
from .backends.options import ORT_MODEL_WAY_OUT, OrtOptions, option_problems
from .errors import ConfigError

HALF_DTYPES = (torch.bfloat16, torch.float16)


def ort_model(model: torch.nn.Module, *, fallback: str = "error", memory_optimizer_level: int = 0,
              save_onnx_dir: str | os.PathLike | None = None, onnx_prefix: str | None = None,
              log_level: str = "WARNING", opset: int = 17) -> torch.nn.Module:
    """Train ``model`` through ONNX Runtime in your own loop; returns the same object.

    In train mode with gradients on, its forward runs in ONNX Runtime (exported on the first call); in eval
    mode or under ``torch.no_grad()`` it runs in PyTorch, as with ORTTrainer. transformers models switch to
    eager attention (ORT cannot differentiate SDPA as they call it).

    - ``fallback``: ``"error"`` raises if ORT cannot train the model, naming the operator at fault;
      ``"allow"`` runs PyTorch instead and records why in ``ortnb.engine_report(model)``.
    - ``memory_optimizer_level``: 0 off, 1 recompute whole layers, 2 also compromised subgraphs.
    - ``save_onnx_dir``, ``onnx_prefix``: dump ORTModule's graphs there (see notebook 06).
    - ``log_level``: ORTModule's log level; ``opset``: ONNX opset of the export (14 to 17).

    Call it before ``torch.nn.parallel.DistributedDataParallel`` or ``accelerator.prepare``; a model
    already wrapped by DDP is accepted too (the module inside is converted and the wrapper returned).
    Calling it again with the same options is a no-op; with other options it is an error.
    """
    _imports.require_ort_training("ortnb.ort_model")
    if not isinstance(model, torch.nn.Module):
        raise TypeError(f"ort_model needs a torch.nn.Module, got {type(model).__name__}.")
    options = OrtOptions(fallback=fallback, log_level=log_level, memory_optimizer_level=memory_optimizer_level,
                         save_onnx_dir=os.fspath(save_onnx_dir) if isinstance(save_onnx_dir, os.PathLike)
                         else save_onnx_dir, onnx_prefix=onnx_prefix, opset=opset, way_out=ORT_MODEL_WAY_OUT)
    target = _inner_model(model)
    problems = _wrapper_problems(model) + _model_problems(target) + _option_problems(options)
    if problems:
        raise ConfigError(problems)
    engine = ortmodule.engine_for(target)
    if engine is not None:
        if engine.options.same_engine_as(options):
            return model  # documented no-op: the model already trains through ORT with these options
        raise ConfigError(f"{type(target).__name__} already trains through ONNX Runtime with other options "
                          f"({_differences(engine.options, options)}); its graph was built with them. Call ort_model "
                          "once per model, or ortnb.custom_loop.release(model) first to start again.")
    if not _imports.cuda_available():
        os.environ.setdefault("DS_ACCELERATOR", "cpu")  # ORTModule imports DeepSpeed, which probes for a GPU
    ortmodule.attach(target, options)
    return model


def engine_report(model: torch.nn.Module) -> dict:
    """What ran the training steps of a model given to ``ort_model`` (also through a DDP wrapper): ``engine``
    (``onnxruntime`` or ``pytorch``), ``fallback`` (why ORT was not used), step counts per engine, ORT's
    exports and graph builds, the first forward's time and phases, ``time_to_first_step_s`` (first training
    forward to the second: export, graph build, backward, optimizer step), the compatibility fixes applied."""
    target = _inner_model(model)
    engine = ortmodule.engine_for(target)
    if engine is None:
        raise ValueError(f"{type(target).__name__} was not given to ortnb.ort_model, so no ONNX Runtime engine "
                         "trains it. Call model = ortnb.ort_model(model) before training; for ORTTrainer use "
                         "trainer.engine_report().")
    report = {"backend": "ort", "model": type(target).__name__, **engine.report(),
              "time_to_first_step_s": engine.stats.first_step_s, **ortmodule.run_facts()}
    if engine.stats.ort_steps == 0 and engine.stats.pytorch_steps == 0:
        report.update(engine=None, fallback="not trained yet")
    return report


def release(model: torch.nn.Module) -> torch.nn.Module:
    """Give a model from ``ort_model`` back its PyTorch forward (and attention); returns it."""
    ortmodule.detach(_inner_model(model))
    return model


# -- checks, all made before anything is exported ------------------------------------------------


def _inner_model(model: torch.nn.Module) -> torch.nn.Module:
    """DDP calls its module's forward on each step, so converting the module inside works after wrapping."""
    if isinstance(model, torch.nn.parallel.DistributedDataParallel):
        return model.module
    return model


def _wrapper_problems(model: torch.nn.Module) -> list[str]:
    name = type(model).__name__
    if isinstance(model, torch.nn.DataParallel):
        return ["The model is wrapped by torch.nn.DataParallel, whose per-device replicas are copies that would "
                "train in PyTorch. Pass the plain model to ort_model and use DistributedDataParallel."]
    if name == "OptimizedModule":  # torch.compile's wrapper
        return ["The model is compiled by torch.compile; ONNX Runtime compiles the model's graph itself. Pass the "
                "model before torch.compile, and do not compile it."]
    if name == "DeepSpeedEngine":
        return ["The model is already a DeepSpeedEngine. Call ort_model(model) before deepspeed.initialize(model=...) "
                "(ZeRO stages 1 and 2)."]
    if name in ("FullyShardedDataParallel", "FSDPModule") or any(c.__name__ == "FSDPModule" for c in type(model).__mro__):
        return ["The model is sharded by FSDP, whose sharded parameters ORTModule cannot trace. Use ort_model with "
                "DistributedDataParallel, or train FSDP in PyTorch."]
    if name == "ORTModule":
        return ["The model is already an ORTModule. Pass the plain PyTorch model to ort_model, which wraps it and "
                "reports the engine that ran."]
    return []


def _model_problems(model: torch.nn.Module) -> list[str]:
    problems = []
    half = sorted({str(p.dtype).removeprefix("torch.") for p in model.parameters() if p.dtype in HALF_DTYPES})
    on_cuda = _imports.cuda_available() and _imports.ort_has_cuda()
    if half and not on_cuda:
        problems.append(f"The model has {'/'.join(half)} parameters: ONNX Runtime's CPU execution provider has no "
                        f"{half[0]} MatMul kernel. Use model.float() (fp32), or train on a GPU with "
                        "onnxruntime-training.")
    # transformers and diffusers both mark each checkpointed block with a gradient_checkpointing flag.
    if any(getattr(module, "gradient_checkpointing", False) is True for module in model.modules()):
        problems.append("The model has gradient (activation) checkpointing on, which ORTModule cannot trace. Turn it "
                        "off (transformers: model.activation_checkpointing_disable(); diffusers: "
                        "model.disable_gradient_checkpointing()) and pass memory_optimizer_level=1, ORT's own "
                        "layer-wise recompute, instead.")
    return problems


def _option_problems(options: OrtOptions) -> list[str]:
    problems = option_problems(options.fallback, options.log_level, options.memory_optimizer_level, options.opset)
    if options.save_onnx_dir is not None and not isinstance(options.save_onnx_dir, str):
        problems.append(f"save_onnx_dir={options.save_onnx_dir!r} is not a folder path. Pass a str or os.PathLike.")
    if options.onnx_prefix is not None and not isinstance(options.onnx_prefix, str):
        problems.append(f"onnx_prefix={options.onnx_prefix!r} is not a str.")
    return problems


def _differences(old: OrtOptions, new: OrtOptions) -> str:
    names = ("fallback", "log_level", "memory_optimizer_level", "opset", "save_onnx_dir", "onnx_prefix")
    return ", ".join(f"{name}={getattr(old, name)!r}, now {getattr(new, name)!r}" for name in names
                     if getattr(old, name) != getattr(new, name))
