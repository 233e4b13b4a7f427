"""RunConfig: what one training run is. The docstring under each field is its help text
(``RunConfig.help("backend")``), shown by the widgets and the command line."""

from __future__ import annotations

import ast
import dataclasses
import functools
import inspect
import json
import os
import textwrap
import types
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal, Union, get_args, get_origin, get_type_hints

from .runs.layout import EDGE, TRAINER, config_text, write_config
from .vocabulary import (  # noqa: F401 - read through config too
    FALSE, TRUE, Backend, Choice, Metric, Optimizer, Padding, Precision, Schedule, Task)

KIND = TRAINER  # config.json's "kind" for a RunConfig run folder (the kinds: runs/layout.py)


@dataclass
class RunConfig:
    model: str = "minilm"
    """Model: a built-in name (minilm, smollm2, tiny-bert, tiny-llama), a local directory, or a Hub id."""
    task: Task | None = None
    """sequence-classification or causal-lm; None picks the model's natural task."""
    dataset: Any = "rotten_tomatoes"
    """Training data: a built-in name (rotten_tomatoes, hamlet), a local .csv/.json/.jsonl/.txt file, or a datasets.Dataset."""
    text_column: str = "text"
    """The column of dataset (and eval_dataset) that holds each row's text, e.g. review; a plain .txt file is all text."""
    label_column: str = "label"
    """The column of dataset (and eval_dataset) that holds each row's class, an id 0..K-1 or a name, e.g. sentiment; a causal LM reads none."""
    backend: Backend = Backend.ORT
    """What runs the training steps: ort (ONNX Runtime), eager (PyTorch) or compile (torch.compile)."""
    optim: Optimizer = Optimizer.ADAMW_TORCH
    """Optimizer: adamw_torch, adamw_torch_fused (PyTorch's fused AdamW) or adamw_ort_fused (ORT, CUDA only)."""
    precision: Precision = Precision.NO
    """Mixed precision: no (fp32), bf16 or fp16."""
    zero_stage: int = 0
    """DeepSpeed ZeRO stage: 0 (off: DDP when several processes), 1 (optimizer state sharded) or 2 (+ gradients)."""
    num_processes: int = 1
    """Worker processes (ranks) on this machine; more than one means DDP or ZeRO."""
    batch_size: int = 16
    """Samples per step on each process."""
    seq_len: int = 128
    """Most tokens per sample: longer texts are cut (see padding for shorter ones)."""
    padding: Padding | None = None
    """How a batch is padded: longest (to its longest row, rounded up to a multiple of 8) or max_length (every row to seq_len, as Optimum's published examples did). None: longest for classification; a causal LM trains on full blocks of seq_len tokens and needs none."""
    length_grouping: bool | None = None
    """Put rows of similar length in the same batch (Trainer's length-grouped sampler), so little padding is left. None: on when padding is longest."""
    max_steps: int | None = None
    """Optimizer steps to train; None: 60, or as many as epochs takes. Set epochs or max_steps, not both."""
    epochs: float | None = None
    """Passes over the training rows (1.5 is allowed); the number of steps follows from it. None: max_steps decides."""
    learning_rate: float = 5e-5
    """Peak learning rate."""
    lr_schedule: Schedule = Schedule.LINEAR
    """How the rate moves: linear (down from the peak over every planned step, Trainer's) or wsd (warmup-stable-decay: held at the peak, then down to a tenth of the peak over the last 20% of the steps, or from the first evaluation within 0.02 of the target)."""
    freeze_embeddings: bool = False
    """Leave the input word embeddings untrained (requires_grad off before the optimizer is built; a causal LM's output head tied to them stays too). Their AdamW update and zeroing are about 15% of a batch-16 step, and half the all-reduce with 2 processes; judge it by accuracy on held-out data."""
    dropout: float | None = None
    """Dropout probability for every dropout of the model (its layers, attention and classifier head); 0.0 turns it off, which a run shorter than an epoch may not need. None: the model's own. Judge it by accuracy on held-out data."""
    seed: int = 0
    """Seed for weights of new heads, data order and dropout."""
    warmup_steps: int = 5
    """First steps left out of the throughput statistics (graph builds, allocator warm-up)."""
    evaluate: bool = True
    """Evaluate held-out rows while training (loss and the metric, every eval_every steps); False: measure speed only."""
    eval_dataset: Any = None
    """Held-out rows: None takes the dataset's own held-out split (rotten_tomatoes: 1,000 fixed snippets), else eval_fraction of the training rows; or a file path or a datasets.Dataset with the training data's columns."""
    eval_fraction: float = 0.1
    """Share of the training rows held out for evaluation when there is no eval_dataset and no built-in split (stratified by class, seeded)."""
    eval_samples: int | None = None
    """Most held-out rows evaluated each time (None: all of them); fewer make each evaluation quicker and noisier."""
    eval_batch_size: int | None = None
    """Held-out rows per evaluation batch on each process; None: 4 x batch_size, at most 128 (never below batch_size), for classification, and batch_size for a causal LM (its logits over the vocabulary fill memory). Evaluation keeps no activations for a backward, so a larger batch fits; the rows are evaluated sorted by length, so a batch pads little."""
    eval_screen: int | None = None
    """With a target: held-out rows (a fixed random subset) scored twice every eval_every steps in place of the whole split, which is evaluated only when the screen (read as the whole split read beside it last) comes within 0.01 of the target, and after the last step; the target is declared on the whole split only. None: 200 rows when the split holds 800 or more; 0: no screen (the whole split every eval_every steps)."""
    eval_every: int | None = None
    """Optimizer steps between evaluations; None: five evaluations spread over the run. The run is also evaluated after its last step, and before its first unless a target is set (untrained weights reach no target)."""
    metric: Metric | None = None
    """What "best" means: accuracy or f1 (macro-F1) for classification, perplexity for a causal LM, or loss (the eval loss). None: accuracy, or perplexity for a causal LM."""
    early_stopping_patience: int | None = None
    """Stop after this many evaluations in a row without a better metric (None: never stop early)."""
    target: float | None = None
    """Train until good: end the run (completed) at the first evaluation whose metric reaches this value (accuracy 0.83; for loss or perplexity at or below it). None: train all steps."""
    report_to: Any = None
    """Also log to these trackers, as Trainer's report_to: tensorboard, mlflow, wandb (where installed); None: none."""
    threads: int | None = None
    """CPU threads per process; None lets ortnb divide the cores among the processes."""
    stall_timeout_s: float | None = None
    """Seconds without a new step after which a running run reads "stalled" (a frozen or deadlocked rank). None: 10 median step times, at least 60 s."""
    output_dir: str = "runs"
    """Where run directories are created (each run gets a new one; nothing is overwritten)."""
    name: str | None = None
    """A label for charts and tables; None builds one from the settings."""

    def __post_init__(self):
        # pathlib.Path values become their text once, here: config.json, the checks and the worker all read str
        for name in ("model", "dataset", "eval_dataset", "output_dir"):
            if isinstance(getattr(self, name), os.PathLike):
                setattr(self, name, os.fspath(getattr(self, name)))
        # A known value becomes its enum member (equal to the text it was); anything else stays as given, for
        # validate() to name (a hand-written config may hold any value)
        for name, vocabulary in CHOICES.items():
            value = getattr(self, name)
            if isinstance(value, str) and not isinstance(value, vocabulary) and value in vocabulary.values():
                setattr(self, name, vocabulary(value))

    # -- help, labels, JSON ----------------------------------------------------------------

    @classmethod
    def help(cls, name: str) -> str:
        """The docstring under a field."""
        return _field_docs(cls)[name]

    @property
    def label(self) -> str:
        if self.name:
            return str(self.name)
        # str() throughout: a hand-written config may hold any value, and validate() must be able to name it
        optimizer = {"adamw_torch": "AdamW", "adamw_torch_fused": "fused AdamW",
                     "adamw_ort_fused": "ORT FusedAdam"}.get(str(self.optim), str(self.optim))
        parts = [str(self.backend), optimizer]
        if self.precision != "no":
            parts.append(str(self.precision))
        if self.zero_stage:
            parts.append(f"ZeRO-{self.zero_stage}")
        if self.freeze_embeddings is True:
            parts.append("frozen embeddings")
        if isinstance(self.dropout, (int, float)) and not isinstance(self.dropout, bool):
            parts.append("no dropout" if self.dropout == 0 else f"dropout {self.dropout:g}")
        if self.lr_schedule == Schedule.WSD:
            parts.append("WSD")
        label = " + ".join(parts)
        several = isinstance(self.num_processes, int) and self.num_processes > 1
        return f"{label} x{self.num_processes}" if several else label

    def to_dict(self) -> dict:
        data = dataclasses.asdict(self)
        for name in ("dataset", "eval_dataset"):
            if not isinstance(data[name], (str, type(None))):
                raise TypeError(f"A RunConfig whose {name} is an in-memory datasets.Dataset cannot be written as "
                                "JSON; save it with dataset.save_to_disk(path) or to a .jsonl file and pass the path.")
        return data

    def to_json(self, path: str | Path | None = None) -> str:
        """The settings as JSON, with ``"kind": "trainer"`` first: a run folder's config.json says what ran it."""
        if path is not None:
            return write_config(path, KIND, self.to_dict())  # atomically: a reader never finds half of it
        return config_text(KIND, self.to_dict())

    @classmethod
    def from_dict(cls, data: dict) -> "RunConfig":
        """A RunConfig from field: value pairs; ConfigError (a ValueError) for anything else or unknown fields."""
        from .errors import ConfigError

        if not isinstance(data, dict):
            raise ConfigError(f"a RunConfig is a mapping of field: value (e.g. {{\"model\": \"minilm\"}}), got a "
                              f"{value_kind(data)}.")
        kind = data.get("kind", KIND)
        if kind != KIND:
            raise ConfigError(f"kind: {kind!r} settings are not a RunConfig (kind {KIND!r})"
                              + (": an edge run's config.json; ortnb.attach(folder) reads that run, and "
                                 "`ortnb edge train` starts one." if kind == EDGE else "."))
        data = {name: value for name, value in data.items() if name != "kind"}
        names = {f.name for f in dataclasses.fields(cls)}
        data = _upgrade(data)
        unknown = sorted(set(map(str, data)) - names)
        if unknown:
            raise ConfigError(f"Unknown RunConfig field(s): {', '.join(unknown)}. Known: {', '.join(sorted(names))}.")
        return cls(**data)

    @classmethod
    def from_json(cls, text_or_path: str | Path) -> "RunConfig":
        text = str(text_or_path)
        if not text.lstrip().startswith("{"):
            text = Path(text_or_path).read_text()
        return cls.from_dict(json.loads(text))

    def replace(self, **changes) -> "RunConfig":
        return dataclasses.replace(self, **changes)


CHOICES = {"task": Task, "backend": Backend, "optim": Optimizer, "precision": Precision,  # the fields of a vocabulary
           "lr_schedule": Schedule}
DEFAULT_STEPS = 60  # what a run trains when neither max_steps nor epochs is set


def _upgrade(data: dict) -> dict:
    """config.json files written before evaluation while training: eval_samples=0 meant "no evaluation" and
    N "evaluate N held-out rows at the end"; both read as they were meant."""
    if "eval_samples" in data and "evaluate" not in data:
        data = dict(data)
        if data["eval_samples"] in (0, None):
            data["evaluate"], data["eval_samples"] = False, None
        else:
            data["evaluate"] = True
    return data


def value_kind(value) -> str:
    """How a JSON/YAML reader's value is called in messages."""
    return {list: "list", str: "string", int: "number", float: "number", bool: "boolean",
            type(None): "null (empty)"}.get(type(value), type(value).__name__)


def fields() -> list[str]:
    return [f.name for f in dataclasses.fields(RunConfig)]


def parse_value(name: str, text: str):
    """A RunConfig field's value from text (``ortnb compare/tune/profile --vary FIELD=A,B``), read by the field's
    declared type: a yes/no field from true/false (yes/no, 1/0, on/off), a number field as an int or a float, a
    closed field (backend, optim, precision, task, padding) as one of its values; ``none`` where the field may be
    None; any other field keeps the text. ValueError naming the field and what it takes, for anything else."""
    declared = _field_types()[name]
    choices = tuple(declared.__args__) if get_origin(declared) is Literal else None
    optional, kind = False, declared
    if get_origin(declared) in (Union, types.UnionType):
        kinds = [k for k in get_args(declared) if k is not type(None)]
        optional = len(kinds) < len(get_args(declared))
        kind = kinds[0] if len(kinds) == 1 else Any
        choices = tuple(get_args(kind)) if get_origin(kind) is Literal else None
    word = text.strip().lower()
    if optional and word == "none":
        return None
    or_none = " or none" if optional else ""
    if kind is bool:
        if word in TRUE + FALSE:
            return word in TRUE
        raise ValueError(f"{name} takes true or false (also yes/no, 1/0){or_none}, got {text!r}")
    if kind in (int, float):
        try:
            return kind(text)
        except ValueError:
            raise ValueError(f"{name} takes {kind.__name__} values{or_none}, got {text!r}") from None
    if isinstance(kind, type) and issubclass(kind, Choice):
        choices = kind.values()
    if choices is not None:
        if text in choices:
            return kind(text) if isinstance(kind, type) else text
        raise ValueError(f"{name} takes one of {', '.join(choices)}{or_none}, got {text!r}")
    return text


@functools.cache
def _field_types() -> dict:
    return get_type_hints(RunConfig)


@functools.cache
def _field_docs(cls) -> dict[str, str]:
    """Read the string literal that follows each annotated field in the class body."""
    tree = ast.parse(textwrap.dedent(inspect.getsource(cls)))
    body = tree.body[0].body
    docs = {}
    for node, following in zip(body, body[1:]):
        if (isinstance(node, ast.AnnAssign) and isinstance(following, ast.Expr)
                and isinstance(following.value, ast.Constant) and isinstance(following.value.value, str)):
            docs[node.target.id] = " ".join(following.value.value.split())
    return docs
