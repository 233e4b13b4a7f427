"""RunCallback: per-step measurements, the stop request, the NaN guard and the run-folder guard, inside an
ORTTrainer run."""

from __future__ import annotations

import math
import os
import time
from pathlib import Path

import torch
from transformers import TrainerCallback

from .. import contention
from ..runs import records
from ..memory import peak_rss_mb
from ..runs import layout
from ..runs.recorder import deleted_error, folder_gone


def optimizer_state_bytes(optimizer) -> int:
    """Bytes of optimizer state this rank holds (unwraps accelerate's and DeepSpeed's wrappers)."""
    inner = optimizer
    while hasattr(inner, "optimizer") and inner.optimizer is not inner:
        inner = inner.optimizer
    state = getattr(inner, "state", {})
    return sum(t.numel() * t.element_size() for entry in state.values() for t in entry.values() if torch.is_tensor(t))




def _gather(values: list[float]) -> list[list[float]]:
    """Every rank's values (one collective per step; ranks always call it at the same point)."""
    tensor = torch.tensor(values, dtype=torch.float64)
    distributed = torch.distributed
    if not (distributed.is_available() and distributed.is_initialized()) or distributed.get_world_size() == 1:
        return [values]
    gathered = [torch.zeros_like(tensor) for _ in range(distributed.get_world_size())]
    distributed.all_gather(gathered, tensor)
    return [t.tolist() for t in gathered]


class RunCallback(TrainerCallback):
    def __init__(self, run_dir: Path, writer, *, samples_per_step: int, token_flops, peak_flops: float | None,
                 supervisor=None):
        self.run_dir = Path(run_dir)
        self.supervisor = supervisor  # orphan.SupervisorWatch: its death stops the run like a stop request
        self.writer = writer  # None on ranks other than 0
        self.samples_per_step = samples_per_step
        self.token_flops = token_flops  # flops.TokenFlops: model FLOPs of the tokens a step computed
        self.peak_flops = peak_flops
        self.trainer = None
        self.stopped = False
        self.stop_reason: str | None = None  # why the run stopped when nobody asked (its supervisor died)
        self._last = None
        self._pending: dict = {}
        self.max_mfu = 0.0  # above 1: the peak was measured too low (the worker measures it again)

    def on_train_begin(self, args, state, control, **kwargs):
        self._last = time.perf_counter()
        self._busy, self._own = contention.busy_seconds(), contention.own_seconds()

    def on_step_end(self, args, state, control, optimizer=None, **kwargs):
        now = time.perf_counter()
        step_time, self._last = now - self._last, now
        gpu = torch.cuda.max_memory_allocated() / 2**20 if torch.cuda.is_available() else 0.0
        stop_requested = float((self.run_dir / layout.STOP).exists())
        orphaned = float(self.supervisor is not None and self.supervisor.gone.is_set())
        gone = float(folder_gone(self.run_dir, self.writer is not None))
        padded, real, longest = self.trainer.batch_tokens.take() if self.trainer is not None else (0, 0, 0)
        own = contention.own_seconds()
        own_delta, self._own = own - self._own, own
        ranks = _gather([peak_rss_mb(), optimizer_state_bytes(optimizer) / 2**20, gpu, stop_requested, gone,
                         padded, real, self.token_flops(padded, longest), longest, own_delta, orphaned])
        if any(r[4] for r in ranks):  # every rank sees it and stops: carrying on would recreate the folder
            raise deleted_error(self.run_dir, state.global_step)
        padded, real, flops = (sum(r[index] for r in ranks) for index in (5, 6, 7))
        self._pending = dict(  # records.step once on_log brings the loss
            step=state.global_step, wall_time=time.time(), step_time=step_time, samples=self.samples_per_step,
            # padded tokens are the work the engine did; real tokens the text it trained on
            padded_tokens=padded, real_tokens=real, seq_len=int(max(r[8] for r in ranks)),
            peak_rss_mb=[r[0] for r in ranks], optimizer_state_mb=[r[1] for r in ranks],
            gpu_memory_mb=[r[2] for r in ranks] if torch.cuda.is_available() else None,
            mfu=flops / step_time / self.peak_flops if self.peak_flops else None,
            other_cpu=self._other_cpu(sum(r[9] for r in ranks), step_time),
        )
        if self._pending["mfu"] is not None and state.global_step > 1:  # the first step holds the graph build
            self.max_mfu = max(self.max_mfu, self._pending["mfu"])
        if state.global_step == 1 and self.writer and self.trainer is not None:
            self.writer.event("engine", **self.trainer.engine_report())
        if any(r[10] for r in ranks) and not any(r[3] for r in ranks):
            self.stop_reason = getattr(self.supervisor, "reason", None) or "the supervisor of the ranks ended"
        if any(r[3] or r[10] for r in ranks):  # all ranks see the same gathered flags, so they stop together
            self.stopped = True
            control.should_training_stop = True
            control.should_save = True

    def on_save(self, args, state, control, **kwargs):
        """Trainer calls this once a checkpoint's save returned on this rank. When every rank's part is written
        (ZeRO-1's optimizer shards, each rank's RNG state: hence the barrier), the rank that saved marks the
        folder whole; layout.checkpoints counts only marked folders, so a save cut short is never resumed."""
        distributed = torch.distributed
        if distributed.is_available() and distributed.is_initialized() and distributed.get_world_size() > 1:
            distributed.barrier()
        if args.should_save:
            layout.mark_whole(Path(args.output_dir) / f"checkpoint-{state.global_step}")

    def on_evaluate(self, args, state, control, **kwargs):
        # A stop asked for during an evaluation ends the run here, with its checkpoint, not after one more step:
        # on a busy machine a step plus an evaluation outlasted stop()'s grace, so every such stop was forced.
        # Every rank evaluates, so every rank reaches this collective.
        if any(r[0] for r in _gather([float((self.run_dir / layout.STOP).exists())])):
            self.stopped = True
            control.should_training_stop = True
            control.should_save = True
        # Evaluation (and saving the best weights) happened between two steps: not training time.
        self._last = time.perf_counter()
        self._busy, self._own = contention.busy_seconds(), contention.own_seconds()

    def _other_cpu(self, own_delta: float, step_time: float) -> float | None:
        """Share of the cores other work took during this step (every rank's CPU time left out)."""
        busy = contention.busy_seconds()
        delta = busy - self._busy if busy is not None and self._busy is not None else None
        self._busy = busy
        return contention.other_share(delta, own_delta, step_time, os.cpu_count() or 1)

    def on_log(self, args, state, control, logs=None, **kwargs):
        if not logs or "loss" not in logs or not self._pending:
            return
        loss = float(logs["loss"])
        record = records.step(**self._pending, loss=loss, learning_rate=logs.get("learning_rate"),
                              grad_norm=logs.get("grad_norm"))
        self._pending = {}
        if self.writer:
            self.writer.write(record)
        if not math.isfinite(loss):
            raise FloatingPointError(f"The loss became {loss} at step {state.global_step}. Training stopped: lower "
                                     "learning_rate, or use precision='no' if mixed precision is on.")
