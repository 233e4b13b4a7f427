"""Turn a RunConfig's dataset into tokenized train/eval sets, and the collator that pads its batches.

Rows are read once, by ``readers`` (the reader ``validate()`` and ``ortnb.edge`` use too), from the columns
RunConfig's ``text_column``/``label_column`` name (``columns``: a run's rows are then ``text``/``label``); class names
become ids in the order of ``checks.Labels`` (the model's id2label says the same). The held-out rows
are the run's ``eval_dataset``, the dataset's own split (rotten_tomatoes: 1,000 fixed snippets), or a
stratified, seeded fraction of the training rows (``EvalPlan``).

Texts are cut at ``seq_len`` tokens. With padding "longest" (the default for classification) each batch
is padded to its longest row, rounded up to a multiple of 8; ORTModule exports with dynamic axes, so one
graph serves every length (the engine report counts exports). "max_length" pads every row to ``seq_len``,
as Optimum's published examples did. A causal LM trains on the text cut into full blocks.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..vocabulary import Task
from . import builtin, checks, readers
from .checks import Labels
from .columns import DEFAULT, LABEL, TEXT, Columns, pick


def labels_for(dataset, task: str, columns: Columns = DEFAULT) -> Labels | None:
    """The classes a run on ``dataset`` trains, for the model's head (None for a causal LM); ConfigError naming the
    file and row when the data cannot train."""
    return checks.labels(dataset, task, columns) if task != Task.CAUSAL_LM else None


@dataclass(frozen=True)
class EvalPlan:
    """Which held-out rows a run evaluates (RunConfig's evaluate, eval_dataset, eval_fraction, eval_samples)."""

    enabled: bool = False
    dataset: Any = None  # explicit held-out rows: a built-in name, a path or a datasets.Dataset
    fraction: float = 0.1  # of the training rows, when there is neither ``dataset`` nor a built-in split
    samples: int | None = None  # at most this many rows

    @classmethod
    def of(cls, cfg) -> "EvalPlan":
        return cls(bool(cfg.evaluate), cfg.eval_dataset, cfg.eval_fraction, cfg.eval_samples)


NO_EVALUATION = EvalPlan()


def read_rows(dataset, task: str, labels: Labels | None = None, columns: Columns = DEFAULT):
    """All rows of ``dataset`` as a datasets.Dataset: ``text`` and, for classification, ``label`` as class ids
    (names mapped through ``labels``; a ClassLabel feature names them), read from ``columns``. Built-in
    rotten_tomatoes: its training rows."""
    from datasets import Dataset

    if isinstance(dataset, str) and dataset == "rotten_tomatoes":
        return builtin.rotten_tomatoes()[0]
    if isinstance(dataset, str) and dataset == "hamlet":
        return Dataset.from_dict({TEXT: [builtin.hamlet_text()]})
    path = Path(dataset).expanduser() if isinstance(dataset, str) else None
    if path is not None and path.is_file():
        rows = _from_file(path, columns)
    else:  # a Dataset, or a save_to_disk folder (launch() stores in-memory datasets so)
        rows = _renamed(_load_from_disk(path) if path is not None else dataset, columns, task)
    if task == Task.CAUSAL_LM:
        return rows.select_columns([TEXT])
    return _with_class_ids(rows.select_columns([TEXT, LABEL]), labels)


def _load_from_disk(path: Path):
    from datasets import load_from_disk

    return load_from_disk(str(path))


def _renamed(rows, columns: Columns, task: str):
    """A Dataset's text and label columns under the names runs read; its other columns are left out."""
    if not columns.mapped:
        return rows
    wanted = {columns.text: TEXT} if task == Task.CAUSAL_LM else {columns.text: TEXT, columns.label: LABEL}
    rows = rows.select_columns(list(wanted))
    # by way of names no column has, so that text_column="label" (a swap) renames cleanly
    rows = rows.rename_columns({old: f"__ortnb_{new}" for old, new in wanted.items()})
    return rows.rename_columns({f"__ortnb_{new}": new for new in wanted.values()})


def _from_file(path: Path, columns: Columns = DEFAULT):
    from datasets import Dataset

    if path.suffix == ".txt":
        return Dataset.from_dict({TEXT: [path.read_text(encoding="utf-8", errors="replace")]})
    # the reader validate() and ortnb.edge use: utf-8-sig, values typed once, the text and label columns picked
    rows = [pick(row, columns) for row in readers.read_rows(path, columns)]
    names = list(dict.fromkeys(key for row in rows for key in row))
    return Dataset.from_dict({name: [row.get(name) for row in rows] for name in names})


def _with_class_ids(rows, labels: Labels | None):
    """Class names in the label column become their ids (``labels.names`` order); a ClassLabel feature keeps
    the names, so the rows and the model's id2label agree. A ``map`` over the column would not do: it keeps
    the column's string type and the ids would stay text."""
    from datasets import ClassLabel

    if labels is None or not labels.names:
        return rows
    feature, ids = rows.features["label"], labels.label2id
    if isinstance(feature, ClassLabel):
        if list(feature.names) == list(labels.names):
            return rows
        values = [ids[feature.names[v]] for v in rows["label"]]  # the same classes in another order
    elif labels.mapped:
        values = [ids[v] for v in rows["label"]]
    else:
        values = list(rows["label"])  # ids already; the names come from a saved head
    return rows.remove_columns("label").add_column("label", values, feature=ClassLabel(names=list(labels.names)))


def splits(dataset, task: str, plan: EvalPlan, seed: int, labels: Labels | None = None,
           columns: Columns = DEFAULT):
    """(train, eval or None) of raw rows (text[, label as class ids]). The held-out rows: the plan's
    eval_dataset (read from the same columns), else the dataset's own split (rotten_tomatoes), else a
    stratified, seeded ``fraction`` of the rows. A causal LM without an eval_dataset holds out its last blocks
    instead (``tokenize_causal``)."""
    train = read_rows(dataset, task, labels, columns)
    if not plan.enabled:
        return train, None
    if plan.dataset is not None:
        return train, _cap(read_rows(plan.dataset, task, labels, columns), plan.samples)
    if task == Task.CAUSAL_LM:
        return train, None
    if isinstance(dataset, str) and dataset == "rotten_tomatoes":
        return train, _cap(builtin.rotten_tomatoes()[1], plan.samples)
    train_rows, eval_rows = stratified_split(train["label"], plan.fraction, seed)
    return train.select(train_rows), _cap(train.select(eval_rows), plan.samples)


def _cap(rows, samples: int | None):
    if rows is None or not samples or len(rows) <= samples:
        return rows
    return rows.select(range(samples))


def stratified_split(labels, fraction: float, seed: int) -> tuple[list[int], list[int]]:
    """(train rows, held-out rows): ``fraction`` of each class held out (rounded, at least one row of every
    class that has two or more, never a class's last row), chosen by a seeded shuffle; both sorted."""
    import numpy as np

    labels = np.asarray(labels)
    rng = np.random.default_rng(seed)
    held: list[int] = []
    for value in np.unique(labels):
        rows = np.flatnonzero(labels == value)
        count = 0 if len(rows) < 2 else min(len(rows) - 1, max(1, round(len(rows) * fraction)))
        held.extend(int(i) for i in rng.permutation(rows)[:count])
    held_set = set(held)
    return [i for i in range(len(labels)) if i not in held_set], sorted(held)


def padding_plan(padding: str | None, length_grouping: bool | None, task: str) -> tuple[str, bool]:
    """(padding, length grouping) a run uses. A causal LM trains on full blocks ("blocks": nothing to pad);
    classification pads each batch to its longest row unless told max_length, and groups rows of similar
    length whenever it pads per batch."""
    if task == Task.CAUSAL_LM:
        return "blocks", False
    padding = padding or "longest"
    return padding, (padding == "longest") if length_grouping is None else bool(length_grouping)


def collator(tokenizer, padding: str):
    """transformers' own collator. Per-batch padding rounds up to a multiple of 8: vector-friendly lengths,
    and fewer distinct shapes. Rows tokenized to max_length already have seq_len tokens."""
    from transformers import DataCollatorWithPadding

    return DataCollatorWithPadding(tokenizer, pad_to_multiple_of=8 if padding == "longest" else None)


def tokenize_classification(rows, tokenizer, seq_len: int, padding: str = "max_length"):
    def encode(batch):
        if padding == "max_length":
            return tokenizer(batch["text"], truncation=True, max_length=seq_len, padding="max_length")
        return tokenizer(batch["text"], truncation=True, max_length=seq_len)  # the collator pads each batch

    columns = [c for c in rows.column_names if c != "label"]
    return rows.map(encode, batched=True, remove_columns=columns).rename_column("label", "labels")


def tokenize_causal(rows, tokenizer, seq_len: int, eval_fraction: float = 0.0, max_eval_blocks: int | None = None):
    """Concatenate the text and cut it into blocks of seq_len tokens (labels = inputs). The last
    ``eval_fraction`` of the blocks (at least one when asked, at most ``max_eval_blocks``) are held out: no
    held-out text is trained on, and the held-out text is the end of the file (a play's last act)."""
    from datasets import Dataset

    ids = tokenizer("\n".join(rows["text"]), add_special_tokens=False)["input_ids"]
    blocks = [ids[i:i + seq_len] for i in range(0, len(ids) - seq_len + 1, seq_len)]
    eval_blocks = min(len(blocks) - 1, max(1, round(len(blocks) * eval_fraction))) if eval_fraction else 0
    if max_eval_blocks:
        eval_blocks = min(eval_blocks, max_eval_blocks)
    split = len(blocks) - eval_blocks

    def to_dataset(chunk):
        return Dataset.from_dict({"input_ids": chunk, "attention_mask": [[1] * seq_len] * len(chunk),
                                  "labels": chunk})

    return to_dataset(blocks[:split]), (to_dataset(blocks[split:]) if eval_blocks else None)


@dataclass
class Prepared:
    """A run's data: tokenized train and eval sets, and the held-out rows' texts (for the examples an
    evaluation gets most confidently wrong)."""

    train: Any
    evaluation: Any = None
    eval_texts: list[str] | None = None
    train_total: int | None = None  # a classifier's training rows before ``train_samples`` kept some of them


def prepare(dataset, task: str, tokenizer, seq_len: int, *, plan: EvalPlan = NO_EVALUATION, seed: int = 0,
            train_samples: int | None = None, labels: Labels | None = None,
            padding: str = "max_length", columns: Columns = DEFAULT) -> Prepared:
    """Tokenized data for ``task``; ``train_samples`` keeps only the rows a run reads (after the held-out rows
    are set apart, so they do not depend on the run's length).

    ``labels`` (from ``checks.labels``, looked up when not given) maps class names to ids; a dataset
    that cannot train raises ConfigError naming the file and row before anything is tokenized.
    """
    labels = labels or labels_for(dataset, task, columns)
    train, evaluation = splits(dataset, task, plan, seed, labels, columns)
    if task == Task.CAUSAL_LM:
        if evaluation is not None:  # held-out text of its own
            held, _ = tokenize_causal(evaluation, tokenizer, seq_len)
            return Prepared(tokenize_causal(train, tokenizer, seq_len)[0], _cap(held, plan.samples))
        # eval_samples caps the held-out blocks at the end of the text; the blocks it leaves out are trained on
        return Prepared(*tokenize_causal(train, tokenizer, seq_len, plan.fraction if plan.enabled else 0.0,
                                         plan.samples))
    total = len(train)
    train = keep_rows(train, train_samples, seed)
    if evaluation is None:
        return Prepared(tokenize_classification(train, tokenizer, seq_len, padding), train_total=total)
    return Prepared(tokenize_classification(train, tokenizer, seq_len, padding),
                    tokenize_classification(evaluation, tokenizer, seq_len, padding), list(evaluation["text"]), total)


def keep_rows(train, train_samples: int | None, seed: int):
    """The training rows a run of ``train_samples`` rows reads: all of them when there are no more, else the
    first ``train_samples`` of a shuffle by ``seed`` (which depends only on the row count and the seed, so the
    same rows come from the raw rows or from their tokenized form)."""
    if train_samples and len(train) > train_samples:
        return train.shuffle(seed=seed).select(range(train_samples))
    return train


def build(dataset, task: str, tokenizer, seq_len: int, plan: EvalPlan = NO_EVALUATION, seed: int = 0,
          train_samples: int | None = None, labels: Labels | None = None, padding: str = "max_length",
          eval_samples: int | None = None, columns: Columns = DEFAULT):
    """(train, eval or None), tokenized for ``task`` (see ``prepare``). ``eval_samples=N`` (without a ``plan``)
    holds out N rows: a causal LM's last N blocks, a classifier's N stratified rows (or N of the dataset's own
    held-out split)."""
    if eval_samples is not None and plan == NO_EVALUATION:
        if eval_samples < 0:
            raise ValueError(f"eval_samples={eval_samples}: give the number of held-out rows (0 for none)")
        plan = EvalPlan(enabled=eval_samples > 0, fraction=0.5 if task == Task.CAUSAL_LM else 0.1,
                        samples=eval_samples or None)
    prepared = prepare(dataset, task, tokenizer, seq_len, plan=plan, seed=seed, train_samples=train_samples,
                       labels=labels, padding=padding, columns=columns)
    return prepared.train, prepared.evaluation
