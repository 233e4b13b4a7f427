"""A saved model's weight files, read without loading them: is each safetensors file whole, which tensors does it
hold, and do they fit the architecture its config.json names.

Cheap enough for validate(), which the form calls on every change: only the headers are read (a few KB of a
file of any size), and the architecture is built on the meta device (no memory for its weights). The words
are the user's: the file is named, with why it cannot be used and what to do, never a bare SafetensorError.
"""

from __future__ import annotations

import functools
import json
import re
import struct
from dataclasses import dataclass
from pathlib import Path

from ..errors import WeightsError
from ..vocabulary import Task

SAFETENSORS = "model.safetensors"
SAFETENSORS_INDEX = "model.safetensors.index.json"
NEW_HEAD_PREFIXES = ("classifier.", "score.")  # the heads ortnb sizes for the data (builtin.load_model too)
_HEADER_LIMIT = 100 * 2**20  # safetensors refuses headers above 100 MB: a larger length is no header
RESAVE = ("save the model again with model.save_pretrained(folder), or copy the folder again from where it came "
          "from")


def weight_files(folder: str | Path) -> list[Path]:
    """The safetensors files of a save_pretrained folder: the one file, or every shard its index lists."""
    folder = Path(folder)
    index = folder / SAFETENSORS_INDEX
    if index.is_file():
        try:
            shards = sorted(set(json.loads(index.read_text())["weight_map"].values()))
        except (OSError, ValueError, KeyError, TypeError, AttributeError):
            return [index]  # file_problem names it
        return [folder / name for name in shards]
    return [folder / SAFETENSORS] if (folder / SAFETENSORS).exists() else []


def file_problem(path: str | Path) -> str | None:
    """Why ``path`` is no whole safetensors file (None when it is one): cut short, not safetensors, or missing."""
    path = Path(path)
    try:
        header_and_size(path)
    except WeightsError as error:
        return str(error)
    return None


def header_and_size(path: Path) -> tuple[dict, int]:
    """(tensor name -> {dtype, shape, data_offsets}, the file's size); WeightsError naming the file when it is not
    a whole safetensors file. A cut file is told by its size: the header lists where every tensor ends."""
    if path.name == SAFETENSORS_INDEX:
        raise WeightsError(f"{path} is damaged (not the JSON index of the weight shards); {RESAVE}.")
    try:
        size = path.stat().st_size
        with open(path, "rb") as handle:
            head = handle.read(8)
            length = struct.unpack("<Q", head)[0] if len(head) == 8 else None
            text = handle.read(length) if length is not None and length <= min(_HEADER_LIMIT, size - 8) else None
    except FileNotFoundError:
        raise WeightsError(f"{path} is missing (the folder's index lists it); {RESAVE}.") from None
    except OSError as error:
        raise WeightsError(f"{path} cannot be read ({error.strerror or error}).") from None
    header = _parse_header(text)
    if header is None:
        raise WeightsError(f"{path} is not a safetensors file (its first bytes are no safetensors header: random "
                           f"bytes, another format, or a file cut short at its start); {RESAVE}.")
    end = max((info["data_offsets"][1] for info in header.values()), default=0)
    if size < 8 + length + end:
        raise WeightsError(f"{path} is cut short: {size:,} of its {8 + length + end:,} bytes are there (a save "
                           f"interrupted by a kill or a full disk); {RESAVE}.")
    return header, size


def _parse_header(text: bytes | None) -> dict | None:
    try:
        header = json.loads(text) if text else None
    except ValueError:
        return None
    if not isinstance(header, dict):
        return None
    header.pop("__metadata__", None)
    ok = all(isinstance(info, dict) and isinstance(info.get("data_offsets"), list) and len(info["data_offsets"]) == 2
             for info in header.values())
    return header if ok else None


def folder_problems(folder: str | Path) -> list[str]:
    """Why the weights of a save_pretrained folder cannot be loaded (empty when every file is whole)."""
    return [problem for problem in map(file_problem, weight_files(folder)) if problem]


def check_folder(folder: str | Path) -> None:
    """Raise WeightsError naming the first damaged weight file of ``folder``, before transformers meets it."""
    problems = folder_problems(folder)
    if problems:
        raise WeightsError(problems[0])


def is_whole_save(folder: str | Path) -> bool:
    """Whether ``folder`` holds a whole save_pretrained output by inspection (for folders without ortnb's marker):
    a readable config.json and whole safetensors weights."""
    folder = Path(folder)
    try:
        json.loads((folder / "config.json").read_text())
    except (OSError, ValueError):
        return False
    return bool(weight_files(folder)) and not folder_problems(folder)


def saved_shapes(folder: str | Path) -> dict[str, list[int]]:
    """Tensor name -> shape of every weight in ``folder`` (WeightsError when a file is damaged)."""
    shapes = {}
    for path in weight_files(folder):
        header, _ = header_and_size(path)
        shapes.update({name: info.get("shape") for name, info in header.items()})
    return shapes


# -- do the weights fit the architecture? ---------------------------------------------------------


@dataclass(frozen=True)
class Fit:
    """How a folder's weights meet the model its config.json builds. ``missing``: weights of the model's body
    the file lacks (they would start random; a new head is not counted). ``unused``: the file's weights the
    model has no place for (a dropped head or pooler, or another architecture's weights); ``misplaced``: those
    of them inside a module the model has (a renamed or foreign parameter, never a dropped part)."""

    missing: tuple[str, ...] = ()
    unused: tuple[str, ...] = ()
    misplaced: tuple[str, ...] = ()
    expected: int = 0
    saved: int = 0

    @property
    def fits(self) -> bool:
        return not self.missing and not self.misplaced


def fit(folder: str | Path, task: str) -> Fit | None:
    """The Fit of a local folder's weights for ``task`` (None when it cannot be told cheaply: no safetensors, a
    config transformers cannot build, or an architecture whose loading converts weights beyond renames) or a
    damaged weight file (``folder_problems`` names it)."""
    folder = Path(folder)
    files = weight_files(folder)
    if not files or folder_problems(folder):
        return None
    stamp = tuple((str(p), p.stat().st_mtime_ns) for p in [folder / "config.json", *files] if p.exists())
    return _fit(str(folder), task, stamp)


@functools.lru_cache(maxsize=16)
def _fit(folder: str, task: str, stamp: tuple) -> Fit | None:
    model = _meta_model(folder, task)
    renames = _renames(model) if model is not None else None
    if renames is None:
        return None
    expected = set(model.state_dict())
    named = _aligned({_renamed(key, renames): key for key in saved_shapes(folder)}, expected, model.base_model_prefix)
    buffers = {name for name, _ in model.named_buffers()}  # saved by older versions, dropped on load
    unused = sorted(k for k in set(named) - expected - buffers if not _ignored(model, "unexpected", k))
    tied = set(getattr(model, "all_tied_weights_keys", None) or {})
    body = _body(model.base_model_prefix, expected)
    missing = sorted(k for k in expected - set(named) - tied if body(k) and not _ignored(model, "missing", k))
    modules = {name for name, _ in model.named_modules()}
    misplaced = [k for k in unused if k.rpartition(".")[0] in modules]
    return Fit(tuple(missing), tuple(named[k] for k in unused), tuple(named[k] for k in misplaced), len(expected),
               len(named))


def _ignored(model, which: str, key: str) -> bool:
    return any(re.search(pattern, key) for pattern in getattr(model, f"_keys_to_ignore_on_load_{which}", None) or [])


def _meta_model(folder: str, task: str):
    import torch
    import transformers

    from ..progress import without_progress_bars

    auto = transformers.AutoModelForCausalLM if task == Task.CAUSAL_LM else transformers.AutoModelForSequenceClassification
    try:
        with without_progress_bars(), torch.device("meta"):
            config = transformers.AutoConfig.from_pretrained(folder)
            return auto.from_config(config)
    except Exception:  # noqa: BLE001 - a config transformers cannot build: the loader says why, in its words
        return None


def _renames(model) -> list[tuple[str, str]] | None:
    """The key renames transformers applies when it loads ``model`` (legacy LayerNorm.gamma, ...); None when it
    also converts weights (fuses experts, splits tensors), which only a real load can follow."""
    try:
        from transformers.modeling_utils import get_model_conversion_mapping
    except ImportError:
        return []
    pairs = []
    for transform in get_model_conversion_mapping(model):
        if type(transform).__name__ != "WeightRenaming":
            return None
        pairs += list(zip(transform.source_patterns, transform.target_patterns))
    return pairs


def _renamed(key: str, renames: list[tuple[str, str]]) -> str:
    for source, target in renames:
        key = re.sub(source, target, key)
    return key


def _aligned(saved: dict[str, str], expected: set[str], prefix: str) -> dict[str, str]:
    """{the model's name: the file's name}: a base model's weights (no ``bert.``) loaded under a head gain the
    prefix, and a head model's weights loaded as a base model lose it, as transformers does."""
    dotted = prefix + "." if prefix else ""
    saved_has = dotted and any(k.startswith(dotted) for k in saved)
    model_has = dotted and any(k.startswith(dotted) for k in expected)
    if model_has and not saved_has:
        return {dotted + k: original for k, original in saved.items()}
    if saved_has and not model_has:
        return {(k[len(dotted):] if k.startswith(dotted) else k): original for k, original in saved.items()}
    return saved


def _body(prefix: str, expected: set[str]):
    """is_body(key): the key is in the base model, not in a head (new, or another task's, left unused)."""
    dotted = prefix + "." if prefix else ""
    if dotted and any(k.startswith(dotted) for k in expected):
        return lambda key: key.startswith(dotted)
    return lambda key: not key.startswith(NEW_HEAD_PREFIXES)


def describe_misfit(folder: str | Path, found: Fit, config: dict | None = None) -> str:
    """The refusal: the file, the counts, a few names, why it matters and the way out."""
    folder = Path(folder)
    config = config or {}
    architecture = (config.get("architectures") or [config.get("model_type", "the model")])[0]
    file = (weight_files(folder) or [folder / SAFETENSORS])[0]
    shown = ", ".join([*found.missing[:2], *(found.misplaced or found.unused)[:2]])
    return (f"{folder / 'config.json'} names {architecture}, but {file} does not hold its weights: "
            f"{len(found.missing)} of the model's {found.expected} weights are missing from the file and "
            f"{len(found.unused)} of the file's {found.saved} have no place in the model (e.g. {shown}). Training "
            "would start the missing ones from random values. Save the model and its config together with "
            "model.save_pretrained(folder), or fix config.json's model_type and architectures to name the model "
            "that wrote the weights.")
