"""``ortnb-edge.json``: what the device needs to know about the artifacts, written next to them. Torch-free."""

from __future__ import annotations

import dataclasses
import json
from dataclasses import dataclass, field
from pathlib import Path

from ..errors import ConfigError
from ..files import sha256_of
from ..vocabulary import Task

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
    task: str = Task.SEQUENCE_CLASSIFICATION
    loss: str = "cross_entropy"
    optimizer: str = "adamw"
    seq_len: int = 128
    num_labels: int = 2
    id2label: dict = field(default_factory=dict)
    pad_token_id: int = 0
    vocab_size: int | None = None
    """Rows of the model's word embedding table: every token id fed to the graph must be below it (None in
    artifacts exported before ortnb recorded it: ids are then not checked before ONNX Runtime sees them)."""
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
    files: dict = field(default_factory=dict)
    """{file name: {"bytes": size, "sha256": hex digest}} of every file the export wrote beside this one, so a
    truncated file or one copied in from another export is named before ONNX Runtime reads it (empty for
    artifacts exported before ortnb kept these: they are not checked)."""

    def write(self, folder: Path) -> Path:
        path = Path(folder) / FILE
        path.write_text(json.dumps(dataclasses.asdict(self), indent=2))
        return path

    @classmethod
    def read(cls, folder: Path) -> "Manifest":
        data = json.loads((Path(folder) / FILE).read_text())
        known = {f.name for f in dataclasses.fields(cls)}
        return cls(**{k: v for k, v in data.items() if k in known})


def file_facts(folder: Path, names) -> dict:
    """{name: {"bytes", "sha256"}} of the files ``names`` in ``folder``, for Manifest.files."""
    return {name: {"bytes": (Path(folder) / name).stat().st_size, "sha256": sha256_of(Path(folder) / name)}
            for name in names}


def damaged_files(folder: Path, info: "Manifest") -> list[str]:
    """Why each file the manifest lists differs from what the export wrote (empty when all match)."""
    found = []
    for name, facts in info.files.items():
        path = Path(folder) / name
        if not path.is_file():
            found.append(f"{path} is missing")
        elif path.stat().st_size != facts.get("bytes"):  # the cheap check first: a cut-short copy
            found.append(f"{path} is {path.stat().st_size:,} bytes, but the export wrote {facts.get('bytes'):,} "
                         "(cut short or overwritten)")
        elif sha256_of(path) != facts.get("sha256"):
            found.append(f"{path} is not the file the export wrote (its sha256 differs: changed since, or copied "
                         "in from another export)")
    return found


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
    try:
        info = Manifest.read(path)
    except (ValueError, TypeError, AttributeError) as error:  # not JSON, or not a manifest's fields
        raise ConfigError(f"the artifacts folder {str(path)!r} has a damaged {FILE} ({error}); export again with "
                          "ortnb.edge.export_artifacts") from None
    damaged = damaged_files(path, info)
    if damaged:
        # Said here, by path: ONNX Runtime would otherwise fail inside C++ with a protobuf parse error, or
        # train a graph that does not match the checkpoint's weights.
        raise ConfigError([f"artifacts: {problem}; export the artifacts again with ortnb.edge.export_artifacts "
                           "(or copy the whole folder again)" for problem in damaged])
    return path.resolve()
