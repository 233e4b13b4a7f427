"""Turn a RunConfig's dataset into tokenized train/eval sets, and the collator that pads its batches.

Texts are cut at ``seq_len`` tokens. With padding "longest" (the default for classification) each batch
is padded to its longest row, rounded up to a multiple of 8; ORTModule exports with dynamic axes, so one
graph serves every length (the engine report counts exports). "max_length" pads every row to ``seq_len``,
as Optimum's published examples did. A causal LM trains on the text cut into full blocks.
"""

from __future__ import annotations

from pathlib import Path

from . import assets, data_checks


def labels_for(dataset, task: str) -> data_checks.Labels | None:
    """The classes a run on ``dataset`` trains, for the model's head (None for a causal LM); ConfigError naming the
    file and row when the data cannot train."""
    return data_checks.labels(dataset, task) if task != "causal-lm" else None


def raw_splits(dataset, task: str, eval_samples: int, seed: int):
    """(train, eval) of raw rows: columns text[, label] for classification, text for causal LM."""
    from datasets import Dataset

    if isinstance(dataset, str) and dataset == "rotten_tomatoes":
        train, validation = assets.rotten_tomatoes()
        if not eval_samples:  # an empty eval set would still be "evaluated", with a meaningless result
            return train, None
        return train, validation.select(range(min(eval_samples, len(validation))))
    if isinstance(dataset, str) and dataset == "hamlet":
        full = Dataset.from_dict({"text": [assets.hamlet_text()]})
    elif isinstance(dataset, str):
        full = _from_file(Path(dataset).expanduser())
    else:
        full = dataset
    if eval_samples and task == "sequence-classification":
        parts = full.train_test_split(test_size=eval_samples, seed=seed)
        return parts["train"], parts["test"]
    return full, None


def _from_file(path: Path):
    from datasets import Dataset, load_dataset, load_from_disk

    if path.is_dir():  # Dataset.save_to_disk output (launch() stores in-memory datasets so)
        return load_from_disk(str(path))
    if path.suffix == ".txt":
        return Dataset.from_dict({"text": [path.read_text(encoding="utf-8", errors="replace")]})
    kind = "json" if path.suffix in (".json", ".jsonl") else "csv"
    return load_dataset(kind, data_files=str(path), split="train")


def encode_labels(rows, labels: data_checks.Labels):
    """Class names in the label column -> their ids (the model's config records the same mapping)."""
    ids = labels.label2id
    return rows.map(lambda batch: {"label": [ids[name] for name in batch["label"]]}, batched=True)


def padding_plan(padding: str | None, length_grouping: bool | None, task: str) -> tuple[str, bool]:
    """(padding, length grouping) a run uses. A causal LM trains on full blocks ("blocks": nothing to pad);
    classification pads each batch to its longest row unless told max_length, and groups rows of similar
    length whenever it pads per batch."""
    if task == "causal-lm":
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


def tokenize_causal(rows, tokenizer, seq_len: int, eval_blocks: int = 0):
    """Concatenate the text and cut it into blocks of seq_len tokens (labels = inputs)."""
    from datasets import Dataset

    ids = tokenizer("\n".join(rows["text"]), add_special_tokens=False)["input_ids"]
    blocks = [ids[i:i + seq_len] for i in range(0, len(ids) - seq_len + 1, seq_len)]
    split = len(blocks) - eval_blocks

    def to_dataset(chunk):
        return Dataset.from_dict({"input_ids": chunk, "attention_mask": [[1] * seq_len] * len(chunk),
                                  "labels": chunk})

    return to_dataset(blocks[:split]), (to_dataset(blocks[split:]) if eval_blocks else None)


def build(dataset, task: str, tokenizer, seq_len: int, eval_samples: int = 0, seed: int = 0,
          train_samples: int | None = None, labels: data_checks.Labels | None = None, padding: str = "max_length"):
    """(train, eval or None), tokenized for ``task``; ``train_samples`` keeps only the rows a run reads.

    ``labels`` (from ``data_checks.labels``, looked up when not given) maps class names to ids; a dataset
    that cannot train raises ConfigError naming the file and row before anything is tokenized.
    """
    labels = labels or labels_for(dataset, task)
    train, evaluation = raw_splits(dataset, task, eval_samples, seed)
    if train_samples and task == "sequence-classification" and len(train) > train_samples:
        train = train.shuffle(seed=seed).select(range(train_samples))
    if task == "causal-lm":
        return tokenize_causal(train, tokenizer, seq_len, eval_blocks=eval_samples)
    if labels is not None and labels.mapped:
        train = encode_labels(train, labels)
        evaluation = encode_labels(evaluation, labels) if evaluation is not None else None
    train = tokenize_classification(train, tokenizer, seq_len, padding)
    return train, (tokenize_classification(evaluation, tokenizer, seq_len, padding) if evaluation is not None else None)
