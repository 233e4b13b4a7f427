"""``web_bundle``: a static folder in which the same artifacts keep learning in a browser tab. (This module is
web_build: a submodule named web_bundle would replace the function ``ortnb.edge.web_bundle`` once imported.)

What a bundle holds (every path relative, so any static server serves it, ``python -m http.server`` too)::

    index.html app.js rows.js chart.js tokenizer.js page.css   the page (ortnb/edge/web/)
    ort/                ONNX Runtime Web's training build (web_runtime: from the npm registry, pinned)
    artifacts/          training, eval and optimizer models, checkpoint, tokenizer.json
    bundle.json         what the page needs to know: inputs, labels, steps, batch size, learning rate; and
                        every file ortnb wrote, with its sha256 (web_folder: what a rewrite may replace)
    data.json           the bundled rows and the rows of each step's batch (the order ortnb.edge.train uses)
    eval.json           held-out rows, when given

Everything is checked before anything is written: the artifacts (complete, from one export), the tokenizer
(a kind the page's tokenizer reads), the rows (text and labels the model has), the runtime (fetched, each file
the pinned release's), the destination (empty, new, or a bundle ortnb wrote). The bundle is written beside its
destination and moved in when whole; files a person added to an earlier bundle stay. Torch-free.
"""

from __future__ import annotations

import json
import shutil
import tempfile
from dataclasses import dataclass
from importlib import resources
from pathlib import Path

from ..errors import ConfigError
from ..vocabulary import Task
from . import batches, manifest, web_folder, web_runtime, web_schedule, web_tokenizer
from .config import EdgeConfig

FORMAT = web_folder.FORMAT
BUNDLE_FILE = web_folder.MANIFEST
DATA_FILE = "data.json"
EVAL_FILE = "eval.json"
PAGE_FILES = ("index.html", "app.js", "rows.js", "chart.js", "tokenizer.js", "page.css")
RUNTIME_FOLDER = "ort"
ARTIFACTS_FOLDER = "artifacts"
ARTIFACT_FILES = (manifest.TRAINING_MODEL, manifest.EVAL_MODEL, manifest.OPTIMIZER_MODEL, manifest.CHECKPOINT,
                  manifest.TOKENIZER)
DEFAULT_STEPS, DEFAULT_BATCH, DEFAULT_LR = 20, 16, 1e-3


@dataclass(frozen=True)
class WebBundle:
    """What web_bundle wrote: the folder, each file's size, the rows bundled and the schedule."""

    folder: Path
    files: dict
    rows: int
    eval_rows: int
    steps: int
    batch_size: int
    learning_rate: float

    @property
    def total_bytes(self) -> int:
        return sum(self.files.values())

    @property
    def index(self) -> Path:
        return self.folder / "index.html"

    def serve(self, port: int = 0, isolated: bool = False):
        """Serve the bundle on 127.0.0.1 (a random free port by default); ``.url`` opens it, ``.stop()`` ends it.
        ``isolated``: send the cross-origin isolation headers, so the page may use several threads."""
        from .web_server import serve

        return serve(self.folder, port=port, isolated=isolated)

    def summary(self) -> str:
        """What was written and what the page does, in plain words."""
        data = (f"it trains on {self.rows} bundled rows" if self.rows else
                "it trains on rows a person loads from a file or types in the page")
        held = f", and evaluates on {self.eval_rows} held-out rows" if self.eval_rows else ""
        return (f"web bundle in {self.folder} ({self.total_bytes / 1e6:.1f} MB in {len(self.files)} files). The page "
                f"trains the model in the browser tab with ONNX Runtime Web: {data}{held}; each press of Train takes "
                f"{self.steps} steps of {self.batch_size} rows, at a learning rate from {self.learning_rate:g} down "
                "to 0. The rows and the trained weights stay in the tab: nothing is sent anywhere, and Download "
                "weights saves them to this computer")

    def how_to_serve(self, port: int = 8000) -> str:
        """The whole command that serves the bundle, to copy: any static server works, this Python's included."""
        import shlex
        import sys

        command = (f"{shlex.quote(sys.executable)} -m http.server {port} --bind 127.0.0.1 --directory "
                   f"{shlex.quote(str(self.folder))}")
        return (f"Serve it:\n  {command}\nthen open http://127.0.0.1:{port}/index.html (Ctrl-C stops the server). "
                "Or add --serve to `ortnb edge web`, with --isolated to let the page use several threads")

    def __str__(self) -> str:
        return f"{self.summary()}.\n{self.how_to_serve()}"


def web_bundle(artifacts_dir, out_dir, *, data=None, eval_data=None, steps: int = DEFAULT_STEPS,
               batch_size: int = DEFAULT_BATCH, learning_rate: float = DEFAULT_LR, seed: int = 0,
               threads: int | None = None) -> WebBundle:
    """Write a static folder that trains the artifacts in ``artifacts_dir`` in a browser tab.

    ``data``/``eval_data``: rows to bundle (a .jsonl/.json/.csv path, a list of dicts, a dict of columns or a
    DataFrame) with a text column and a label column; without ``data`` the page trains the rows a person types
    or loads. ``steps``, ``batch_size``, ``learning_rate`` (peak, decayed linearly to 0 at the last step) and
    ``seed`` (the order of the rows) mean what they mean for ``ortnb.edge.train``: the same arguments there
    train on the same batches with the same rates. ``threads``: WebAssembly threads (default: 1 unless the page
    is served cross-origin isolated, then up to 4).
    """
    settings = EdgeConfig(artifacts_dir=str(artifacts_dir), dataset="", steps=steps, batch_size=batch_size,
                          learning_rate=learning_rate, seed=seed, threads=threads)
    settings.check()
    folder = manifest.check_folder(artifacts_dir)
    info = manifest.Manifest.read(folder)
    _check_artifacts(folder, info)
    runtime = web_runtime.located()
    tokenizer = folder / info.tokenizer
    train_rows, encoded = _bundled_rows(data, info, tokenizer, "data") if data is not None else ([], None)
    held_out, _ = _bundled_rows(eval_data, info, tokenizer, "eval_data") if eval_data is not None else ([], None)
    out = _destination(out_dir, folder)
    old = web_folder.check_destination(out, _names(bool(train_rows), bool(held_out)))
    description = _description(info, folder, settings, bool(train_rows), bool(held_out))
    schedule = _batches(encoded, info, settings) if train_rows else []
    scratch = Path(tempfile.mkdtemp(prefix=".ortnb-bundle-", dir=out.parent))
    try:
        _write(scratch, folder, info, runtime, settings)
        if train_rows:
            _write_json(scratch / DATA_FILE, {"rows": train_rows, "batches": schedule})
        if held_out:
            _write_json(scratch / EVAL_FILE, {"rows": held_out})
        _write_json(scratch / BUNDLE_FILE, {**description, "written": web_folder.listing(scratch)})
        files = {p.relative_to(scratch).as_posix(): p.stat().st_size for p in sorted(scratch.rglob("*"))
                 if p.is_file()}
        web_folder.place(scratch, out, old)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    return WebBundle(out, files, len(train_rows), len(held_out), steps, batch_size, float(learning_rate))


def _check_artifacts(folder: Path, info: manifest.Manifest) -> None:
    problems = []
    if info.task != Task.SEQUENCE_CLASSIFICATION or info.loss != "cross_entropy":
        problems.append(f"the artifacts in {folder} train a {info.task} model with loss {info.loss}; the page trains "
                        "sequence classifiers with cross_entropy (class labels): export them with "
                        "ortnb.edge.export_artifacts(model, folder, loss='cross_entropy')")
    if not info.tokenizer or not (folder / info.tokenizer).is_file():
        problems.append(f"the artifacts in {folder} have no tokenizer.json, and the page tokenizes text in the "
                        "browser: export them with tokenizer=... (or from a model folder that holds one)")
    else:
        unsupported = web_tokenizer.unsupported(json.loads((folder / info.tokenizer).read_text(encoding="utf-8")))
        if unsupported:
            problems.append(f"the artifacts' tokenizer.json is not one the page's tokenizer reads (BERT WordPiece): "
                            f"{'; '.join(unsupported)}. Train these artifacts in Python with ortnb.edge.train")
    if set(info.inputs) - {"input_ids", "attention_mask"}:
        problems.append(f"the artifacts' graph takes {', '.join(info.inputs)}; the page feeds input_ids and "
                        "attention_mask only")
    if problems:
        raise ConfigError(problems)


def _bundled_rows(rows, info: manifest.Manifest, tokenizer: Path, what: str) -> tuple[list[dict], batches.Encoded]:
    """([{"text", "label"}] with labels as class ids, the rows encoded), after the checks ortnb.edge.train makes of
    the same rows."""
    found, where, name = batches.read_named(rows, what)
    encoded = batches.encode(found, info, tokenizer, name, where)  # labels the model lacks, bad text: refused here
    text = next((c for c in batches.TEXT_COLUMNS if c in found[0]), None)
    if text is None:
        raise ConfigError(f"{name} holds input_ids, not text: the page tokenizes text itself. Give a text column "
                          f"({' or '.join(batches.TEXT_COLUMNS)})")
    return [{"text": row[text], "label": int(label)} for row, label in zip(found, encoded.labels)], encoded


def _batches(encoded: batches.Encoded, info: manifest.Manifest, settings: EdgeConfig) -> list[list[int]]:
    """The rows of each step's batch, drawn as ortnb.edge.train draws them for the same seed and batch size."""
    order = batches.Batches(encoded, settings.batch_size, settings.seed, info.pad_token_id)
    return [[int(i) for i in order.indices(step)] for step in range(1, settings.steps + 1)]


def _destination(out_dir, artifacts: Path) -> Path:
    out = Path(out_dir).expanduser().resolve()
    if out == artifacts or artifacts in out.parents:
        raise ConfigError(f"out_dir {str(out)!r} is inside the artifacts folder: write the bundle elsewhere "
                          "(it copies the artifacts into itself)")
    if out.is_file():
        raise ConfigError(f"out_dir {str(out)!r} is a file: give a folder for the bundle")
    out.parent.mkdir(parents=True, exist_ok=True)
    return out


def _names(has_data: bool, has_eval: bool) -> list[str]:
    """The relative paths of the files a bundle writes (bundle.json aside)."""
    return [*PAGE_FILES, *(f"{RUNTIME_FOLDER}/{name}" for name in web_runtime.FILES),
            *(f"{ARTIFACTS_FOLDER}/{name}" for name in ARTIFACT_FILES),
            *([DATA_FILE] if has_data else []), *([EVAL_FILE] if has_eval else [])]


def identity(folder: Path, info: manifest.Manifest) -> str:
    """The sha256 of the export's initial checkpoint: which artifacts weights downloaded from a page belong to."""
    recorded = info.files.get(manifest.CHECKPOINT, {}).get("sha256")
    return recorded or manifest.file_facts(folder, [manifest.CHECKPOINT])[manifest.CHECKPOINT]["sha256"]


def _description(info: manifest.Manifest, folder: Path, settings: EdgeConfig, has_data: bool,
                 has_eval: bool) -> dict:
    from .. import __version__

    labels = [str(info.id2label.get(str(i), i)) for i in range(info.num_labels)]
    return {
        "format": FORMAT, "ortnb": __version__, "onnxruntime_web": web_runtime.VERSION,
        "identity": identity(folder, info),
        "model": {"inputs": info.inputs, "label_input": info.label_input, "output": info.output,
                  "labels": labels, "seq_len": info.seq_len, "pad_token_id": info.pad_token_id,
                  "vocab_size": info.vocab_size, "selection": info.selection,
                  "trainable_parameters": info.trainable_parameters, "frozen_parameters": info.frozen_parameters,
                  "source": info.source},
        "training": {"steps": settings.steps, "batch_size": settings.batch_size,
                     "learning_rate": settings.learning_rate, "seed": settings.seed, "threads": settings.threads,
                     "schedule": "linear decay from learning_rate at step 1 to 0 after the last step, computed in "
                                 "the optimizer graph (ONNX Runtime Web 1.19.2 cannot set a rate)",
                     "pad_to_multiple": batches.PAD_TO_MULTIPLE},
        # The pinned values, not the copied files' own: the page loads each with them as subresource integrity.
        "runtime": {"folder": RUNTIME_FOLDER, "script": web_runtime.API_SCRIPT, "loader": web_runtime.LOADER,
                    "wasm": web_runtime.WASM, "files": list(web_runtime.FILES),
                    "integrity": dict(web_runtime.FILE_INTEGRITY)},
        "artifacts": {name: f"{ARTIFACTS_FOLDER}/{name}" for name in ARTIFACT_FILES},
        "data": DATA_FILE if has_data else None, "eval_data": EVAL_FILE if has_eval else None,
    }


def _write(scratch: Path, folder: Path, info: manifest.Manifest, runtime: Path, settings: EdgeConfig) -> None:
    page = resources.files("ortnb.edge") / "web"
    for name in PAGE_FILES:
        (scratch / name).write_bytes((page / name).read_bytes())
    (scratch / RUNTIME_FOLDER).mkdir()
    for name in web_runtime.FILES:  # the bytes checked against the pins are the bytes copied
        (scratch / RUNTIME_FOLDER / name).write_bytes(web_runtime.read_checked(runtime, name))
    target = scratch / ARTIFACTS_FOLDER
    target.mkdir()
    for name in (manifest.TRAINING_MODEL, manifest.EVAL_MODEL, manifest.CHECKPOINT):
        shutil.copyfile(folder / name, target / name)
    shutil.copyfile(folder / info.tokenizer, target / manifest.TOKENIZER)
    web_schedule.scheduled_optimizer(folder / manifest.OPTIMIZER_MODEL, target / manifest.OPTIMIZER_MODEL,
                                     peak=settings.learning_rate, steps=settings.steps)


def _write_json(path: Path, value) -> None:
    path.write_text(json.dumps(value, ensure_ascii=False, indent=1), encoding="utf-8")
