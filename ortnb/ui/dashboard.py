"""Dashboard: the config panel, Run / Stop / Add to comparison / Clear, live charts and the comparison view.

Runs train in worker processes; a background thread reads their metrics files and redraws at
most twice a second (batched), so the kernel stays free: other cells run while a run trains.
"""

from __future__ import annotations

import html
import threading

from .. import charts
from .. import comparison as comparing
from ..config import RunConfig
from ..display import Throttle, warn_text_mode, widget_frontend
from ..errors import ConfigError
from ..runner import Run, launch
from ..validation import validate

POLL_SECONDS = 0.25


def status_text(run: Run | None, records: list[dict] | None = None) -> str:
    """The status line for a run (pure given the run's state)."""
    if run is None:
        return "idle"
    status = run.status
    steps = [r for r in (records if records is not None else run.records()) if r.get("kind") == "step"]
    text = f"{run.config.label}: {status}"
    if steps:
        text += f" (step {steps[-1]['step']}/{run.config.max_steps})"
    if status == "failed" and run.error:
        text += f" - {run.error.splitlines()[0]}"
    return text


class Dashboard:
    def __init__(self, config: RunConfig | None = None, *, throttle: Throttle | None = None, start: bool = True):
        self.runs: list[Run] = []
        self.compared: list[Run] = []
        self.chart = charts.LiveChart()
        self.throttle = throttle or Throttle(0.5)
        self.message = ""
        self._seen: dict[str, int] = {}
        self._lock = threading.Lock()
        self._stop_polling = threading.Event()
        self.widgets = widget_frontend()
        if not self.widgets:
            warn_text_mode("ortnb.Dashboard")
            self._config = config or RunConfig()
            return
        self._build(config)
        if start:
            self._thread = threading.Thread(target=self._poll_forever, name="ortnb-dashboard", daemon=True)
            self._thread.start()

    # -- layout ---------------------------------------------------------------------------------

    def _build(self, config):
        import ipywidgets as w
        import plotly.graph_objects as go

        from .panel import ConfigPanel

        self.panel = ConfigPanel(config)
        self.buttons = {name: w.Button(description=name, button_style=style, icon=icon)
                        for name, style, icon in (("Run", "success", "play"), ("Stop", "danger", "stop"),
                                                  ("Add to comparison", "info", "plus"), ("Clear", "", "trash"))}
        self.buttons["Run"].on_click(lambda _b: self.run())
        self.buttons["Stop"].on_click(lambda _b: self.stop())
        self.buttons["Add to comparison"].on_click(lambda _b: self.add_to_comparison())
        self.buttons["Clear"].on_click(lambda _b: self.clear())
        self.status = w.HTML(value=self._status_html())
        self.figure = charts.live_figure(widget=True)
        self.comparison_figure = go.FigureWidget(charts.comparison_figure(None))
        self.comparison_table = w.HTML()
        tabs = w.Tab(children=[self.figure, w.VBox([self.comparison_figure, self.comparison_table])])
        tabs.set_title(0, "Live")
        tabs.set_title(1, "Comparison")
        self.widget = w.VBox([self.panel.widget, w.HBox(list(self.buttons.values())), self.status, tabs])
        self.widget.add_class("ortnb-dashboard")

    # -- actions --------------------------------------------------------------------------------

    def run(self, config: RunConfig | None = None) -> Run | None:
        """Start a run of ``config`` (default: the form's). Problems are shown, not raised, in the UI."""
        config = config or (self.panel.config if self.widgets else self._config)
        problems = validate(config)
        if problems:
            self._say("cannot start: " + "; ".join(str(p) for p in problems))
            if not self.widgets:
                raise ConfigError([str(p) for p in problems])
            return None
        run = launch(config)
        with self._lock:
            self.runs.append(run)
            self.chart.add_run(str(run.run_dir), config.label)
        self._say("")
        if not self.widgets:
            self._follow_in_text(run)
        return run

    @property
    def active(self) -> Run | None:
        return self.runs[-1] if self.runs else None

    def stop(self) -> None:
        run = self.active
        if run is not None and not run.done:
            self._say(f"stopping {run.config.label} (checkpointing first)...")
            threading.Thread(target=run.stop, name="ortnb-stop", daemon=True).start()

    def add_to_comparison(self, run: Run | None = None) -> None:
        run = run or self.active
        if run is None or not run.done:
            self._say("add a run to the comparison once it has finished")
            return
        try:
            comparing.check_same_workload([r.config for r in self.compared] + [run.config])
        except ConfigError as error:
            self._say(str(error))
            return
        self.compared.append(run)
        self._draw_comparison()

    def comparison(self):
        """The comparison table (first added run is the baseline)."""
        return comparing.table([[r.summary()] for r in self.compared]) if self.compared else None

    def clear(self) -> None:
        with self._lock:
            self.runs, self.compared, self._seen = [], [], {}
            self.chart = charts.LiveChart()
            if self.widgets:
                self.figure.data = []
                self.comparison_figure.data[0].update(x=[], y=[], text=[])
                self.comparison_table.value = ""
        self._say("")

    def close(self) -> None:
        self._stop_polling.set()

    # -- drawing --------------------------------------------------------------------------------

    def _poll_forever(self) -> None:
        while not self._stop_polling.wait(POLL_SECONDS):
            try:
                self.refresh()
            except Exception as error:  # noqa: BLE001 - a drawing hiccup must not end the dashboard
                self._say(f"display error: {error}")

    def refresh(self, force: bool = False) -> bool:
        """Redraw if there is news and the throttle allows; returns whether it drew."""
        with self._lock:
            news = {str(r.run_dir): r for r in self.runs if len(r.records()) != self._seen.get(str(r.run_dir))}
            if not news or not (force or self.throttle.ready() or any(r.done for r in news.values())):
                return False
            updates = []
            for key, run in news.items():
                records = run.records()
                self._seen[key] = len(records)
                engine = next((e["engine"] for e in reversed(run.events) if e["event"] == "engine"), None)
                updates.append(self.chart.updates(key, records, engine))
            if self.widgets:
                with self.figure.batch_update():
                    for new, changed in updates:
                        charts.apply_updates(self.figure, new, changed)
                self.status.value = self._status_html()
        return True

    def _draw_comparison(self) -> None:
        table = self.comparison()
        if not self.widgets or table is None:
            return
        bars = charts.comparison_bars(table)
        with self.comparison_figure.batch_update():
            bar = self.comparison_figure.data[0]
            bar.x, bar.y, bar.text = bars["x"], bars["y"], bars["text"]
            bar.error_y.array = bars["error_y"]
        self.comparison_table.value = table.to_html(index=False, float_format=lambda v: f"{v:.3g}")

    def _status_html(self) -> str:
        text = status_text(self.active)
        colour = {"failed": "#CC6677", "stopped": "#DDCC77", "completed": "#117733"}.get(
            self.active.status if self.active else "", "#333333")
        extra = f"<br><i>{html.escape(self.message)}</i>" if self.message else ""
        return f"<div class='ortnb-status' style='color:{colour}'><b>status:</b> {html.escape(text)}{extra}</div>"

    def _say(self, message: str) -> None:
        self.message = message
        if self.widgets:
            self.status.value = self._status_html()
        elif message:
            print(f"ortnb: {message}")

    # -- without widgets ------------------------------------------------------------------------

    def _follow_in_text(self, run: Run) -> None:
        from ..cli import format_step

        printed = 0
        while not run.done:
            steps = [r for r in run.records() if r.get("kind") == "step"]
            for record in steps[printed:]:
                print(format_step(record), flush=True)
            printed = len(steps)
            run.wait(0.5)
        print(status_text(run))
        figure = charts.live_figure()
        new, _ = self.chart.updates(str(run.run_dir), run.records(), run.summary()["engine"])
        charts.apply_updates(figure, new, [])
        _show_static(figure)

    # -- display --------------------------------------------------------------------------------

    def _repr_mimebundle_(self, **kwargs):
        bundle = self.widget._repr_mimebundle_(**kwargs) if self.widgets else {}
        bundle = dict(bundle or {})
        bundle["text/plain"] = repr(self)
        return bundle

    def __repr__(self) -> str:
        return f"Dashboard(runs={len(self.runs)}, status={status_text(self.active)!r})"


def _show_static(figure) -> None:
    try:
        from IPython import get_ipython
        from IPython.display import display

        if get_ipython() is not None:
            display(figure)
            return
    except ImportError:
        pass
    path = "ortnb-run.html"
    figure.write_html(path, include_plotlyjs=True)
    print(f"ortnb: chart written to {path}")
