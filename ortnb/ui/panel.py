"""ConfigPanel: an ipywidgets form for a RunConfig, showing what this machine cannot run and why.

Each row is a label (hover: the field's docstring from RunConfig) and a control without a description
of its own: ipywidgets puts a control's tooltip on its input only when it has no description, and
cuts long descriptions. Rows sit in a grid that wraps to one column on narrow outputs.

Model and dataset are combo boxes: pick a built-in one or type a local folder, a file path or a Hub id;
a data file can also be uploaded (stored under the output folder, see ``upload``). Typed fields are read
exactly as typed (``form.read_form``) when the user presses Enter or leaves the field (``continuous_update``
off: that is the debounce, so a half-typed path is never checked); a problem shows under its own field.
"""

from __future__ import annotations

from typing import Callable

from .. import assets
from ..config import RunConfig, Task
from ..hardware import capabilities
from ..views.markup import Markup, tag
from ..validation import choices, notes, run_task, validate
from . import form, upload
from .safe_html import SafeHTML
from .style import stylesheet_widget

CHOICES = ("backend", "optim", "precision")
INLINE_HELP = {"zero1": "shard optimizer state across processes (DeepSpeed)",
               "length_grouping": "batch rows of similar length together (less padding)",
               "freeze_embeddings": "leave the word embeddings untrained (a cheaper step)",
               "evaluate": "measure the held-out rows while training; keep the best weights"}
PLACEHOLDERS = {"model": "built-in name, local model folder or Hub id",
                "dataset": "built-in name or a .csv/.json/.jsonl/.txt path (or upload one)",
                "learning_rate": "such as 5e-5", **form.BLANK_MEANS}


def _controls(w, cpu_cores: int) -> dict:
    """One control per form field, without a description (the row's label is its description)."""
    full = w.Layout(width="auto", flex="1 1 auto")
    toggles = {"button_width": "auto"}

    def typed(name, layout=None):
        return w.Text(placeholder=PLACEHOLDERS.get(name, ""), continuous_update=False,
                      layout=layout or w.Layout(width="auto", flex="1 1 auto"))

    return {
        "model": w.Combobox(options=list(assets.MODELS), ensure_option=False, continuous_update=False,
                            placeholder=PLACEHOLDERS["model"], layout=full),
        "dataset": w.Combobox(options=list(assets.DATASETS), ensure_option=False, continuous_update=False,
                              placeholder=PLACEHOLDERS["dataset"], layout=full),
        "backend": w.ToggleButtons(options=form.option_pairs("backend"), style=toggles),
        "optim": w.ToggleButtons(options=form.option_pairs("optim"), style=toggles),
        "precision": w.ToggleButtons(options=form.option_pairs("precision"), style=toggles),
        "zero1": w.Checkbox(indent=False, layout=w.Layout(width="auto")),
        "num_processes": w.IntSlider(min=1, max=max(2, cpu_cores), layout=full),
        "batch_size": typed("batch_size"),  # typed, not a bounded box: that turned 0 into 1 without a word
        "seq_len": typed("seq_len"),
        "padding": w.ToggleButtons(options=form.option_pairs("padding"), style=toggles),
        "length_grouping": w.Checkbox(indent=False, layout=w.Layout(width="auto")),
        "length": typed("length", layout=w.Layout(width="110px")),
        "length_unit": w.ToggleButtons(options=form.option_pairs("length_unit"), style=toggles),
        "learning_rate": typed("learning_rate"),
        "freeze_embeddings": w.Checkbox(indent=False, layout=w.Layout(width="auto")),
        "evaluate": w.Checkbox(indent=False, layout=w.Layout(width="auto")),
        "eval_every": typed("eval_every"),
        "metric": w.Dropdown(options=form.metric_pairs(Task.SEQUENCE_CLASSIFICATION), layout=full),
        "early_stopping_patience": typed("early_stopping_patience"),
        **{name: w.Dropdown(options=form.option_pairs(name), layout=full) for name in form.CHOSEN_FIELDS},
        **{name: typed(name) for name in form.MORE_FIELDS if name not in form.CHOSEN_FIELDS},
    }


def _grid(w, rows: list):
    """Rows side by side where the output is wide enough, one column where it is not."""
    return w.GridBox(rows, layout=w.Layout(grid_template_columns="repeat(auto-fit, minmax(min(100%, 480px), 1fr))",
                                           grid_gap="4px 24px", width="100%"))


class ConfigPanel:
    """``panel.config`` is the RunConfig the form describes; ``panel.problems`` why it cannot run here."""

    def __init__(self, config: RunConfig | None = None, in_memory: dict | None = None, engine_choice=None):
        """``engine_choice``: the engine and precision chosen for this machine (tuning/defaults.EngineChoice), said
        under the Engine row; None when the caller gave the settings."""
        import ipywidgets as w

        self._base = config or RunConfig()
        self.engine_choice = engine_choice
        self.choice_note = SafeHTML()
        self.in_memory = dict(in_memory or {})  # dataset label -> datasets.Dataset given to the Dashboard
        self._listeners: list[Callable[[], None]] = []
        self._setting = False
        self.controls = _controls(w, capabilities().cpu_cores)
        self.upload = w.FileUpload(accept=upload.ACCEPT, multiple=False, description="Upload",
                                   layout=w.Layout(width="auto"), tooltip="upload a data file (stored under the "
                                                                           "output folder's uploads/)")
        self.upload.observe(lambda change: self._uploaded(change["new"]), names="value")
        self.upload.add_class("ortnb-upload")  # style.py: its text without ipywidgets' "(0)"
        self.upload_note = SafeHTML()
        watched = (*form.FORM_FIELDS, *form.MORE_FIELDS)
        self.notes = {name: SafeHTML() for name in (*CHOICES, "zero1")}
        self.field_problems = {name: SafeHTML() for name in watched}
        self.flags = SafeHTML()
        self.run_notes = SafeHTML()
        self.shown_problems = []  # what the last refresh found (validate reads data files: once per change)
        rows = [self._row(w, name) for name in form.FORM_FIELDS]
        self.more = w.Accordion(children=[_grid(w, [self._row(w, name) for name in form.MORE_FIELDS])],
                                selected_index=None, layout=w.Layout(width="auto"))
        self.more.set_title(0, "more settings")
        self.widget = w.VBox([stylesheet_widget(), _grid(w, rows), self.more, self.run_notes, self.flags],
                             layout=w.Layout(width="100%"))
        self.widget.add_class("ortnb-form")
        self.set_config(self._base)
        for control in self.controls.values():
            control.observe(lambda _change: self._changed(), names="value")

    def _row(self, w, name: str):
        help_text = RunConfig.help({"zero1": "zero_stage", "length": "max_steps"}.get(name, name))
        label = SafeHTML(tag("span", form.CONTROL_LABELS[name], class_="ortnb-field-label", title=help_text),
                         layout=w.Layout(width="120px", flex="0 0 120px"))
        control = self.controls[name]
        control.tooltip = help_text
        parts = [label, control]
        if name == "length":
            parts.append(self.controls["length_unit"])
        if name == "dataset":
            parts.append(self.upload)
        if name in INLINE_HELP:
            parts.append(SafeHTML(tag("div", INLINE_HELP[name], class_="ortnb-inline-help")))
        line = w.HBox(parts, layout=w.Layout(align_items="center", width="100%"))
        below = [self.notes[name]] if name in self.notes else []
        if name == "backend":
            below.append(self.choice_note)
        below.append(self.field_problems[name])
        if name == "dataset":
            below.append(self.upload_note)
        return w.VBox([line, *below])

    # -- reading and setting --------------------------------------------------------------------

    def _values(self) -> dict:
        return {name: control.value for name, control in self.controls.items()}

    def reading(self) -> form.Reading:
        return form.read_form(self._values(), self._base, self.in_memory)

    @property
    def config(self) -> RunConfig:
        return self.reading().config

    def set_config(self, config: RunConfig) -> None:
        self._base = config
        if not isinstance(config.dataset, str):
            self.in_memory[form.dataset_label(config.dataset)] = config.dataset
        self._setting = True  # one refresh after every control is set, not one per control
        try:
            values = form.form_values(config)
            self.controls["metric"].options = form.metric_pairs(run_task(config), values["metric"])
            for name, value in values.items():
                control = self.controls[name]
                if name in ("model", "dataset") and value not in control.options:
                    control.options = [*control.options, value]
                if name == "num_processes":
                    _hold(control, value)
                control.value = value
        finally:
            self._setting = False
        self.refresh()

    def on_change(self, callback: Callable[[], None]) -> None:
        """Call ``callback`` after every change of the form (the dashboard clears stale messages)."""
        self._listeners.append(callback)

    @property
    def problems(self):
        """Why the form's run cannot start: fields typed so that they cannot be read, then validate()'s."""
        reading = self.reading()
        return [*reading.problems, *validate(reading.config)]

    def _changed(self) -> None:
        if self._setting:
            return
        self.refresh()
        for callback in self._listeners:
            callback()

    # -- uploads --------------------------------------------------------------------------------

    def _uploaded(self, files) -> None:
        if not files:
            return
        item = files[0]
        name, content = item["name"], bytes(item["content"])
        stored = upload.store(name, content, self.config.output_dir)
        if stored.problem:
            self.upload_note.value = tag("div", stored.problem, class_="ortnb-field-problem")
            return
        size = f"{len(content) / 1e3:,.1f} kB"
        again = " (the same file as before)" if stored.kept else ""
        self.upload_note.value = tag("div", f"uploaded {name} ({size}){again}: stored as {stored.path}",
                                     class_="ortnb-upload-note")
        dataset = self.controls["dataset"]
        if stored.path not in dataset.options:
            dataset.options = [*dataset.options, stored.path]
        dataset.value = stored.path

    # -- checking -------------------------------------------------------------------------------

    def refresh(self) -> None:
        """Re-check the form: unavailable options are greyed and explained in a note under their row
        (no hovering needed); each field shows its own problems; the flags list what stops this exact run."""
        reading = self.reading()
        config = reading.config
        problems = [*reading.problems, *validate(config)]
        self.shown_problems = problems
        table = choices(config)
        for name, texts in form.option_tooltips(table).items():
            self.controls[name].tooltips = texts
        unavailable_notes = form.unavailable_notes(table)
        off = form.unavailable(table)
        for name in CHOICES:
            self.notes[name].value = unavailable_notes[name]
            control = self.controls[name]
            for index, value in enumerate(control.options):
                (control.add_class if value[1] in off[name] else control.remove_class)(f"ortnb-off-{index}")
        zero_reason = table["zero_stage"][1]
        self.controls["zero1"].disabled = bool(zero_reason) and not self.controls["zero1"].value
        self.notes["zero1"].value = (tag("div", f"unavailable here: {form.humanize(zero_reason)}", class_="ortnb-note")
                                     if zero_reason else Markup())
        by_control = form.problems_by_control(problems, self.field_problems)
        for name, shown in self.field_problems.items():
            shown.value = form.field_problem_html(by_control.get(name, []))
        self._moot_controls(config)
        self._metric_choices(config)
        self.choice_note.value = form.choice_note_html(self.engine_choice, config)
        self.run_notes.value = form.notes_html(_safe_notes(config)) if not problems else Markup()
        self.flags.value = form.problems_html(problems)

    def _moot_controls(self, config: RunConfig) -> None:
        """Settings that mean nothing for this run are disabled: evaluation settings without evaluation,
        padding for a causal LM (full blocks), grouping unless padding per batch."""
        moot = form.moot_fields(config)
        for name in (*form.EVAL_FIELDS, *form.HELD_OUT_FIELDS, "padding"):
            self.controls[name].disabled = name in moot
        self.controls["length_grouping"].disabled = "length_grouping" in moot or \
            self.controls["padding"].value != "longest"

    def _metric_choices(self, config: RunConfig) -> None:
        pairs = form.metric_pairs(run_task(config), config.metric)  # a metric of another task is not kept
        if [v for _, v in pairs] != [v for _, v in self.controls["metric"].options]:
            self._setting = True
            try:
                self.controls["metric"].options = pairs
                self.controls["metric"].value = config.metric or pairs[0][1]
            finally:
                self._setting = False

    def _repr_mimebundle_(self, **kwargs):
        bundle = self.widget._repr_mimebundle_(**kwargs)
        bundle["text/plain"] = repr(self)
        return bundle

    def __repr__(self) -> str:
        return f"ConfigPanel({self.config.label!r})"


def _hold(slider, value) -> None:
    """Widen ``slider`` to hold ``value``: a slider clamps a value outside its range without a word (4 processes
    would show as 2); shown as given, validate() says under the field why it cannot run here."""
    if isinstance(value, int) and not isinstance(value, bool):
        slider.min, slider.max = min(slider.min, value), max(slider.max, value)


def _safe_notes(config: RunConfig) -> list[str]:
    """validation.notes, which reads the model folder: a folder it cannot read is validate()'s to report."""
    try:
        return notes(config)
    except Exception:  # noqa: BLE001
        return []
