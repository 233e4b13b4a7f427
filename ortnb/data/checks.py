"""A cheap look at training data before any run starts, shared by ``validate()`` and the worker.

The look reads the rows and the label column, never tokenizes: it finds what would otherwise fail
minutes into a run (a bad JSON line, a missing column, labels the classifier head cannot hold) and
infers the number of classes. Each message names the file and the line, row or column, and the way out.

The text and label columns are the ones RunConfig names (``columns.Columns``: ``text``/``label`` unless
``text_column``/``label_column`` say otherwise); messages name the column as the file does.

Lines are 1-based lines of a file; rows are 0-based indices of a ``datasets.Dataset`` (``ds[row]``).
Files are looked at once per (path, modification time, size, columns); built-in datasets are never read.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from pathlib import Path

from ..vocabulary import Task
from . import readers
from .builtin import DATASETS
from .columns import DEFAULT, LABEL, TEXT, Columns, missing_column

CLASSIFICATION = Task.SEQUENCE_CLASSIFICATION
ALL_EMPTY = ("{name}: every row's {column!r} is empty or blank, so the model would train on nothing but special "
             "tokens; put the text in the {column!r} column.")


@dataclass(frozen=True)
class Labels:
    """The classes a classification dataset holds: ``count`` ids 0..count-1 and, when known, their names."""

    count: int
    names: tuple[str, ...] | None = None
    """Class names in id order (string labels, sorted; or a ClassLabel feature's names)."""
    mapped: bool = False
    """True when the label column holds the names and the run maps them to ids."""

    @property
    def label2id(self) -> dict[str, int]:
        return {name: i for i, name in enumerate(self.names or ())}

    def model_kwargs(self) -> dict:
        """What ``from_pretrained``/a config needs so the head has ``count`` outputs and predictions are named."""
        if not self.names:
            return {"num_labels": self.count}
        return {"num_labels": self.count, "id2label": dict(enumerate(self.names)), "label2id": self.label2id}


@dataclass(frozen=True)
class Look:
    problems: tuple[str, ...] = ()
    labels: Labels | None = None
    rows: int | None = None  # None when unknown (built-ins, plain text)


# The built-in datasets (builtin.DATASETS) as a look finds them: rotten_tomatoes' two classes (fresh, rotten), and
# the causal-LM text of hamlet
BUILT_IN_COLUMNS = {name: [TEXT] if asset.task == Task.CAUSAL_LM else [TEXT, LABEL] for name, asset in DATASETS.items()}
BUILT_IN = {name: Look(labels=Labels(2)) if LABEL in columns else Look() for name, columns in BUILT_IN_COLUMNS.items()}


def look(dataset, task: str | None, columns: Columns = DEFAULT) -> Look:
    """Problems, labels and row count of ``dataset`` (a built-in name, a file or folder path, or a Dataset),
    reading the text and classes from ``columns``."""
    task = task or CLASSIFICATION
    if isinstance(dataset, str) and dataset in BUILT_IN:
        return _look_built_in(dataset, task, columns)
    if isinstance(dataset, (str, Path)):
        path = Path(dataset).expanduser()
        if not path.exists():
            return Look((f"{path} does not exist.",))
        stamp = _stamp(path)
        return _look_path(str(path), task, *stamp, columns)
    if hasattr(dataset, "column_names"):
        return _look_dataset_cached(dataset, task, columns)
    return Look((f"must be a name, a file path or a datasets.Dataset, got {type(dataset).__name__}.",))


def _look_built_in(name: str, task: str, columns: Columns) -> Look:
    """A built-in's columns are known: a column mapping that names others is said, not ignored."""
    found = BUILT_IN_COLUMNS[name]
    needed = columns.needed(task) if found != [TEXT] else [columns.text]
    missing = [column for column in needed if column not in found]
    return Look(tuple(f"{name} has no {column!r} column: its columns are {', '.join(map(repr, found))}; leave "
                      f"{columns.field_of(column)} as {found[needed.index(column)]!r}." for column in missing)) \
        if missing else BUILT_IN[name]


def labels(dataset, task: str | None, columns: Columns = DEFAULT) -> Labels | None:
    """The classes a run on ``dataset`` trains (None for a causal LM); ConfigError if the data cannot run."""
    from ..errors import ConfigError

    found = look(dataset, task, columns)
    if found.problems:
        raise ConfigError([f"dataset: {p}" for p in found.problems])
    return found.labels if (task or CLASSIFICATION) == CLASSIFICATION else None


# -- files ---------------------------------------------------------------------------------------


def _stamp(path: Path) -> tuple[int, int, int]:
    """What changes when a file (or a save_to_disk folder's state) is rewritten, or its permissions change."""
    target = path / "state.json" if path.is_dir() and (path / "state.json").exists() else path
    stat = target.stat()
    return stat.st_mtime_ns, stat.st_size, stat.st_ctime_ns


@functools.lru_cache(maxsize=64)
def _look_path(path: str, task: str, _mtime_ns: int, _size: int, _ctime_ns: int, columns: Columns = DEFAULT) -> Look:
    """Cached per (path, task, mtime, size, ctime, columns): the dashboard validates on every form change."""
    file = Path(path)
    if file.is_dir():
        from datasets import load_from_disk

        try:
            return _look_dataset(load_from_disk(path), task, file.name, columns)
        except (OSError, ValueError) as error:
            return Look((f"{file.name} cannot be read as a Dataset.save_to_disk() folder ({error}).",))
    text, problem = readers.read_text(file)
    if problem:
        return Look((problem,))
    if file.suffix == ".txt":
        return Look(rows=None)
    records, problems = readers.records(text, file.name, file.suffix, columns)
    if problems:
        return Look(tuple(problems))
    return _look_records(records, task, file.name, columns)


def _look_records(records: list[tuple[str, dict]], task: str, name: str, columns: Columns = DEFAULT) -> Look:
    """Column and label checks on rows read from a file."""
    found = list(dict.fromkeys(key for _, row in records for key in row))
    missing = [column for column in _needed(columns, task) if column not in found]
    if missing:
        return Look(tuple(missing_column(name, column, found, task, columns) for column in missing),
                    rows=len(records))
    problems = text_problems(name, [(where, row.get(columns.text)) for where, row in records], columns.text)
    labels = None
    if task == CLASSIFICATION:
        values: dict = {}
        for where, row in records:
            value = row.get(columns.label)
            values.setdefault(_key(value), (value, where))
        labels, label_problems = labels_from_values(name, list(values.values()), columns.label)
        problems += label_problems
    return Look(tuple(problems), labels if not problems else None, len(records))


def _key(value):
    """Dict key for a label value: 1, 1.0 and True are equal in Python but different labels here."""
    return (type(value).__name__, value if isinstance(value, (int, float, str, bool, type(None))) else repr(value))


def _needed(columns: Columns, task: str) -> list[str]:
    return columns.needed(Task.CAUSAL_LM if task != CLASSIFICATION else task)


def text_problems(name: str, values: list[tuple[str, object]], column: str = TEXT) -> list[str]:
    """Why the text column cannot train: a row without a string (empty, null, a number or list), or every text
    empty. ``values``: (where, value) per row."""
    bad = [(where, value) for where, value in values if not isinstance(value, str)]
    if not bad:
        return [ALL_EMPTY.format(name=name, column=column)] if all(not v.strip() for _, v in values) else []
    where, value = bad[0]
    more = f" (and {len(bad) - 1} more rows)" if len(bad) > 1 else ""
    what = ("has no text (empty, null or NA)" if value is None else
            f"has a {readers.json_kind(value)} as text ({value!r:.40})")
    return [f"{name} {where}{more} {what}; every row needs a string in {column!r}."]


# -- labels --------------------------------------------------------------------------------------


def labels_from_values(name: str, values: list[tuple[object, str]],
                       column: str = LABEL) -> tuple[Labels | None, list[str]]:
    """Labels from each distinct label value and where it first occurs; or why they cannot train a classifier."""
    first_of_kind: dict[type, str] = {}  # one message per kind of bad value: the first says what to fix
    for value, where in values:
        problem = _label_value_problem(name, value, where, column)
        if problem:
            first_of_kind.setdefault(type(value), problem)
    if first_of_kind:
        return None, list(first_of_kind.values())
    names = [(value, where) for value, where in values if isinstance(value, str)]
    ids = [(value, where) for value, where in values if not isinstance(value, str)]
    if names and ids:
        return None, [f"{name}: the {column!r} column mixes numbers and names ({ids[0][0]!r} at {ids[0][1]}, "
                      f"{names[0][0]!r} at {names[0][1]}); use class ids 0..K-1 or class names, not both."]
    if len(values) < 2:
        return None, [f"{name}: every row has the label {values[0][0]!r}; a classifier needs at least two classes."]
    if names:
        variants = spelling_problem(name, names, column)
        if variants:
            return None, [variants]
        return Labels(len(names), tuple(sorted(value for value, _ in names)), mapped=True), []
    return _integer_labels(name, ids)


def spelling_problem(name: str, names: list[tuple[str, str]], column: str = LABEL, most: int = 3) -> str | None:
    """Class names that differ only by case or surrounding spaces ('pos', ' pos', 'Pos'), with the row where each
    spelling first occurs; None when every class is spelled one way. Refused rather than noted: they would train
    as separate classes, splitting one class's rows over several outputs of the head, and no run on such labels
    is what its author meant; merging them silently would change the data behind the author's back."""
    groups: dict[str, list[tuple[str, str]]] = {}
    for value, where in names:
        groups.setdefault(value.strip().casefold(), []).append((value, where))
    clashes = [sorted(group, key=lambda pair: _position(pair[1])) for group in groups.values() if len(group) > 1]
    if not clashes:
        return None
    shown = "; ".join(", ".join(f"{value!r} (first at {where})" for value, where in group) for group in clashes[:most])
    more = f"; and {len(clashes) - most} more such classes" if len(clashes) > most else ""
    example = clashes[0][0][0].strip()
    return (f"{name}: the {column!r} column spells one class in several ways ({shown}{more}), which would train as "
            f"separate classes; write each class one way in the file (e.g. every one of these as {example!r}).")


def _position(where: str) -> int:
    """'line 12' -> 12, for ordering the places a value first occurs."""
    number = where.rpartition(" ")[2]
    return int(number) if number.isdigit() else 0


def _label_value_problem(name: str, value, where: str, column: str = LABEL) -> str | None:
    if value is None:
        return f"{name} {where} has no label; give every row a {column!r} or remove the rows without one."
    if isinstance(value, bool):
        return f"{name} {where}: label {value!r} is a boolean; use class ids 0/1 or class names."
    if isinstance(value, float):
        return (f"{name} {where}: label {value!r} is not a whole number; labels are class ids 0..K-1 "
                "(write 1, not 1.0) or class names.")
    if not isinstance(value, (int, str)):
        return f"{name} {where}: label {value!r:.40} is a {readers.json_kind(value)}; each row takes one class id or name."
    return None


def _integer_labels(name: str, ids: list[tuple[int, str]]) -> tuple[Labels | None, list[str]]:
    count = len(ids)
    negative = [(value, where) for value, where in ids if value < 0]
    if negative:
        value, where = min(negative)
        return None, [f"{name} {where}: label {value} is negative; class ids run 0..K-1 (rows without a class "
                      "are often marked -1: remove them)."]
    outside = [(value, where) for value, where in ids if value >= count]
    if outside:
        value, where = max(outside)
        shown = ", ".join(str(v) for v, _ in sorted(ids))
        return None, [f"{name} {where}: label {value} is outside 0..{count - 1}: the {count} distinct labels "
                      f"({shown}) must be the class ids 0..{count - 1}; renumber them or use class names."]
    return Labels(count), []


# -- datasets.Dataset ----------------------------------------------------------------------------

_DATASETS: dict[tuple[str, str], Look] = {}


def _look_dataset_cached(dataset, task: str, columns: Columns = DEFAULT) -> Look:
    """Cached by the Dataset's fingerprint, which changes with every transform of its rows."""
    key = (getattr(dataset, "_fingerprint", None) or str(id(dataset)), task, columns)
    if key not in _DATASETS:
        if len(_DATASETS) > 32:
            _DATASETS.clear()
        _DATASETS[key] = _look_dataset(dataset, task, "the Dataset", columns)
    return _DATASETS[key]


def _look_dataset(dataset, task: str, name: str, columns: Columns = DEFAULT) -> Look:
    if not hasattr(dataset, "features"):  # a DatasetDict: which split to train is not ours to guess
        return Look((f"{name} is a DatasetDict with splits {', '.join(dataset)}; pass one split, e.g. "
                     f"dataset['train'].",))
    found = list(dataset.column_names)
    missing = [column for column in _needed(columns, task) if column not in found]
    if missing:
        return Look(tuple(missing_column(name, column, found, task, columns) for column in missing),
                    rows=len(dataset))
    if len(dataset) == 0:
        return Look((f"{name} has no rows.",), rows=0)
    problems = _dataset_text_problems(dataset, name, columns.text)
    labels = None
    if task == CLASSIFICATION:
        labels, label_problems = _dataset_labels(dataset, name, columns.label)
        problems += label_problems
    return Look(tuple(problems), labels if not problems else None, len(dataset))


def _dataset_text_problems(dataset, name: str, text: str = TEXT) -> list[str]:
    feature = dataset.features[text]
    dtype = getattr(feature, "dtype", type(feature).__name__)
    if dtype not in ("string", "large_string"):
        return [f"{name}: column {text!r} holds {dtype}, not strings; put the raw text in {text!r} (ortnb tokenizes "
                "it)."]
    column = _arrow_column(dataset, text)
    if column.null_count:
        import pyarrow.compute as pc

        row = pc.index(column.is_null(), True).as_py()
        count = column.null_count
        return [f"{name} row {row} has no text ({count} row{'s' if count > 1 else ''} without it); fill or drop "
                "such rows."]
    import pyarrow.compute as pc

    if len(column) and pc.all(pc.equal(pc.utf8_length(pc.utf8_trim_whitespace(column)), 0)).as_py():
        return [ALL_EMPTY.format(name=name, column=text)]
    return []


def _dataset_labels(dataset, name: str, label: str = LABEL) -> tuple[Labels | None, list[str]]:
    feature = dataset.features[label]
    column = _arrow_column(dataset, label)
    distinct = column.unique().to_pylist()
    where = functools.partial(_first_row, column)
    names = getattr(feature, "names", None)
    if names:  # a ClassLabel: its names are the classes, the column holds their ids
        bad = [v for v in distinct if v is None or not 0 <= v < len(names)]
        if bad:
            return None, [f"{name} {where(bad[0])}: label {bad[0]} is not a class of the ClassLabel feature "
                          f"(ids 0..{len(names) - 1}: {', '.join(names)}); remove rows without a class."]
        return Labels(len(names), tuple(names)), []
    return labels_from_values(name, [(value, where(value)) for value in distinct], label)


def _arrow_column(dataset, column: str):
    """The column as pyarrow data, in the Dataset's row order (select/shuffle/filter keep an index mapping)."""
    if getattr(dataset, "_indices", None) is not None:
        from ..progress import without_progress_bars

        with without_progress_bars():  # a bar for a cheap look at the data reads like training had begun
            dataset = dataset.flatten_indices()
    return dataset.data.column(column)


def _first_row(column, value) -> str:
    import pyarrow.compute as pc

    mask = column.is_null() if value is None else pc.equal(column, value)
    row = pc.index(mask, True).as_py()
    return f"row {row}" if row >= 0 else "a row"  # NaN equals nothing, so it has no first row


# -- held-out rows against the training rows ---------------------------------------------------------


def display_name(dataset) -> str:
    """How messages call a dataset: a file's name, a built-in's name, or "the Dataset"."""
    if isinstance(dataset, (str, Path)):
        return Path(dataset).name
    return "the Dataset"


def held_out_problem(held: Labels, train: Labels, held_name: str, train_name: str) -> str | None:
    """Why a model trained on ``train``'s classes cannot score the held-out rows' classes, or None. Ids in one
    file and names in the other are said as such (never matched up: which id means which name is the author's
    to say), with the training classes in id order, so the way out is one find-and-replace."""
    if train.names and not held.names:
        order = ", ".join(f"{i} = {name!r}" for i, name in enumerate(train.names))
        return (f"{held_name} gives its classes as ids (0..{held.count - 1}) where the training file {train_name} "
                f"names them ({', '.join(train.names)}); write the names in {held_name} too. If its ids follow the "
                f"training classes in sorted order, that is {order}.")
    if held.names and not train.names:
        return (f"{held_name} names its classes ({', '.join(held.names[:5])}) where the training file {train_name} "
                f"gives them as ids 0..{train.count - 1}; write {held_name}'s labels as those ids too.")
    unknown = (sorted(set(held.names) - set(train.names)) if held.names
               else [str(i) for i in range(train.count, held.count)])
    if not unknown:
        return None
    return (f"holds classes the training rows lack ({', '.join(unknown)}); the model cannot learn them: add "
            "training rows of those classes or drop them from the eval set.")
