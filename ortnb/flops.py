"""Model FLOPs per training step and this machine's measured peak, for MFU.

FLOPs per trained token = 6 * N + 12 * L * d * T (PaLM, appendix B): N non-embedding parameters
(forward 2N, backward 4N), plus the attention score and value products of L layers of width d
over T tokens of context. Embedding lookups are not matmuls and are left out. MFU is the model
FLOPs actually achieved per second over the peak of this machine for the dtype, which is
measured once with a large matmul on all cores and cached (``~/.cache/ortnb/peak.json``).
"""

from __future__ import annotations

import json
import os
import time

from . import files
from .cache_folder import cache_root

MATMUL_SIZE = 2048  # the largest size tried; smaller when one product already takes long enough
MIN_SECONDS = 0.05  # per product: long enough to time, short enough on a CPU that emulates bf16


def non_embedding_parameters(model) -> int:
    import torch

    embedding = sum(p.numel() for m in model.modules() if isinstance(m, torch.nn.Embedding) for p in m.parameters())
    return sum(p.numel() for p in model.parameters()) - embedding


def flops_per_token(model, seq_len: int) -> float:
    config = model.config
    layers = getattr(config, "num_hidden_layers", None) or getattr(config, "n_layer", 0)
    width = getattr(config, "hidden_size", None) or getattr(config, "n_embd", 0)
    return 6.0 * non_embedding_parameters(model) + 12.0 * layers * width * seq_len


class TokenFlops:
    """Model FLOPs of ``tokens`` trained tokens in rows of ``context`` tokens: what a step with batches of
    varying length computed (padding included: the engine computes padded positions too)."""

    def __init__(self, model):
        config = model.config
        layers = getattr(config, "num_hidden_layers", None) or getattr(config, "n_layer", 0)
        width = getattr(config, "hidden_size", None) or getattr(config, "n_embd", 0)
        self.dense = 6.0 * non_embedding_parameters(model)
        self.attention = 12.0 * layers * width

    def __call__(self, tokens: int, context: int) -> float:
        return tokens * (self.dense + self.attention * context)


def flops_per_step(model, batch_size: int, seq_len: int, num_processes: int = 1) -> float:
    """Model FLOPs of one optimizer step over all processes."""
    return flops_per_token(model, seq_len) * batch_size * seq_len * num_processes


def _machine_key(dtype: str, threads: int) -> str:
    import torch

    from .hardware import cpu_info

    # The full signature, not the bare name: a VM named "AMD EPYC" may land on a host of another generation.
    device = torch.cuda.get_device_name() if torch.cuda.is_available() else cpu_info().signature
    return f"{device}|torch {torch.__version__}|{dtype}|{threads} threads"


def measure_peak(dtype: str = "fp32", threads: int | None = None, repeats: int = 5) -> float:
    """FLOP/s of a square matmul: the fastest of ``repeats`` products after one warm-up (a peak is a
    maximum, and on a shared machine other jobs only ever slow a product down). The size doubles from 256
    until one product takes MIN_SECONDS (or reaches 2048): seconds on any CPU, even one without bf16 units."""
    import torch

    threads = threads or os.cpu_count() or 1
    previous = torch.get_num_threads()
    torch.set_num_threads(threads)
    kind = {"fp32": torch.float32, "bf16": torch.bfloat16, "fp16": torch.float16}[dtype]
    device = "cuda" if torch.cuda.is_available() else "cpu"
    def timed(a, b) -> float:
        started = time.perf_counter()
        torch.mm(a, b)
        if device == "cuda":
            torch.cuda.synchronize()
        return time.perf_counter() - started

    best = 0.0
    try:
        size = 256
        while True:  # every size up to the one that takes long enough: the best of them is the peak
            a = torch.randn(size, size, device=device).to(kind)
            b = torch.randn(size, size, device=device).to(kind)
            timed(a, b)  # warm-up
            long_enough = timed(a, b) >= MIN_SECONDS
            if size >= 512 or long_enough:
                best = max(best, 2.0 * size ** 3 / min(timed(a, b) for _ in range(repeats)))
            if size >= MATMUL_SIZE or long_enough:
                break
            size *= 2
    finally:
        torch.set_num_threads(previous)
    return best


def _read_cache(path) -> dict:
    """peak.json, or {} when it is missing or damaged (a damaged file is rebuilt, never a failure of every run)."""
    try:
        cache = json.loads(path.read_text())
    except FileNotFoundError:
        return {}
    except (OSError, ValueError):
        import sys

        print(f"ortnb: {path} was damaged; measuring the peak again", file=sys.stderr)
        return {}
    return cache if isinstance(cache, dict) else {}


def _write_cache(path, cache: dict) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    files.write_atomic(path, json.dumps(cache, indent=2))


def machine_peak(dtype: str = "fp32", threads: int | None = None) -> float:
    """Cached peak FLOP/s for this machine, dtype and thread count (measured on first use)."""
    threads = threads or os.cpu_count() or 1
    path = cache_root() / "peak.json"
    key = _machine_key(dtype, threads)
    cache = _read_cache(path)
    if not isinstance(cache.get(key), (int, float)):
        cache[key] = measure_peak(dtype, threads)
        _write_cache(path, cache)
    return cache[key]


def raise_peak(dtype: str, achieved: float, threads: int | None = None) -> tuple[float, float]:
    """A run reached ``achieved`` FLOP/s, above the cached peak: that peak was measured too low (another job
    ran, or the sizes missed the fast path). Measure again, more carefully, and keep the higher of the new
    measurement and what the run reached; returns (old peak, new peak)."""
    threads = threads or os.cpu_count() or 1
    path = cache_root() / "peak.json"
    key = _machine_key(dtype, threads)
    old = machine_peak(dtype, threads)
    new = max(old, achieved, measure_peak(dtype, threads, repeats=10))
    cache = _read_cache(path)
    cache[key] = new
    _write_cache(path, cache)
    return old, new
