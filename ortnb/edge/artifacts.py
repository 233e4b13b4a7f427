"""The offline half of on-device training (needs PyTorch): a fine-tuned model becomes the four files
``onnxruntime.training.api`` trains from (training, eval and optimizer models, checkpoint), plus a
manifest, the tokenizer and the model's config.

The forward graph comes from the TorchScript exporter in training mode without constant folding, so
every initializer keeps its PyTorch name and ``trainable`` can use those names; ORT then builds the
gradient graph for the trainable weights only (``generate_artifacts``).
"""

from __future__ import annotations

import contextlib
import copy
import importlib.metadata
import inspect
import io
import os
import re
import shutil
import sys
import tempfile
import warnings
from dataclasses import dataclass
from pathlib import Path

from .. import _imports
from ..errors import ConfigError
from ..progress import without_progress_bars
from ..vocabulary import Task
from . import fixes, manifest, trainable as trainable_names

LOSSES = {"cross_entropy": "CrossEntropyLoss", "mse": "MSELoss", "bce_with_logits": "BCEWithLogitsLoss",
          "l1": "L1Loss"}
OPTIMIZERS = {"adamw": "AdamW", "sgd": "SGD"}
# 15: the opset ORT's own on-device examples use. 14 to 20 export; from 17 LayerNormalization is one
# node and fixes.layer_norm_saved_outputs mends its gradient.
DEFAULT_OPSET = 15
OPSETS = range(14, 21)
ADAM_EPSILON = 1e-8  # transformers.TrainingArguments' adam_epsilon (see _optimizer_block)
# protobuf's limit: artifacts cannot keep weights in external data files (ORT 1.19.2 training API).
MAX_MODEL_BYTES = 2 * 1024**3
NO_GRADIENT = re.compile(r"gradient builder has not been registered: (?P<op>\w+) for node (?P<node>\S+)")
WRAPPER_PREFIX = "model."  # the export wrapper holds the model as .model: names are PyTorch's after it


@dataclass(frozen=True)
class Artifacts:
    """What export_artifacts wrote: the folder, each file's size, and which weights train."""

    folder: str
    files: dict
    trainable: tuple[str, ...]
    trainable_parameters: int
    frozen_parameters: int
    opset: int
    fixes: tuple[str, ...]

    @property
    def total_bytes(self) -> int:
        return sum(self.files.values())

    def table(self):
        """The files and their sizes as a pandas DataFrame."""
        import pandas as pd

        return pd.DataFrame({"file": list(self.files), "MB": [round(b / 1e6, 2) for b in self.files.values()]})

    def __str__(self) -> str:
        percent = 100 * self.trainable_parameters / max(1, self.trainable_parameters + self.frozen_parameters)
        share = f"{percent:.2g}%" if percent < 1 else f"{percent:.1f}%"  # a head is 0.0034%, not 0.00%
        return (f"artifacts in {self.folder}: {self.total_bytes / 1e6:.1f} MB in {len(self.files)} files; "
                f"{self.trainable_parameters:,} trainable parameters ({share}) in {len(self.trainable)} "
                f"tensors, {self.frozen_parameters:,} frozen; opset {self.opset}"
                + (f"; fixes: {', '.join(self.fixes)}" if self.fixes else ""))


def export_artifacts(model_or_dir, out_dir, *, trainable="head", loss: str = "cross_entropy",
                     optimizer: str = "adamw", seq_len: int = 128, opset: int | None = None,
                     tokenizer=None) -> Artifacts:
    """Write ONNX Runtime training artifacts for ``model_or_dir`` to ``out_dir`` (created or overwritten).

    ``model_or_dir``: a sequence classifier, its save_pretrained folder, a Trainer's output_dir or an ortnb
    run folder (or Run). ``trainable``: "head" (the classification head), "last_layers:N" (the last N layers
    and what follows them), "all", or a list of PyTorch parameter names; every other weight is frozen.
    ``loss``: cross_entropy, mse, bce_with_logits or l1. ``optimizer``: adamw or sgd. ``seq_len``: the
    longest sequence the device will feed (the graph's axes are dynamic; this sizes the trace).
    ``opset``: 14 to 20 (default 15). ``tokenizer``: saved beside the artifacts (default: the model folder's).
    """
    opset = DEFAULT_OPSET if opset is None else opset
    _check_arguments(loss, optimizer, seq_len, opset)
    _imports.require_ort_training("ortnb.edge.export_artifacts")
    with without_progress_bars():
        model, tokenizer, source = _load(model_or_dir, tokenizer)
    _check_size(model)
    vocab_size = _embedding_rows(model)
    _check_tokenizer(tokenizer, vocab_size)
    names = [name for name, _ in model.named_parameters()]
    chosen = trainable_names.resolve(trainable, names)  # before the export: a typo costs nothing
    out = Path(out_dir).expanduser().resolve()
    graph, inputs = _export_forward(model, seq_len, opset)
    applied = fixes.apply(fixes.BEFORE_GRADIENT, graph)
    in_graph = {i.name for i in graph.graph.initializer}
    frozen = [n for n in names if n not in set(chosen) and n in in_graph]
    _check_in_graph(chosen, in_graph)
    _check_broadcasts(graph, chosen)
    with tempfile.TemporaryDirectory(prefix="ortnb-edge-") as scratch:
        _generate(graph, chosen, frozen, loss, optimizer, Path(scratch))
        applied += _fix_written(Path(scratch))
        _move_into(Path(scratch), out)
    counts = {n: p.numel() for n, p in model.named_parameters()}
    info = manifest.Manifest(
        inputs=inputs, loss=loss, optimizer=optimizer, seq_len=seq_len, num_labels=model.config.num_labels,
        id2label={str(k): v for k, v in (model.config.id2label or {}).items()},
        pad_token_id=int(getattr(tokenizer, "pad_token_id", None) or model.config.pad_token_id or 0),
        vocab_size=vocab_size,
        selection=trainable if isinstance(trainable, str) else f"{len(chosen)} named parameters",
        trainable=chosen, trainable_parameters=sum(counts[n] for n in chosen),
        frozen_parameters=sum(counts[n] for n in frozen), opset=opset, fixes=applied, source=source,
        tokenizer=_save_tokenizer(tokenizer, out), versions=_versions())
    model.config.to_json_file(out / manifest.MODEL_CONFIG)
    # Sizes and hashes of the finished files (after every fix rewrote them), checked before each edge run.
    info.files = manifest.file_facts(out, [name for name in (*manifest.ARTIFACT_FILES, manifest.MODEL_CONFIG,
                                                             info.tokenizer) if name])
    info.write(out)
    files = {name: (out / name).stat().st_size for name in (*manifest.ARTIFACT_FILES, manifest.FILE,
                                                           manifest.MODEL_CONFIG, info.tokenizer) if name}
    return Artifacts(str(out), files, tuple(chosen), info.trainable_parameters, info.frozen_parameters, opset,
                     tuple(applied))


def _check_arguments(loss, optimizer, seq_len, opset) -> None:
    problems = []
    if loss not in LOSSES:
        problems.append(f"loss={loss!r} is not one ORT's training API builds: use {', '.join(LOSSES)}")
    if optimizer not in OPTIMIZERS:
        problems.append(f"optimizer={optimizer!r} is not one ORT's training API builds: use {', '.join(OPTIMIZERS)}")
    if not (isinstance(seq_len, int) and not isinstance(seq_len, bool) and seq_len > 0):
        problems.append(f"seq_len={seq_len!r}: the longest sequence the device feeds, a whole number over 0")
    if not (isinstance(opset, int) and opset in OPSETS):
        problems.append(f"opset={opset!r}: use {OPSETS[0]} to {OPSETS[-1]} (default {DEFAULT_OPSET}, the opset "
                        "ONNX Runtime's on-device examples use)")
    if problems:
        raise ConfigError(problems)


def _load(model_or_dir, tokenizer):
    """(model in fp32, tokenizer or None, where it came from)."""
    import torch

    from ..export import _load as load_saved, find_model_dir

    model_or_dir = getattr(model_or_dir, "run_dir", model_or_dir)  # an ortnb Run: its run folder
    if isinstance(model_or_dir, (str, Path)):
        model, task = load_saved(Path(model_or_dir), None)
        if task != Task.SEQUENCE_CLASSIFICATION:
            raise ConfigError(f"{model_or_dir} holds a {task} model; ortnb.edge trains sequence classifiers "
                              "(logits of shape batch x labels). Pass a sequence-classification model")
        folder = find_model_dir(Path(model_or_dir))
        if tokenizer is None and (folder / manifest.TOKENIZER).exists():
            from transformers import AutoTokenizer

            tokenizer = AutoTokenizer.from_pretrained(folder)
        return model, tokenizer, str(folder)
    if not isinstance(model_or_dir, torch.nn.Module) or not hasattr(model_or_dir, "config"):
        raise ConfigError(f"model_or_dir must be a transformers model or the folder one was saved to, got "
                          f"{type(model_or_dir).__name__}")
    return model_or_dir, tokenizer, type(model_or_dir).__name__


def _check_size(model) -> None:
    size = sum(p.numel() * p.element_size() for p in model.parameters())
    if size > MAX_MODEL_BYTES:
        raise ConfigError(f"the model's weights take {size / 1024**3:.1f} GB; ONNX Runtime 1.19.2's training "
                          "artifacts hold at most 2 GB (protobuf's limit; they cannot keep weights in external "
                          "files). Use a smaller model, or train it with ORTTrainer instead")


def _embedding_rows(model) -> int | None:
    """How many token ids the model's word embedding table has rows for (None: no input embedding found)."""
    try:
        embeddings = model.get_input_embeddings()
    except (AttributeError, NotImplementedError):
        embeddings = None
    rows = getattr(embeddings, "num_embeddings", None) or getattr(model.config, "vocab_size", None)
    return int(rows) if rows else None


def _tokenizer_size(tokenizer) -> int | None:
    """How many ids the tokenizer can give, added tokens included (the saved tokenizer.json's count)."""
    backend = getattr(tokenizer, "backend_tokenizer", None)
    if backend is not None:
        return int(backend.get_vocab_size(with_added_tokens=True))
    try:
        return len(tokenizer)
    except TypeError:
        return None


def _check_tokenizer(tokenizer, vocab_size: int | None) -> None:
    """A tokenizer with more ids than the embedding has rows: a text that reaches one of those ids stops the
    device's first step inside ONNX Runtime (Gather: "indices element out of data bounds")."""
    size = _tokenizer_size(tokenizer) if tokenizer is not None else None
    if size is None or vocab_size is None or size <= vocab_size:
        return
    raise ConfigError(f"tokenizer: it gives token ids up to {size - 1:,} ({size:,} tokens), but the model's word "
                      f"embeddings have {vocab_size:,} rows (ids 0 to {vocab_size - 1:,}), so texts with a larger id "
                      "would fail in ONNX Runtime's Gather at the first step on the device. Pass the tokenizer the "
                      "model was trained with, or grow the embeddings first (model.resize_token_embeddings("
                      f"len(tokenizer))). A model passed without a tokenizer trains on rows of input_ids, each below "
                      f"{vocab_size:,}")


def _export_forward(model, seq_len: int, opset: int):
    """The forward graph (logits only) in training mode, initializers named as PyTorch names them."""
    import onnx
    import torch

    from ..export import _input_names, _make_inputs, _Wrapper

    model = copy.deepcopy(model).float().cpu()  # the caller's model keeps its modes and attention kernel
    if getattr(model.config, "_attn_implementation", None) not in (None, "eager"):
        model.set_attn_implementation("eager")  # sdpa does not trace into ops ORT can differentiate
    accepted = inspect.signature(model.forward).parameters
    names = tuple(n for n in _input_names(model.config, accepted, None) if n != "token_type_ids")
    wrapper = _Wrapper(model, "logits", names, "use_cache" in accepted).train()
    sample = _make_inputs(model.config, names, 2, min(seq_len, 16), "cpu")
    buffer = io.BytesIO()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the legacy exporter's deprecation and tracer warnings: chosen on purpose
        torch.onnx.export(wrapper, tuple(sample[n] for n in names), buffer, dynamo=False, opset_version=opset,
                          export_params=True, do_constant_folding=False, training=torch.onnx.TrainingMode.TRAINING,
                          keep_initializers_as_inputs=False, input_names=list(names), output_names=["logits"],
                          dynamic_axes={**{n: {0: "batch", 1: "sequence"} for n in names}, "logits": {0: "batch"}})
    graph = onnx.load_from_string(buffer.getvalue())
    _strip_wrapper_prefix(graph)
    return graph, list(names)


def _strip_wrapper_prefix(graph) -> None:
    renamed = {}
    for initializer in graph.graph.initializer:
        if initializer.name.startswith(WRAPPER_PREFIX):
            renamed[initializer.name] = initializer.name[len(WRAPPER_PREFIX):]
            initializer.name = renamed[initializer.name]
    for node in graph.graph.node:
        for index, name in enumerate(node.input):
            if name in renamed:
                node.input[index] = renamed[name]


def _check_in_graph(chosen: list[str], present: set[str]) -> None:
    absent = [n for n in chosen if n not in present]
    if absent:
        raise ConfigError(f"trainable weights not in the exported graph: {', '.join(absent[:5])}. They are unused "
                          "in the forward pass or shared with another weight (tied embeddings): leave them out")


def _check_broadcasts(graph, chosen: list[str]) -> None:
    """Broadcasts whose shapes stayed unclear after fixes.symbolic_shapes, with trainable weights before them:
    ORT 1.19.2 would build a wrong gradient for them, and corrupt memory on the device."""
    unclear = fixes.ambiguous_broadcasts(graph, chosen)
    if unclear:
        raise ConfigError(f"ONNX Runtime 1.19.2 cannot tell which inputs of {', '.join(unclear[:3])}"
                          f"{' and others' if len(unclear) > 3 else ''} broadcast (their shapes stay unknown), so "
                          "the gradient through them would be wrong. Train only weights after them: "
                          'trainable="head" or "last_layers:N" with fewer layers')


def _generate(graph, chosen, frozen, loss, optimizer, folder: Path) -> None:
    import onnxruntime
    from onnxruntime.training import artifacts

    onnxruntime.set_default_logger_severity(3)
    try:
        with _quiet_native_stderr():  # the gradient builder logs every graph transformer at INFO, whatever the severity
            artifacts.generate_artifacts(graph, requires_grad=chosen, frozen_params=frozen,
                                         loss=getattr(artifacts.LossType, LOSSES[loss]),
                                         optimizer=_optimizer_block(optimizer),
                                         artifact_directory=str(folder),
                                         # the loss comes first, then logits: accuracy on the device needs them
                                         additional_output_names=["logits"])
    except RuntimeError as error:
        found = NO_GRADIENT.search(str(error))
        if not found:
            raise
        raise ConfigError(f"ONNX Runtime 1.19.2 has no gradient for the {found['op']} op (node {found['node']}), "
                          "which lies between the trainable weights and the loss. Train only weights after it: "
                          "trainable=\"head\" or \"last_layers:N\" with fewer layers (or replace that op in the "
                          "model)") from None


def _optimizer_block(name: str):
    """ORT's optimizer graph. AdamW runs in ORT's HF mode, which adds epsilon before the bias correction of
    the second moment; with ORT's default epsilon (1e-6) that shrinks early updates of weights with small
    gradients about tenfold next to torch.optim.AdamW. Trainer's default epsilon (1e-8) makes the two agree."""
    from onnxruntime.training import onnxblock

    return onnxblock.optim.AdamW(eps=ADAM_EPSILON, weight_decay=0.0) if name == "adamw" else onnxblock.optim.SGD()


@contextlib.contextmanager
def _quiet_native_stderr():
    """Send what C++ writes to file descriptor 2 to a scratch file; its tail is printed if generation fails."""
    try:
        saved = os.dup(2)
    except OSError:  # no descriptor 2 (some embedded front-ends): nothing to quiet
        yield
        return
    with tempfile.TemporaryFile() as scratch:
        os.dup2(scratch.fileno(), 2)
        try:
            yield
        except BaseException:
            os.dup2(saved, 2)
            scratch.seek(0)
            tail = scratch.read()[-2000:].decode(errors="replace").strip()
            lines = [line for line in tail.splitlines() if "[E:onnxruntime" in line or "[W:onnxruntime" in line]
            if lines:
                print("\n".join(lines), file=sys.stderr)
            raise
        finally:
            os.dup2(saved, 2)
            os.close(saved)


def _fix_written(folder: Path) -> list[str]:
    import onnx

    applied = []
    for name in (manifest.TRAINING_MODEL, manifest.EVAL_MODEL, manifest.OPTIMIZER_MODEL):
        graph = onnx.load(str(folder / name))
        done = fixes.apply(fixes.AFTER_GENERATION, graph)
        if done:
            onnx.save(graph, str(folder / name))
            applied += [f"{fix} ({name})" for fix in done]
    return applied


def _move_into(scratch: Path, out: Path) -> None:
    out.mkdir(parents=True, exist_ok=True)
    for name in manifest.ARTIFACT_FILES:
        shutil.move(str(scratch / name), str(out / name))


def _save_tokenizer(tokenizer, out: Path) -> str | None:
    """tokenizer.json (the Rust tokenizers file, readable without transformers) or None."""
    backend = getattr(tokenizer, "backend_tokenizer", None)
    if backend is None:
        (out / manifest.TOKENIZER).unlink(missing_ok=True)
        return None
    backend.save(str(out / manifest.TOKENIZER))
    return manifest.TOKENIZER


def _versions() -> dict:
    found = {}
    for name in ("onnxruntime-training-cpu", "onnxruntime-training", "onnx", "torch", "transformers"):
        try:
            found[name] = importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            pass
    return found
