"""The device's data: rows read without PyTorch or transformers, encoded for the graph's inputs, and
served in batches padded to their longest row. Each step's batch follows from (seed, step) alone, so a
resumed run sees the data it would have seen without the break.

Columns are read as runs read them (``data.columns``): the text in ``text`` (or token ids in ``input_ids``) and
the class in ``label``, or the columns a ``Columns`` mapping names; a file that trains one way trains the other."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ..data import checks, readers
from ..data.columns import DEFAULT, LABEL, TEXT, Columns, missing_column
from ..errors import ConfigError
from .manifest import Manifest

TEXT_COLUMNS = (TEXT,)  # one name, the runs' (a 'sentence' column was taken here and refused by runs)
PAD_TO_MULTIPLE = 8  # as ortnb's other runs pad: fewer distinct shapes for ORT to plan


def read_rows(dataset) -> list[dict]:
    """Rows from a .jsonl/.json/.csv path, a list of dicts, a dict of columns or a pandas DataFrame."""
    if isinstance(dataset, (str, Path)):
        return _read_file(Path(dataset).expanduser())
    if hasattr(dataset, "to_dict") and hasattr(dataset, "columns"):  # pandas
        return dataset.to_dict("records")
    if hasattr(dataset, "column_names") and hasattr(dataset, "to_list"):  # datasets.Dataset
        return dataset.to_list()
    if isinstance(dataset, dict):
        columns = {k: list(v) for k, v in dataset.items()}
        lengths = {len(v) for v in columns.values()}
        if len(lengths) > 1:
            raise ConfigError(f"dataset: the columns have different lengths ({sorted(lengths)})")
        return [dict(zip(columns, values)) for values in zip(*columns.values())]
    if isinstance(dataset, list) and all(isinstance(row, dict) for row in dataset):
        return dataset
    raise ConfigError(f"dataset: pass a .jsonl/.json/.csv path, a list of dicts, a dict of columns or a DataFrame, "
                      f"not {type(dataset).__name__}")


def read_named(dataset, what: str = "dataset",
               columns: Columns = DEFAULT) -> tuple[list[dict], list[str] | None, str]:
    """(rows, where each row is, name): a file's rows are named by their line ("rows.jsonl line 3") as
    validate() names them for runs, so the same bad row reads the same in both; other rows by number.
    With a ``columns`` mapping the rows come back under the names runs read (``text``, ``label``), so what is
    stored for the worker needs no mapping of its own."""
    if isinstance(dataset, (str, Path)):
        path = Path(dataset).expanduser()
        try:
            found = readers.read_records(path, columns)
        except ConfigError as error:  # readers says "dataset:"; an eval file's problem names eval_dataset
            raise ConfigError([what + p[len("dataset"):] if p.startswith("dataset:") else p
                               for p in error.problems]) from None
        name = f"{what}: {path.name}"
        return _renamed([row for _, row in found], columns, name), [where for where, _ in found], name
    return _renamed(read_rows(dataset), columns, what), None, what


def _renamed(rows: list[dict], columns: Columns, what: str) -> list[dict]:
    """Rows with the mapped columns under the names runs read; the columns must be there (said as runs say it)."""
    if not columns.mapped or not rows:
        return rows
    found = list(dict.fromkeys(key for row in rows for key in row))
    missing = [column for column in (columns.text, columns.label) if column not in found]
    if missing:
        raise ConfigError([missing_column(what, column, found, None, columns) for column in missing])
    return [{TEXT: row.get(columns.text), LABEL: row.get(columns.label)} for row in rows]


def _read_file(path: Path) -> list[dict]:
    # The reader runs and validate() use (utf-8-sig: an Excel CSV's byte-order mark is dropped; CSV values
    # typed as pandas would type them), so a file passes or fails the same way everywhere.
    return readers.read_rows(path)


@dataclass
class Encoded:
    """Token ids per row (unpadded) and labels."""

    ids: list[np.ndarray]
    labels: np.ndarray

    def __len__(self) -> int:
        return len(self.ids)


def encode(rows: list[dict], info: Manifest, tokenizer_path: Path | None, what: str = "dataset",
           where: list[str] | None = None) -> Encoded:
    """Check the columns against the graph's inputs, then tokenize (text) or take ids as given. ``where``:
    what messages call each row (read_named's file lines); rows are numbered from 1 without it."""
    where = where or [f"row {i + 1}" for i in range(len(rows))]
    if not rows:
        raise ConfigError(f"{what} is empty: it needs at least one row")
    found = list(rows[0])
    text = TEXT if TEXT in found else None  # token ids in input_ids stand in for the text
    missing = [column for column in (TEXT, LABEL) if column not in found
               and not (column == TEXT and "input_ids" in found)]
    if missing:
        # the message runs get for the same file (data.columns), naming what the graph takes instead of text
        raise ConfigError([missing_column(what, column, found, None, mappable=False)
                           + (" Or give input_ids instead of text." if column == TEXT else "") for column in missing])
    label = LABEL
    labels = _labels([row.get(label) for row in rows], info, what, where, label)
    if text is not None:
        # The text checks runs get (data.checks): a missing, null, number or list text, or all texts empty,
        # is refused by name, never trained on as str(None) or "".
        problems = checks.text_problems(what, [(at, row.get(text)) for at, row in zip(where, rows)], text)
        if problems:
            raise ConfigError(problems)
        ids = _tokenize([row[text] for row in rows], info, tokenizer_path, what)
    else:
        ids = [np.asarray(row["input_ids"], dtype=np.int64)[:info.seq_len] for row in rows]
    problems = _id_problems(ids, info, what, where)
    if problems:
        raise ConfigError(problems)
    return Encoded(ids, labels)


def _id_problems(ids: list[np.ndarray], info: Manifest, what: str, where: list[str],
                 most: int = 5) -> list[str]:
    """Token ids the word embedding has no row for, named by row (the first ``most`` rows). Unchecked, ONNX
    Runtime's Gather stops the first step with "indices element out of data bounds"."""
    if not info.vocab_size:
        return []
    bad = [(at, row) for at, row in zip(where, ids) if row.size and (row.min() < 0 or row.max() >= info.vocab_size)]
    problems = []
    for at, row in bad[:most]:
        outside = row[(row < 0) | (row >= info.vocab_size)]
        problems.append(f"{what} {at} has token id {int(outside[0])}, but the model's vocabulary has "
                        f"{info.vocab_size:,} tokens (ids 0 to {info.vocab_size - 1:,}): give input_ids from the "
                        "model's own tokenizer (or the artifacts' tokenizer.json), or export a model whose "
                        "embeddings cover these ids")
    if len(bad) > most:
        problems.append(f"{what}: {len(bad) - most} more rows have token ids outside 0 to {info.vocab_size - 1:,}")
    return problems


def _labels(values: list, info: Manifest, what: str, where: list[str], column: str = "label") -> np.ndarray:
    names = {str(name): int(index) for index, name in info.id2label.items()}
    out = []
    for at, value in zip(where, values):
        if value is None or isinstance(value, (bool, float)):
            # A missing, boolean or fractional label: the words validate() gives runs for the same row
            raise ConfigError(checks._label_value_problem(what, value, at, column))
        if isinstance(value, str) and value in names:
            value = names[value]
        elif isinstance(value, str) and value.strip().lstrip("-").isdigit():
            value = int(value)
        if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or not 0 <= value < info.num_labels:
            known = ", ".join(names) if names else f"0 to {info.num_labels - 1}"
            raise ConfigError(f"{what} {at} has label {value!r}; the model's labels are {known}")
        out.append(int(value))
    return np.asarray(out, dtype=np.int64)


def batch_of(artifacts_dir, rows) -> tuple[dict, np.ndarray]:
    """All ``rows`` as one batch for the artifacts' graph: ({input name: array}, labels)."""
    info = Manifest.read(Path(artifacts_dir))
    tokenizer = Path(artifacts_dir) / info.tokenizer if info.tokenizer else None
    encoded = encode(read_rows(rows), info, tokenizer)
    return Batches(encoded, len(encoded), 0, info.pad_token_id).rows(np.arange(len(encoded)))


def _tokenize(texts: list[str], info: Manifest, tokenizer_path, what: str) -> list[np.ndarray]:
    tokenizer_path = Path(tokenizer_path) if tokenizer_path is not None else None
    if tokenizer_path is None or not tokenizer_path.exists():
        raise ConfigError(f"{what} holds text, but the artifacts have no tokenizer.json: export them with "
                          "tokenizer=..., or give input_ids instead of text")
    from tokenizers import Tokenizer  # Rust, no PyTorch: what an app would ship too

    tokenizer = Tokenizer.from_file(str(tokenizer_path))
    tokenizer.no_padding()
    tokenizer.enable_truncation(info.seq_len)
    return [np.asarray(e.ids, dtype=np.int64) for e in tokenizer.encode_batch(texts)]


class Batches:
    """Batch ``step`` (1-based) of a seeded shuffle, epoch after epoch."""

    def __init__(self, data: Encoded, batch_size: int, seed: int, pad_id: int):
        self.data, self.batch_size, self.seed, self.pad_id = data, batch_size, seed, pad_id

    def indices(self, step: int) -> np.ndarray:
        n = len(self.data)
        start = (step - 1) * self.batch_size
        picked = []
        while len(picked) < self.batch_size:
            epoch, offset = divmod(start + len(picked), n)
            order = np.random.default_rng([self.seed, epoch]).permutation(n)
            picked.extend(order[offset:offset + self.batch_size - len(picked)])
        return np.asarray(picked)

    def batch(self, step: int) -> tuple[dict, np.ndarray]:
        """({input name: array}, labels) for optimizer step ``step``."""
        return self.rows(self.indices(step))

    def rows(self, chosen) -> tuple[dict, np.ndarray]:
        ids, mask = pad([self.data.ids[i] for i in chosen], self.pad_id)
        return {"input_ids": ids, "attention_mask": mask}, self.data.labels[chosen]


def pad(rows: list[np.ndarray], pad_id: int) -> tuple[np.ndarray, np.ndarray]:
    """(input_ids, attention_mask) padded on the right to the longest row, rounded up to a multiple of 8."""
    longest = max(len(r) for r in rows)
    width = -(-longest // PAD_TO_MULTIPLE) * PAD_TO_MULTIPLE
    ids = np.full((len(rows), width), pad_id, dtype=np.int64)
    mask = np.zeros((len(rows), width), dtype=np.int64)
    for index, row in enumerate(rows):
        ids[index, :len(row)], mask[index, :len(row)] = row, 1
    return ids, mask
