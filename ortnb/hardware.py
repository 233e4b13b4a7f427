"""What this machine can run: one table for validate(), the widgets' disabled states and the README."""

from __future__ import annotations

import functools
import inspect
import os
import shutil
from dataclasses import asdict, dataclass

from . import _imports


@dataclass(frozen=True)
class Capabilities:
    cuda: bool
    """A CUDA GPU that torch can use."""
    cpu_cores: int
    """Cores this process may use."""
    bf16_cpu_native: bool
    """The CPU has bf16 instructions (avx512_bf16 or AMX); without them bf16 on the CPU is emulated and slow."""
    ort_training: str | None
    """The installed ONNX Runtime training wheel (onnxruntime-training-cpu or onnxruntime-training), if any."""
    ort_version: str | None
    ort_cuda: bool
    """ONNX Runtime training has the CUDA execution provider (the CUDA wheel) and a GPU is present."""
    ort_extension_built: bool
    """ORTModule's C++ extension is built for this torch (otherwise it builds on first ORT use)."""
    deepspeed: bool
    fused_adamw: bool
    """torch.optim.AdamW accepts fused=True on this device."""
    torch_compile: bool
    """torch.compile can build kernels here (needs a C++ compiler on the CPU)."""
    gguf: bool
    """The gguf package is installed (needed to load the built-in SmolLM2 weights)."""

    def as_dict(self) -> dict:
        return asdict(self)


@functools.cache
def capabilities() -> Capabilities:
    """Measured once per process; cheap (no model, no ORT import)."""
    import torch

    from .backends.ort_extensions import built_extension

    cuda = torch.cuda.is_available()
    ort = _imports.ort_training_distribution()
    return Capabilities(
        cuda=cuda,
        cpu_cores=len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1),
        bf16_cpu_native=_cpu_has_bf16(),
        ort_training=ort,
        ort_version=_imports.ort_version(),
        ort_cuda=bool(ort == "onnxruntime-training" and cuda),
        ort_extension_built=bool(ort and built_extension() is not None),
        deepspeed=_imports.is_deepspeed_available(),
        fused_adamw="fused" in inspect.signature(torch.optim.AdamW).parameters,
        torch_compile=cuda or shutil.which(os.environ.get("CXX", "g++")) is not None,
        gguf=_module_available("gguf"),
    )


def _module_available(name: str) -> bool:
    import importlib.util

    return importlib.util.find_spec(name) is not None


def cpu_name() -> str:
    """The CPU's model name (for reports and the peak-FLOPs cache key)."""
    import platform

    try:
        with open("/proc/cpuinfo") as handle:
            found = next((line.split(":", 1)[1].strip() for line in handle if line.startswith("model name")), None)
    except OSError:
        found = None
    return found or platform.processor() or platform.machine()


def _cpu_has_bf16() -> bool:
    try:
        with open("/proc/cpuinfo") as handle:
            flags = next((line for line in handle if line.startswith("flags")), "")
    except OSError:
        return False
    return any(flag in flags.split() for flag in ("avx512_bf16", "amx_bf16"))
