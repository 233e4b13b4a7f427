"""The config form's logic, without widgets: values <-> RunConfig, the form's words, and what this
machine cannot run (pure, tested exactly).

What the form shows is text where a person types (model, dataset, batch size, sequence length, learning rate,
how long to train, the evaluation settings and the rest of RunConfig under "more settings"), so a value is read
exactly as typed (5e-5 runs as 5e-05; a batch size of 0 stays 0, never clamped to 1) and a typing slip or a value
out of range is a problem under its field, in the form's words ("blank", not None), never a crash.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field

from ..config import DEFAULT_STEPS, RunConfig, Schedule, Task
from ..data import padding_plan
from ..evaluation import METRIC_NAMES, default_metric, metrics_for
from ..tuning.defaults import choice_text, engine_label
from ..views.markup import Markup, join, tag
from ..validation import CHOICE_FIELDS, Problem, run_task

# The form's rows, in order; "more settings" folds the rest of RunConfig away.
FORM_FIELDS = ("model", "dataset", "backend", "optim", "precision", "zero1", "num_processes", "batch_size",
               "seq_len", "padding", "length_grouping", "length", "learning_rate", "freeze_embeddings", "evaluate",
               "eval_every", "metric", "early_stopping_patience")
MORE_FIELDS = ("task", "lr_schedule", "dropout", "warmup_steps", "seed", "eval_dataset", "eval_fraction", "eval_samples",
               "eval_batch_size", "eval_screen", "target", "threads", "report_to", "name", "output_dir")
CHOSEN_FIELDS = ("task", "lr_schedule")  # the more-settings fields chosen from a list, not typed
CHOICE_LABELS = {
    "backend": {"eager": "PyTorch (eager)", "ort": "ONNX Runtime", "compile": "torch.compile"},
    "optim": {"adamw_torch": "AdamW", "adamw_torch_fused": "fused AdamW (torch)",
              "adamw_ort_fused": "fused Adam (ORT, CUDA)"},
    "precision": {"no": "fp32", "bf16": "bf16", "fp16": "fp16"},
    "padding": {"longest": "per batch (longest row)", "max_length": "to sequence length"},
    "length_unit": {"steps": "steps", "epochs": "epochs"},
    "metric": METRIC_NAMES,
    "task": {None: "the model's own", Task.SEQUENCE_CLASSIFICATION: "classification", Task.CAUSAL_LM: "causal LM"},
    "lr_schedule": {Schedule.LINEAR: "linear decay (Trainer's)", Schedule.WSD: "warmup-stable-decay (near the target)"},
}
# What each control is called on screen; validate()'s field names map onto these.
CONTROL_LABELS = {"model": "model", "dataset": "dataset", "text_column": "text column", "label_column": "label column",
                  "backend": "engine", "optim": "optimizer",
                  "precision": "precision", "zero_stage": "ZeRO-1", "zero1": "ZeRO-1", "num_processes": "processes",
                  "batch_size": "batch size", "seq_len": "sequence length", "max_steps": "steps", "epochs": "epochs",
                  "length": "train for", "learning_rate": "learning rate", "warmup_steps": "warm-up steps",
                  "task": "task", "lr_schedule": "learning-rate schedule", "padding": "padding", "length_grouping": "length grouping",
                  "freeze_embeddings": "frozen embeddings", "dropout": "dropout", "eval_batch_size": "eval batch size",
                  "eval_screen": "screen rows",
                  "output_dir": "output folder", "evaluate": "evaluate", "eval_every": "evaluate every",
                  "metric": "best by", "early_stopping_patience": "early stopping", "eval_dataset": "held-out data",
                  "eval_fraction": "held-out share", "eval_samples": "held-out rows", "target": "target",
                  "seed": "seed", "threads": "threads", "report_to": "report to", "name": "name",
                  "budget_s": "budget (s)"}
# The control that shows a field's problems (validate() names RunConfig fields).
CONTROL_OF = {"zero_stage": "zero1", "max_steps": "length", "epochs": "length"}
# Typed fields: how the text is read. "?" means blank is None (the field's automatic choice).
# Batch size and sequence length are typed too: a bounded number box would clamp 0 to 1 without a word.
TEXT_KINDS = {"model": "text", "dataset": "text", "batch_size": "int", "seq_len": "int", "learning_rate": "float",
              "eval_every": "int?", "early_stopping_patience": "int?", "warmup_steps": "int", "seed": "int",
              "eval_dataset": "text?", "eval_fraction": "float", "eval_samples": "int?", "eval_batch_size": "int?",
              "eval_screen": "int?", "target": "float?", "dropout": "float?",
              "threads": "int?", "report_to": "list?", "name": "text?", "output_dir": "text"}
# What a blank typed field means, shown in it as a placeholder.
BLANK_MEANS = {"eval_every": "auto: five evaluations over the run", "early_stopping_patience": "never stop early",
               "eval_dataset": "the dataset's own held-out rows", "eval_samples": "all held-out rows",
               "eval_batch_size": "auto: 4 x batch size, at most 128",
               "eval_screen": "auto: 200 rows with a target (0: none)",
               "target": "none: train every step", "threads": "auto", "report_to": "none (tensorboard, mlflow, wandb)",
               "name": "from the settings", "dropout": "the model's own (0 turns it off)"}
EXAMPLES = {"learning_rate": "5e-5", "eval_fraction": "0.1", "target": "0.85", "batch_size": "16", "seq_len": "128"}
EVAL_FIELDS = ("eval_every", "metric", "early_stopping_patience", "target")  # moot without evaluation
HELD_OUT_FIELDS = ("eval_dataset", "eval_fraction", "eval_samples", "eval_batch_size", "eval_screen")  # also moot without it


# -- values <-> text ----------------------------------------------------------------------------


def text_of(value) -> str:
    """What a typed field shows for a value: exact (5e-05, not 5.011872336272725e-05), blank for None."""
    if value is None:
        return ""
    if isinstance(value, (list, tuple)):
        return ", ".join(map(str, value))
    if isinstance(value, float):
        return repr(value)
    return str(value)


def parse(name: str, text: str) -> tuple[object, str | None]:
    """(value, problem) of what was typed into ``name``'s field; the problem is in the form's words."""
    kind = TEXT_KINDS[name]
    text = (text or "").strip()
    if not text:
        if kind.endswith("?"):
            return None, None
        return None, "is empty; type a value" + (f" such as {EXAMPLES[name]}" if name in EXAMPLES else "") + "."
    base = kind.rstrip("?")
    if base == "int":
        try:
            return int(text.replace(",", "").replace("_", "")), None
        except ValueError:
            return None, f"{text!r} is not a whole number; type one such as {EXAMPLES.get(name, '10')}" + (
                " or leave it blank" if kind.endswith("?") else "") + "."
    if base == "float":
        try:
            value = float(text.replace(",", ""))
        except ValueError:
            value = None
        if value is None or not math.isfinite(value):
            return None, f"{text!r} is not a number; type one such as {EXAMPLES.get(name, '0.5')}" + (
                " or leave it blank" if kind.endswith("?") else "") + "."
        return value, None
    if base == "list":
        return [part.strip() for part in text.split(",") if part.strip()], None
    return text, None


def parse_length(text: str, unit: str) -> tuple[object, str | None, str]:
    """(value, problem, field) of "train for N steps / N epochs": steps are whole, epochs may be 1.5."""
    field_name = "epochs" if unit == "epochs" else "max_steps"
    text = (text or "").strip()
    try:
        value = int(text) if unit == "steps" else float(text)
    except ValueError:
        what = "a whole number of steps such as 60" if unit == "steps" else "a number of epochs such as 1 or 2.5"
        return None, (f"{text!r} is not {what}." if text else f"is empty; type {what}."), field_name
    if unit == "epochs" and not math.isfinite(value):
        return None, f"{text!r} is not a number of epochs such as 1 or 2.5.", field_name
    return value, None, field_name


def dataset_label(dataset) -> str:
    """How the dataset field names an in-memory datasets.Dataset: "in-memory Dataset (1,200 rows)"."""
    rows = getattr(dataset, "num_rows", None)
    return f"in-memory Dataset ({rows:,} rows)" if isinstance(rows, int) else "in-memory Dataset"


def form_values(cfg: RunConfig) -> dict:
    """What the form shows for ``cfg``: typed fields as text; ZeRO as a ZeRO-1 toggle; padding and length grouping as
    the run will use them (None means longest and grouped for classification); how long as N steps or N epochs."""
    values = {}
    for name in (*FORM_FIELDS, *MORE_FIELDS):
        if name in ("zero1", "length"):
            continue
        value = getattr(cfg, name)
        if name == "dataset" and not isinstance(value, str):
            value = dataset_label(value)
        values[name] = text_of(value) if name in TEXT_KINDS else value
    values["zero1"] = cfg.zero_stage == 1
    # The classification meaning, also for a causal LM, whose rows the panel then shows as moot (disabled).
    values["padding"], values["length_grouping"] = padding_plan(cfg.padding, cfg.length_grouping,
                                                                Task.SEQUENCE_CLASSIFICATION)
    if cfg.epochs is not None and cfg.max_steps is None:
        values["length"], values["length_unit"] = text_of(cfg.epochs), "epochs"
    else:
        values["length"], values["length_unit"] = str(cfg.max_steps or DEFAULT_STEPS), "steps"
    values["metric"] = cfg.metric or default_metric(run_task(cfg))
    return values


@dataclass(frozen=True)
class Reading:
    """What the form describes: the RunConfig (a field that cannot be read keeps the base's value) and why not."""

    config: RunConfig
    problems: list[Problem] = field(default_factory=list)  # fields typed so that they cannot be read


def read_form(values: dict, base: RunConfig | None = None, in_memory: dict | None = None) -> Reading:
    """The RunConfig the form describes; fields the form lacks come from ``base``. ``in_memory`` maps a dataset
    label ("in-memory Dataset (1,200 rows)") to its datasets.Dataset. Unchanged automatic fields stay None
    (padding, length grouping, steps, the metric), so form -> config -> form keeps the base as it was."""
    base = base or RunConfig()
    shown = form_values(base)
    in_memory = in_memory or {}
    changes, problems = {}, []
    for name, value in values.items():
        if name in ("zero1", "length", "length_unit", "padding", "length_grouping", "metric"):
            continue
        if name in TEXT_KINDS:
            if name == "dataset" and value in in_memory:
                changes[name] = in_memory[value]
                continue
            if value == shown.get(name):
                continue  # unchanged: the base's exact value (a path object, a list)
            value, problem = parse(name, value)
            if problem:
                problems.append(Problem(name, problem))
                continue
        changes[name] = value
    if "zero1" in values:
        changes["zero_stage"] = 1 if values["zero1"] else (base.zero_stage if base.zero_stage != 1 else 0)
    _read_padding(values, base, shown, changes)
    _read_length(values, shown, changes, problems)
    config = base.replace(**changes)
    task = run_task(config)
    if task == Task.CAUSAL_LM:
        config = config.replace(padding=None, length_grouping=None)
    config = config.replace(metric=_read_metric(values, base, shown, task))
    if not config.evaluate:
        config = config.replace(**{name: None for name in EVAL_FIELDS})
    return Reading(config, problems)


def config_from_form(values: dict, base: RunConfig | None = None, in_memory: dict | None = None) -> RunConfig:
    """The RunConfig of ``read_form`` (fields that cannot be read keep the base's value)."""
    return read_form(values, base, in_memory).config


def _read_padding(values, base, shown, changes):
    if "padding" not in values:
        return
    changes["padding"] = values["padding"]
    changes["length_grouping"] = bool(values.get("length_grouping")) and values["padding"] == "longest"
    if (changes["padding"], changes["length_grouping"]) == (shown["padding"], shown["length_grouping"]):
        changes["padding"], changes["length_grouping"] = base.padding, base.length_grouping  # unchanged: keep None


def _read_length(values, shown, changes, problems):
    if "length" not in values:
        return
    unit = values.get("length_unit", "steps")
    if (values["length"], unit) == (shown["length"], shown["length_unit"]):
        return  # unchanged: max_steps=None stays None (60 steps, or as many as epochs takes)
    value, problem, name = parse_length(values["length"], unit)
    if problem:
        problems.append(Problem(name, problem))
        return
    changes["max_steps"], changes["epochs"] = (value, None) if unit == "steps" else (None, value)


def _read_metric(values, base, shown, task):
    chosen = values.get("metric", shown["metric"])
    if chosen == shown["metric"] and base.metric is None and chosen == default_metric(task):
        return None
    if chosen not in metrics_for(task) and base.metric is None:
        return None  # the task changed under the form: its own metric
    return chosen


def metric_pairs(task: str, current: str | None = None) -> list[tuple[str, str]]:
    """(label, value) pairs of the metric choice for ``task`` (the form's current one kept, validate names it)."""
    values = list(metrics_for(task))
    if current and current not in values:
        values.append(current)
    return [(METRIC_NAMES.get(v, v), v) for v in values]


def moot_fields(config: RunConfig) -> set[str]:
    """Controls that mean nothing for this run (shown disabled): evaluation settings without evaluation, padding
    for a causal LM (full blocks), length grouping without per-batch padding."""
    moot = set() if config.evaluate else {*EVAL_FIELDS, *HELD_OUT_FIELDS}
    if run_task(config) == Task.CAUSAL_LM and config.padding is None and config.length_grouping is None:
        moot |= {"padding", "length_grouping"}
    return moot


# -- the form's words -------------------------------------------------------------------------

_ASSIGNMENT = re.compile(r"\b(backend|optim|precision)=['\"]([a-z0-9_]+)['\"]")
_BARE_OPTIMIZER = re.compile(r"\b(adamw_ort_fused|adamw_torch_fused|adamw_torch)\b")
_NONE = re.compile(r"\b(eval_every|early_stopping_patience|eval_dataset|eval_samples|target|metric|max_steps|epochs)"
                   r"=None\b")
_FIELD_NAMES = re.compile(r"\b(max_steps|warmup_steps|eval_every|eval_samples|eval_batch_size|eval_screen|eval_fraction|"
                          r"eval_dataset|early_stopping_patience|learning_rate|batch_size|seq_len|num_processes|report_to|"
                          r"output_dir|budget_s)\b")


def humanize(text: str) -> str:
    """Say options the way the form does: backend='eager' -> PyTorch (eager), precision='no' -> fp32,
    evaluate=False -> evaluate off, eval_every=None -> evaluate every blank, seq_len -> sequence length."""
    def label(match):
        return CHOICE_LABELS[match.group(1)].get(match.group(2), match.group(0))

    text = _ASSIGNMENT.sub(label, text)
    text = _BARE_OPTIMIZER.sub(lambda m: CHOICE_LABELS["optim"][m.group(0)], text)
    text = re.sub(r"\bzero_stage=0\b", "ZeRO-1 off", text)
    text = re.sub(r"\bzero_stage=1\b", "ZeRO-1", text)
    text = re.sub(r"\bnum_processes=1\b", "1 process", text)
    text = re.sub(r"\bnum_processes=(\d+)", r"\1 processes", text)
    text = re.sub(r"\bbudget_s=(\d+(?:\.\d+)?)", r"a budget of \1 s", text)
    text = re.sub(r"\bevaluate=False\b", "evaluate off", text)
    text = re.sub(r"\bevaluate=True\b", "evaluate on", text)
    text = _NONE.sub(lambda m: f"{CONTROL_LABELS[m.group(1)]} blank", text)
    return _FIELD_NAMES.sub(lambda m: CONTROL_LABELS[m.group(1)], text)


def problem_words(message: str) -> str:
    """A problem of the form's settings in its words: humanize, and "blank" for None (a typed field left empty is
    None; "threads: must be None or >= 1" asks for something no one can type). Only for problems of the form:
    a run's own error may mean Python's None."""
    return re.sub(r"\bNone\b", "blank", humanize(message))


def problem_lines(problems: list[Problem]) -> list[str]:
    """validate()'s problems in the form's words: "precision: bf16 with ONNX Runtime needs ..."."""
    return [f"{CONTROL_LABELS.get(p.field, p.field)}: {problem_words(p.message)}" for p in problems]


def problems_html(problems: list[Problem]) -> Markup:
    """The summary under the form: every problem (each also shows under its own field), or ready."""
    if not problems:
        return tag("span", "\u2713 ready to run on this machine", class_="ortnb-ready", style="color:#00703c")
    items = (tag("li", tag("b", CONTROL_LABELS.get(p.field, p.field)), ": ", problem_words(p.message)) for p in problems)
    return tag("div", "This run cannot start here:", tag("ul", *items), class_="ortnb-problems", style="color:#b00020")


def problems_by_control(problems: list[Problem], controls) -> dict[str, list[str]]:
    """Each control's problems in the form's words (a problem of a field without a control is left out: the
    summary under the form lists it)."""
    found: dict[str, list[str]] = {}
    for problem in problems:
        control = CONTROL_OF.get(problem.field, problem.field)
        if control in controls:
            found.setdefault(control, []).append(problem_words(problem.message))
    return found


def field_problem_html(messages: list[str]) -> Markup:
    """What shows under a field that has problems (empty when it has none)."""
    return join(tag("div", m, class_="ortnb-field-problem") for m in messages)


def notes_html(notes: list[str]) -> Markup:
    """validation.notes(cfg): what the run will do that a user should know (a new head, the pad token); not errors."""
    if not notes:
        return Markup()
    return tag("div", "Before you run:", tag("ul", *(tag("li", humanize(n)) for n in notes)), class_="ortnb-form-notes")


def choice_note_html(choice, config: RunConfig) -> Markup:
    """Under the Engine row: why the form started from this machine's engine and precision (tuning/defaults.py);
    once the user changes either, what the choice was, so that going back is one step."""
    if choice is None:
        return Markup()
    if choice.kept_by(config):
        return tag("div", choice_text(choice), class_="ortnb-choice-note")
    return tag("div", f"This machine's choice is {choice.label} ({choice.why.partition(': ')[2]}); the form now "
                      f"runs {engine_label(config.backend, config.precision)}.", class_="ortnb-choice-note")


# -- options this machine cannot run ----------------------------------------------------------


def option_tooltips(table: dict[str, dict]) -> dict[str, list[str]]:
    """For each choice field, one tooltip per option: its label, or why this machine cannot run it."""
    tooltips = {}
    for name, states in table.items():
        if name not in CHOICE_LABELS:
            continue
        tooltips[name] = [CHOICE_LABELS[name][value] if reason is None else f"unavailable here: {humanize(reason)}"
                          for value, reason in states.items()]
    return tooltips


def unavailable(table: dict[str, dict]) -> dict[str, list]:
    """The option values this machine cannot run with the rest of the form, per field."""
    return {name: [value for value, reason in states.items() if reason] for name, states in table.items()}


def unavailable_notes(table: dict[str, dict]) -> dict[str, Markup]:
    """Visible (no hovering) notes under each choice: which options cannot run here and why (HTML)."""
    notes = {}
    for name, states in table.items():
        if name not in CHOICE_LABELS:
            continue
        lines = [join([tag("b", CHOICE_LABELS[name][value]), ": ", _first_sentence(humanize(reason))])
                 for value, reason in states.items() if reason]
        notes[name] = tag("div", "unavailable here: ", join(lines, "; "), class_="ortnb-note") if lines else Markup()
    return notes


def _first_sentence(text: str) -> str:
    """The reason without the way out (the flags below the form give that once the option is picked)."""
    return text.partition(". ")[0].rstrip(".")


def option_pairs(name: str) -> list[tuple[str, object]]:
    """(label, value) pairs for a choice widget."""
    labels = CHOICE_LABELS.get(name, {})
    return [(labels.get(value, str(value)), value) for value in CHOICE_FIELDS.get(name, tuple(labels))]
