"""ORTTrainer against plain transformers Trainer, ortnb's launched runner, and bare hand-written loops.

What: real MiniLM-L6 (sequence-classification head), batch 16 x 128 tokens of Rotten Tomatoes rows, fp32,
CPU, seed 0. Five variants, each run in a fresh process, alternated over repeats (A B C D E A B C D E ...);
the first WARMUP steps of each run are dropped; medians and interquartile ranges of step times are
reported and every ratio compares medians from this one invocation (see harness.py).

Why: the ratios of issue 6 (ORTTrainer vs Trainer, ORT vs eager), ortnb's own overhead over a bare ORT
loop, the time to the first ORT step and what it is spent on, and a roofline: how far any engine could
go on this machine at all.

    python benchmarks/trainer_vs_ort.py --steps 25 --warmup 5 --repeats 2 --out benchmarks/results/trainer-vs-ort.json

Variants:
  trainer      transformers.Trainer with ITS DEFAULTS: attention sdpa, optim = TrainingArguments' default
               (adamw_torch_fused on torch >= 2.8), lr 5e-5, max_grad_norm 1.0, linear schedule, fp32.
               No optim is passed; the optimizer it really used (trainer.args.optim) is recorded.
  ortrainer    ortnb.ORTTrainer + ORTTrainingArguments, backend "ort", the same arguments (so the same
               defaults); attention switched to eager (ORT cannot differentiate SDPA). Its engine report
               must say engine == "onnxruntime"; time_to_first_step_s and first_forward_phases_s are kept.
  launched     ortnb.launch(RunConfig(model="minilm", backend="ort", optim=<Trainer's default>, batch 16,
               seq 128, fp32, 1 process, lr 5e-5, rotten_tomatoes)) exactly as a user would: supervisor and
               worker processes, per-step metrics.jsonl records (logging every step), .ortnb/engine_report.json.
               Step times are read from the metrics records; there a step is the interval between the ends
               of two steps (it includes fetching the batch and ortnb's per-step logging), and the first
               one starts at on_train_begin.
  eager-loop   a bare loop doing Trainer's default math by hand: model(**batch).loss.backward();
               clip_grad_norm_(params, 1.0); AdamW.step() (fused=True when Trainer's default is
               adamw_torch_fused, torch's default implementation otherwise; lr 5e-5, weight_decay 0 as
               Trainer's); linear LR schedule step; zero_grad(). Default attention (sdpa).
  ort-loop     the same bare loop around ORTModule (eager attention), through ortnb's compat layer. If the
               ORTModule fell back to PyTorch the run is marked and not counted as ORT.
trainer/ortrainer step times run from on_step_begin to on_step_end (the batch already fetched), like the
bare loops' forward-to-zero_grad; their end-to-end intervals (comparable with "launched") are kept as
median_step_interval_s.

Roofline (measured in this parent process before any variant runs): this machine's fp32 matmul peak
(the best of 5 fresh ortnb.flops.measure_peak calls, not the cache), MiniLM's model FLOPs per step
(ortnb.flops.flops_per_step), the lower bound on a step (FLOPs / peak), each variant's MFU, and
max_speedup_vs_trainer_at_peak = median(trainer) / lower bound: the most any engine could gain over
Trainer at 100% of the measured matmul peak.

A variant that fails stops the run: the JSON is still written with the failure, its reason and stderr
tail, and the script exits 1.
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import sys
import tempfile
import time

import harness

VARIANTS = ("trainer", "ortrainer", "launched", "eager-loop", "ort-loop")
ENGINE_FIELDS = ("engine", "fallback", "providers", "optimizer", "attention", "precision", "ort_steps",
                 "pytorch_steps", "time_to_first_step_s", "first_forward_phases_s", "compat_fixes")


# --- child side -----------------------------------------------------------------------------------


def _trainer(variant: str, batch: int, seq: int, steps: int) -> dict:
    from transformers import Trainer, TrainerCallback, TrainingArguments

    from ortnb import ORTTrainer, ORTTrainingArguments

    class StepTimes(TrainerCallback):
        def __init__(self):
            self.times, self.intervals, self.begin, self.last_end = [], [], None, None

        def on_train_begin(self, *args, **kwargs):
            self.last_end = time.perf_counter()

        def on_step_begin(self, *args, **kwargs):
            self.begin = time.perf_counter()

        def on_step_end(self, *args, **kwargs):
            now = time.perf_counter()
            self.times.append(now - self.begin)
            self.intervals.append(now - self.last_end)
            self.last_end = now

    model, train = harness.load_workload(batch, seq, steps)
    timer = StepTimes()
    output_dir = tempfile.mkdtemp(prefix=f"ortnb-bench-{variant}-")
    # No optim, learning_rate or max_grad_norm: Trainer's defaults are what is being compared.
    common = {"output_dir": output_dir, "max_steps": steps, "per_device_train_batch_size": batch, "report_to": [],
              "save_strategy": "no", "disable_tqdm": True, "logging_steps": 10_000, "dataloader_num_workers": 0,
              "use_cpu": True}
    args_cls, trainer_cls = ((TrainingArguments, Trainer) if variant == "trainer"
                             else (ORTTrainingArguments, ORTTrainer))
    trainer = trainer_cls(model=model, args=args_cls(**common), train_dataset=train, callbacks=[timer])
    trainer.train()
    args = trainer.args
    result = {"step_times": timer.times, "step_intervals": timer.intervals,
              "optimizer": str(getattr(args.optim, "value", args.optim)), "learning_rate": args.learning_rate,
              "max_grad_norm": args.max_grad_norm, "attention": model.config._attn_implementation,
              "engine": "pytorch"}
    if variant == "ortrainer":
        report = trainer.engine_report()
        assert report.get("engine") == "onnxruntime", f"ORTTrainer did not run ONNX Runtime: {report}"
        result.update(engine=report["engine"], attention=report.get("attention"),
                      engine_report={k: report.get(k) for k in ENGINE_FIELDS})
    shutil.rmtree(output_dir, ignore_errors=True)
    return result


def _launched(batch: int, seq: int, steps: int, warmup: int) -> dict:
    from pathlib import Path

    from ortnb import RunConfig, launch
    from ortnb import metrics as run_metrics

    defaults = harness.trainer_defaults()
    output_dir = tempfile.mkdtemp(prefix="ortnb-bench-launched-")
    cfg = RunConfig(model=harness.MODEL, task=harness.TASK, dataset=harness.DATASET, backend="ort",
                    optim=defaults["optim"], precision="no", zero_stage=0, num_processes=1, batch_size=batch,
                    seq_len=seq, max_steps=steps, learning_rate=defaults["learning_rate"], seed=harness.SEED,
                    warmup_steps=min(warmup, steps - 1), evaluate=False, threads=None, output_dir=output_dir,
                    name="benchmark launched")
    run = launch(cfg)
    status = run.wait()
    try:
        if status != "completed":
            raise RuntimeError(f"the launched run ended {status!r}: {run.error}")
        records = run.records()
        step_records = sorted(run_metrics.steps(records), key=lambda r: r["step"])
        if [r["step"] for r in step_records] != list(range(1, steps + 1)):
            raise RuntimeError(f"expected step records 1..{steps}, got {[r['step'] for r in step_records]}")
        report_path = Path(run.run_dir) / ".ortnb" / "engine_report.json"  # ortnb.training.trainer.engine_report_path
        report = (json.loads(report_path.read_text()) if report_path.exists()
                  else (run_metrics.events(records, "engine") or [{}])[-1])
        assert report.get("engine") == "onnxruntime", f"the launched run did not run ONNX Runtime: {report}"
        return {"step_times": [r["step_time"] for r in step_records], "optimizer": report.get("optimizer"),
                "learning_rate": cfg.learning_rate, "engine": report["engine"], "attention": report.get("attention"),
                "engine_report": {k: report.get(k) for k in ENGINE_FIELDS},
                "engine_report_source": ".ortnb/engine_report.json" if report_path.exists() else "metrics engine event",
                "config": cfg.to_dict(), "ortnb_mfu_median": run.summary().get("mfu")}
    finally:
        shutil.rmtree(output_dir, ignore_errors=True)


def _loop(variant: str, batch: int, seq: int, steps: int) -> dict:
    defaults = harness.trainer_defaults()
    kind = harness.adamw_kind(defaults["optim"])
    model, train = harness.load_workload(batch, seq, steps)
    if variant == "ort-loop":
        from ortnb.backends import ort_compat

        ortmodule = ort_compat.load_ortmodule()
        model.set_attn_implementation("eager")
        model.train()
        runner = ortmodule.ORTModule(model)
    else:
        model.train()
        runner = model
    times = harness.bare_loop(runner, model, train, batch, steps, kind, defaults)
    result = {"step_times": times, "optimizer": f"torch.optim.AdamW({kind}) = Trainer's {defaults['optim']}",
              "learning_rate": defaults["learning_rate"], "max_grad_norm": defaults["max_grad_norm"],
              "attention": model.config._attn_implementation, "engine": "pytorch"}
    if variant == "ort-loop":
        fallback = harness.ort_fallback(runner)
        result.update(engine="pytorch" if fallback else "onnxruntime", fallback=fallback)
        if fallback:
            result["not_counted"] = f"ORTModule fell back to PyTorch: {fallback}"
    return result


def measure(variant: str, batch: int, seq: int, steps: int, warmup: int) -> dict:
    import torch

    if variant in ("trainer", "ortrainer"):
        result = _trainer(variant, batch, seq, steps)
    elif variant == "launched":
        result = _launched(batch, seq, steps, warmup)
    else:
        result = _loop(variant, batch, seq, steps)
    return {"variant": variant, **result, "threads": torch.get_num_threads()}


# --- parent side ----------------------------------------------------------------------------------


def _first_step(outcome: harness.Outcome, variant: str) -> dict:
    reports = [r.get("engine_report") or {} for r in outcome.results(variant)]
    firsts = [r["time_to_first_step_s"] for r in reports if r.get("time_to_first_step_s") is not None]
    phases = [r["first_forward_phases_s"] for r in reports if isinstance(r.get("first_forward_phases_s"), dict)]
    names = sorted({name for p in phases for name in p})
    return {"time_to_first_step_s": statistics.median(firsts) if firsts else None,
            "first_forward_phases_s": ({n: statistics.median([p[n] for p in phases if p.get(n) is not None])
                                     for n in names} if phases else None),
            "runs": len(reports)}


def _ratios(medians: dict) -> dict:
    def have(*names):
        return all(medians.get(n) for n in names)

    ratios = {}
    if have("ortrainer", "trainer"):
        ratios["ortrainer_vs_trainer"] = medians["trainer"] / medians["ortrainer"]
    if have("launched", "trainer"):
        ratios["launched_vs_trainer"] = medians["trainer"] / medians["launched"]
    if have("ortrainer", "eager-loop"):
        ratios["ortrainer_vs_eager_loop"] = medians["eager-loop"] / medians["ortrainer"]
    if have("ort-loop", "eager-loop"):
        ratios["ort_loop_vs_eager_loop"] = medians["eager-loop"] / medians["ort-loop"]
    if have("trainer", "eager-loop"):
        ratios["trainer_overhead_vs_eager_loop"] = medians["trainer"] / medians["eager-loop"] - 1
    # ortnb's overhead: what it costs over a bare ORTModule loop doing the same math.
    if have("ortrainer", "ort-loop"):
        ratios["ortrainer_overhead_vs_ort_loop"] = medians["ortrainer"] / medians["ort-loop"] - 1
    if have("launched", "ort-loop"):
        ratios["launched_overhead_vs_ort_loop"] = medians["launched"] / medians["ort-loop"] - 1
    return ratios


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--steps", type=int, default=25)
    parser.add_argument("--warmup", type=int, default=5)
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--batch", type=int, default=16)
    parser.add_argument("--seq", type=int, default=128)
    parser.add_argument("--variants", default=",".join(VARIANTS))
    parser.add_argument("--out", default="benchmarks/results/trainer-vs-ort.json")
    parser.add_argument("--one", help=argparse.SUPPRESS)  # internal: measure one variant in this process
    options = parser.parse_args()
    if options.one:
        harness.emit(measure(options.one, options.batch, options.seq, options.steps, options.warmup))
        return
    variants = options.variants.split(",")
    unknown = sorted(set(variants) - set(VARIANTS))
    if unknown:
        parser.error(f"unknown variant(s) {unknown}; known: {', '.join(VARIANTS)}")
    if options.steps <= options.warmup:
        parser.error("--steps must exceed --warmup")

    roof = harness.roofline(options.batch, options.seq)
    harness.announce(roof)

    def command_for(variant: str) -> list[str]:
        return [sys.executable, __file__, "--one", variant, "--steps", str(options.steps), "--warmup",
                str(options.warmup), "--batch", str(options.batch), "--seq", str(options.seq)]

    outcome = harness.alternate(variants, options.repeats, command_for, options.warmup, stop_on_failure=True)

    result, medians = harness.record(options, "variants", variants, outcome)
    intervals = {}  # end-to-end step intervals: "launched" measures only these
    for variant in ("trainer", "ortrainer", "launched"):
        kept = [t for r in outcome.results(variant) for t in r.get("step_intervals", r["step_times"])[options.warmup:]]
        if kept:
            intervals[variant] = statistics.median(kept)
    ratios = _ratios(medians)
    roof["mfu"] = {v: harness.mfu(roof, m) for v, m in medians.items()}
    if medians.get("trainer"):
        roof["max_speedup_vs_trainer_at_peak"] = medians["trainer"] / roof["lower_bound_step_s"]
    result.update({
        "median_step_interval_s": intervals,
        "ratios": ratios,
        "optimizer": {v: sorted({str(r.get("optimizer")) for r in outcome.results(v)}) for v in variants},
        "engine": {v: sorted({str(r.get("engine")) for r in outcome.results(v)}) for v in variants},
        "first_step": {v: _first_step(outcome, v) for v in ("ortrainer", "launched") if v in variants},
        "first_step_s": {v: [r["step_times"][0] for r in outcome.results(v)] for v in variants},
        "roofline": roof,
        "failures": outcome.failures(), "aborted": outcome.aborted,
        "runs": outcome.runs,
    })
    harness.write(options.out, result)
    print(json.dumps({"samples_per_s": result["samples_per_s"], "ratios": ratios,
                      "optimizer": result["optimizer"], "first_step": result["first_step"],
                      "roofline": {k: roof[k] for k in ("flops_per_step", "peak_flops", "lower_bound_step_s", "mfu",
                                                        "max_speedup_vs_trainer_at_peak") if k in roof},
                      "failures": {v: [f["reason"] for f in fs] for v, fs in result["failures"].items()}}, indent=2))
    if outcome.aborted:
        sys.exit(f"aborted: {outcome.aborted}")


if __name__ == "__main__":
    main()
