"""Weights trained in a browser tab, back in Python: the file the page downloads becomes an edge checkpoint,
and through ``to_pytorch`` a transformers model.

The file (written by app.js's ``weightsFile``): the magic ``ORTNBW1\\n``, a little-endian uint32 with the
length of a UTF-8 JSON header, the header, then the trainable weights as little-endian float32 in the order
ONNX Runtime's ``getContiguousParameters(true)`` gives them (the order ``Module.copy_buffer_to_parameters``
reads). The header names the export the weights belong to (the sha256 of its initial checkpoint), so weights
from other artifacts are refused instead of copied into the wrong tensors.
"""

from __future__ import annotations

import json
import struct
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ..errors import ConfigError
from . import loop, manifest

MAGIC = b"ORTNBW1\n"
FORMAT = "ortnb-browser-weights/1"


@dataclass(frozen=True)
class BrowserWeights:
    header: dict
    values: np.ndarray

    @property
    def step(self) -> int:
        return self.header["step"]  # read() checked it: a whole number, 0 or more


def is_browser_weights(path) -> bool:
    path = Path(path)
    if not path.is_file():
        return False
    with open(path, "rb") as handle:
        return handle.read(len(MAGIC)) == MAGIC


def read(path) -> BrowserWeights:
    path = Path(path).expanduser()
    if not path.is_file():
        raise FileNotFoundError(f"no weights file {str(path)!r}: download it from the page's 'Download weights'")
    payload = path.read_bytes()
    if not payload.startswith(MAGIC):
        raise ConfigError(f"{path} is not a weights file the ortnb page downloads (it does not start with "
                          f"{MAGIC!r}): download the weights again from the page")
    start = len(MAGIC) + 4
    if len(payload) < start:
        raise ConfigError(f"{path} is cut short ({len(payload)} bytes): download the weights again")
    (length,) = struct.unpack("<I", payload[len(MAGIC):start])
    try:
        header = json.loads(payload[start:start + length].decode("utf-8"))
    except (UnicodeDecodeError, ValueError):
        raise ConfigError(f"{path} has a damaged header: download the weights again") from None
    problems = header_problems(header)
    if problems:
        raise ConfigError(f"{path} has a header the page does not write ({'; '.join(problems)}): the file was "
                          "edited or comes from elsewhere. Download the weights again from the page")
    body = payload[start + length:]
    expected = 4 * header["parameters"]
    if len(body) != expected:
        raise ConfigError(f"{path} holds {len(body):,} bytes of weights, but its header promises "
                          f"{expected:,} ({header['parameters']} float32 values): the file is cut short "
                          "or damaged. Download the weights again")
    return BrowserWeights(header, np.frombuffer(body, dtype="<f4").copy())


def header_problems(header) -> list[str]:
    """What in a downloaded file's header app.js's weightsFile never writes: each field named, with what it held."""
    if not isinstance(header, dict):
        return [f"the header is a JSON {type(header).__name__}, not an object"]
    problems = [] if header.get("format") == FORMAT else [f"format is {header.get('format')!r}, not {FORMAT!r}"]
    for field in ("parameters", "step"):
        value = header.get(field)
        if not _count(value):
            problems.append(f"{field} is {json.dumps(value)}, not a whole number 0 or more")
    if not isinstance(header.get("identity"), str):
        problems.append(f"identity is {json.dumps(header.get('identity'))}, not the export's checkpoint hash")
    return problems


def _count(value) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 0


def non_finite(tensors: dict) -> list[str]:
    """Lines naming each tensor holding NaN or infinite values (name -> array), largest count first."""
    counts = {name: int(np.size(values) - np.isfinite(values).sum()) for name, values in tensors.items()}
    found = sorted(((count, name) for name, count in counts.items() if count), key=lambda item: (-item[0], item[1]))
    return [f"{name} ({count:,} of {np.size(tensors[name]):,} values)" for count, name in found]


def non_finite_words(source, bad: list[str]) -> str:
    """Why weights with NaN or infinite values are refused, and the way out."""
    shown = ", ".join(bad[:3]) + (f" and {len(bad) - 3} more tensors" if len(bad) > 3 else "")
    return (f"{source} holds NaN or infinite weights, in {shown}: training diverged, and a model made from them "
            "predicts nothing. Train again with a lower learning rate (ortnb.edge.web_bundle(..., learning_rate=...) "
            "or `ortnb edge web --lr`), or use weights downloaded before the loss became NaN")


def describe(path: Path) -> str:
    """What a path given as an argument holds, in words: a message about arguments given the other way round
    says what it was given, not only what it wanted."""
    if is_browser_weights(path):
        return f"{str(path)!r} (weights a page downloaded)"
    if path.is_file():
        return f"{str(path)!r} (a file)"
    if (path / manifest.FILE).is_file():
        return f"{str(path)!r} (an artifacts folder)"
    return f"{str(path)!r} ({'a folder' if path.is_dir() else 'nothing there'})"


def check_arguments(artifacts_dir, downloaded) -> None:
    """Refuse the two paths of load_browser_weights the other way round, or of the wrong kind, before anything
    loads: to_pytorch takes the download first, so its order is easily carried over here."""
    folder, weights = Path(artifacts_dir).expanduser(), Path(downloaded).expanduser()
    if folder.is_file() and weights.is_dir():
        raise ConfigError(f"load_browser_weights got its two paths the other way round: artifacts_dir is "
                          f"{describe(folder)} and downloaded is {describe(weights)}. The artifacts folder the web "
                          "bundle was made from comes first here, the file the page's 'Download weights' gave second "
                          f"(to_pytorch takes them in the other order): call load_browser_weights({str(weights)!r}, "
                          f"{str(folder)!r})")
    if weights.is_dir():
        raise ConfigError(f"downloaded is {describe(weights)}, where the weights file the page's 'Download weights' "
                          "gave (ortnb-weights-step-N.bin) is expected: pass that file")
    if folder.is_file():
        raise ConfigError(f"artifacts_dir is {describe(folder)}, where the artifacts folder the web bundle was made "
                          f"from (the one holding {manifest.FILE}) is expected: pass that folder")


def load_browser_weights(artifacts_dir, downloaded, out=None) -> Path:
    """Put the weights a page trained (the file its 'Download weights' gives) into an edge checkpoint of the
    artifacts in ``artifacts_dir``; returns its path (default: beside the download, ``<name>.ckpt``).

    The checkpoint resumes with ``ortnb.edge.train(..., resume_from=path)`` and loads into PyTorch with
    ``ortnb.edge.to_pytorch(path, artifacts_dir)`` (or pass the downloaded file there directly). The browser's
    optimizer moments are not in the download: a resumed run starts them again."""
    check_arguments(artifacts_dir, downloaded)
    from onnxruntime import OrtValue
    from onnxruntime.training import api

    from .web_build import identity

    folder = manifest.check_folder(artifacts_dir)
    info = manifest.Manifest.read(folder)
    weights = read(downloaded)
    if weights.header.get("identity") != identity(folder, info):
        raise ConfigError(f"{downloaded} was trained from other artifacts than {folder} (its export's checkpoint "
                          "differs): load it with the artifacts the bundle was made from")
    if weights.values.size != info.trainable_parameters:
        raise ConfigError(f"{downloaded} holds {weights.values.size:,} weights; {folder} trains "
                          f"{info.trainable_parameters:,}: load it with the artifacts the bundle was made from")
    state = api.CheckpointState.load_checkpoint(str(folder / manifest.CHECKPOINT))
    module = api.Module(str(folder / manifest.TRAINING_MODEL), state, str(folder / manifest.EVAL_MODEL),
                        device="cpu", session_options=loop.session_options(1))
    # Module's wrapper hands the value to C++ as given, and C++ takes the pybind OrtValue inside the Python one.
    module.copy_buffer_to_parameters(OrtValue.ortvalue_from_numpy(weights.values)._ortvalue, True)
    if not np.isfinite(weights.values).all():  # named by tensor, read back in the order ORT copied them
        bad = non_finite({name: np.asarray(state.parameters[name].data) for name in info.trainable})
        raise ConfigError(non_finite_words(downloaded, bad))
    state.properties[loop.STEP_PROPERTY] = weights.step
    target = Path(out) if out is not None else Path(downloaded).with_suffix(".ckpt")
    partial = target.with_name(target.name + ".partial")
    api.CheckpointState.save_checkpoint(state, str(partial), include_optimizer_state=False)
    partial.replace(target)
    return target
