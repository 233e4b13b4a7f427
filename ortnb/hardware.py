"""What this machine can run: one table for validate(), the widgets' disabled states and the README."""

from __future__ import annotations

import functools
import inspect
import os
import shutil
from dataclasses import dataclass

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


# The instruction sets that decide matmul speed; two CPUs with one model name can differ in them
# (cloud VMs report "AMD EPYC" for Zen 3 and Zen 4 hosts alike).
MATMUL_ISA = ("avx2", "avx512f", "avx512_vnni", "avx512_bf16", "amx_bf16")


@dataclass(frozen=True)
class CpuInfo:
    name: str
    family: str | None = None
    model: str | None = None
    isa: tuple[str, ...] = ()

    @property
    def signature(self) -> str:
        """``AMD EPYC (family 25 model 17; avx2 avx512f avx512_bf16)``: what tells two hosts apart."""
        generation = f"family {self.family} model {self.model}" if self.family and self.model else None
        details = "; ".join(part for part in (generation, " ".join(self.isa)) if part)
        return f"{self.name} ({details})" if details else self.name


def parse_cpuinfo(text: str, fallback: str = "unknown CPU") -> CpuInfo:
    """The first processor of a /proc/cpuinfo text."""
    fields: dict[str, str] = {}
    for line in text.splitlines():
        if not line.strip():
            if fields:
                break  # one processor is enough: the others are the same
            continue
        key, _, value = line.partition(":")
        fields.setdefault(key.strip(), value.strip())
    flags = set(fields.get("flags", "").split())
    return CpuInfo(name=fields.get("model name") or fallback, family=fields.get("cpu family"),
                   model=fields.get("model"), isa=tuple(flag for flag in MATMUL_ISA if flag in flags))


@functools.cache
def cpu_info() -> CpuInfo:
    import platform

    fallback = platform.processor() or platform.machine()
    try:
        with open("/proc/cpuinfo") as handle:
            return parse_cpuinfo(handle.read(), fallback)
    except OSError:
        return CpuInfo(name=fallback)


def _cpu_has_bf16() -> bool:
    return any(flag in cpu_info().isa for flag in ("avx512_bf16", "amx_bf16"))
