"""Worker for tests/test_custom_loop.py, started by torchrun on CPU ranks: the same hand-written loop three
ways (plain DDP; accelerate.prepare of ort_model(model); ort_model of a model already wrapped by DDP), and
each way's per-step losses, engine and parameters written to OUT/rank<N>.json."""

import json
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", ".."))

import torch  # noqa: E402
from accelerate import Accelerator  # noqa: E402
from torch.nn.parallel import DistributedDataParallel  # noqa: E402

import ortnb  # noqa: E402
from tests._helpers import classification_dataset, tiny_bert  # noqa: E402

STEPS, ROWS = 3, 4  # per rank and step


def rank_batches(rank: int):
    data = classification_dataset(rows=2 * ROWS * STEPS)
    for step in range(STEPS):
        start = (step * 2 + rank) * ROWS  # each rank its own rows
        chunk = data[start:start + ROWS]
        yield {key: torch.tensor(chunk[key]) for key in ("input_ids", "attention_mask", "labels")}


def train(model, optimizer, rank: int, backward=None) -> list[float]:
    model.train()
    losses = []
    for batch in rank_batches(rank):
        loss = model(**batch).loss
        (backward or torch.Tensor.backward)(loss)
        optimizer.step()
        optimizer.zero_grad()
        losses.append(loss.item())
    return losses


def record(model, losses, engine) -> dict:
    inner = model.module if isinstance(model, DistributedDataParallel) else model
    return {"losses": losses, "engine": engine, "wrapper": type(model).__name__,
            "parameters": [float(p.double().sum()) for p in inner.parameters()]}


def main(out: str) -> None:
    accelerator = Accelerator(cpu=True)  # on CPU ranks accelerate sets up DDP only with cpu=True
    rank = accelerator.process_index
    results = {"world_size": accelerator.num_processes}

    model = DistributedDataParallel(tiny_bert())
    model.module.set_attn_implementation("eager")  # what ort_model switches to, so the losses compare exactly
    results["eager_ddp"] = record(model, train(model, torch.optim.AdamW(model.parameters(), lr=1e-3), rank),
                                  "pytorch")

    model = ortnb.ort_model(tiny_bert())
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)
    model, optimizer = accelerator.prepare(model, optimizer)
    losses = train(model, optimizer, rank, backward=accelerator.backward)
    results["accelerate"] = record(model, losses, ortnb.engine_report(model)["engine"])

    model = DistributedDataParallel(tiny_bert())
    model = ortnb.ort_model(model)  # converts the module inside; DDP still synchronises the gradients
    losses = train(model, torch.optim.AdamW(model.parameters(), lr=1e-3), rank)
    results["ddp_then_ort_model"] = record(model, losses, ortnb.engine_report(model)["engine"])

    with open(os.path.join(out, f"rank{rank}.json"), "w") as handle:
        json.dump(results, handle)


if __name__ == "__main__":
    main(sys.argv[1])
