"""ORTTrainer against plain transformers Trainer, and both against bare hand-written loops.

Real MiniLM-L6 (sequence classification head), batch 16 x 128 tokens of Rotten Tomatoes snippets,
fp32, CPU. Each measurement runs in a fresh process; the variants alternate over repeats
(A B C D A B C D ...); the first WARMUP steps are excluded; medians of step times are reported,
and every ratio compares medians from this one invocation.

    python benchmarks/trainer_vs_ort.py --steps 30 --warmup 5 --repeats 3 --out benchmarks/results/trainer-vs-ort.json

Variants:
  trainer      transformers.Trainer, its default attention (sdpa), optim="adamw_torch", fp32
  ortrainer    ortnb.ORTTrainer, backend="ort" (same arguments otherwise)
  eager-loop   a bare loop: model(**batch).loss.backward(); AdamW.step(); zero_grad() (default attention)
  ort-loop     the same bare loop around ORTModule (eager attention), through ortnb's compat layer
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

VARIANTS = ("trainer", "ortrainer", "eager-loop", "ort-loop")


def _data(batch: int, seq: int, steps: int):
    from ortnb import assets, data

    model, tokenizer = assets.load_model("minilm", "sequence-classification")
    train, _ = data.build("rotten_tomatoes", "sequence-classification", tokenizer, seq, train_samples=batch * steps)
    return model, train.with_format("torch")


def _trainer(variant: str, batch: int, steps: int, model, train) -> list[float]:
    from transformers import Trainer, TrainerCallback, TrainingArguments

    from ortnb import ORTTrainer, ORTTrainingArguments

    class StepTimes(TrainerCallback):
        def __init__(self):
            self.times, self.last = [], None

        def on_step_begin(self, *args, **kwargs):
            self.last = time.perf_counter()

        def on_step_end(self, *args, **kwargs):
            self.times.append(time.perf_counter() - self.last)

    timer = StepTimes()
    common = dict(output_dir=f"/tmp/ortnb-bench-{variant}", max_steps=steps, per_device_train_batch_size=batch,
                  optim="adamw_torch", report_to=[], save_strategy="no", disable_tqdm=True, logging_steps=10_000,
                  dataloader_num_workers=0, use_cpu=True)
    args_cls, trainer_cls = (TrainingArguments, Trainer) if variant == "trainer" else (ORTTrainingArguments,
                                                                                      ORTTrainer)
    trainer = trainer_cls(model=model, args=args_cls(**common), train_dataset=train, callbacks=[timer])
    trainer.train()
    if variant == "ortrainer":
        report = trainer.engine_report()
        assert report["engine"] == "onnxruntime", report
        timer.first_step_s = report["time_to_first_step_s"]
    return timer.times


def _loop(variant: str, batch: int, steps: int, model, train) -> list[float]:
    import torch

    if variant == "ort-loop":
        from ortnb.backends import ort_compat

        ortmodule = ort_compat.load_ortmodule()
        model.set_attn_implementation("eager")
        model.train()
        runner = ortmodule.ORTModule(model)
    else:
        model.train()
        runner = model
    optimizer = torch.optim.AdamW(model.parameters(), lr=5e-5)
    times = []
    for step in range(steps):
        rows = train[step * batch:(step + 1) * batch]
        inputs = {k: rows[k] for k in ("input_ids", "attention_mask", "token_type_ids", "labels") if k in rows}
        started = time.perf_counter()
        runner(**inputs).loss.backward()
        optimizer.step()
        optimizer.zero_grad()
        times.append(time.perf_counter() - started)
    return times


def measure(variant: str, batch: int, seq: int, steps: int) -> dict:
    import torch

    model, train = _data(batch, seq, steps)
    run = _trainer if variant in ("trainer", "ortrainer") else _loop
    times = run(variant, batch, steps, model, train)
    return {"variant": variant, "step_times": times, "threads": torch.get_num_threads()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--steps", type=int, default=30)
    parser.add_argument("--warmup", type=int, default=5)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--batch", type=int, default=16)
    parser.add_argument("--seq", type=int, default=128)
    parser.add_argument("--variants", default=",".join(VARIANTS))
    parser.add_argument("--out", default="benchmarks/results/trainer-vs-ort.json")
    parser.add_argument("--one", help=argparse.SUPPRESS)  # internal: measure one variant in this process
    options = parser.parse_args()
    if options.one:
        print(json.dumps(measure(options.one, options.batch, options.seq, options.steps)))
        return
    variants = options.variants.split(",")
    samples: dict[str, list[float]] = {v: [] for v in variants}
    for _ in range(options.repeats):
        for variant in variants:
            command = [sys.executable, __file__, "--one", variant, "--steps", str(options.steps), "--batch",
                       str(options.batch), "--seq", str(options.seq)]
            done = subprocess.run(command, capture_output=True, text=True, env={**os.environ, "HF_HUB_OFFLINE": "1"})
            if done.returncode:
                sys.exit(f"{variant} failed:\n{done.stderr[-3000:]}")
            result = json.loads(done.stdout.strip().splitlines()[-1])
            samples[variant].extend(result["step_times"][options.warmup:])
            print(f"{variant:>11}: median {statistics.median(result['step_times'][options.warmup:]) * 1000:.0f} ms/step",
                  flush=True)
    medians = {v: statistics.median(t) for v, t in samples.items()}
    throughput = {v: options.batch / m for v, m in medians.items()}
    ratios = {}
    if {"ortrainer", "trainer"} <= set(medians):
        ratios["ortrainer_vs_trainer"] = throughput["ortrainer"] / throughput["trainer"]
    if {"ortrainer", "eager-loop"} <= set(medians):
        ratios["ortrainer_vs_eager_loop"] = throughput["ortrainer"] / throughput["eager-loop"]
    if {"ort-loop", "eager-loop"} <= set(medians):
        ratios["ort_loop_vs_eager_loop"] = throughput["ort-loop"] / throughput["eager-loop"]
    if {"ortrainer", "ort-loop"} <= set(medians):
        ratios["ortrainer_overhead_vs_ort_loop"] = medians["ortrainer"] / medians["ort-loop"] - 1
    result = {"command": "python " + " ".join(sys.argv), "batch": options.batch, "seq": options.seq,
              "steps": options.steps, "warmup": options.warmup, "repeats": options.repeats,
              "median_step_s": medians, "samples_per_s": throughput, "ratios": ratios,
              "iqr_step_s": {v: (statistics.quantiles(t, n=4)[2] - statistics.quantiles(t, n=4)[0]) for v, t in
                             samples.items() if len(t) >= 4}}
    from ortnb.report import machine, versions

    result.update(machine=machine(), versions=versions())
    Path(options.out).parent.mkdir(parents=True, exist_ok=True)
    Path(options.out).write_text(json.dumps(result, indent=2))
    print(json.dumps({"samples_per_s": throughput, "ratios": ratios}, indent=2))


if __name__ == "__main__":
    main()
