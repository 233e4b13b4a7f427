"""Worker for tests/training/test_distributed.py, started by torchrun: trains a tiny BERT with ORTTrainer
under DDP or DeepSpeed and writes this rank's per-step losses to OUT/rank<N>.json."""

import json
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", ".."))

from ortnb import ORTTrainer, ORTTrainingArguments  # noqa: E402
from tests._helpers import classification_dataset, tiny_bert  # noqa: E402


class RecordingTrainer(ORTTrainer):
    losses: list

    def training_step(self, model, inputs, *args, **kwargs):
        loss = super().training_step(model, inputs, *args, **kwargs)
        self.losses.append(float(loss))
        self.wrapper = type(model).__name__  # what Trainer really trains: DDP, DeepSpeedEngine, ...
        return loss


def main(out: str, mode: str, global_batch: int, steps: int) -> None:
    mode, _, backend = mode.partition(":")
    world = int(os.environ.get("WORLD_SIZE", "1"))
    rank = int(os.environ.get("RANK", "0"))
    deepspeed = None
    if mode.startswith("zero"):
        deepspeed = {"zero_optimization": {"stage": int(mode[-1])}, "zero_allow_untested_optimizer": True,
                     "train_micro_batch_size_per_gpu": "auto",
                     "gradient_accumulation_steps": "auto", "gradient_clipping": "auto"}
    args = ORTTrainingArguments(output_dir=os.path.join(out, "trainer"), max_steps=steps, report_to=[],
                                per_device_train_batch_size=global_batch // world, learning_rate=1e-3, seed=0,
                                save_strategy="no", disable_tqdm=True, logging_steps=1, deepspeed=deepspeed,
                                optim="adamw_torch", ddp_backend="gloo", backend=backend or "ort",
                                # transformers 5.24's Trainer multiplies each rank's loss by the world size
                                # when averaging tokens across devices, but sequence-classification losses
                                # ignore num_items_in_batch, so gradients double (plain Trainer does it too).
                                average_tokens_across_devices=False)
    trainer = RecordingTrainer(model=tiny_bert(), args=args, train_dataset=classification_dataset())
    trainer.losses = []
    trainer.train()
    report = trainer.engine_report()
    with open(os.path.join(out, f"rank{rank}.json"), "w") as handle:
        json.dump({"losses": trainer.losses, "engine": report["engine"], "world_size": report["world_size"],
                   "optimizer": type(getattr(trainer.optimizer, "optimizer", trainer.optimizer)).__name__,
                   "wrapper": trainer.wrapper,
                   # Parameters after training: equal across ranks only if gradients were synchronised.
                   "parameters": [float(p.double().sum()) for p in trainer.model.parameters()]}, handle)


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4]))
