"""The ORT backend: a model's training forward/backward run by ONNX Runtime through ORTModule.

The model object stays the user's PyTorch model (so saving, configs, generate and Trainer's
signature checks are untouched); only its ``forward`` is replaced, on the instance, by a
dispatcher. In training mode with gradients on, the dispatcher calls ORTModule; otherwise
(evaluate, predict, generate) it runs the class's own PyTorch forward. Because the swap is
inside the model, DDP and DeepSpeed wrap it exactly as they wrap any model.
"""

from __future__ import annotations

import functools
import inspect
import logging
import os
import platform
import time
import traceback
import types
import warnings
import weakref
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

import torch

from .._imports import ort_version, package_version
from ..errors import OrtFallbackError, OrtnbWarning
from ..runs.records import FIRST_STEP, GRAPH_BUILD, ONNX_EXPORT
from . import ort_compat, ort_noise
from .attention import AttentionSwitch, restore_attention, use_eager_attention
from .custom_functions import guard_custom_autograd_functions
from .failures import diagnose
from .options import OrtOptions

__all__ = ["OrtEngine", "OrtOptions", "add_phase_listener", "attach", "detach", "engine_for", "is_attached"]

logger = logging.getLogger("ortnb")

# Called with a phase name as ORTModule begins it during a first forward: "ONNX export", "graph build",
# then "first step" once the session exists and the graph runs. The runner writes them as phase events.
_PHASE_LISTENERS: list[Callable[[str], None]] = []


def add_phase_listener(listener: Callable[[str], None]) -> Callable[[], None]:
    """Call ``listener(phase)`` whenever an ORT backend begins a phase of its first forward; returns a
    function that removes it."""
    _PHASE_LISTENERS.append(listener)
    return lambda: _PHASE_LISTENERS.remove(listener) if listener in _PHASE_LISTENERS else None


def _announce(phase: str) -> None:
    for listener in list(_PHASE_LISTENERS):
        try:
            listener(phase)
        except Exception:  # noqa: BLE001 - inside ORT's forward, an exception would read as an ORT failure
            logger.debug("ortnb: a phase listener failed on %r", phase, exc_info=True)


# model -> its OrtEngine. Kept outside the model's __dict__ so that copy.deepcopy(model) (ORT's own
# schema probe, EMA callbacks) copies a plain model instead of trying to pickle an ORT session.
_ENGINES: "weakref.WeakKeyDictionary[torch.nn.Module, OrtEngine]" = weakref.WeakKeyDictionary()


@dataclass
class EngineStats:
    ort_steps: int = 0
    pytorch_steps: int = 0
    fallback: str | None = None
    providers: list[str] = field(default_factory=list)
    first_forward_s: float | None = None  # the first training forward: export, graph build, session, run
    first_forward_phases_s: dict[str, float] = field(default_factory=dict)
    fallback_detail: str | None = None  # ORT's whole error and traceback, kept here instead of printed
    exports: int = 0  # ONNX exports of the training graph: one per run, whatever the batch lengths
    graph_builds: int = 0
    # From the first training forward to the second: export, graph build, backward, optimizer step and whatever
    # else the loop does once. Trainer times its first step itself; a hand-written loop has only this.
    first_step_s: float | None = None
    eval_mode_backwards: int = 0  # backward passes through a PyTorch forward because the model was in eval mode


class _ModuleWithLoss(torch.nn.Module):
    """Puts the loss inside the ORT graph: the graph's only output is the scalar loss."""

    def __init__(self, model: torch.nn.Module, loss_fn):
        super().__init__()
        self.model = model
        self.loss_fn = loss_fn

    def forward(self, **inputs):
        return self.loss_fn(self.model(**inputs), inputs)


class OrtEngine:
    """Owns one model's ORTModule and routes that model's training forward to it."""

    def __init__(self, model: torch.nn.Module, options: OrtOptions):
        self.model = model
        self.options = options
        self.stats = EngineStats()
        self.attention: AttentionSwitch | None = None
        self._inside = False
        self._first_forward_started: float | None = None
        # A KV cache is for generation; as a training output ORTModule cannot flatten it (T5, BART).
        self._no_cache = "use_cache" in inspect.signature(type(model).forward).parameters
        self._ort = self._build_ortmodule()

    # -- set-up -------------------------------------------------------------------------------

    def _build_ortmodule(self):
        ortmodule = ort_compat.load_ortmodule()
        guard_custom_autograd_functions()
        from onnxruntime.training.ortmodule import DebugOptions, LogLevel

        ortmodule.ONNX_OPSET_VERSION = self.options.opset  # read when the execution managers are created
        debug = DebugOptions(log_level=getattr(LogLevel, self.options.log_level), **self._dump_options())
        target = _ModuleWithLoss(self.model, self.options.loss_fn) if self.options.loss_fn else self.model
        ort_noise.quiet_ortmodule_logger()  # before ORTModule: it can fall back while it initialises
        ort_noise.ignore_deepspeed_hook_warning()
        with ort_noise.wrapping_the_model():
            ort = ortmodule.ORTModule(target, debug_options=debug)
        ort_noise.quiet_ortmodule_logger(ort._logger.name)
        if type(ort._torch_module).__name__ == "TorchModulePytorch":  # fell back at initialisation
            return self._finish_ortmodule(ort)
        manager = ort._torch_module._execution_manager
        for training in (True, False):
            runtime = manager(training)._runtime_options
            runtime.memory_optimization_level = self.options.memory_optimizer_level
        _watch_phases(manager(True).time_tracker, self.stats)
        return self._finish_ortmodule(ort)

    def _finish_ortmodule(self, ort):
        from onnxruntime.training.ortmodule._fallback import _FallbackPolicy

        if self.options.fallback == "error":
            ort._fallback_manager.policy = _FallbackPolicy.FALLBACK_DISABLE
        ort.train(True)
        return ort

    def _dump_options(self) -> dict:
        if not self.options.save_onnx_dir:
            return {}
        Path(self.options.save_onnx_dir).mkdir(parents=True, exist_ok=True)
        prefix = self.options.onnx_prefix or type(self.model).__name__
        return {"save_onnx": True, "onnx_prefix": prefix, "save_path": self.options.save_onnx_dir}

    # -- the dispatcher -----------------------------------------------------------------------

    def __call__(self, args: tuple, kwargs: dict):
        model = self.model
        if self._inside or not (model.training and torch.is_grad_enabled()):
            # Evaluation, generation, or ORTModule tracing the model: plain PyTorch.
            outputs = type(model).forward(model, *args, **kwargs)
            if not self._inside and torch.is_grad_enabled():
                _on_backward(outputs, self._backward_in_eval_mode)
            return outputs
        if self._no_cache:
            kwargs.setdefault("use_cache", False)
        self._time_first_step()
        self._inside = True
        started = time.perf_counter()
        try:
            outputs = self._ort(*args, **kwargs)
        except Exception as error:
            if self.options.fallback == "error" and self.stats.ort_steps == 0:
                raise self._explain_failure(error) from error
            raise
        finally:
            self._inside = False
        self._count_step(time.perf_counter() - started)
        if self.options.loss_fn:
            return {"loss": outputs}
        return outputs

    def _time_first_step(self) -> None:
        now = time.perf_counter()
        if self._first_forward_started is None:
            self._first_forward_started = now
        elif self.stats.first_step_s is None:
            self.stats.first_step_s = now - self._first_forward_started

    def _backward_in_eval_mode(self) -> None:
        """A gradient reached the output of a PyTorch forward: a training step ran without ONNX Runtime."""
        self.stats.eval_mode_backwards += 1
        self.stats.pytorch_steps += 1
        if self.stats.eval_mode_backwards == 1:
            warnings.warn(f"ortnb: a backward pass went through {type(self.model).__name__}'s PyTorch forward, because "
                          "the model is in eval mode: ONNX Runtime trains only in train mode. Call model.train() "
                          "before the training loop (from_pretrained returns a model in eval mode).", OrtnbWarning,
                          stacklevel=2)

    def _count_step(self, seconds: float) -> None:
        if self.stats.first_forward_s is None:  # the first training forward (eval-mode backwards are not one)
            self.stats.first_forward_s = seconds
            self.stats.fallback = self._fallback_reason()
            self.stats.fallback_detail = self._fallback_detail()
            self.stats.providers = self._providers()
            self.stats.first_forward_phases_s = self._initialisation_phases()
            if self.stats.fallback:
                # One line; ORT's own warning (its whole traceback) is silenced by _QuietFallback.
                logger.warning("ortnb: ONNX Runtime could not train %s (%s); PyTorch runs it instead "
                               "(ort_fallback='allow'). Full error: the engine report's fallback_detail.",
                               type(self.model).__name__, _first_line(self.stats.fallback))
        if self.stats.fallback:
            self.stats.pytorch_steps += 1
        else:
            self.stats.ort_steps += 1

    def _fallback_reason(self) -> str | None:
        exception = self._ort._fallback_manager._exception
        if exception is not None:
            return diagnose(exception).reason
        if type(self._ort._torch_module).__name__ == "TorchModulePytorch":
            return "ORTModule switched to PyTorch at initialisation"
        return None

    def _fallback_detail(self) -> str | None:
        exception = self._ort._fallback_manager._exception
        if exception is None:
            return None
        return "".join(traceback.format_exception(exception))

    def _providers(self) -> list[str]:
        if self.stats.fallback:
            return []
        _, providers, _ = self._ort._torch_module._execution_manager(True)._get_session_config()
        return list(providers)

    def _initialisation_phases(self) -> dict[str, float]:
        """Where ORTModule's first forward went (its own TimeTracker; seconds per phase)."""
        if self.stats.fallback:
            return {}
        try:
            from onnxruntime.training.ortmodule._logger import ORTModuleInitPhase

            tracker = self._ort._torch_module._execution_manager(True).time_tracker
            durations = {phase: tracker._get_duration(phase) for phase in ORTModuleInitPhase}
        except (AttributeError, ImportError):  # a different ORTModule layout: the total still stands
            return {}
        names = {ORTModuleInitPhase.EXPORT: "export", ORTModuleInitPhase.BUILD_GRAPH: "build_graph",
                 ORTModuleInitPhase.CREATE_SESSION: "create_session", ORTModuleInitPhase.EndToEnd: "initialisation"}
        return {name: round(durations[phase], 3) for phase, name in names.items() if durations[phase] >= 0}

    def _explain_failure(self, error: Exception) -> Exception:
        diagnosis = diagnose(error)
        advice = f"\n{diagnosis.advice}" if diagnosis.advice else ""
        return OrtFallbackError(f"ONNX Runtime could not train {type(self.model).__name__}: {diagnosis.reason}."
                                f"{advice}\n{self.options.way_out}")

    # -- what ran -----------------------------------------------------------------------------

    def report(self) -> dict:
        ran_ort = self.stats.ort_steps > 0
        return {
            "engine": "onnxruntime" if ran_ort else "pytorch",
            "fallback": self.stats.fallback,
            "fallback_detail": self.stats.fallback_detail,
            "ort_version": ort_version(),
            "providers": self.stats.providers,
            "graphs": self.graphs(),
            "ort_steps": self.stats.ort_steps,
            "pytorch_steps": self.stats.pytorch_steps,
            "first_forward_s": self.stats.first_forward_s,
            "first_forward_phases_s": self.stats.first_forward_phases_s,
            "exports": self.stats.exports,
            "graph_builds": self.stats.graph_builds,
            "compat_fixes": ort_compat.applied_fixes(),
            "onnx_opset": self.options.opset,
            "memory_optimizer_level": self.options.memory_optimizer_level,
            "attention": self.attention.note if self.attention else None,
            "eval_mode_backwards": self.stats.eval_mode_backwards,
        }

    def graphs(self) -> list[str]:
        folder = self.options.save_onnx_dir
        if not folder or not os.path.isdir(folder):
            return []
        return sorted(str(path) for path in Path(folder).glob("*.onnx"))


def _watch_phases(tracker, stats: "EngineStats") -> None:
    """Announce ORTModule's phases as they begin, from its own TimeTracker (which the training manager and
    its graph transition manager call around export, graph build and session creation), and count exports
    and graph builds: a re-export for a new input shape would be a silent slowdown."""
    from onnxruntime.training.ortmodule._logger import ORTModuleInitPhase

    begins = {ORTModuleInitPhase.EXPORT: ONNX_EXPORT, ORTModuleInitPhase.GRAPH_BUILDER_INIT: GRAPH_BUILD,
              ORTModuleInitPhase.BUILD_GRAPH: GRAPH_BUILD}
    start, end = tracker.start, tracker.end
    last = [None]

    def announce(name: str) -> None:
        if name != last[0]:  # graph builder init and graph build are one phase to the user
            last[0] = name
            _announce(name)

    def on_start(phase):
        if phase == ORTModuleInitPhase.EXPORT:
            stats.exports += 1
        elif phase == ORTModuleInitPhase.BUILD_GRAPH:
            stats.graph_builds += 1
        if phase in begins:
            announce(begins[phase])
        start(phase)

    def on_end(phase):
        end(phase)
        if phase == ORTModuleInitPhase.CREATE_SESSION:
            announce(FIRST_STEP)

    tracker.start, tracker.end = on_start, on_end


def run_facts() -> dict:
    """Where a model trained: ranks and versions, for both engine reports (ORTTrainer's and ort_model's)."""
    distributed = torch.distributed
    # Read from torch.distributed: TrainingArguments.world_size says 1 for DeepSpeed on CPU.
    world = distributed.get_world_size() if distributed.is_available() and distributed.is_initialized() else 1
    return {"world_size": world, "torch_version": torch.__version__,
            "transformers_version": package_version("transformers"), "python": platform.python_version()}


def _first_line(text: str, limit: int = 160) -> str:
    line = text.strip().splitlines()[0] if text.strip() else text
    return line if len(line) <= limit else line[:limit].rstrip() + " ..."


def _on_backward(outputs, callback: Callable[[], None]) -> None:
    """Call ``callback`` when a gradient flows back into ``outputs`` (the first tensor in it that has a graph)."""
    if torch.is_tensor(outputs):
        if outputs.requires_grad:
            outputs.register_hook(lambda grad: callback())
            return True
        return False
    values = outputs.values() if isinstance(outputs, dict) else outputs if isinstance(outputs, (list, tuple)) else ()
    return any(_on_backward(value, callback) for value in values)


def attach(model: torch.nn.Module, options: OrtOptions, engine: OrtEngine | None = None) -> OrtEngine:
    """Route ``model``'s training forward through ONNX Runtime; returns the engine doing it.

    Pass an existing ``engine`` (from an earlier ``attach`` of the same model) to reuse its
    exported graph and session. transformers models switch to eager attention until ``detach``.
    """
    attention = use_eager_attention(model)
    if engine is None or engine.model is not model:
        was_training = model.training
        engine = OrtEngine(model, options)
        model.train(was_training)  # ORTModule puts the model it wraps in train mode; the mode stays the user's
    engine.attention = attention
    _ENGINES[model] = engine
    model.__dict__["forward"] = _dispatching_forward(type(model).forward, model)
    return engine


def _dispatching_forward(class_forward, model):
    """A bound method (so accelerate can wrap it for autocast like any forward) that looks like the
    class's forward to ``inspect.signature`` (Trainer picks dataset columns from it)."""

    def forward(self, *args, **kwargs):
        engine = _ENGINES.get(self)
        if engine is None:  # a deep copy of an attached model: plain PyTorch
            return class_forward(self, *args, **kwargs)
        return engine(args, kwargs)

    functools.update_wrapper(forward, class_forward)
    return types.MethodType(forward, model)


def detach(model: torch.nn.Module) -> None:
    """Give the model back its own PyTorch forward (and attention)."""
    model.__dict__.pop("forward", None)
    engine = _ENGINES.pop(model, None)
    if engine is not None:
        restore_attention(model, engine.attention)


def is_attached(model: torch.nn.Module) -> bool:
    return model in _ENGINES


def engine_of(model: torch.nn.Module) -> OrtEngine | None:
    """The engine routing ``model`` (or the model a DDP/DeepSpeed wrapper holds) through ORT; None if none."""
    for candidate in (model, getattr(model, "module", None)):
        if candidate is not None and candidate in _ENGINES:
            return _ENGINES[candidate]
    return None


def engine_for(model: torch.nn.Module) -> OrtEngine | None:
    return _ENGINES.get(model)
