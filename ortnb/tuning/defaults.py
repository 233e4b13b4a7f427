"""The engine and precision the Dashboard starts from on this machine, and why, in one sentence.

ortnb's library default stays ORT in fp32 (the two-edit migration from Optimum means exactly that). A person
opening the Dashboard asks something else: what trains fastest here. Two sources answer it, in this order:

1. a conclusive search of this machine for the same model and data (tune's cache): its winner's engine and
   precision;
2. otherwise a rule from what the machine has, each branch backed by a measurement in benchmarks/README.md or
   saying that it is not verified here.

ORT stays one toggle away, and every comparison shows both engines whatever the form started from.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from ..vocabulary import Backend, Precision


@dataclass(frozen=True)
class EngineChoice:
    backend: str
    precision: str
    why: str  # the sentence the form and the card show

    @property
    def label(self) -> str:
        return engine_label(self.backend, self.precision)

    def kept_by(self, config) -> bool:
        """Whether ``config`` trains with this engine and precision (an edge run's config has neither)."""
        return (getattr(config, "backend", None), getattr(config, "precision", None)) == (self.backend, self.precision)


def engine_label(backend: str, precision: str) -> str:
    """'ORT fp32', 'eager bf16': an engine and precision as the form's notes name them."""
    return f"{'ORT' if backend == Backend.ORT else backend} {'fp32' if precision == Precision.NO else precision}"


def by_rule(cuda: bool, bf16_cpu_native: bool, ort_cuda: bool, gpu_bf16: bool = False) -> EngineChoice:
    """What this kind of machine trains fastest, as far as ortnb has measured (pure)."""
    if cuda and ort_cuda:
        return EngineChoice(Backend.ORT, Precision.FP16, "ORT fp16: the setting Optimum published its GPU speed-ups "
                                                         "with (not verified here: ortnb's tests run on CPUs)")
    if cuda:
        precision = Precision.BF16 if gpu_bf16 else Precision.FP16
        return EngineChoice(Backend.EAGER, precision, f"eager {precision}: this ONNX Runtime has no CUDA provider, "
                                                      "so ORT could not use the GPU")
    if bf16_cpu_native:
        return EngineChoice(Backend.EAGER, Precision.BF16, "eager bf16: this CPU has bf16 units and ONNX Runtime's "
                                                           "CPU provider has no bf16 MatMul")
    return EngineChoice(Backend.EAGER, Precision.NO, "eager fp32: with per-batch padding eager PyTorch took 444 ms a "
                                                     "step and ORT 492 ms on a CPU (benchmarks/README.md, 'Where a "
                                                     "step goes')")


def from_search(entry: dict) -> EngineChoice | None:
    """The winner of a conclusive search entry (tune's cache format), or None when the entry cannot say."""
    best = entry.get("best_config")
    if not entry.get("conclusive") or not isinstance(best, dict):
        return None
    backend, precision = best.get("backend"), best.get("precision")
    if backend not in set(Backend) or precision not in set(Precision):
        return None
    measured = sum(1 for c in entry.get("candidates") or [] if c.get("runs"))
    day = str(entry.get("created") or "")[:10]
    when = f" of {day}" if day else ""
    return EngineChoice(backend, precision, f"{engine_label(backend, precision)}: the fastest in this machine's search"
                                            f"{when} for this model and data ({measured} configurations measured)")


def matches(key: dict, machine: dict, model: object, dataset: object) -> bool:
    """Whether a cache entry's key is for this machine (CPU, GPU, torch, ONNX Runtime) and this model and data."""
    return (all(key.get(name) == value for name, value in machine.items())
            and key.get("model") == model and key.get("dataset") == dataset)


def searched(folder: Path, machine: dict, model: object, dataset: object) -> EngineChoice | None:
    """The newest conclusive search answer in ``folder`` for this machine, model and data; None when there is none."""
    entries = sorted(Path(folder).glob("*.json"), key=lambda p: p.stat().st_mtime, reverse=True) \
        if Path(folder).is_dir() else []
    for path in entries:
        try:
            entry = json.loads(path.read_text())
        except (OSError, ValueError):
            continue
        if isinstance(entry, dict) and isinstance(entry.get("key"), dict) and \
                matches(entry["key"], machine, model, dataset):
            choice = from_search(entry)
            if choice is not None:
                return choice
    return None


def choose(model: str, dataset) -> EngineChoice:
    """This machine's choice for ``model`` on ``dataset``: a cached search answer, else the rule."""
    import torch

    from ..config import RunConfig
    from ..hardware import capabilities
    from . import cache

    found = searched(cache.directory(None), cache.machine(), cache.identify(model),
                     cache.data_identity(RunConfig(model=model, dataset=dataset)))
    if found is not None:
        return found
    caps = capabilities()
    return by_rule(caps.cuda, caps.bf16_cpu_native, caps.ort_cuda, bool(caps.cuda and torch.cuda.is_bf16_supported()))


def choice_text(choice: EngineChoice) -> str:
    """The sentence under the form's Engine row and on the card of a run that kept the choice (pure)."""
    other = "eager PyTorch" if choice.backend == Backend.ORT else "ORT"
    return f"Chosen for this machine: {choice.why}. {other} is one toggle away (Engine)."
