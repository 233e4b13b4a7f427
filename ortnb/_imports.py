"""What is installed and what this machine can do, in one place.

Nothing here imports onnxruntime, deepspeed, plotly or ipywidgets: availability is read
from package metadata, so ``import ortnb`` stays fast and free of side effects.
"""

from __future__ import annotations

import functools
import importlib.metadata
import importlib.util
import subprocess
import sys

from .errors import MissingDependencyError

# Both wheels install the top-level package `onnxruntime`; the CPU one is what our CI uses.
ORT_TRAINING_DISTRIBUTIONS = ("onnxruntime-training", "onnxruntime-training-cpu")
ORT_INSTALL_HINT = (
    "pip install 'ortnb[ort]' (CPU: onnxruntime-training-cpu==1.19.2) or, with CUDA 11.8/12, "
    "pip install onnxruntime-training==1.19.2; never install plain `onnxruntime` beside it"
)


def _version(distribution: str) -> str | None:
    try:
        return importlib.metadata.version(distribution)
    except importlib.metadata.PackageNotFoundError:
        return None


def package_version(distribution: str) -> str | None:
    """The installed version of a distribution (``transformers``, ``diffusers``), or None."""
    return _version(distribution)


def ort_training_distribution() -> str | None:
    """The installed ONNX Runtime *training* wheel's name, or None."""
    for name in ORT_TRAINING_DISTRIBUTIONS:
        if _version(name) is not None:
            return name
    return None


def ort_version() -> str | None:
    name = ort_training_distribution()
    return _version(name) if name else None


def is_ort_training_available() -> bool:
    return ort_training_distribution() is not None and importlib.util.find_spec("onnxruntime") is not None


def is_deepspeed_available() -> bool:
    return importlib.util.find_spec("deepspeed") is not None


def deepspeed_import(timeout: float = 120) -> dict:
    """{"version", "error"}: DeepSpeed's installed version (None when it is not installed) and why ``import
    deepspeed`` fails (None when it imports). Imported in a child process: an install can be present and still
    fail to import (a CUDA mismatch, a missing compiler), importing it takes seconds, and it logs to the console."""
    if not is_deepspeed_available():
        return {"version": None, "error": None}
    version = _version("deepspeed") or "unknown version"
    try:
        done = subprocess.run([sys.executable, "-c", "import deepspeed"], capture_output=True, text=True,
                              timeout=timeout)
    except subprocess.TimeoutExpired:
        return {"version": version, "error": f"import deepspeed took over {timeout:.0f} s"}
    if done.returncode == 0:
        return {"version": version, "error": None}
    last = [line for line in done.stderr.splitlines() if line.strip()]
    return {"version": version, "error": last[-1].strip()[:300] if last else f"exit status {done.returncode}"}


def require_ort_training(feature: str) -> None:
    """Raise a MissingDependencyError naming what to install when ORT training is absent."""
    if not is_ort_training_available():
        plain = _version("onnxruntime")
        extra = f" (found plain onnxruntime {plain}, which has no training support)" if plain else ""
        raise MissingDependencyError(f"{feature} needs ONNX Runtime training, which is not installed{extra}. "
                                     f"Install it with: {ORT_INSTALL_HINT}.")


@functools.cache
def choose_deepspeed_cpu_quietly() -> None:
    """Make DeepSpeed's own choice explicit on a machine with no GPU: onnxruntime-training imports DeepSpeed, which
    then printed "[WARNING] ... Setting accelerator to CPU. If you have GPU or other accelerator, we were unable to
    detect it." on stdout of every command and cell that touched ORT (it read as a line printed twice). A user's
    DS_ACCELERATOR is kept; with CUDA, XPU or MPS present DeepSpeed detects as before."""
    import os

    import torch

    if "DS_ACCELERATOR" in os.environ or torch.cuda.is_available():
        return
    others = (getattr(torch, "xpu", None), getattr(torch.backends, "mps", None))
    if any(device is not None and device.is_available() for device in others):
        return
    os.environ["DS_ACCELERATOR"] = "cpu"


def cuda_available() -> bool:
    import torch

    return torch.cuda.is_available()


def ort_has_cuda() -> bool:
    """True for the CUDA build of onnxruntime-training (the CPU wheel has only the CPU provider)."""
    return ort_training_distribution() == "onnxruntime-training"
