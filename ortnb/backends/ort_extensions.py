"""Build and load the C++ extension ORTModule needs, without `python -m torch_ort.configure`.

ORTModule (onnxruntime-training 1.19.2) ships the sources of two CPU extensions:
``aten_op_executor`` (runs ATen ops that ONNX lacks; compiles against current torch) and
``torch_interop_utils`` (custom autograd.Function support; no longer compiles against torch
>= 2.x's autograd internals). ortnb builds the first into a per-version cache directory,
outside site-packages (which may be read-only), and ``ort_compat`` loads it from there.
"""

from __future__ import annotations

import contextlib
import fcntl
import importlib.util
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from .._imports import ort_version, require_ort_training
from ..cache_folder import cache_root  # noqa: F401 - the cache folder's owner; read here too, as before

EXTENSION = "aten_op_executor"


def extension_dir() -> Path:
    """One directory per (torch, onnxruntime, python) triple: a build for one never loads in another."""
    import torch

    tag = f"torch-{torch.__version__}-ort-{ort_version()}-py{sys.version_info[0]}{sys.version_info[1]}"
    return cache_root() / "ort-extensions" / tag


def built_extension() -> Path | None:
    """Path of the built ``aten_op_executor`` shared object, or None if not built yet."""
    found = sorted(extension_dir().glob(f"{EXTENSION}*.so"))
    return found[0] if found else None


def _extension_sources() -> Path:
    spec = importlib.util.find_spec("onnxruntime")  # locates the package without importing it
    package = Path(spec.origin).parent
    return package / "training" / "ortmodule" / "torch_cpp_extensions" / "cpu" / EXTENSION / "setup.py"


@contextlib.contextmanager
def _build_lock(directory: Path):
    """Several ranks may start at once; only one compiles, the others wait and reuse its build."""
    directory.mkdir(parents=True, exist_ok=True)
    with open(directory / ".lock", "w") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def build_extension(force: bool = False, log=print) -> Path:
    """Compile ``aten_op_executor`` against the running torch (about 1-2 minutes on 2 cores)."""
    require_ort_training("Building ORTModule's C++ extension")
    target = extension_dir()
    with _build_lock(target):
        existing = built_extension()
        if existing and not force:
            return existing
        setup_py = _extension_sources()
        log(f"ortnb: building ONNX Runtime's {EXTENSION} extension for torch into {target} "
            "(once per torch/onnxruntime version; about 1-2 minutes)...")
        started = time.monotonic()
        with tempfile.TemporaryDirectory(prefix="ortnb-build-") as scratch:
            command = [sys.executable, str(setup_py), "build_ext", "--build-lib", str(target),
                       "--build-temp", os.path.join(scratch, "tmp")]
            done = subprocess.run(command, cwd=scratch, capture_output=True, text=True)
        (target / "build.log").write_text(done.stdout + done.stderr)
        if done.returncode != 0:
            tail = (done.stdout + done.stderr)[-2000:]
            raise RuntimeError(f"Building {EXTENSION} failed (exit {done.returncode}); full log in "
                               f"{target / 'build.log'}. It needs a C++ compiler and the Python headers "
                               f"(Debian: apt install g++ python3-dev). Last output:\n{tail}")
        log(f"ortnb: built {EXTENSION} in {time.monotonic() - started:.0f} s.")
        return built_extension()


def ensure_extension(log=print) -> Path:
    """The built extension, building it first (with a visible message) if it is missing."""
    return built_extension() or build_extension(log=log)
