"""One rank of a run: an ORTTrainer run plus RunCallback. Started by the supervisor, directly or by torchrun.

    python -m ortnb.runner.worker RUN_DIR
"""

from __future__ import annotations

import math
import os
import sys
from pathlib import Path

from .. import evaluation, files
from ..config import DEFAULT_STEPS, RunConfig
from ..vocabulary import Task
from ..data.columns import Columns
from ..errors import ConfigError
from ..runs import layout, records
from . import machine_peak, orphan
from .evaluation import ClassificationMetrics, EvalCallback, evaluate_cheaply
from ..runs.recorder import Recorder
from ..runs.stream_write import MetricsWriter

DEEPSPEED_CONFIG = {"train_micro_batch_size_per_gpu": "auto", "gradient_accumulation_steps": "auto",
                    "gradient_clipping": "auto", "zero_allow_untested_optimizer": True}


def training_arguments(cfg: RunConfig, run_dir: Path, world: int = 1, length_grouping: bool = False,
                       max_steps: int | None = None, eval_every: int | None = None,
                       eval_batch_size: int | None = None):
    """Trainer's arguments for a run; ``eval_every`` None: no evaluation while training. No evaluation before
    the first step when the run has a target (untrained weights reach none: it would only cost time)."""
    from ..training import ORTTrainingArguments

    deepspeed = {**DEEPSPEED_CONFIG, "zero_optimization": {"stage": cfg.zero_stage}} if cfg.zero_stage else None
    evaluation = ({"eval_strategy": "steps", "eval_steps": eval_every, "eval_on_start": cfg.target is None}
                  if eval_every else {"eval_strategy": "no"})
    report_to = [cfg.report_to] if isinstance(cfg.report_to, str) else list(cfg.report_to or [])
    return ORTTrainingArguments(
        output_dir=str(run_dir), backend=cfg.backend, optim=cfg.optim, max_steps=max_steps or cfg.max_steps or
        DEFAULT_STEPS, **evaluation,
        per_device_train_batch_size=cfg.batch_size, per_device_eval_batch_size=eval_batch_size or cfg.batch_size,
        learning_rate=cfg.learning_rate, seed=cfg.seed, bf16=cfg.precision == "bf16", fp16=cfg.precision == "fp16",
        use_cpu=_no_cuda() and not cfg.zero_stage,  # use_cpu=True would switch DeepSpeed off
        deepspeed=deepspeed, logging_steps=1, save_strategy="no", report_to=report_to, disable_tqdm=True,
        logging_nan_inf_filter=False,  # the NaN guard must see a NaN loss, not a smoothed stand-in
        ddp_backend="gloo" if _no_cuda() and world > 1 else None, dataloader_num_workers=0,
        train_sampling_strategy="group_by_length" if length_grouping else "random",  # Trainer's own sampler
        # See tests/workers/record_rank_losses.py: per-rank loss scaling of transformers 5.24.
        average_tokens_across_devices=False)


def _no_cuda() -> bool:
    import torch

    return not torch.cuda.is_available()


def run(run_dir: Path, rank: int, world: int, writer=None, fault: str | None = None, supervisor=None) -> str:
    """Train; returns "completed" or "stopped". Raises on failure. ``writer`` is None on the ranks that
    do not write this folder's metrics; ``supervisor`` (an orphan.SupervisorWatch) stops the run if it dies."""
    import torch

    from .. import _imports
    from ..backends import ortmodule

    _imports.choose_deepspeed_cpu_quietly()  # before anything imports DeepSpeed (ZeRO, onnxruntime-training)
    cfg = RunConfig.from_json(run_dir / layout.CONFIG)
    torch.set_num_threads(cfg.threads or max(1, (os.cpu_count() or 1) // world))
    phase = _phase_announcer(writer)
    # ORTModule's export and graph build, announced as ORT begins them during the first forward; removed at
    # the end, as a warm worker (warm.py) trains the next run in this process
    forget_listener = ortmodule.add_phase_listener(phase) if writer else (lambda: None)
    try:
        return _train(cfg, run_dir, rank, world, writer, fault, supervisor, phase)
    finally:
        forget_listener()


def _train(cfg: RunConfig, run_dir: Path, rank: int, world: int, writer, fault, supervisor, phase) -> str:
    from .. import data, flops
    from ..data.builtin import Asset
    from ..models.builtin import MODELS
    from ..training import ORTTrainer
    from .callback import RunCallback

    task = cfg.task or MODELS.get(cfg.model, Asset("", "", Task.SEQUENCE_CLASSIFICATION)).task
    phase(records.LOADING_MODEL)
    model, tokenizer, labels = _model_as_configured(cfg, task, writer)
    phase(records.TOKENIZING)
    prepared, padding, grouping = _tokenize(cfg, task, tokenizer, labels, world, writer)
    train, held_out = prepared.train, prepared.evaluation
    max_steps = planned_steps(cfg, len(train), world)
    interval = evaluation.eval_interval(max_steps, cfg.eval_every) if held_out is not None else None
    peak = layout.run_peak(run_dir)  # None: no MFU
    callback = RunCallback(run_dir, writer, samples_per_step=cfg.batch_size * world,
                           token_flops=flops.TokenFlops(model), peak_flops=peak, supervisor=supervisor)
    evaluator, scores, held_out = _evaluator(cfg, run_dir, writer, task, labels, prepared, interval, max_steps)
    screen = evaluator.screen if evaluator is not None else None
    # the evaluator saves the best weights before RunCallback restarts the step clock
    callbacks = ([callback] if evaluator is None else [evaluator, callback]) + _schedule(cfg, task, max_steps, writer,
                                                                                        screen)
    eval_batch = evaluation.eval_batch_size(cfg.batch_size, cfg.eval_batch_size, task)
    # a screened run is asked to evaluate at every screen; the screen decides when the whole split runs
    asked_every = evaluation.screen_interval(interval) if screen is not None else interval
    trainer = ORTTrainer(model=model, args=training_arguments(cfg, run_dir, world, grouping, max_steps, asked_every,
                                                              eval_batch),
                         train_dataset=train, eval_dataset=held_out, processing_class=tokenizer, callbacks=callbacks,
                         data_collator=None if padding == "blocks" else data.collator(tokenizer, padding),
                         compute_metrics=scores)
    for watcher in callbacks:
        watcher.trainer = trainer
    if evaluator is not None:
        evaluate_cheaply(trainer, world, bf16=cfg.precision == "bf16")
    if screen is not None:
        screen.install(trainer)
    _never_recreate_the_folder(trainer, run_dir)
    if fault:
        from .faults import FaultCallback

        trainer.add_callback(FaultCallback(fault))
    profiled = _profile_if_asked(trainer, cfg, run_dir, writer is not None)
    if writer:
        writer.event("started", label=cfg.label, world_size=world, rank=rank, node_rank=_node_rank(),
                     task=task, train_samples=len(train), max_steps=max_steps, epochs=cfg.epochs, padding=padding,
                     length_grouping=grouping, eval_samples=len(held_out) if held_out is not None else 0,
                     eval_every=interval, metric=(cfg.metric or evaluation.default_metric(task)) if interval else None,
                     eval_batch_size=eval_batch if interval else None,
                     eval_screen=len(screen.rows) if screen is not None else 0,
                     screen_every=asked_every if screen is not None else None,
                     labels=list(labels.names) if labels and labels.names else None,
                     parameters=sum(p.numel() for p in model.parameters()),
                     trained_parameters=sum(p.numel() for p in model.parameters() if p.requires_grad))
    # An ORT run's first forward announces its own phases (ONNX export, graph build, then first step); saying
    # "first step" here too would read "first step -> ONNX export -> graph build -> first step".
    phase(records.STARTING_TRAINING if cfg.backend == "ort" else records.FIRST_STEP)
    _fit(trainer, profiled)
    return _finish(trainer, cfg, run_dir, writer, callback, evaluator, peak)


def _model_as_configured(cfg: RunConfig, task: str, writer):
    """(model, tokenizer, labels): the model loaded from the run's seed, its embeddings frozen and its dropout set
    as the config says (before Trainer builds the optimizer: it takes only what requires a gradient)."""
    from transformers import set_seed

    set_seed(cfg.seed)  # new heads (the classifier) start from the same weights in every run being compared
    model, tokenizer, labels = _load_model(cfg, task, writer)
    if cfg.freeze_embeddings:
        freeze_word_embeddings(model)
    if cfg.dropout is not None:
        set_dropout(model, float(cfg.dropout))
    return model, tokenizer, labels


def _schedule(cfg: RunConfig, task: str, max_steps: int, writer=None, screen=None) -> list:
    """The callback that gives a wsd run its rate (training/schedule.py); none for Trainer's linear decay."""
    if cfg.lr_schedule != "wsd":
        return []
    from ..training.schedule import WsdSchedule, decay_near_target

    metric = str(cfg.metric or evaluation.default_metric(task))
    return [decay_near_target(WsdSchedule(max_steps), metric, cfg.target, rising=metric not in ("loss", "perplexity"),
                              writer=writer, screen=screen)]


def _tokenize(cfg: RunConfig, task: str, tokenizer, labels, world: int, writer):
    """(prepared data, padding, length grouping): the dataset tokenized or read from the token cache, which
    the writing rank records."""
    from .. import data
    from ..data import token_cache

    padding, grouping = data.padding_plan(cfg.padding, cfg.length_grouping, task)
    looked_up = token_cache.prepare(cfg.dataset, task, tokenizer, cfg.seq_len, plan=data.EvalPlan.of(cfg),
                                    seed=cfg.seed, labels=labels, padding=padding, columns=Columns.of(cfg),
                                    train_samples=cfg.max_steps * cfg.batch_size * world if cfg.max_steps else None)
    if writer:
        writer.event("data", **looked_up.record())
    return looked_up.prepared, padding, grouping


def _evaluator(cfg: RunConfig, run_dir: Path, writer, task: str, labels, prepared, interval, max_steps: int):
    """(EvalCallback, ClassificationMetrics or None, the held-out rows in the order they are evaluated) when the
    run holds rows out to evaluate; else (None, None, None). A classifier's rows are evaluated longest first
    (evaluation.length_order: batches pad little); its metrics put the predictions back in row order. A run with a
    target screens a subset between full evaluations (runner/screen.py; the callback's ``screen``)."""
    held_out = prepared.evaluation
    if held_out is None:
        return None, None, None
    scores = None
    if task != Task.CAUSAL_LM:  # a causal LM's held-out blocks all have seq_len tokens: nothing to sort
        order = evaluation.length_order([len(ids) for ids in held_out["input_ids"]])
        held_out = held_out.select(order)
        scores = ClassificationMetrics(list(labels.names) if labels and labels.names else None,
                                       prepared.eval_texts, order=order)
    metric = cfg.metric or evaluation.default_metric(task)
    evaluator = EvalCallback(run_dir, writer, metric=metric, patience=cfg.early_stopping_patience, interval=interval,
                             samples=len(held_out), metrics=scores, target=cfg.target,
                             screen=_screen(cfg, held_out, labels, scores, interval, max_steps, metric))
    return evaluator, scores, held_out


def _screen(cfg: RunConfig, held_out, labels, scores, interval: int, max_steps: int, metric: str):
    """The run's Screen, or None (no target, eval_screen=0, or a split too small to be worth one). Its rows keep
    the split's longest-first order (a sorted selection of sorted rows)."""
    from .screen import Screen

    size = evaluation.screen_size(len(held_out), cfg.eval_screen, cfg.target)
    if not size:
        return None
    rows = held_out.select(evaluation.screen_rows(len(held_out), size, cfg.seed))
    screen_scores = ClassificationMetrics(scores.names, None) if scores is not None else None
    return Screen(rows, interval=interval, max_steps=max_steps, metric=metric, target=cfg.target,
                  scores=screen_scores)


def freeze_word_embeddings(model) -> None:
    """The input word embeddings left untrained (cfg.freeze_embeddings): no gradient, no optimizer state, no
    AdamW update and no all-reduce for them. A causal LM whose output head is tied to them keeps that fixed too."""
    model.get_input_embeddings().weight.requires_grad_(False)


def set_dropout(model, probability: float) -> int:
    """Every dropout of ``model`` at ``probability`` (cfg.dropout): its Dropout layers (BERT's attention reads its
    layer's p too), the float attributes attention code reads instead (Llama's ``attention_dropout``) and the
    config's fields, so that a saved or exported model says what it trained with. Returns how many were set."""
    import torch

    changed = 0
    for module in model.modules():
        if isinstance(module, torch.nn.Dropout):
            module.p, changed = probability, changed + 1
        for name in ("attention_dropout", "dropout_prob"):
            if isinstance(getattr(module, name, None), float):
                setattr(module, name, probability)
                changed += 1
    config = model.config
    for name, value in list(vars(config).items()):
        if isinstance(value, float) and ("dropout" in name or name.endswith("_pdrop")):
            setattr(config, name, probability)
    return changed


def _fit(trainer, profiled: bool) -> None:
    try:
        trainer.train()
    finally:
        if profiled:
            from ..profiling.collect import disable_ort_profiling

            disable_ort_profiling()  # a warm worker's next run is not profiled unless it asks


def _finish(trainer, cfg: RunConfig, run_dir: Path, writer, callback, evaluator, peak) -> str:
    """After train(): a raised measured peak recorded, the final weights checked and saved (unless stopped: a
    stopped run was checkpointed), the engine report and the outcome written; returns the outcome."""
    from .. import flops

    outcome = records.STOPPED if callback.stopped else records.COMPLETED
    if writer and peak and callback.max_mfu > 1.0:
        dtype = (files.read_json_object(run_dir / layout.PEAK) or {}).get("dtype", "fp32")
        old, new = flops.raise_peak(dtype, callback.max_mfu * peak)
        writer.event("peak", dtype=dtype, old=old, new=new, reason="a step reached more than the measured peak")
    if not callback.stopped:  # a stopped run was checkpointed by Trainer (RunCallback asked for a save)
        refuse_broken_weights(trainer.model, trainer.state.global_step, run_dir)
        save_final_model(trainer, run_dir)
    if writer:
        writer.event("engine", **trainer.engine_report())
        # The same on every rank when gradients were synchronised: lets nodes be compared (item 23).
        writer.event(outcome, step=trainer.state.global_step, **_final_fields(cfg, outcome, callback, evaluator),
                     parameter_checksum=parameter_checksum(trainer.model))
    return outcome


def _final_fields(cfg: RunConfig, outcome: str, callback, evaluator) -> dict:
    """The outcome event's why: forced, the stop reason, early stopping, the target and when it was reached."""
    final = {"forced": False} if outcome == records.STOPPED else {}
    if callback.stop_reason:
        final["reason"] = callback.stop_reason
    if evaluator is not None and evaluator.early_stopped:
        final["early_stopped"] = True
    if evaluator is not None and cfg.target is not None:
        final["target"], final["reached_target"] = cfg.target, evaluator.reached is not None
        if evaluator.reached:
            final["target_step"], final["target_wall_time"] = evaluator.reached["step"], evaluator.reached["wall_time"]
    return final


def _profile_if_asked(trainer, cfg: RunConfig, run_dir: Path, writes: bool) -> bool:
    """A profile request in the folder (ortnb.profile) adds the profiler's window; True if it did."""
    from ..profiling import collect

    request = collect.requested(run_dir)
    if not request:
        return False
    if cfg.backend == "ort":
        collect.enable_ort_profiling(run_dir)  # before the first forward creates ORT's session
        # ORTModule's graphs, for what its passes fused (profiling/fusions.py); read when train() attaches ORT
        if writes:  # one rank's copy is enough, and two would write the same files
            trainer.args.save_onnx, trainer.args.onnx_prefix = True, "model"
    trainer.add_callback(collect.ProfileCallback(run_dir, int(request["warmup"]), int(request["steps"]), writes,
                                                 ort=cfg.backend == "ort"))
    return True


def planned_steps(cfg: RunConfig, train_rows: int, world: int) -> int:
    """Optimizer steps of a run: max_steps; else epochs over the rows (each rank reads ceil(rows / ranks) of
    them per epoch, as Trainer's sampler does); else DEFAULT_STEPS."""
    if cfg.max_steps:
        return int(cfg.max_steps)
    if cfg.epochs:
        per_epoch = math.ceil(math.ceil(train_rows / world) / cfg.batch_size)
        return max(1, math.ceil(cfg.epochs * per_epoch))
    return DEFAULT_STEPS


def _load_model(cfg: RunConfig, task: str, writer):
    """(model, tokenizer, labels): the head sized for the data's classes (a new one when a saved head does not
    fit them, said in the run log and the stream), the tokenizer checked as validate() checks it."""
    from .. import data
    from ..models import checks as model_checks
    from ..models.builtin import MODELS, load_model

    # the data's classes size and name the head (None: causal LM), read from the columns the config names
    labels = data.labels_for(cfg.dataset, task, Columns.of(cfg))
    builtin = cfg.model in MODELS
    plan = model_checks.head_plan(None if builtin else model_checks.saved_config(cfg.model), labels)
    model, tokenizer = load_model(cfg.model, task, labels=plan.labels, new_head=plan.new_head)
    found = model_checks.TokenizerLook() if builtin else model_checks.tokenizer_problems(
        tokenizer, Path(cfg.model).name, task, model.get_input_embeddings().num_embeddings)
    if found.problems:
        raise ConfigError([f"model: {p}" for p in found.problems])
    for note in [plan.note, *found.notes]:
        if note and writer:
            print(f"ortnb: {note}", flush=True)  # run.log
            writer.event("note", text=note)
    return model, tokenizer, plan.labels


def save_final_model(trainer, run_dir: Path) -> None:
    """model/ saved as checkpoints are: written to model.tmp/ (every rank calls save_model: DeepSpeed gathers
    through it), marked whole by the rank that saved, then renamed into place. A kill or a full disk mid-save
    leaves model.tmp/, which no reader opens, never a model/ with a cut model.safetensors."""
    staging = run_dir / (layout.MODEL + layout.STAGING)
    trainer.save_model(str(staging))
    if trainer.args.should_save:
        layout.mark_whole(staging)
        layout.put_in_place(staging, run_dir / layout.MODEL)


def non_finite_parameters(model) -> list[str]:
    """Names of the parameters holding a NaN or an infinity."""
    import torch

    with torch.no_grad():
        return [name for name, p in model.named_parameters() if not bool(torch.isfinite(p).all())]


def refuse_broken_weights(model, step: int, run_dir: Path) -> None:
    """A run whose weights turned NaN at its last step (no later loss shows it) fails instead of completing with
    NaN in model/: FloatingPointError naming the tensors and what the folder still holds to load."""
    broken = non_finite_parameters(model)
    if not broken:
        return
    total = sum(1 for _ in model.parameters())
    shown = ", ".join(broken[:3]) + (f" and {len(broken) - 3} more" if len(broken) > 3 else "")
    raise FloatingPointError(
        f"The weights became NaN or infinite by step {step} ({len(broken)} of {total} tensors: {shown}), after the "
        f"last loss was taken. model/ was not written: such weights predict nothing. Kept: {layout.kept_text(run_dir)}. "
        "Train again with a lower learning_rate, or precision='no' if mixed precision is on.")


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
    user deleted the run folder, that would bring it back holding only .ortnb/engine_report.json."""
    write = trainer.write_engine_report

    def write_if_the_folder_exists():
        return write() if (run_dir / layout.CONFIG).exists() else None

    trainer.write_engine_report = write_if_the_folder_exists


def _node_rank() -> int:
    return int(os.environ.get("GROUP_RANK", os.environ.get("NODE_RANK", "0")))


def main(argv: list[str] | None = None) -> int:
    run_dir = Path((argv or sys.argv[1:])[0]).resolve()
    rank = int(os.environ.get("RANK", "0"))
    world = int(os.environ.get("WORLD_SIZE", "1"))
    fault = os.environ.get("ORTNB_FAULT")
    recorder = Recorder(run_dir, rank, None)
    try:
        # Local rank 0 writes its folder's metrics: on one machine that is rank 0; across nodes each node's
        # ``ortnb run`` follows its own run folder. Other ranks write nothing.
        writes = int(os.environ.get("LOCAL_RANK", "0")) == 0
        recorder = Recorder.open(run_dir, rank=rank, writes=writes,
                                 make_writer=writer_for(fault))
        machine_peak.record_or_await(run_dir, writes)
        run(run_dir, rank, world, recorder.writer, fault, orphan.SupervisorWatch(run_dir).start())
        leave_process_group()
        return 0
    except BaseException as error:  # noqa: BLE001 - every failure must reach the notebook, even KeyboardInterrupt
        recorder.fail(error)
        return 1
    finally:
        recorder.close()


def writer_for(fault: str | None):
    """The metrics writer a rank opens: a plain MetricsWriter, or one that fails as ORTNB_FAULT asks (faults.py)."""
    if not fault:
        return MetricsWriter
    from functools import partial

    from .faults import metrics_writer

    return partial(metrics_writer, spec=fault)


def leave_process_group() -> None:
    """End the ranks' process group together, after every rank has finished (rank 0 may still be saving).
    A rank that exited with its gloo group still open was seen to abort in teardown ("terminate called without
    an active exception", SIGABRT) after a completed run, and torchrun then failed the whole run."""
    import torch.distributed as dist

    if dist.is_available() and dist.is_initialized():
        dist.barrier()
        dist.destroy_process_group()


def exit_now(code: int) -> None:
    """End the process once its records are closed, without the interpreter's teardown: unloading torch,
    transformers and ONNX Runtime took 1.3-1.6 s after the final event, paid by every run before its status
    was final (the supervisor waits for the ranks). Nothing left needs it: the metrics stream is closed, the
    process group left, and the output is flushed here."""
    import logging

    logging.shutdown()
    for stream in (sys.stdout, sys.stderr):
        stream.flush()
    os._exit(code)


if __name__ == "__main__":
    exit_now(main())
