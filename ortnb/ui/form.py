"""The config form's logic, without widgets: values <-> RunConfig, flags from validate (pure, tested exactly)."""

from __future__ import annotations

import html

from ..config import RunConfig
from ..validation import CHOICE_FIELDS, Problem

FORM_FIELDS = ("model", "dataset", "backend", "optim", "precision", "zero1", "num_processes", "batch_size",
               "seq_len", "max_steps", "learning_rate")
CHOICE_LABELS = {
    "backend": {"eager": "PyTorch (eager)", "ort": "ONNX Runtime", "compile": "torch.compile"},
    "optim": {"adamw_torch": "AdamW", "adamw_torch_fused": "fused AdamW (torch)",
              "adamw_ort_fused": "fused Adam (ORT, CUDA)"},
    "precision": {"no": "fp32", "bf16": "bf16", "fp16": "fp16"},
}


def form_values(cfg: RunConfig) -> dict:
    """What the form shows for ``cfg`` (ZeRO is a ZeRO-1 toggle in the form)."""
    values = {name: getattr(cfg, name) for name in FORM_FIELDS if name != "zero1"}
    values["zero1"] = cfg.zero_stage == 1
    return values


def config_from_form(values: dict, base: RunConfig | None = None) -> RunConfig:
    """The RunConfig the form describes; fields the form lacks come from ``base``."""
    base = base or RunConfig()
    changes = {name: value for name, value in values.items() if name != "zero1"}
    changes["zero_stage"] = 1 if values.get("zero1") else (base.zero_stage if base.zero_stage != 1 else 0)
    return base.replace(**changes)


def option_tooltips(table: dict[str, dict]) -> dict[str, list[str]]:
    """For each choice field, one tooltip per option: its label, or why this machine cannot run it."""
    tooltips = {}
    for name, states in table.items():
        if name not in CHOICE_LABELS:
            continue
        tooltips[name] = [CHOICE_LABELS[name][value] if reason is None else f"unavailable here: {reason}"
                          for value, reason in states.items()]
    return tooltips


def unavailable(table: dict[str, dict]) -> dict[str, list]:
    """The option values this machine cannot run with the rest of the form, per field."""
    return {name: [value for value, reason in states.items() if reason] for name, states in table.items()}


def problems_html(problems: list[Problem]) -> str:
    if not problems:
        return "<span style='color:#117733'>&#10003; ready to run on this machine</span>"
    items = "".join(f"<li><b>{html.escape(p.field)}</b>: {html.escape(p.message)}</li>" for p in problems)
    return f"<div style='color:#CC6677'>This run cannot start here:<ul>{items}</ul></div>"


def option_pairs(name: str) -> list[tuple[str, object]]:
    """(label, value) pairs for a choice widget."""
    labels = CHOICE_LABELS.get(name, {})
    return [(labels.get(value, str(value)), value) for value in CHOICE_FIELDS[name]]
