"""ConfigPanel: an ipywidgets form for a RunConfig, flagging what this machine cannot run."""

from __future__ import annotations

from .. import assets
from ..hardware import capabilities
from ..config import RunConfig
from ..validation import choices, validate
from . import form


class ConfigPanel:
    """``panel.config`` is the RunConfig the form describes; ``panel.problems`` why it cannot run here."""

    def __init__(self, config: RunConfig | None = None):
        import ipywidgets as w

        self._base = config or RunConfig()
        caps = capabilities()
        help_for = RunConfig.help
        style = {"description_width": "110px"}
        self.controls = {
            "model": w.Dropdown(options=list(assets.MODELS), description="model", style=style),
            "dataset": w.Dropdown(options=list(assets.DATASETS), description="dataset", style=style),
            "backend": w.ToggleButtons(options=form.option_pairs("backend"), description="backend", style=style),
            "optim": w.ToggleButtons(options=form.option_pairs("optim"), description="optimizer", style=style),
            "precision": w.ToggleButtons(options=form.option_pairs("precision"), description="precision",
                                         style=style),
            "zero1": w.Checkbox(description="ZeRO-1 (DeepSpeed: optimizer state sharded across processes)",
                                indent=False),
            "num_processes": w.IntSlider(min=1, max=max(2, caps.cpu_cores), description="processes", style=style),
            "batch_size": w.BoundedIntText(min=1, max=4096, description="batch size", style=style),
            "seq_len": w.BoundedIntText(min=8, max=8192, description="sequence length", style=style),
            "max_steps": w.BoundedIntText(min=1, max=1_000_000, description="steps", style=style),
            "learning_rate": w.FloatLogSlider(min=-6, max=-2, step=0.1, description="learning rate",
                                              readout_format=".1e", style=style),
        }
        for name, control in self.controls.items():
            control.tooltip = help_for("zero_stage" if name == "zero1" else name)
        self.flags = w.HTML()
        self.widget = w.VBox([*self.controls.values(), self.flags])
        self.set_config(self._base)
        for control in self.controls.values():
            control.observe(lambda _change: self.refresh(), names="value")

    @property
    def config(self) -> RunConfig:
        return form.config_from_form({name: c.value for name, c in self.controls.items()}, self._base)

    def set_config(self, config: RunConfig) -> None:
        self._base = config
        for name, value in form.form_values(config).items():
            control = self.controls[name]
            if name in ("model", "dataset") and value not in control.options:
                control.options = [*control.options, value]
            control.value = value
        self.refresh()

    @property
    def problems(self):
        return validate(self.config)

    def refresh(self) -> None:
        """Re-check the form: per-option tooltips say why an option cannot run; the flags list problems."""
        config = self.config
        tooltips = form.option_tooltips(choices(config))
        for name, texts in tooltips.items():
            self.controls[name].tooltips = texts
        self.flags.value = form.problems_html(validate(config))

    def _repr_mimebundle_(self, **kwargs):
        bundle = self.widget._repr_mimebundle_(**kwargs)
        bundle["text/plain"] = repr(self)
        return bundle

    def __repr__(self) -> str:
        return f"ConfigPanel({self.config.label!r})"
