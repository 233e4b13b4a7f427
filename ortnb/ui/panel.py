"""ConfigPanel: an ipywidgets form for a RunConfig, showing what this machine cannot run and why.

Each row is a label (hover: the field's docstring from RunConfig) and a control without a description
of its own: ipywidgets puts a control's tooltip on its input only when it has no description, and
cuts long descriptions. Rows sit in a grid that wraps to one column on narrow outputs.
"""

from __future__ import annotations

import html
from typing import Callable

from .. import assets
from ..config import RunConfig
from ..hardware import capabilities
from ..validation import choices, run_task, validate
from . import form
from .style import stylesheet_widget

CHOICES = ("backend", "optim", "precision")
INLINE_HELP = {"zero1": "shard optimizer state across processes (DeepSpeed)",
               "length_grouping": "batch rows of similar length together (less padding)"}


class ConfigPanel:
    """``panel.config`` is the RunConfig the form describes; ``panel.problems`` why it cannot run here."""

    def __init__(self, config: RunConfig | None = None):
        import ipywidgets as w

        self._base = config or RunConfig()
        self._listeners: list[Callable[[], None]] = []
        caps = capabilities()
        full = w.Layout(width="auto", flex="1 1 auto")
        toggles = {"button_width": "auto"}
        self.controls = {
            "model": w.Dropdown(options=list(assets.MODELS), layout=full),
            "dataset": w.Dropdown(options=list(assets.DATASETS), layout=full),
            "backend": w.ToggleButtons(options=form.option_pairs("backend"), style=toggles),
            "optim": w.ToggleButtons(options=form.option_pairs("optim"), style=toggles),
            "precision": w.ToggleButtons(options=form.option_pairs("precision"), style=toggles),
            "zero1": w.Checkbox(indent=False, layout=w.Layout(width="auto")),
            "num_processes": w.IntSlider(min=1, max=max(2, caps.cpu_cores), layout=full),
            "batch_size": w.BoundedIntText(min=1, max=4096, layout=full),
            "seq_len": w.BoundedIntText(min=8, max=8192, layout=full),
            "padding": w.ToggleButtons(options=form.option_pairs("padding"), style=toggles),
            "length_grouping": w.Checkbox(indent=False, layout=w.Layout(width="auto")),
            "max_steps": w.BoundedIntText(min=1, max=1_000_000, layout=full),
            "learning_rate": w.FloatLogSlider(min=-6, max=-2, step=0.1, readout_format=".1e", layout=full),
        }
        self.notes = {name: w.HTML() for name in (*CHOICES, "zero1")}
        self.flags = w.HTML()
        rows = [self._row(w, name, control) for name, control in self.controls.items()]
        self.widget = w.VBox([stylesheet_widget(), w.GridBox(rows, layout=w.Layout(
            grid_template_columns="repeat(auto-fit, minmax(min(100%, 480px), 1fr))", grid_gap="4px 24px",
            width="100%")), self.flags], layout=w.Layout(width="100%"))
        self.widget.add_class("ortnb-form")
        self.set_config(self._base)
        for control in self.controls.values():
            control.observe(lambda _change: self._changed(), names="value")

    def _row(self, w, name: str, control):
        help_text = RunConfig.help("zero_stage" if name == "zero1" else name)
        control.tooltip = help_text
        label = w.HTML(f"<span class='ortnb-field-label' title='{html.escape(help_text, quote=True)}'>"
                       f"{html.escape(form.CONTROL_LABELS[name])}</span>", layout=w.Layout(width="120px",
                                                                                            flex="0 0 120px"))
        parts = [label, control]
        if name in INLINE_HELP:
            parts.append(w.HTML(f"<span class='ortnb-inline-help'>{INLINE_HELP[name]}</span>"))
        line = w.HBox(parts, layout=w.Layout(align_items="center", width="100%"))
        return w.VBox([line, self.notes[name]]) if name in self.notes else line

    @property
    def config(self) -> RunConfig:
        return form.config_from_form({name: c.value for name, c in self.controls.items()}, self._base)

    def set_config(self, config: RunConfig) -> None:
        self._base = config
        for name, value in form.form_values(config).items():
            control = self.controls[name]
            if name == "max_steps" and value is None:
                from ..config import DEFAULT_STEPS

                value = DEFAULT_STEPS  # None trains the default 60 steps (or what epochs takes)
            if name in ("model", "dataset") and value not in control.options:
                control.options = [*control.options, value]
            control.value = value
        self.refresh()

    def on_change(self, callback: Callable[[], None]) -> None:
        """Call ``callback`` after every change of the form (the dashboard clears stale messages)."""
        self._listeners.append(callback)

    @property
    def problems(self):
        return validate(self.config)

    def _changed(self) -> None:
        self.refresh()
        for callback in self._listeners:
            callback()

    def refresh(self) -> None:
        """Re-check the form: unavailable options are greyed and explained in a note under their row
        (no hovering needed); the flags list what stops this exact run."""
        config = self.config
        table = choices(config)
        for name, texts in form.option_tooltips(table).items():
            self.controls[name].tooltips = texts
        notes = form.unavailable_notes(table)
        off = form.unavailable(table)
        for name in CHOICES:
            self.notes[name].value = notes[name]
            control = self.controls[name]
            for index, value in enumerate(control.options):
                (control.add_class if value[1] in off[name] else control.remove_class)(f"ortnb-off-{index}")
        zero_reason = table["zero_stage"][1]
        self.controls["zero1"].disabled = bool(zero_reason) and not self.controls["zero1"].value
        self.notes["zero1"].value = (f"<div class='ortnb-note'>unavailable here: {html.escape(form.humanize(zero_reason))}"
                                     "</div>" if zero_reason else "")
        self._padding_controls(config)
        self.flags.value = form.problems_html(validate(config))

    def _padding_controls(self, config: RunConfig) -> None:
        """A causal LM trains on full blocks: nothing to pad. Grouping only matters when padding per batch."""
        moot = config.padding is None and config.length_grouping is None and run_task(config) == "causal-lm"
        self.controls["padding"].disabled = moot
        self.controls["length_grouping"].disabled = moot or self.controls["padding"].value != "longest"

    def _repr_mimebundle_(self, **kwargs):
        bundle = self.widget._repr_mimebundle_(**kwargs)
        bundle["text/plain"] = repr(self)
        return bundle

    def __repr__(self) -> str:
        return f"ConfigPanel({self.config.label!r})"
