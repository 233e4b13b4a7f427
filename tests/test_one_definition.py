"""Every constant and vocabulary of ortnb is defined once, in the lowest layer that needs it, and read from there
(issue 35 step 5): a second definition, under the same name or as a literal copy under another, fails here, naming
the file and line. The closed settings are enums (``vocabulary.py``) and RunConfig's fields are typed by them, and
the command line reads a --vary value by its field's declared type (pure: reads source, starts nothing)."""

from __future__ import annotations

import ast
import json
import signal
from pathlib import Path

import pytest

from ortnb import vocabulary
from ortnb.config import RunConfig, parse_value
from ortnb.vocabulary import Backend, Optimizer, Precision, Task

from ._helpers import PACKAGE

# name -> the one module (under ortnb/) that may assign it
HOMES = {
    "SETTLE_S": "runs/control.py",
    "FINAL_EVENTS": "runs/records.py",
    "PHASES": "runs/records.py",
    "ROLES": "runs/liveness.py",
    "NAME_LIMIT": "runs/layout.py",
    "DEFAULT_BUDGET_S": "tuning/tuner.py",
    "AXES": "tuning/space.py",
    "SUFFIXES": "data/readers.py",
}
# Other names the same things went by: none may be assigned anywhere (they are imported under that name)
RETIRED = ("FINAL", "ENDING_SIGNALS", "TUNED_FIELDS", "DATA_SUFFIXES", "BUILT_IN_NAMES")

# The vocabularies whose literal copies are looked for: a tuple, list or set literal holding exactly these values
# (in any order) outside the home is a copy, whatever its name
FINAL_STATUSES = {"completed", "stopped", "failed"}
ROLES = {"supervisor", "ranks", "writer"}
AXES = {"backend", "optim", "precision", "zero_stage", "num_processes", "threads", "batch_size", "padding",
        "length_grouping"}
DATA_SUFFIXES = {".csv", ".json", ".jsonl", ".txt"}
BUILT_IN_DATASETS = {"rotten_tomatoes", "hamlet"}
METRICS = {"accuracy", "f1", "perplexity", "loss"}
COPIES = [(FINAL_STATUSES, "runs/records.py"), (ROLES, "runs/liveness.py"), (AXES, "tuning/space.py"),
          (DATA_SUFFIXES, "data/readers.py"), (BUILT_IN_DATASETS, None),  # None: only as builtin.DATASETS' keys
          (METRICS, "vocabulary.py")]
ENDING_SIGNALS = {"SIGTERM", "SIGHUP", "SIGINT"}

# Single words whose every exact string literal lives in their home (a longer text that mentions one is prose)
WORDS = {
    **dict.fromkeys(("causal-lm", "sequence-classification"), "vocabulary.py"),
    **dict.fromkeys(("loading model", "tokenizing", "tokenizing (cached)", "starting training", "ONNX export",
                     "graph build", "first step"), "runs/records.py"),
    **dict.fromkeys(ROLES, "runs/liveness.py"),
    "ORTNB_CACHE": "cache_folder.py",
    "[^a-z0-9]+": "runs/layout.py",  # the run folder's slug of a label
}


def _modules():
    for path in sorted(PACKAGE.rglob("*.py")):
        yield path.relative_to(PACKAGE).as_posix(), ast.parse(path.read_text(), str(path))


def _found(check) -> list[str]:
    """``where:line what`` for each finding of ``check(tree)`` -> (line, what, home), outside its home."""
    found = []
    for where, tree in _modules():
        for line, what, home in check(tree):
            if where != home:
                found.append(f"{where}:{line} {what} (its home: {home or 'none'})")
    return found


def _assigned(tree):
    for node in ast.walk(tree):
        targets = node.targets if isinstance(node, ast.Assign) else [node.target] \
            if isinstance(node, (ast.AnnAssign, ast.AugAssign)) else []
        for target in targets:
            for name in ast.walk(target):
                if isinstance(name, ast.Name) and isinstance(name.ctx, ast.Store):
                    yield node.lineno, name.id


def _collection_values(node) -> set | None:
    """The values of a tuple/list/set literal of string constants (None for anything else)."""
    if not isinstance(node, (ast.Tuple, ast.List, ast.Set)) or not node.elts:
        return None
    if not all(isinstance(e, ast.Constant) and isinstance(e.value, str) for e in node.elts):
        return None
    return {e.value for e in node.elts}


def assignments(tree):
    for line, name in _assigned(tree):
        if name in HOMES:
            yield line, name, HOMES[name]
        elif name in RETIRED:
            yield line, name, None


def copies(tree):
    for node in ast.walk(tree):
        values = _collection_values(node)
        for vocabulary_values, home in COPIES:
            if values == vocabulary_values:
                yield node.lineno, "copy of " + ",".join(sorted(values)), home


def ending_signals(tree):
    for node in ast.walk(tree):
        if isinstance(node, (ast.Tuple, ast.List, ast.Set)) and len(node.elts) >= 2:
            names = {e.attr for e in node.elts if isinstance(e, ast.Attribute) and e.attr.startswith("SIG")}
            if names == ENDING_SIGNALS or names == ENDING_SIGNALS - {"SIGINT"}:
                yield node.lineno, "ending signals " + ",".join(sorted(names)), "interrupts.py"


def words(tree):
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and node.value in WORDS:
            yield node.lineno, node.value, WORDS[node.value]


@pytest.mark.parametrize("check", [assignments, copies, ending_signals, words])
def test_each_constant_and_vocabulary_is_defined_in_its_home_only(check):
    assert _found(check) == []


def test_the_checks_see_a_copy(monkeypatch):
    sample = ("SETTLE_S = 30.0\nFINAL = ('completed', 'stopped', 'failed')\nx = ['hamlet', 'rotten_tomatoes']\n"
              "ENDING_SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)\n"
              "def f(task, role):\n    return task == 'causal-lm' or role == 'writer'\n")
    monkeypatch.setattr(Path, "read_text", lambda self, *a, **k: sample)  # every module of ortnb/ reads so
    seen = [finding.split(" ", 1)[1] for check in (assignments, copies, ending_signals, words)
            for finding in _found(check) if finding.startswith("flops.py:")]
    assert seen == ["SETTLE_S (its home: runs/control.py)", "FINAL (its home: none)",
                    "ENDING_SIGNALS (its home: none)", "copy of completed,failed,stopped (its home: runs/records.py)",
                    "copy of hamlet,rotten_tomatoes (its home: none)",
                    "ending signals SIGHUP,SIGINT,SIGTERM (its home: interrupts.py)",
                    "causal-lm (its home: vocabulary.py)", "writer (its home: runs/liveness.py)"]


def test_old_names_read_the_one_definition():
    from ortnb import interrupts, metrics, validation
    from ortnb.backends import ort_extensions
    from ortnb.cache_folder import cache_root
    from ortnb.data import builtin, checks, columns, readers, token_cache
    from ortnb.runner import ending
    from ortnb.runs import control, records
    from ortnb.tuning import measure, tuner
    from ortnb.ui import state

    assert state.FINAL is records.FINAL_EVENTS and metrics.FINAL_EVENTS is records.FINAL_EVENTS
    assert metrics.PHASES is records.PHASES
    assert ending.SETTLE_S is control.SETTLE_S and measure.SETTLE_S is control.SETTLE_S
    assert ort_extensions.cache_root is cache_root
    assert validation.DATA_SUFFIXES is readers.SUFFIXES
    assert token_cache.BUILT_IN == tuple(builtin.DATASETS) and set(checks.BUILT_IN) == set(builtin.DATASETS)
    assert columns.CAUSAL_LM is Task.CAUSAL_LM and checks.CLASSIFICATION is Task.SEQUENCE_CLASSIFICATION
    assert validation.BACKENDS == Backend.values() and validation.OPTIMIZERS == Optimizer.values()
    assert validation.CHOICE_FIELDS["precision"] == Precision.values()
    assert set(interrupts.ALL) == {signal.SIGTERM, signal.SIGHUP, signal.SIGINT}
    assert tuner.DEFAULT_BUDGET_S == 180 and isinstance(tuner.DEFAULT_BUDGET_S, int)  # the Dashboard's box is an int


def test_every_metric_a_task_evaluates_makes_an_evaluation_record():
    # records.py once listed its own metrics without perplexity: every causal-LM run that evaluated failed
    from ortnb import evaluation
    from ortnb.runs import records

    for task in Task:
        for metric in evaluation.metrics_for(task):
            assert records.evaluation(3, eval_loss=0.5, metric=metric)["metric"] == metric
    assert set(vocabulary.METRICS) == set(evaluation.CLASSIFICATION_METRICS) | set(evaluation.CAUSAL_METRICS)
    assert set(vocabulary.METRICS) == set(evaluation.METRIC_NAMES) == set(evaluation.HIGHER_IS_BETTER)


def test_the_closed_fields_are_typed_by_their_vocabulary_and_read_as_the_text_they_were():
    from typing import get_type_hints

    hints = get_type_hints(RunConfig)
    assert (hints["backend"], hints["optim"], hints["precision"]) == (Backend, Optimizer, Precision)
    assert hints["task"] == Task | None
    config = RunConfig(task="causal-lm", backend="eager", precision="bf16")
    assert config.task is Task.CAUSAL_LM and config.backend is Backend.EAGER and config.optim is Optimizer.ADAMW_TORCH
    assert config.backend == "eager" and {"eager": 1}[config.backend] == 1
    assert (str(config.task), f"{config.backend}", repr(config.precision)) == ("causal-lm", "eager", "'bf16'")
    assert "backend='eager'" in repr(config) and "task='causal-lm'" in repr(config)  # prints as before
    assert json.loads(config.to_json())["backend"] == "eager"
    assert RunConfig.from_json(config.to_json()) == config
    # a value outside the vocabulary stays as given, for validate() to name
    assert RunConfig(backend="tpu").backend == "tpu"
    assert all(isinstance(member, str) for choice in (Task, Backend, Optimizer, Precision) for member in choice)
    assert vocabulary.TRUE[0] == "true" and vocabulary.FALSE[0] == "false"


@pytest.mark.parametrize("name, text, value", [
    ("length_grouping", "true", True), ("length_grouping", "False", False), ("length_grouping", "yes", True),
    ("length_grouping", "0", False), ("length_grouping", "none", None), ("batch_size", "16", 16),
    ("threads", "None", None), ("learning_rate", "1e-4", 1e-4), ("epochs", "1.5", 1.5), ("backend", "ort", "ort"),
    ("precision", "no", "no"), ("task", "causal-lm", "causal-lm"), ("padding", "longest", "longest"),
    ("padding", "none", None), ("dataset", "reviews.csv", "reviews.csv"), ("name", "none", None),
])
def test_a_value_is_read_by_its_fields_declared_type(name, text, value):
    parsed = parse_value(name, text)
    assert parsed == value and type(parsed) in ((type(value),) if not isinstance(value, str) else (str, Backend,
                                                                                                   Precision, Task))


@pytest.mark.parametrize("name, text, message", [
    ("length_grouping", "maybe", "length_grouping takes true or false (also yes/no, 1/0) or none, got 'maybe'"),
    ("batch_size", "big", "batch_size takes int values, got 'big'"),
    ("zero_stage", "none", "zero_stage takes int values, got 'none'"),
    ("backend", "tpu", "backend takes one of eager, ort, compile, got 'tpu'"),
    ("padding", "short", "padding takes one of longest, max_length or none, got 'short'"),
])
def test_a_value_its_field_cannot_take_names_the_field_and_what_it_takes(name, text, message):
    with pytest.raises(ValueError) as raised:
        parse_value(name, text)
    assert str(raised.value) == message
