"""What one evaluation of the held-out split costs, before and after cheap evaluation (issue 36, part 1).

    python benchmarks/eval_cost.py --out benchmarks/results/eval-cost.json

MiniLM (the Dashboard's default model, fresh classifier head) on Rotten Tomatoes' 1,000 held-out snippets,
sequence length 128, per-batch padding, in this one process:
- before: Trainer's evaluation as a run did it until now: the training batch (16), the held-out rows through
  Trainer's length-grouped eval sampler (a run with length grouping, the default), under torch.no_grad;
- before_in_order: the same for a run without length grouping: the rows in their own order;
- after: the worker's evaluation now: 4 x the batch (64), the rows sorted by length, torch.inference_mode
  (runner.evaluation.evaluate_cheaply); accuracy, macro-F1 and the confusion matrix are checked to be the same
  as before's (the eval loss is the same up to float rounding: its difference is recorded).
Each variant once to warm up, then alternated, medians of ``--repeats``; Trainer's own eval_runtime is the time.
The engine: the same "after" evaluation on the model while ORTModule is attached (as in an ORT run, whose
transformers model switches to eager attention until detached), and ONNX Runtime inference of the same model
(export_onnx, then an InferenceSession over the same sorted batches), to say whether evaluating in PyTorch costs
more than ORT would. The load average is recorded before and after: on 2 shared cores it decides the figures.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default="minilm")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--batch", type=int, default=16, help="the training batch")
    parser.add_argument("--no-ort", action="store_true", help="skip the engine comparison")
    parser.add_argument("--threads", type=int, help="torch threads (default: every core)")
    parser.add_argument("--out", default=str(HERE / "results" / "eval-cost.json"))
    options = parser.parse_args()
    os.environ.setdefault("HF_HUB_OFFLINE", "1")

    import torch

    from ortnb import ORTTrainer, ORTTrainingArguments, assets, data, evaluation
    from ortnb.report import machine
    from ortnb.runner.evaluation import ClassificationMetrics, evaluate_cheaply

    load_before = os.getloadavg()
    torch.set_num_threads(options.threads or os.cpu_count() or 1)
    model, tokenizer = assets.load_model(options.model, "sequence-classification")
    _, held_out = data.build("rotten_tomatoes", "sequence-classification", tokenizer, 128, train_samples=8,
                             padding="longest", eval_samples=1000)
    texts = [str(i) for i in range(len(held_out))]
    order = evaluation.length_order([len(ids) for ids in held_out["input_ids"]])
    collator = data.collator(tokenizer, "longest")
    folder = Path(tempfile.mkdtemp(prefix="ortnb-eval-cost-"))
    eval_batch = evaluation.eval_batch_size(options.batch, None, "sequence-classification")

    def trainer_for(cheap: bool, grouped: bool = True):
        args = ORTTrainingArguments(output_dir=str(folder), backend="eager", report_to=[], disable_tqdm=True,
                                    per_device_eval_batch_size=eval_batch if cheap else options.batch,
                                    train_sampling_strategy="group_by_length" if grouped else "random", use_cpu=True)
        scores = ClassificationMetrics(["rotten", "fresh"], texts, order=order if cheap else None)
        trainer = ORTTrainer(model=model, args=args, eval_dataset=held_out.select(order) if cheap else held_out,
                             data_collator=collator, compute_metrics=scores)
        if cheap:
            evaluate_cheaply(trainer, world=1, bf16=False)
        return trainer, scores

    variants = {"before": trainer_for(False), "before_in_order": trainer_for(False, grouped=False),
                "after": trainer_for(True)}
    times: dict[str, list[float]] = {name: [] for name in variants}
    figures = {}
    for name, (trainer, _) in variants.items():
        trainer.evaluate()  # warm-up
    for _ in range(options.repeats):
        for name, (trainer, scores) in variants.items():
            result = trainer.evaluate()
            times[name].append(float(result["eval_runtime"]))
            figures[name] = {"accuracy": result["eval_accuracy"], "f1": result["eval_f1"],
                             "eval_loss": result["eval_loss"], "confusion": scores.details["confusion"]}
    engines = {} if options.no_ort else engine_times(model, variants["after"][0], held_out.select(order), collator,
                                                     eval_batch, options.repeats, folder)
    result = {
        "what": "one evaluation of Rotten Tomatoes' 1,000 held-out snippets (s, Trainer's eval_runtime), "
                f"{options.model}, seq 128, per-batch padding, training batch {options.batch}",
        "before": {"median_s": statistics.median(times["before"]), "times_s": times["before"],
                   "eval_batch": options.batch, "order": "Trainer's length-grouped eval sampler", "grad": "no_grad"},
        "before_in_order": {"median_s": statistics.median(times["before_in_order"]),
                            "times_s": times["before_in_order"], "eval_batch": options.batch,
                            "order": "the rows as given (a run without length grouping)", "grad": "no_grad"},
        "after": {"median_s": statistics.median(times["after"]), "times_s": times["after"], "eval_batch": eval_batch,
                  "order": "sorted by length, longest first", "grad": "inference_mode"},
        "speedup": statistics.median(times["before"]) / statistics.median(times["after"]),
        "speedup_over_in_order": statistics.median(times["before_in_order"]) / statistics.median(times["after"]),
        "same_figures": all(figures[v][k] == figures["after"][k] for k in ("accuracy", "f1", "confusion")
                            for v in ("before", "before_in_order")),
        "eval_loss_difference": abs(figures["before"]["eval_loss"] - figures["after"]["eval_loss"]),
        "figures": figures,
        "engines": engines,
        "load_average_before": load_before, "load_average_after": os.getloadavg(),
        "machine": machine(), "when": time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime()),
        "command": "python " + " ".join(sys.argv),
    }
    Path(options.out).parent.mkdir(parents=True, exist_ok=True)
    Path(options.out).write_text(json.dumps(result, indent=2))
    print(json.dumps({k: v for k, v in result.items() if k not in ("figures", "machine")}, indent=2))
    return 0


def engine_times(model, trainer, rows, collator, batch: int, repeats: int, folder: Path) -> dict:
    """The cheap evaluation's seconds on the model with ORTModule attached (what an ORT run's evaluation runs:
    PyTorch, with eager attention), and ONNX Runtime inference over the same batches."""
    import numpy as np
    import onnxruntime

    from ortnb import export_onnx
    from ortnb.backends import ortmodule
    from ortnb.backends.options import TRAINER_WAY_OUT

    attached = []
    ortmodule.attach(model, ortmodule.OrtOptions(way_out=TRAINER_WAY_OUT))
    try:
        trainer.evaluate()  # warm-up
        for _ in range(repeats):
            attached.append(float(trainer.evaluate()["eval_runtime"]))
    finally:
        ortmodule.detach(model)
    path = folder / "model.onnx"
    export_onnx(model, path, task="sequence-classification")
    session = onnxruntime.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    names = {i.name for i in session.get_inputs()}
    batches = [collator([rows[j] for j in range(start, min(start + batch, len(rows)))])
               for start in range(0, len(rows), batch)]
    feeds = [{k: v.numpy().astype(np.int64) for k, v in b.items() if k in names} for b in batches]
    ort = []
    for attempt in range(repeats + 1):
        started = time.perf_counter()
        for feed in feeds:
            session.run(None, feed)
        if attempt:  # the first pass warms up
            ort.append(time.perf_counter() - started)
    return {"pytorch_ort_attached": {"median_s": statistics.median(attached), "times_s": attached,
                                     "attention": "eager (ORT attached)"},
            "onnxruntime_inference": {"median_s": statistics.median(ort), "times_s": ort,
                                      "note": "InferenceSession of the exported model, the same sorted batches, "
                                              "forward only (no loss, no metrics)"}}


if __name__ == "__main__":
    sys.exit(main())
