"""One rank of a run: an ORTTrainer run plus RunCallback. Started by the supervisor, directly or by torchrun.

    python -m ortnb.runner.worker RUN_DIR
"""

from __future__ import annotations

import json
import os
import sys
import traceback
from pathlib import Path

from ..config import RunConfig
from . import layout
from .stream import MetricsWriter

DEEPSPEED_CONFIG = {"train_micro_batch_size_per_gpu": "auto", "gradient_accumulation_steps": "auto",
                    "gradient_clipping": "auto", "zero_allow_untested_optimizer": True}


def training_arguments(cfg: RunConfig, run_dir: Path, world: int = 1):
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
        # See tests/workers/record_rank_losses.py: per-rank loss scaling of transformers 5.24.
        average_tokens_across_devices=False)


def _no_cuda() -> bool:
    import torch

    return not torch.cuda.is_available()


def run(run_dir: Path, rank: int, world: int, fault: str | None = None) -> str:
    """Train; returns "completed" or "stopped". Raises on failure."""
    import torch

    from .. import assets, data, flops
    from ..training import ORTTrainer
    from .callback import RunCallback

    cfg = RunConfig.from_json(run_dir / layout.CONFIG)
    torch.set_num_threads(cfg.threads or max(1, (os.cpu_count() or 1) // world))
    writer = MetricsWriter(run_dir / layout.METRICS) if rank == 0 else None
    task = cfg.task or assets.MODELS.get(cfg.model, assets.Asset("", "", "sequence-classification")).task
    from transformers import set_seed

    set_seed(cfg.seed)  # new heads (the classifier) start from the same weights in every run being compared
    model, tokenizer = assets.load_model(cfg.model, task)
    train, evaluation = data.build(cfg.dataset, task, tokenizer, cfg.seq_len, cfg.eval_samples, cfg.seed,
                                   train_samples=cfg.max_steps * cfg.batch_size * world)
    peak = json.loads((run_dir / layout.PEAK).read_text())["flops"] if (run_dir / layout.PEAK).exists() else None
    callback = RunCallback(run_dir, writer, samples_per_step=cfg.batch_size * world, seq_len=cfg.seq_len,
                           flops_per_step=flops.flops_per_step(model, cfg.batch_size, cfg.seq_len, world),
                           peak_flops=peak)
    trainer = ORTTrainer(model=model, args=training_arguments(cfg, run_dir, world), train_dataset=train,
                         eval_dataset=evaluation, processing_class=tokenizer, callbacks=[callback])
    callback.trainer = trainer
    if fault:
        from .faults import FaultCallback

        trainer.add_callback(FaultCallback(fault))
    if writer:
        writer.event("started", label=cfg.label, world_size=world, task=task, train_samples=len(train),
                     parameters=sum(p.numel() for p in model.parameters()))
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
        writer.event(outcome, step=trainer.state.global_step)
    return outcome


def main(argv: list[str] | None = None) -> int:
    run_dir = Path((argv or sys.argv[1:])[0])
    rank = int(os.environ.get("RANK", "0"))
    world = int(os.environ.get("WORLD_SIZE", "1"))
    try:
        run(run_dir, rank, world, fault=os.environ.get("ORTNB_FAULT"))
        return 0
    except BaseException as error:  # noqa: BLE001 - every failure must reach the notebook, even KeyboardInterrupt
        tail = traceback.format_exc()[-4000:]
        layout.error_file(run_dir, rank).write_text(tail)
        if rank == 0:
            MetricsWriter(run_dir / layout.METRICS).event("failed", rank=rank, error=f"{type(error).__name__}: "
                                                                                     f"{error}", traceback=tail)
        return 1


if __name__ == "__main__":
    sys.exit(main())
