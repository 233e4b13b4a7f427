"""A trained run as a folder a user can ship: model.onnx, its tokenizer, config.json with the class names, the
parity figure, and a short inference snippet that runs on onnxruntime and transformers' tokenizer alone.

``export_onnx`` (export.py) writes and checks the .onnx file; this module picks which weights go in (the best
evaluation's, or the final ones: said in every place the folder is described), puts the files a model needs beside
it, and keeps the exporter's warnings (tracer chatter a user cannot act on) out of the user's view while keeping
ortnb's own (an untrained head) in the result.
"""
from __future__ import annotations

import json
import shutil
import warnings
from dataclasses import dataclass
from pathlib import Path

from . import files
from .vocabulary import Task

ONNX_DIR = "onnx"  # inside the run folder, unless the caller names another place
MODEL_FILE = "model.onnx"
FACTS_FILE = "export.json"
SNIPPET_FILE = "predict.py"
# What a model folder holds beside its weights that inference needs (the tokenizer's files and config.json).
CARRIED = ("config.json", "tokenizer.json", "tokenizer_config.json", "special_tokens_map.json", "vocab.txt",
           "vocab.json", "merges.txt", "spiece.model", "sentencepiece.bpe.model", "added_tokens.json",
           "chat_template.jinja", "generation_config.json")


@dataclass(frozen=True)
class OnnxFolder:
    """What was written, from which weights, and how closely ONNX Runtime matched PyTorch."""

    folder: str
    source: str  # "the best evaluation (step 20, accuracy 0.750)" or "the final weights"
    task: str
    labels: tuple[str, ...]
    max_abs_diff: float
    providers: tuple[str, ...]
    notes: tuple[str, ...] = ()  # ortnb's own warnings (an untrained head), in words

    def text(self) -> str:
        """One paragraph for the Dashboard and the terminal."""
        labels = f" and {len(self.labels)} class names" if self.labels else ""
        lines = [f"exported {self.source} to {self.folder}: {MODEL_FILE}, the tokenizer, config.json{labels}; "
                 f"ONNX Runtime matches PyTorch within {self.max_abs_diff:.1e} (largest difference of any output)",
                 f"try it: python {Path(self.folder) / SNIPPET_FILE} \"a text\""]
        return "; ".join(lines + list(self.notes))


def write_onnx_folder(run, out: str | Path | None = None, which: str = "best") -> OnnxFolder:
    """Export ``run`` (an ortnb Run) into ``out`` (default: ``onnx/`` in its run folder), from the best
    evaluation's weights (``which="best"``, when it evaluated) or the final ones (``which="last"``)."""
    from .export import export_onnx

    weights, source = run.model_folder(which)
    out = Path(out).expanduser() if out is not None else Path(run.run_dir) / ONNX_DIR
    _check_destination(out)
    staging = out.with_name(out.name + ".tmp")
    shutil.rmtree(staging, ignore_errors=True)  # a cut export of ours from before (the name is ours)
    staging.mkdir(parents=True)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        result = export_onnx(weights, staging / MODEL_FILE)
    notes = [str(w.message) for w in caught if w.category.__module__.startswith("ortnb")]
    for name in CARRIED:
        if (weights / name).is_file():
            shutil.copy2(weights / name, staging / name)
    labels = _labels(staging / "config.json") if result.task == Task.SEQUENCE_CLASSIFICATION else ()
    (staging / SNIPPET_FILE).write_text(snippet(result.task))
    shipped = OnnxFolder(folder=str(out), source=source, task=result.task, labels=labels,
                         max_abs_diff=result.max_abs_diff, providers=result.providers, notes=tuple(notes))
    facts = {"source": source, "weights": str(weights), "task": result.task, "labels": list(labels),
             "opset": result.opset, "inputs": list(result.inputs), "outputs": list(result.outputs),
             "max_abs_diff": result.max_abs_diff, "providers": list(result.providers), "notes": notes}
    files.write_atomic(staging / FACTS_FILE, json.dumps(facts, indent=1))
    _replace(out, staging)
    return shipped


def _check_destination(out: Path) -> None:
    """Only a folder this module wrote (it holds export.json and model.onnx) is replaced; anything else the user
    keeps there is refused, named, never deleted."""
    if not out.exists():
        return
    if not out.is_dir():
        raise FileExistsError(f"{out} is a file: name a folder for the ONNX export (out=...).")
    ours = (out / FACTS_FILE).is_file() and (out / MODEL_FILE).is_file()
    if any(out.iterdir()) and not ours:
        held = ", ".join(sorted(p.name for p in out.iterdir())[:5])
        raise FileExistsError(f"{out} holds files ortnb did not write ({held}): name an empty or new folder "
                              "(out=...), or move those files away.")
    foreign = [p.name for p in out.iterdir() if p.name not in {MODEL_FILE, FACTS_FILE, SNIPPET_FILE, *CARRIED}]
    if ours and foreign:
        raise FileExistsError(f"{out} is an earlier export with files added to it ({', '.join(sorted(foreign))}): "
                              "move them away or name another folder (out=...); ortnb replaces only its own export.")


def _replace(out: Path, staging: Path) -> None:
    """The new export takes the old one's place whole: a reader sees the old folder or the new, never a mix."""
    old = out.with_name(out.name + ".old")
    shutil.rmtree(old, ignore_errors=True)
    if out.exists():
        out.rename(old)
    staging.rename(out)
    shutil.rmtree(old, ignore_errors=True)


def _labels(config_file: Path) -> tuple[str, ...]:
    if not config_file.is_file():
        return ()
    id2label = json.loads(config_file.read_text()).get("id2label") or {}
    return tuple(str(id2label[key]) for key in sorted(id2label, key=int))


def snippet(task: str) -> str:
    """predict.py: inference with onnxruntime and the `tokenizers` library alone (no torch, no transformers: it
    starts in a second), one text at a time so no padding rule is needed."""
    if task == Task.SEQUENCE_CLASSIFICATION:
        shown = 'print(config["id2label"][str(int(logits[0].argmax()))], text, sep="\\t")'
    else:  # a language model: the most likely next token
        shown = 'print(text + tokenizer.decode([int(logits[0, -1].argmax())]))'
    return f'''"""Written by ortnb: the exported model on ONNX Runtime. python predict.py "a text" ["another" ...]"""
import json
import sys
from pathlib import Path

import numpy as np
import onnxruntime
from tokenizers import Tokenizer

folder = Path(__file__).parent
config = json.loads((folder / "config.json").read_text())
tokenizer = Tokenizer.from_file(str(folder / "tokenizer.json"))
tokenizer.enable_truncation(min(config.get("max_position_embeddings", 512), 512))
session = onnxruntime.InferenceSession(str(folder / "{MODEL_FILE}"), providers=["CPUExecutionProvider"])

for text in sys.argv[1:] or ["a text"]:
    encoding = tokenizer.encode(text)
    feeds = {{"input_ids": encoding.ids, "attention_mask": encoding.attention_mask, "token_type_ids": encoding.type_ids}}
    logits = session.run(None, {{i.name: np.array([feeds[i.name]], dtype=np.int64) for i in session.get_inputs()}})[0]
    {shown}
'''
