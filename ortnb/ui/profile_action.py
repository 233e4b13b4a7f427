"""Profile: the Dashboard's part that runs ``ortnb.profile`` in the background and shows where a step goes.

A mixin of Dashboard, as Find fastest is (find_fastest.py): it uses the dashboard's state, lock, widgets and
render. The profile's progress and result live in ``state.Profiling``; ``profiling.views`` draws them.
"""

from __future__ import annotations

import threading

from ..config import RunConfig
from ..views.markup import tag
from ..validation import validate
from .safe_html import SafeHTML

TWIN = {"eager": "ort", "compile": "ort", "ort": "eager"}  # the engine a configuration is set beside


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


class ProfileAction:
    def profile(self, configs: list[RunConfig] | None = None, wait: bool | None = None):
        """Profile where a training step goes, op by op (``ortnb.profile``), in the background; the stacked bars
        and top ops go to the Profile tab. Default: see ``profile_configs``. ``wait`` (default: without
        widgets) blocks and returns the Profile."""
        from ..profiling import profile

        form_config = self.panel.config if self.widgets else self._config
        chosen = list(configs) if configs else profile_configs(
            form_config, [self.state.runs[i].config for i in self.state.compared if i in self.state.runs])
        with self._lock:
            busy = self.state.busy
            problems = self.panel.problems if self.widgets and not configs else []
            if busy or problems:
                self.state.say(self.state.why_run_is_disabled() if busy else
                               "cannot profile: the form describes a run this machine cannot start", "warning")
                self._show_message()
                return None
            self.state.start_profile([config.label for config in chosen], self.clock())
            self._profile_run = None
        self.render()

        def measure():
            try:
                result = profile(chosen, on_run=self._profile_run_started)
            except Exception as error:  # noqa: BLE001 - shown on the dashboard, never a thread traceback
                with self._lock:
                    self.state.profile_ended(None, error=str(error).strip().splitlines()[0])
                self.render()
                return None
            with self._lock:
                self.state.profile_ended(result.to_dict())
            self.render()
            if self.widgets:
                self.tabs.selected_index = 3
            else:
                from ..profiling.views import text

                print(text(result.to_dict()))
            return result

        if wait if wait is not None else not self.widgets:
            return measure()
        threading.Thread(target=measure, name="ortnb-profile", daemon=True).start()
        return None

    def _profile_run_started(self, run) -> None:
        with self._lock:
            self._profile_run = run
            self.state.profile_progress(run.config.label)
            stopping = self.state.profiling is not None and self.state.profiling.stopping
        if stopping:  # Stop came while the previous run was ending
            run.stop()
        self.render()

    def _stop_profile(self) -> None:
        run = getattr(self, "_profile_run", None)
        if run is not None:
            threading.Thread(target=run.stop, name="ortnb-stop-profile", daemon=True).start()

    def _render_profile_progress(self, profiling) -> None:
        from . import present

        self.progress.layout.display = "flex"
        self.bar.max = max(1, len(profiling.labels))
        self.bar.value = self.bar.max if profiling.done else profiling.current
        self.bar.bar_style = ("success" if profiling.data is not None else "danger" if profiling.error else "warning"
                              ) if profiling.done else "info"
        self.progress_text.value = present.progress_html(present.profile_text(profiling, self.clock()))

    def _render_profile(self) -> None:

        from ..profiling import views
        from .figure_view import FigureView

        profiling = self.state.profiling
        data = profiling.data if profiling is not None else None
        if id(data) == getattr(self, "_profile_key", None):
            return
        self._profile_key = id(data)
        if data is None:
            self.profile_view.children = [SafeHTML(tag("p", "Press Profile to see where a training step goes, op by "
                                                       "op: the form's settings on PyTorch and on ONNX Runtime (or "
                                                       "the compared runs).", class_="ortnb-profile-hint"))]
            return
        self.profile_figure = FigureView(views.figure(data))
        chart = self.profile_figure.widget
        tables = SafeHTML(tag("div", views.sections_html(data), class_="ortnb-profile"))
        self.profile_view.children = [chart, tables]
