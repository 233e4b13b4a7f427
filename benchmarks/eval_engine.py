"""Which engine should evaluate (issue 36, part 1): the forward passes of one evaluation of Rotten Tomatoes' 1,000
held-out snippets, alternated, on every engine a run could evaluate with.

    python benchmarks/eval_engine.py --repeats 5 --out benchmarks/results/eval-engine.json

MiniLM (fresh 2-class head), sequence length 128, the rows sorted by length in batches of 64 (what the worker's
evaluation feeds), forward only under torch.inference_mode, in this one process:
- pytorch_fp32: PyTorch with its own (sdpa) attention, fp32: an eager fp32 run's evaluation;
- pytorch_bf16: the same under bf16 autocast: an eager bf16 run's evaluation (where the CPU has bf16 units);
- pytorch_eager_attention: PyTorch with eager attention, fp32: an ORT run's evaluation (ORTModule switches the
  model to eager attention while attached);
- onnxruntime: an InferenceSession of the model exported now (ortnb.export_onnx), fp32, the same batches.
A session holds the weights it was built with, so evaluating a training run on ONNX Runtime would pay an export
and a session build at each evaluation: ``export_and_session_s`` is that price, measured once per repeat.
Each engine once to warm up, then alternated, medians; the 1-minute load before and after.
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


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--out", default=str(HERE / "results" / "eval-engine.json"))
    options = parser.parse_args()
    os.environ.setdefault("HF_HUB_OFFLINE", "1")

    import numpy as np
    import onnxruntime
    import torch

    from ortnb import assets, capabilities, data, evaluation, export_onnx
    from ortnb.report import machine

    load_before = os.getloadavg()
    model, tokenizer = assets.load_model("minilm", "sequence-classification")
    model.eval()
    _, held_out = data.build("rotten_tomatoes", "sequence-classification", tokenizer, 128, train_samples=8,
                             padding="longest", eval_samples=1000)
    order = evaluation.length_order([len(ids) for ids in held_out["input_ids"]])
    rows = held_out.select(order)
    collator = data.collator(tokenizer, "longest")
    fields = [k for k in ("input_ids", "attention_mask", "token_type_ids") if k in rows.column_names]
    batches = [collator([{k: rows[j][k] for k in fields} for j in range(start, min(start + 64, len(rows)))])
               for start in range(0, len(rows), 64)]
    folder = Path(tempfile.mkdtemp(prefix="ortnb-eval-engine-"))

    def session():
        path = folder / "model.onnx"
        export_onnx(model, path, task="sequence-classification")
        return onnxruntime.InferenceSession(str(path), providers=["CPUExecutionProvider"])

    built = session()
    names = {i.name for i in built.get_inputs()}
    feeds = [{k: v.numpy().astype(np.int64) for k, v in b.items() if k in names} for b in batches]

    def pytorch(bf16: bool = False, attention: str = "sdpa"):
        def forward():
            model.set_attn_implementation(attention)
            with torch.inference_mode(), torch.autocast("cpu", dtype=torch.bfloat16, enabled=bf16):
                return [model(**b).logits.float() for b in batches]
        return forward

    engines = {"pytorch_fp32": pytorch(), "pytorch_eager_attention": pytorch(attention="eager"),
               "onnxruntime": lambda: [built.run(None, feed)[0] for feed in feeds]}
    if capabilities().bf16_cpu_native:
        engines["pytorch_bf16"] = pytorch(bf16=True)
    reference = np.concatenate([t.numpy() for t in engines["pytorch_fp32"]()])
    agreement = {}
    for name, forward in engines.items():  # warm-up, and the logits compared with fp32 PyTorch's
        out = forward()
        logits = np.concatenate([o.numpy() if hasattr(o, "numpy") else o for o in out])
        agreement[name] = {"max_abs_logit_difference": float(np.abs(logits - reference).max()),
                           "same_predictions": float((logits.argmax(-1) == reference.argmax(-1)).mean())}
    times: dict[str, list[float]] = {name: [] for name in engines}
    rebuild = []
    for _ in range(options.repeats):
        for name, forward in engines.items():
            started = time.perf_counter()
            forward()
            times[name].append(time.perf_counter() - started)
        started = time.perf_counter()
        session()
        rebuild.append(time.perf_counter() - started)
    model.set_attn_implementation("sdpa")
    medians = {name: statistics.median(values) for name, values in times.items()}
    result = {
        "what": "forward passes of one evaluation of Rotten Tomatoes' 1,000 held-out snippets (s), MiniLM, "
                "seq 128, sorted by length, batches of 64, inference_mode",
        "median_s": medians, "times_s": times, "agreement_with_pytorch_fp32": agreement,
        "export_and_session_s": {"median_s": statistics.median(rebuild), "times_s": rebuild},
        "onnxruntime_with_rebuild_s": medians["onnxruntime"] + statistics.median(rebuild),
        "threads": torch.get_num_threads(), "load_average_before": load_before, "load_average_after": os.getloadavg(),
        "machine": machine(), "when": time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime()),
        "command": "python " + " ".join(sys.argv),
    }
    Path(options.out).parent.mkdir(parents=True, exist_ok=True)
    Path(options.out).write_text(json.dumps(result, indent=2))
    print(json.dumps({k: result[k] for k in ("median_s", "export_and_session_s", "onnxruntime_with_rebuild_s",
                                             "agreement_with_pytorch_fp32", "load_average_before",
                                             "load_average_after")}, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
