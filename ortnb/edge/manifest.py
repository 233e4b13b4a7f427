"""``ortnb-edge.json``: what the device needs to know about the artifacts, written next to them. Torch-free."""

from __future__ import annotations

import dataclasses
import json
from dataclasses import dataclass, field
from pathlib import Path

FILE = "ortnb-edge.json"
TRAINING_MODEL, EVAL_MODEL, OPTIMIZER_MODEL, CHECKPOINT = ("training_model.onnx", "eval_model.onnx",
                                                          "optimizer_model.onnx", "checkpoint")
ARTIFACT_FILES = (TRAINING_MODEL, EVAL_MODEL, OPTIMIZER_MODEL, CHECKPOINT)
TOKENIZER = "tokenizer.json"
MODEL_CONFIG = "config.json"  # transformers' config of the source model, for to_pytorch()


@dataclass
class Manifest:
    inputs: list[str]
    """The graph's data inputs in order (the labels input follows them)."""
    label_input: str = "labels"
    output: str = "logits"
    task: str = "sequence-classification"
    loss: str = "cross_entropy"
    optimizer: str = "adamw"
    seq_len: int = 128
    num_labels: int = 2
    id2label: dict = field(default_factory=dict)
    pad_token_id: int = 0
    selection: str = "head"
    """What export_artifacts was asked to train: head, last_layers:N, all, or "N named parameters"."""
    trainable: list[str] = field(default_factory=list)
    trainable_parameters: int = 0
    frozen_parameters: int = 0
    opset: int = 15
    fixes: list[str] = field(default_factory=list)
    source: str = ""
    tokenizer: str | None = None
    versions: dict = field(default_factory=dict)

    def write(self, folder: Path) -> Path:
        path = Path(folder) / FILE
        path.write_text(json.dumps(dataclasses.asdict(self), indent=2))
        return path

    @classmethod
    def read(cls, folder: Path) -> "Manifest":
        data = json.loads((Path(folder) / FILE).read_text())
        known = {f.name for f in dataclasses.fields(cls)}
        return cls(**{k: v for k, v in data.items() if k in known})


def missing_files(folder: Path) -> list[str]:
    """The files an artifacts folder lacks (empty when it is complete)."""
    folder = Path(folder)
    return [name for name in (*ARTIFACT_FILES, FILE) if not (folder / name).is_file()
            or (folder / name).stat().st_size == 0]


def check_folder(folder) -> Path:
    """The artifacts folder, or FileNotFoundError saying what is missing and how to make it."""
    path = Path(folder).expanduser()
    if not path.is_dir():
        raise FileNotFoundError(f"no artifacts folder {str(path)!r}: make one with ortnb.edge.export_artifacts(model, "
                                f"{str(path)!r}) or `ortnb edge export MODEL {path}`")
    missing = missing_files(path)
    if missing:
        raise FileNotFoundError(f"the artifacts folder {str(path)!r} is incomplete: {', '.join(missing)} "
                                f"{'is' if len(missing) == 1 else 'are'} missing or empty (an export cut short, or "
                                "files left behind when copying). Export again with ortnb.edge.export_artifacts")
    return path.resolve()
