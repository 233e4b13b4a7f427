"""The config form's logic, without widgets: values <-> RunConfig, the form's words, and what this
machine cannot run (pure, tested exactly)."""

from __future__ import annotations

import html
import re

from ..config import RunConfig
from ..data import padding_plan
from ..validation import CHOICE_FIELDS, Problem

FORM_FIELDS = ("model", "dataset", "backend", "optim", "precision", "zero1", "num_processes", "batch_size",
               "seq_len", "padding", "length_grouping", "max_steps", "learning_rate")
CHOICE_LABELS = {
    "backend": {"eager": "PyTorch (eager)", "ort": "ONNX Runtime", "compile": "torch.compile"},
    "optim": {"adamw_torch": "AdamW", "adamw_torch_fused": "fused AdamW (torch)",
              "adamw_ort_fused": "fused Adam (ORT, CUDA)"},
    "precision": {"no": "fp32", "bf16": "bf16", "fp16": "fp16"},
    "padding": {"longest": "per batch (longest row)", "max_length": "to sequence length"},
}
# What each control is called on screen; validate()'s field names map onto these.
CONTROL_LABELS = {"model": "model", "dataset": "dataset", "backend": "engine", "optim": "optimizer",
                  "precision": "precision", "zero_stage": "ZeRO-1", "zero1": "ZeRO-1", "num_processes": "processes",
                  "batch_size": "batch size", "seq_len": "sequence length", "max_steps": "steps",
                  "learning_rate": "learning rate", "warmup_steps": "warm-up steps", "task": "task",
                  "padding": "padding", "length_grouping": "length grouping",
                  "output_dir": "output folder"}
ZERO1_TEXT = "ZeRO-1: shard optimizer state across processes (DeepSpeed)"


def form_values(cfg: RunConfig) -> dict:
    """What the form shows for ``cfg``: ZeRO is a ZeRO-1 toggle; padding and length grouping as the run
    will use them (None means longest and grouped for classification)."""
    values = {name: getattr(cfg, name) for name in FORM_FIELDS if name != "zero1"}
    values["zero1"] = cfg.zero_stage == 1
    # The classification meaning, also for a causal LM, whose rows the panel then shows as moot (disabled).
    values["padding"], values["length_grouping"] = padding_plan(cfg.padding, cfg.length_grouping,
                                                                "sequence-classification")
    return values


def config_from_form(values: dict, base: RunConfig | None = None) -> RunConfig:
    """The RunConfig the form describes; fields the form lacks come from ``base``. For a causal LM
    padding and length grouping are moot (full blocks), so they stay None."""
    from ..validation import run_task

    base = base or RunConfig()
    changes = {name: value for name, value in values.items() if name != "zero1"}
    changes["zero_stage"] = 1 if values.get("zero1") else (base.zero_stage if base.zero_stage != 1 else 0)
    if "padding" in values:
        changes["length_grouping"] = bool(values.get("length_grouping")) and values["padding"] == "longest"
        shown = form_values(base)
        if (changes["padding"], changes["length_grouping"]) == (shown["padding"], shown["length_grouping"]):
            changes["padding"], changes["length_grouping"] = base.padding, base.length_grouping  # unchanged: keep None
    config = base.replace(**changes)
    if run_task(config) == "causal-lm":
        config = config.replace(padding=None, length_grouping=None)
    return config


# -- the form's words -------------------------------------------------------------------------

_ASSIGNMENT = re.compile(r"\b(backend|optim|precision)=['\"]([a-z0-9_]+)['\"]")
_BARE_OPTIMIZER = re.compile(r"\b(adamw_ort_fused|adamw_torch_fused|adamw_torch)\b")


def humanize(text: str) -> str:
    """Say options the way the form does: backend='eager' -> PyTorch (eager), precision='no' -> fp32."""
    def label(match):
        return CHOICE_LABELS[match.group(1)].get(match.group(2), match.group(0))

    text = _ASSIGNMENT.sub(label, text)
    text = _BARE_OPTIMIZER.sub(lambda m: CHOICE_LABELS["optim"][m.group(0)], text)
    text = re.sub(r"\bzero_stage=0\b", "ZeRO-1 off", text)
    text = re.sub(r"\bzero_stage=1\b", "ZeRO-1", text)
    text = re.sub(r"\bnum_processes=1\b", "1 process", text)
    return re.sub(r"\bnum_processes=(\d+)", r"\1 processes", text)


def problem_lines(problems: list[Problem]) -> list[str]:
    """validate()'s problems in the form's words: "precision: bf16 with ONNX Runtime needs ..."."""
    return [f"{CONTROL_LABELS.get(p.field, p.field)}: {humanize(p.message)}" for p in problems]


def problems_html(problems: list[Problem]) -> str:
    if not problems:
        return "<span class='ortnb-ready' style='color:#00703c'>&#10003; ready to run on this machine</span>"
    items = "".join(f"<li><b>{html.escape(CONTROL_LABELS.get(p.field, p.field))}</b>: "
                    f"{html.escape(humanize(p.message))}</li>" for p in problems)
    return f"<div class='ortnb-problems' style='color:#b00020'>This run cannot start here:<ul>{items}</ul></div>"


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


def unavailable_notes(table: dict[str, dict]) -> dict[str, str]:
    """Visible (no hovering) notes under each choice: which options cannot run here and why (HTML)."""
    notes = {}
    for name, states in table.items():
        if name not in CHOICE_LABELS:
            continue
        lines = [f"<b>{html.escape(CHOICE_LABELS[name][value])}</b>: {html.escape(_first_sentence(humanize(reason)))}"
                 for value, reason in states.items() if reason]
        notes[name] = ("<div class='ortnb-note'>unavailable here: " + "; ".join(lines) + "</div>") if lines else ""
    return notes


def _first_sentence(text: str) -> str:
    """The reason without the way out (the flags below the form give that once the option is picked)."""
    return text.partition(". ")[0].rstrip(".")


def option_pairs(name: str) -> list[tuple[str, object]]:
    """(label, value) pairs for a choice widget."""
    labels = CHOICE_LABELS.get(name, {})
    return [(labels.get(value, str(value)), value) for value in CHOICE_FIELDS.get(name, tuple(labels))]
