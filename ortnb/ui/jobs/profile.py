"""Profile: the job that runs ``ortnb.profile`` in the background to show where a training step goes, op by op,
and the Profile tab's view of its result.

The profile's progress and result live in ``state.Profiling``; ``profiling.views`` draws them.
"""

from __future__ import annotations

import threading

from ...config import RunConfig
from ...validation import validate
from ...views.markup import tag
from .. import present
from ..safe_html import SafeHTML
from .host import Job

TWIN = {"eager": "ort", "compile": "ort", "ort": "eager"}  # the engine a configuration is set beside
HINT = ("Press Profile to see where a training step goes, op by op: the form's settings on PyTorch and on ONNX Runtime "
        "(or the compared runs).")


def profile_configs(form_config: RunConfig, compared: list[RunConfig]) -> list[RunConfig]:
    """What the Profile button profiles (pure but for validate): the compared runs' configurations when two or
    more are compared (one per label), else the form's configuration beside the same settings on the other
    engine, where this machine can run that one."""
    if len(compared) >= 2:
        chosen: dict[str, RunConfig] = {}
        for config in compared:
            chosen.setdefault(config.label, config)
        if len(chosen) >= 2:
            return list(chosen.values())
    twin = form_config.replace(backend=TWIN.get(str(form_config.backend), "eager"), name=None)
    if twin.label == form_config.label or validate(twin):
        return [form_config]
    return [twin, form_config] if twin.backend == "eager" else [form_config, twin]  # PyTorch's bar first


class ProfileJob(Job):
    name = "Profile"
    action = "profile"
    tab = 3

    def __init__(self, configs: list[RunConfig], form_refused: bool = False):
        """``form_refused``: the configurations are the form's and the form describes a run this machine cannot
        start."""
        self.configs, self.form_refused = list(configs), form_refused
        self._lock = threading.Lock()
        self._run = None  # the run being profiled, which Stop stops
        self._stopping = False

    def refusal(self, state):
        return "the form describes a run this machine cannot start (see the notes above)" if self.form_refused else None

    def begin(self, state, now):
        state.start_profile([config.label for config in self.configs], now)

    def work(self, update):
        from ...profiling import profile

        def run_started(run):
            with self._lock:
                self._run = run
                stopping = self._stopping
            if stopping:  # Stop came while the previous run was ending
                run.stop()
            update(lambda state: state.profile_progress(run.config.label))

        return profile(self.configs, on_run=run_started)

    def ended(self, state, result):
        state.profile_ended(result.to_dict())

    def failed(self, state, error):
        state.profile_ended(None, error=error)

    def stop(self):
        with self._lock:
            self._stopping, run = True, self._run
        if run is not None:
            threading.Thread(target=run.stop, name="ortnb-stop-profile", daemon=True).start()

    def progress_text(self, state, now):
        return present.profile_text(state.profiling, now) if state.profiling is not None else None

    def result_text(self, result):
        from ...profiling.views import text

        return text(result.to_dict())


class ProfileView:
    """The Profile tab: a hint until a profile ends, then its stacked bars and top-ops tables (drawn once each)."""

    def __init__(self):
        import ipywidgets as w

        self.widget = w.VBox(layout=w.Layout(width="100%"))
        self.figure = None  # the FigureView of the stacked bars, once drawn
        self._shown = object()

    def show(self, profiling) -> None:
        from ...profiling import views
        from ..figure_view import FigureView

        data = profiling.data if profiling is not None else None
        if id(data) == self._shown:
            return
        self._shown = id(data)
        if data is None:
            self.widget.children = [SafeHTML(tag("p", HINT, class_="ortnb-profile-hint"))]
            return
        self.figure = FigureView(views.figure(data))
        tables = SafeHTML(tag("div", views.sections_html(data), class_="ortnb-profile"))
        self.widget.children = [self.figure.widget, tables]
