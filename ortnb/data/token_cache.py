"""Tokenized data kept between runs. Every run used to read and tokenize its dataset again (1 to 3 s for
rotten_tomatoes on 2 cores, more for a large file), and compare/tune pay it once per measurement. An entry is
keyed by everything the tokenized rows depend on: the tokenizer (its whole serialized form, not its name),
the data's content (a file's bytes, a folder's files; a built-in's name and ortnb's version) and the columns
read from it, the task, seq_len, padding, the held-out plan, the seed, the rows kept and the class names, and
the versions of datasets and tokenizers. An edited data file or another tokenizer is another key, so a stale
entry is never read; a damaged one is said once, deleted and tokenized again.

An entry records a hash of its own content when it is written (every file of train/ and eval/, and what
entry.json says of them) and is read only while that hash still holds: an entry edited in place (labels
flipped and saved back) is said in one line, deleted and tokenized again, never trained on.

    $ORTNB_CACHE/tokenized/<key>/entry.json   written last: the entry is whole; holds its content hash
                                 train/, eval/  datasets.save_to_disk
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import time
from dataclasses import dataclass
from pathlib import Path

from .. import cache_folder, files
from ..vocabulary import Task
from . import preparation
from .builtin import DATASETS
from .columns import DEFAULT, Columns

FORMAT = 3  # 2: entries hold a bucket of rows and the count before it (train_total); 3: and their content hash
KEEP = 16  # entries; the least recently used go first
ENTRY = "entry.json"


def cache_root() -> Path:
    return cache_folder.cache_root() / "tokenized"


@dataclass
class Lookup:
    """What the cache did for one prepare: ``hit`` (read from ``path``), or tokenized (and stored unless
    ``key`` is None: data or a tokenizer the cache cannot identify); ``note`` says a damaged entry once."""

    prepared: object
    hit: bool
    key: str | None
    path: Path | None
    seconds: float
    note: str | None = None

    def record(self) -> dict:
        """The fields of the run's ``data`` event."""
        return {"cached": self.hit, "cache_key": self.key, "seconds": round(self.seconds, 3), "note": self.note,
                "train_rows": len(self.prepared.train),
                "eval_rows": None if self.prepared.evaluation is None else len(self.prepared.evaluation)}


def prepare(dataset, task: str, tokenizer, seq_len: int, *, plan, seed: int = 0, train_samples: int | None = None,
            labels=None, padding: str = "max_length", root: Path | None = None, columns: Columns = DEFAULT) -> Lookup:
    """preparation.prepare, through the cache: the same rows, tokenized the same way.

    A short run keeps only the rows it reads (``train_samples``). Entries hold a bucket of rows instead
    (``rows_bucket``: a power of two, at least MIN_BUCKET), cut to the run's own rows when read, so runs of
    other lengths or batch sizes (tune's candidates, compare's configurations) share one entry."""
    began = time.perf_counter()
    root = Path(root) if root is not None else cache_root()
    bucket = rows_bucket(train_samples) if task != Task.CAUSAL_LM else None  # a causal LM reads all its blocks
    key = cache_key(dataset, task, tokenizer, seq_len, plan=plan, seed=seed, train_samples=bucket,
                    labels=labels, padding=padding, columns=columns)
    note = None
    if key is not None:
        found, note = _load(root / key)
        if found is not None:
            return Lookup(cut(found, train_samples, seed), True, key, root / key, time.perf_counter() - began)
    prepared = preparation.prepare(dataset, task, tokenizer, seq_len, plan=plan, seed=seed, train_samples=bucket,
                                   labels=labels, padding=padding, columns=columns)
    path = _store(root, key, prepared) if key is not None else None
    return Lookup(cut(prepared, train_samples, seed), False, key, path, time.perf_counter() - began, note)


MIN_BUCKET = 1024  # rows: tokenizing this many short texts takes about 0.1 s on 2 cores


def rows_bucket(train_samples: int | None) -> int | None:
    """The rows an entry holds for a run that reads ``train_samples`` (None: all of them)."""
    if not train_samples:
        return None
    return max(MIN_BUCKET, 1 << (int(train_samples) - 1).bit_length())


def cut(prepared, train_samples: int | None, seed: int):
    """The rows preparation.prepare(train_samples=...) keeps, from a bucket's: the bucket's first rows when it was
    itself a selection (a prefix of the same shuffle), else preparation.keep_rows of all of them."""
    from dataclasses import replace

    total, train = prepared.train_total, prepared.train
    if not train_samples or total is None or total <= train_samples:
        return prepared
    if len(train) < total:  # the bucket is the first rows of the shuffle that the run's rows begin
        return replace(prepared, train=train.select(range(train_samples)))
    return replace(prepared, train=preparation.keep_rows(train, train_samples, seed))


def cache_key(dataset, task: str, tokenizer, seq_len: int, *, plan, seed: int, train_samples: int | None, labels,
              padding: str, columns: Columns = DEFAULT) -> str | None:
    """The entry's name, or None where the data or the tokenizer cannot be identified by content (an
    in-memory dataset without a fingerprint, a slow tokenizer)."""
    import datasets
    import tokenizers

    from .. import __version__

    source, held_out, words = data_identity(dataset), data_identity(plan.dataset), tokenizer_identity(tokenizer)
    if source is None or words is None or (plan.dataset is not None and held_out is None):
        return None
    described = {"format": FORMAT, "ortnb": __version__, "datasets": datasets.__version__,
                 "tokenizers": tokenizers.__version__, "data": source, "eval_data": held_out, "tokenizer": words,
                 "columns": [columns.text, columns.label],
                 "task": task, "seq_len": seq_len, "padding": padding, "seed": seed, "train_samples": train_samples,
                 "plan": [plan.enabled, plan.fraction, plan.samples],
                 "labels": None if labels is None else [labels.count, labels.names, labels.mapped]}
    return hashlib.sha256(json.dumps(described, sort_keys=True, default=str).encode()).hexdigest()[:32]


BUILT_IN = tuple(DATASETS)  # the built-in datasets, keyed by name: they ship with ortnb


def data_identity(dataset) -> str | None:
    """The data's content as a digest: a file's bytes, a folder's files (names and bytes), a built-in's name
    (with ortnb's version in the key: the built-ins ship with it), a datasets.Dataset's fingerprint."""
    if dataset is None:
        return "none"
    if isinstance(dataset, str) and dataset in BUILT_IN:
        return f"built-in:{dataset}"
    if isinstance(dataset, (str, Path)):
        path = Path(dataset).expanduser()
        if path.is_file():
            return "file:" + _digest([path], path.parent)
        if path.is_dir():
            return "folder:" + _digest(sorted(p for p in path.rglob("*") if p.is_file()), path)
        return None
    fingerprint = getattr(dataset, "_fingerprint", None)
    return f"dataset:{fingerprint}" if fingerprint else None


def _digest(paths: list[Path], root: Path) -> str:
    digest = hashlib.sha256()
    for path in paths:
        digest.update(str(path.relative_to(root)).encode() + b"\0")
        with open(path, "rb") as handle:
            for block in iter(lambda: handle.read(1 << 20), b""):
                digest.update(block)
    return digest.hexdigest()


def tokenizer_identity(tokenizer) -> str | None:
    """A tokenizers-backed tokenizer's whole serialized form (vocabulary, normalizer, special tokens) and the
    Python-side settings that change its output; None for one without a backend (nothing to serialize exactly)."""
    backend = getattr(tokenizer, "backend_tokenizer", None)
    if backend is None:
        return None
    # Each call sets the backend's truncation and padding to that call's arguments (the key has seq_len and
    # padding): left in, a tokenizer would change identity once used. Clearing them is safe, as the next call
    # sets its own again.
    backend.no_truncation()
    backend.no_padding()
    settings = [type(tokenizer).__name__, tokenizer.padding_side, tokenizer.truncation_side,
                str(tokenizer.special_tokens_map), tokenizer.model_max_length]
    return hashlib.sha256(backend.to_str().encode() + json.dumps(settings, default=str).encode()).hexdigest()


class Edited(ValueError):
    """An entry whose content no longer matches the hash it recorded when it was written."""


def _load(path: Path):
    """(Prepared, None) for a whole entry, (None, None) for none, (None, note) for a damaged or edited one
    (deleted)."""
    from datasets import load_from_disk

    if not path.is_dir():
        return None, None
    try:
        entry = json.loads((path / ENTRY).read_text())
        if entry.get("format") != FORMAT:
            raise ValueError(f"format {entry.get('format')!r}, expected {FORMAT}")
        if entry.get("content") != content_hash(path, entry):
            raise Edited()
        train = load_from_disk(str(path / "train"))
        evaluation = load_from_disk(str(path / "eval")) if entry["eval_rows"] is not None else None
        if len(train) != entry["train_rows"] or (evaluation is not None and len(evaluation) != entry["eval_rows"]):
            raise ValueError("its row counts differ from what it recorded")
        os.utime(path / ENTRY)  # recently used: pruned last
        return preparation.Prepared(train, evaluation, entry["eval_texts"], entry.get("train_total")), None
    except Edited:
        shutil.rmtree(path, ignore_errors=True)
        return None, (f"the tokenized-data cache entry {path} was damaged or edited after it was written (its "
                      "content no longer matches the hash it recorded); tokenized the data again")
    except Exception as error:  # noqa: BLE001 - whatever a damaged entry raises (pyarrow's own errors too): tokenize
        shutil.rmtree(path, ignore_errors=True)
        return None, f"the tokenized-data cache entry {path} was damaged ({error}); tokenized the data again"


def content_hash(path: Path, entry: dict) -> str:
    """sha256 of the files save_to_disk wrote under train/ and eval/ (names and bytes) and of what entry.json says
    besides this hash: any edit of the rows, the held-out texts or the counts changes it. The cache-*.arrow files
    that datasets writes beside them on a shuffle or a map are not the entry's content, so they are left out."""
    parts = sorted(p for folder in ("train", "eval") if (path / folder).is_dir() for p in (path / folder).iterdir()
                   if p.is_file() and (p.name.startswith("data-") or p.suffix == ".json"))
    said = json.dumps({k: v for k, v in entry.items() if k != "content"}, sort_keys=True, default=str)
    return hashlib.sha256((_digest(parts, path) + said).encode()).hexdigest()


def _store(root: Path, key: str, prepared) -> Path | None:
    """Write the entry under a temporary name and rename it into place (a reader sees it whole or not at
    all); a cache that cannot be written (full disk, read-only home) costs the run nothing."""
    final = root / key
    staging = root / f".{key}.{os.getpid()}.tmp"
    try:
        staging.mkdir(parents=True, exist_ok=True)
        prepared.train.save_to_disk(str(staging / "train"))
        if prepared.evaluation is not None:
            prepared.evaluation.save_to_disk(str(staging / "eval"))
        entry = {"format": FORMAT, "train_rows": len(prepared.train),
                 "eval_rows": None if prepared.evaluation is None else len(prepared.evaluation),
                 "eval_texts": prepared.eval_texts, "train_total": prepared.train_total}
        entry["content"] = content_hash(staging, entry)  # the files as written: a later edit reads as a miss
        files.write_atomic(staging / ENTRY, json.dumps(entry))
        try:
            staging.rename(final)
        except OSError:  # another run stored the same entry first: theirs is as good
            shutil.rmtree(staging, ignore_errors=True)
        prune(root)
        return final
    except OSError:
        shutil.rmtree(staging, ignore_errors=True)
        return None


def prune(root: Path, keep: int = KEEP) -> list[str]:
    """Delete all but the ``keep`` most recently used whole entries; returns the names deleted."""
    entries = [p for p in root.iterdir() if (p / ENTRY).is_file()] if root.is_dir() else []
    entries.sort(key=lambda p: (p / ENTRY).stat().st_mtime, reverse=True)
    for old in entries[keep:]:
        shutil.rmtree(old, ignore_errors=True)
    return sorted(p.name for p in entries[keep:])
