"""One rank of a run: an ORTTrainer run plus RunCallback. Started by the supervisor, directly or by torchrun.

    python -m ortnb.runner.worker RUN_DIR
"""

from __future__ import annotations

import errno
import json
import os
import sys
import traceback
from pathlib import Path

from ..config import RunConfig
from . import layout, liveness, status_file
from .stream import MetricsWriter

DEEPSPEED_CONFIG = {"train_micro_batch_size_per_gpu": "auto", "gradient_accumulation_steps": "auto",
                    "gradient_clipping": "auto", "zero_allow_untested_optimizer": True}


def training_arguments(cfg: RunConfig, run_dir: Path, world: int = 1, length_grouping: bool = False):
    from ..training import ORTTrainingArguments

    deepspeed = {**DEEPSPEED_CONFIG, "zero_optimization": {"stage": cfg.zero_stage}} if cfg.zero_stage else None
    return ORTTrainingArguments(
        output_dir=str(run_dir), backend=cfg.backend, optim=cfg.optim, max_steps=cfg.max_steps,
        per_device_train_batch_size=cfg.batch_size, per_device_eval_batch_size=cfg.batch_size,
        learning_rate=cfg.learning_rate, seed=cfg.seed, bf16=cfg.precision == "bf16", fp16=cfg.precision == "fp16",
        use_cpu=_no_cuda() and not cfg.zero_stage,  # use_cpu=True would switch DeepSpeed off
        deepspeed=deepspeed, logging_steps=1, save_strategy="no", report_to=[], disable_tqdm=True,
        logging_nan_inf_filter=False,  # the NaN guard must see a NaN loss, not a smoothed stand-in
        ddp_backend="gloo" if _no_cuda() and world > 1 else None, dataloader_num_workers=0,
        train_sampling_strategy="group_by_length" if length_grouping else "random",  # Trainer's own sampler
        # See tests/workers/record_rank_losses.py: per-rank loss scaling of transformers 5.24.
        average_tokens_across_devices=False)


def _no_cuda() -> bool:
    import torch

    return not torch.cuda.is_available()


def run(run_dir: Path, rank: int, world: int, writer=None, fault: str | None = None) -> str:
    """Train; returns "completed" or "stopped". Raises on failure. ``writer`` is None on the ranks that
    do not write this folder's metrics."""
    import torch

    from .. import assets, data, flops
    from ..backends import ortmodule
    from ..training import ORTTrainer
    from .callback import RunCallback

    cfg = RunConfig.from_json(run_dir / layout.CONFIG)
    torch.set_num_threads(cfg.threads or max(1, (os.cpu_count() or 1) // world))
    phase = _phase_announcer(writer)
    if writer:  # ORTModule's export and graph build, announced as ORT begins them during the first forward
        ortmodule.add_phase_listener(phase)
    task = cfg.task or assets.MODELS.get(cfg.model, assets.Asset("", "", "sequence-classification")).task
    from transformers import set_seed

    set_seed(cfg.seed)  # new heads (the classifier) start from the same weights in every run being compared
    phase("loading model")
    labels = data.labels_for(cfg.dataset, task)  # the data's classes size and name the head (None: causal LM)
    model, tokenizer = assets.load_model(cfg.model, task, labels=labels)
    phase("tokenizing")
    padding, grouping = data.padding_plan(cfg.padding, cfg.length_grouping, task)
    train, evaluation = data.build(cfg.dataset, task, tokenizer, cfg.seq_len, cfg.eval_samples, cfg.seed,
                                   train_samples=cfg.max_steps * cfg.batch_size * world, labels=labels,
                                   padding=padding)
    peak = json.loads((run_dir / layout.PEAK).read_text())["flops"] if (run_dir / layout.PEAK).exists() else None
    callback = RunCallback(run_dir, writer, samples_per_step=cfg.batch_size * world,
                           token_flops=flops.TokenFlops(model), peak_flops=peak)
    trainer = ORTTrainer(model=model, args=training_arguments(cfg, run_dir, world, grouping), train_dataset=train,
                         eval_dataset=evaluation, processing_class=tokenizer, callbacks=[callback],
                         data_collator=None if padding == "blocks" else data.collator(tokenizer, padding))
    callback.trainer = trainer
    _never_recreate_the_folder(trainer, run_dir)
    if fault:
        from .faults import FaultCallback

        trainer.add_callback(FaultCallback(fault))
    if writer:
        writer.event("started", label=cfg.label, world_size=world, rank=rank, node_rank=_node_rank(),
                     task=task, train_samples=len(train), max_steps=cfg.max_steps, padding=padding,
                     length_grouping=grouping,
                     parameters=sum(p.numel() for p in model.parameters()))
    phase("first step")
    trainer.train()
    outcome = "stopped" if callback.stopped else "completed"
    if evaluation is not None and outcome == "completed":
        results = trainer.evaluate()
        if writer:
            writer.event("eval", **results)
    if not callback.stopped:  # a stopped run was checkpointed by Trainer (RunCallback asked for a save)
        trainer.save_model(str(run_dir / layout.MODEL))
    if writer:
        writer.event("engine", **trainer.engine_report())
        final = {"forced": False} if outcome == "stopped" else {}
        # The same on every rank when gradients were synchronised: lets nodes be compared (item 23).
        writer.event(outcome, step=trainer.state.global_step, **final,
                     parameter_checksum=parameter_checksum(trainer.model))
    return outcome


def parameter_checksum(model) -> float:
    """Sum of all parameters in float64: equal on every rank of a data-parallel run."""
    import torch

    with torch.no_grad():
        return float(sum(p.detach().double().sum() for p in model.parameters()))


def _phase_announcer(writer):
    """phase(name) writes a phase event on the writing rank; a write that fails (a full disk) must not
    stop the training it describes: the step records will fail loudly enough."""
    def phase(name: str) -> None:
        if writer is None:
            return
        try:
            writer.event("phase", phase=name)
        except OSError:
            pass
    return phase


def _never_recreate_the_folder(trainer, run_dir: Path) -> None:
    """Trainer writes the engine report with os.makedirs when train() ends, even after a failure; if the
    user deleted the run folder, that would bring it back holding only engine_report.json."""
    write = trainer.write_engine_report

    def write_if_the_folder_exists():
        return write() if (run_dir / layout.CONFIG).exists() else None

    trainer.write_engine_report = write_if_the_folder_exists


def _node_rank() -> int:
    return int(os.environ.get("GROUP_RANK", os.environ.get("NODE_RANK", "0")))


def open_writer(run_dir: Path, local_rank: int, fault: str | None):
    """Local rank 0 writes its folder's metrics: on one machine that is rank 0; across nodes each node's
    ``ortnb run`` follows its own run folder. Other ranks write nothing."""
    if local_rank != 0:
        return None
    if fault:
        from .faults import metrics_writer

        return metrics_writer(run_dir / layout.METRICS, fault)
    return MetricsWriter(run_dir / layout.METRICS)


def report_failure(run_dir: Path, rank: int, writer, error: BaseException) -> None:
    """Put the error where the notebook looks: the stream's failed event, else status.json; always the rank's
    error file. Never writes into a deleted run folder."""
    tail = traceback.format_exc()[-4000:]
    if not (run_dir / layout.CONFIG).exists():
        print(f"ortnb worker rank {rank}: {error}", file=sys.stderr, flush=True)
        return
    try:
        layout.error_file(run_dir, rank).write_text(tail)
    except OSError:
        pass
    if writer is None:
        return
    message = describe_error(error, run_dir)
    try:
        writer.event("failed", rank=rank, error=message, traceback=tail)
    except OSError as write_error:
        status_file.write(run_dir, status="failed", rank=rank, traceback=tail,
                          error=f"{message} (metrics.jsonl could not take this error either: {write_error.strerror})")


def describe_error(error: BaseException, run_dir: Path) -> str:
    if isinstance(error, OSError) and error.errno == errno.ENOSPC:
        return (f"The disk holding {run_dir} is full ({error}). Free space (earlier runs in "
                f"{run_dir.parent}, checkpoints) and launch the run again.")
    return f"{type(error).__name__}: {error}"


def main(argv: list[str] | None = None) -> int:
    run_dir = Path((argv or sys.argv[1:])[0]).resolve()
    rank = int(os.environ.get("RANK", "0"))
    world = int(os.environ.get("WORLD_SIZE", "1"))
    fault = os.environ.get("ORTNB_FAULT")
    writer = None
    try:
        writer = open_writer(run_dir, int(os.environ.get("LOCAL_RANK", "0")), fault)
        if writer is not None:
            liveness.record_process(run_dir, "writer", os.getpid())
            liveness.start_heartbeat(run_dir)
        run(run_dir, rank, world, writer, fault)
        leave_process_group()
        return 0
    except BaseException as error:  # noqa: BLE001 - every failure must reach the notebook, even KeyboardInterrupt
        report_failure(run_dir, rank, writer, error)
        return 1


def leave_process_group() -> None:
    """End the ranks' process group together, after every rank has finished (rank 0 may still be saving).
    A rank that exited with its gloo group still open was seen to abort in teardown ("terminate called without
    an active exception", SIGABRT) after a completed run, and torchrun then failed the whole run."""
    import torch.distributed as dist

    if dist.is_available() and dist.is_initialized():
        dist.barrier()
        dist.destroy_process_group()


if __name__ == "__main__":
    sys.exit(main())
