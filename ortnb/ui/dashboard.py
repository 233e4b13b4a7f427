"""Dashboard: the config form, Run / Stop / Add to comparison / Clear, progress, live charts and the
comparison view.

What the screen shows lives in one pure model (``state.DashboardState``, keyed by run id); this
module only feeds it what it reads from the runs' folders and renders it. Runs train in worker
processes; a background thread reads their metrics and redraws at most twice a second, so the kernel
stays free: other cells run while a run trains.
"""

from __future__ import annotations

import threading
import time
from typing import Callable

from .. import charts
from ..comparison import workload_problems
from ..config import RunConfig
from ..display import Throttle, show_static, warn_text_mode, widget_frontend
from ..errors import ConfigError
from ..runner import launch
from ..runs import layout
from ..runs.run import Run
from ..tuning.defaults import choice_text
from ..validation import validate
from ..views.markup import tag
from . import form, present
from .figure_view import FigureView
from .jobs import Announcement, Event, EventBus, Job, JobHost
from .jobs.export import ExportJob
from .jobs.profile import ProfileJob, ProfileView, profile_configs
from .jobs.race import RaceJob
from .jobs.search import DEFAULT_BUDGET_S, SearchJob
from .redraw import redraw
from .safe_html import SafeHTML
from .state import FINAL, DashboardState

POLL_SECONDS = 0.25
TABS = ("Live", "Comparison", "Try it", "Profile")
BUTTONS = (("Run", "success", "play"), ("Stop", "danger", "stop"), ("Add to comparison", "info", "plus"),
           ("Clear", "", "trash"), ("Find fastest", "warning", "search"), ("Load winner", "", "upload"),
           ("Profile", "", "bar-chart"), ("Export", "", "download"))


class Dashboard:
    """The notebook's front page for runs. Its background jobs (Find fastest, Profile, Export) are small objects that
    ``jobs.JobHost`` runs one at a time; every change they make to the state, and every run that ends, is announced
    on ``self.events``, to which the Dashboard subscribes its drawing (or printing, without widgets)."""

    def __init__(self, config: RunConfig | None = None, *, dataset=None, throttle: Throttle | None = None,
                 start: bool = True, clock: Callable[[], float] = time.monotonic,
                 wall_clock: Callable[[], float] = time.time, warm: bool = True):
        """``dataset``: the training data for the form (a path, or a datasets.Dataset in this kernel, which the
        form names "in-memory Dataset (N rows)"); it replaces ``config``'s. Without ``config`` the form starts from
        the engine and precision this machine trains fastest (tuning/defaults.py), said under the Engine row and on
        the card. ``warm``: runs train in this session's warm worker where they can (``ortnb.launch(warm=True)``):
        from the second run of a kind, no interpreter start or imports."""
        self.engine_choice = None
        if config is None:
            from ..tuning.defaults import choose

            base = RunConfig() if dataset is None else RunConfig(dataset=dataset)
            self.engine_choice = choose(base.model, base.dataset)
            config = base.replace(backend=self.engine_choice.backend, precision=self.engine_choice.precision)
        elif dataset is not None:
            config = config.replace(dataset=dataset)
        self.warm = warm
        self.state = DashboardState()
        self.runs: dict[str, Run] = {}  # run id -> the Run it reads from; the state says what is shown
        self.chart = charts.LiveChart()
        self.throttle = throttle or Throttle(0.5, clock)
        self.clock, self.wall_clock = clock, wall_clock
        self._seen: dict[str, int] = {}
        self._table_key = None
        self._live_key = None
        self._lock = threading.RLock()
        self._stop_polling = threading.Event()
        self.events = EventBus()
        self.jobs = JobHost(self.state, self._lock, self.events, clock)
        self.widgets = widget_frontend()
        self._subscribe()
        if not self.widgets:
            warn_text_mode("ortnb.Dashboard")
            self._config = config or RunConfig()
            return
        self._build(config)
        self.render()
        if start:
            self._thread = threading.Thread(target=self._poll_forever, name="ortnb-dashboard", daemon=True)
            self._thread.start()

    # -- layout ---------------------------------------------------------------------------------

    def _build(self, config):
        import ipywidgets as w

        from .columns import ColumnPicker
        from .fit import WidthWatcher, responsive
        from .panel import ConfigPanel
        from .tryit import TryIt

        self.panel = ConfigPanel(config, engine_choice=self.engine_choice)
        self.panel.on_change(self._form_changed)
        self.columns = ColumnPicker(self.panel, on_change=self._form_changed)  # text/label columns from the header
        # width "auto", not 100%: accordions and tabs have margins, and 100% plus a margin scrolls sideways.
        self.settings = w.Accordion(children=[self.panel.widget], selected_index=0, layout=w.Layout(width="auto"))
        self.buttons = {name: w.Button(description=name, button_style=style, icon=icon, layout=w.Layout(width="auto"))
                        for name, style, icon in BUTTONS}
        self.buttons["Run"].on_click(lambda _b: self.run())
        self.buttons["Stop"].on_click(lambda _b: self.stop())
        self.buttons["Add to comparison"].on_click(lambda _b: self.add_to_comparison())
        self.buttons["Clear"].on_click(lambda _b: self.clear())
        self.buttons["Find fastest"].on_click(lambda _b: self.find_fastest())
        self.buttons["Load winner"].on_click(lambda _b: self.load_winner())
        self.buttons["Profile"].on_click(lambda _b: self.profile())
        self.buttons["Profile"].tooltip = "where a training step goes, op by op: PyTorch and ONNX Runtime side by side"
        self.buttons["Export"].on_click(lambda _b: self.export())
        self.buttons["Export"].tooltip = ("the latest run as an ONNX folder to ship (model.onnx, tokenizer, class "
                                          "names, parity with PyTorch, predict.py), from its best evaluation's weights")
        self.budget = w.BoundedIntText(value=int(DEFAULT_BUDGET_S), min=1, max=24 * 3600, layout=w.Layout(width="90px"),
                                       tooltip="how long Find fastest may measure, in seconds")
        budget_label = SafeHTML(tag("span", "budget (s)", class_="ortnb-field-label",
                                    title="how long Find fastest may measure"))
        budget = w.HBox([budget_label, self.budget], layout=w.Layout(align_items="center"))
        self.status = SafeHTML()
        self.bar = w.IntProgress(min=0, max=1, value=0, layout=w.Layout(flex="1 1 auto", width="auto"))
        self.progress_text = SafeHTML()
        self.progress = w.HBox([self.bar, self.progress_text], layout=w.Layout(width="100%", align_items="center"))
        self.progress.add_class("ortnb-progress")
        self.card = SafeHTML()
        self.figure = responsive(charts.live_figure(widget=True))
        self.comparison_figure = FigureView(charts.comparison_figure())
        self.table = w.GridBox(layout=w.Layout(width="100%"))
        self.table.add_class("ortnb-table")
        self.search_table = SafeHTML()
        self.search_figure = FigureView(css_class="ortnb-race")  # a race's optimisation history, when there is one
        full = w.Layout(width="100%")
        self.try_it = TryIt()
        self.profile_tab = ProfileView()
        self.profile_view = self.profile_tab.widget
        self.tabs = w.Tab(children=[w.VBox([self.figure], layout=full),
                                    w.VBox([self.comparison_figure.widget, self.table, self.search_table,
                                            self.search_figure.widget], layout=full),
                                    self.try_it.widget, self.profile_view],
                          layout=w.Layout(width="auto"))
        for index, title in enumerate(TABS):
            self.tabs.set_title(index, title)
        row = [*(self.buttons[name] for name in ("Run", "Stop", "Add to comparison", "Clear", "Find fastest")), budget,
               self.buttons["Load winner"], self.buttons["Profile"], self.buttons["Export"]]
        self.widget = w.VBox([self.settings, w.HBox(row, layout=w.Layout(flex_flow="row wrap")), self.status,
                              self.progress, self.card, self.tabs, WidthWatcher()], layout=full)
        self.widget.add_class("ortnb-dashboard")

    # -- actions --------------------------------------------------------------------------------

    def run(self, config: RunConfig | None = None) -> Run | None:
        """Start a run of ``config`` (default: the form's). One run at a time; problems are shown, not
        raised, in the UI (raised as ConfigError in text mode)."""
        from_form = config is None and self.widgets
        config = config or self._form_config
        problems = self.panel.problems if from_form else validate(config)
        with self._lock:
            if problems or self.state.busy:
                message = ("cannot start: " + "; ".join(form.problem_lines(problems)) if problems
                           else self.state.why_run_is_disabled())
                self.state.say(message, "error" if problems else "warning")
                self._show_message()
                if not self.widgets and problems:
                    raise ConfigError([str(p) for p in problems])
                return None
            run = launch(config, warm=self.warm)
            self._track(run)
            if self.widgets:
                self.settings.selected_index = None  # fold the form away: the charts are what matter now
                self.tabs.selected_index = 0  # and bring them forward, from whichever tab was open
        if self.widgets:
            self.render()
        else:
            self._follow_in_text(run)
        return run

    def track(self, run: Run) -> None:
        """Show a Run started elsewhere (``ortnb.launch``, ``ortnb.attach``) as if Run had started it."""
        with self._lock:
            self._track(run)
        self.render()

    def _track(self, run: Run) -> None:
        choice = self.engine_choice
        kept = choice is not None and choice.kept_by(run.config)
        entry = self.state.start(str(run.run_dir), run.config, self.clock(),
                                 engine_note=choice_text(choice) if kept else None)
        self.runs[entry.id] = run
        self.chart.add_run(entry.id, entry.label, entry.colour)

    @property
    def active(self) -> Run | None:
        """The latest run started from this dashboard."""
        latest = self.state.latest
        return self.runs[latest.id] if latest else None

    def stop(self) -> None:
        """Stop every run this dashboard started that still trains (each checkpoints first), and a job."""
        with self._lock:
            ids = self.state.request_stop()
        self.jobs.stop()
        for run_id in ids:
            threading.Thread(target=self.runs[run_id].stop, name="ortnb-stop", daemon=True).start()
        self.render()

    # -- jobs -----------------------------------------------------------------------------------

    def find_fastest(self, budget_s: float | None = None, wait: bool | None = None):
        """Measure the configurations this machine can run for the form's model and data (``ortnb.tune``), the
        form's own settings first, in the background; the ranked table goes to the Comparison tab and Load winner
        fills the form. With a target in the form, race configurations to it instead (``ortnb.tune_to_target``,
        for the budget's seconds). ``wait`` (default: without widgets) blocks and returns the TuneResult (or the
        race's QualityResult)."""
        if budget_s is None:
            budget_s = self.budget.value if self.widgets else DEFAULT_BUDGET_S
        base = self._form_config
        # a target in the form: race to it (time to quality, Optuna); else rank by samples/s (the quick mode)
        job = RaceJob(base, budget_s) if base.target is not None else SearchJob(base, budget_s)
        return self._start(job, wait)

    def load_winner(self) -> RunConfig | None:
        """Put the search's winner into the form (steps, learning rate and output folder stay yours)."""
        search = self.state.search
        if search is None or search.best is None:
            return None
        config, rule = present.winner_for_form(search.best, self._form_config, search.settings)
        if self.widgets:
            self.panel.set_config(config)
            self.settings.selected_index = 0
        else:
            self._config = config
        what = "the fastest configuration" if search.conclusive else "the best measured configuration (not conclusive)"
        with self._lock:
            self.state.say(f"the form now holds {what}: {config.label}" + (f"; {rule}" if rule else ""))
        self.render()
        return config

    def profile(self, configs: list[RunConfig] | None = None, wait: bool | None = None):
        """Profile where a training step goes, op by op (``ortnb.profile``), in the background; the stacked bars
        and top ops go to the Profile tab. Default: the compared runs, else the form's settings beside the other
        engine (``jobs.profile.profile_configs``). ``wait`` (default: without widgets) blocks and returns the
        Profile."""
        chosen = list(configs) if configs else profile_configs(
            self._form_config, [self.state.runs[i].config for i in self.state.compared if i in self.state.runs])
        refused = bool(self.widgets and not configs and self.panel.problems)
        return self._start(ProfileJob(chosen, form_refused=refused), wait)

    def export(self, which: str = "best", out=None, wait: bool | None = None):
        """Write the latest finished run as an ONNX folder (``onnx/`` in its run folder unless ``out``): from the
        best evaluation's weights (``which="best"``, when it evaluated) or the final ones (``which="last"``).
        ``wait`` (default: without widgets) blocks and returns the OnnxFolder."""
        return self._start(ExportJob(self.runs, which, out), wait)

    def _start(self, job: Job, wait: bool | None):
        return self.jobs.start(job, wait=wait if wait is not None else not self.widgets)

    @property
    def _form_config(self) -> RunConfig:
        return self.panel.config if self.widgets else self._config

    def _subscribe(self) -> None:
        """What the Dashboard does with each announcement: draw it, or print it without widgets."""
        self.events.on(Event.REFUSED, lambda _a: self._show_message())
        self.events.on(Event.STARTED, lambda _a: self.render())
        self.events.on(Event.PROGRESS, self._job_progressed)
        self.events.on(Event.ENDED, self._job_ended)

    def _job_progressed(self, announcement: Announcement) -> None:
        if self.widgets:
            self.render()
            return
        with self._lock:
            line = announcement.job.progress_text(self.state, self.clock())
        if line:
            print(line, flush=True)

    def _job_ended(self, announcement: Announcement) -> None:
        job = announcement.job
        if self.widgets:
            self.render()
            if announcement.ok and job.tab is not None:
                self.tabs.selected_index = job.tab
            return
        text = job.result_text(announcement.result) if announcement.ok else None
        if text:
            print(text)
        elif self.state.message:
            print(f"ortnb: {self.state.message.text}")

    def add_to_comparison(self, run: Run | None = None) -> bool:
        """Add a finished run (default: the latest) to the comparison; the same run twice is refused."""
        self.poll()
        with self._lock:
            added = self.state.add_to_comparison(str(run.run_dir) if run else None, workload_problems)
        self.render()
        if added and self.widgets:
            self.tabs.selected_index = 1
        return added

    def remove_from_comparison(self, run_id: str) -> None:
        with self._lock:
            self.state.remove_from_comparison(run_id)
        self.render()

    def comparison(self):
        """The comparison as a pandas DataFrame (first run with enough measured steps is the baseline); its
        ``verdict`` says, in the judge's words, whether each speed-up is a fact."""
        import pandas as pd

        rows = present.comparison_rows(self.state)
        return pd.DataFrame(rows).drop(columns=["id", "colour"]).rename(columns={"text": "verdict"}) if rows else None

    def clear(self) -> None:
        """Forget finished runs and the comparison; a run that still trains stays on screen."""
        with self._lock:
            for run_id in self.state.clear():
                self.runs.pop(run_id, None)
            self.chart, self._seen = charts.LiveChart(), {}
            for entry in self.state.runs.values():
                self.chart.add_run(entry.id, entry.label, entry.colour)
            if self.widgets:
                with redraw(self.figure):
                    self.figure.data = []
        self.render()

    def close(self) -> None:
        self._stop_polling.set()

    def _form_changed(self) -> None:
        with self._lock:
            self.state.form_changed(form.problem_lines(self.panel.shown_problems))
        self.render()

    # -- reading the runs -----------------------------------------------------------------------

    def poll(self) -> bool:
        """Read every run that has not been seen to end; returns whether a run ended just now."""
        ended = False
        with self._lock:
            for run_id, run in list(self.runs.items()):
                entry = self.state.runs[run_id]
                if entry.done and entry.summary is not None:
                    continue
                status = run.status
                done = status in FINAL
                self.state.observe(run_id, status=status, records=list(run.records()), now=self.clock(),
                                   error=run.error if status == "failed" else
                                   _stall_text(run) if status == "stalled" else None,
                                   summary=_final_summary(run, status) if done else None)
                ended |= done
        return ended

    def _poll_forever(self) -> None:
        while not self._stop_polling.wait(POLL_SECONDS):
            try:
                self.refresh()
            except Exception as error:  # noqa: BLE001 - a drawing hiccup must not end the dashboard
                self.state.say(f"display error: {error}", "error")

    def refresh(self, force: bool = False) -> bool:
        """Read the runs and redraw if the throttle allows (or a run ended); returns whether it drew."""
        ended = self.poll()
        if not (force or ended or self.throttle.ready()):
            return False
        self.render()
        return True

    # -- drawing --------------------------------------------------------------------------------

    def render(self) -> None:
        """Assign everything the state implies to the widgets (ipywidgets sends only what changed)."""
        if not self.widgets:
            return
        with self._lock:
            state = self.state
            for name, enabled in state.buttons().items():
                self.buttons[name].disabled = not enabled
            self.buttons["Run"].tooltip = state.why_run_is_disabled() or "start a run of the form's settings"
            self.status.value = present.status_html(state)
            self._render_progress()
            self.card.value = present.summary_card_html(state.latest)
            self.settings.set_title(0, f"Run settings: {self.panel.config.label}")
            self._render_live()
            self._render_comparison()
            self.profile_tab.show(state.profiling)
            self.try_it.show(self.active, state.latest)

    def _show_message(self) -> None:
        if self.widgets:
            self.status.value = present.status_html(self.state)
        elif self.state.message:
            print(f"ortnb: {self.state.message.text}")

    def _render_progress(self) -> None:
        shown = present.bar(self.state, self.clock(), self.wall_clock)
        self.progress.layout.display = "none" if shown is None else "flex"
        if shown is not None:
            self.bar.max, self.bar.value, self.bar.bar_style = shown.max, shown.value, shown.style
            self.progress_text.value = present.progress_html(shown.text)

    def _render_live(self) -> None:
        updates = []
        for run_id, entry in self.state.runs.items():
            if len(entry.records) == self._seen.get(run_id):
                continue
            self._seen[run_id] = len(entry.records)
            engine = next((r["engine"] for r in reversed(entry.records) if r.get("event") == "engine"), None)
            updates.append(self.chart.updates(run_id, entry.records, engine))
        empty = not any(e.records and any(r.get("kind") == "step" for r in e.records) for e in self.state.runs.values())
        latest = self.state.latest
        hint = present.live_hint(latest)
        key = (len(self.state.runs), latest.status if latest else None, hint if empty else None)
        with redraw(self.figure):
            for new, changed in updates:
                charts.apply_updates(self.figure, new, changed)
            if updates or key != self._live_key:
                self._live_key = key
                records = latest.records if latest else []
                charts.set_live_layout(self.figure, latest.config.warmup_steps if latest else 0, empty,
                                       eval_hint=charts.eval_hint(latest.config if latest else None, records),
                                       target=getattr(latest.config, "target", None) if latest else None,  # an edge run has none
                                       metric=charts.eval_metric_of(records), empty_hint=hint,
                                       decay=charts.schedule_decay(records))

    def _render_comparison(self) -> None:
        rows = present.comparison_rows(self.state)
        search = self.state.search
        key = (tuple((r["id"], r["text"]) for r in rows), id(search.rows) if search else None)
        if key == self._table_key:
            return
        self._table_key = key
        self.search_table.value = present.search_table_html(search.rows if search else [])
        self.search_figure.show_json(search.figure if search else None)
        figure = charts.comparison_figure()
        charts.update_comparison(figure, rows)
        self.comparison_figure.show(figure)
        self.table.children = self._table_children(rows)
        columns = len(present.TABLE_COLUMNS)
        # a column is never narrower than its longest word: min-content, not 0, which cut words in two
        self.table.layout.grid_template_columns = f"repeat({columns}, minmax(min-content, auto)) 32px"

    def _table_children(self, rows: list[dict]) -> list:
        import ipywidgets as w

        if not rows:
            return []
        cells = [SafeHTML(tag("div", title, class_="ortnb-cell ortnb-head")) for _, title in present.TABLE_COLUMNS]
        cells.append(SafeHTML())
        for row in rows:
            for (key, _), text in zip(present.TABLE_COLUMNS, present.table_cells(row)):
                kind = " ortnb-label" if key == "label" else "" if key in present.TEXT_COLUMNS else " ortnb-number"
                swatch = tag("span", class_="ortnb-swatch", style=f"background:{row['colour']}") if key == "label" else ""
                cells.append(SafeHTML(tag("div", swatch, text, class_=f"ortnb-cell{kind}")))
            remove = w.Button(icon="times", tooltip=f"remove {row['label']} from the comparison",
                              layout=w.Layout(width="30px", height="24px"))
            remove.on_click(lambda _b, run_id=row["id"]: self.remove_from_comparison(run_id))
            remove.add_class("ortnb-remove")
            cells.append(remove)
        return cells

    # -- without widgets ------------------------------------------------------------------------

    def _follow_in_text(self, run: Run) -> None:
        from ..terminal import print_record

        run.follow(print_record)
        self.poll()
        print(present.status_text(self.state.runs[str(run.run_dir)]))
        figure = charts.live_figure()
        new, _ = self.chart.updates(str(run.run_dir), run.records(), run.summary()["engine"])
        charts.apply_updates(figure, new, [])
        charts.set_live_layout(figure, run.config.warmup_steps, empty=not new)
        show_static(figure)

    # -- display --------------------------------------------------------------------------------

    def _repr_mimebundle_(self, **kwargs):
        bundle = self.widget._repr_mimebundle_(**kwargs) if self.widgets else {}
        bundle = dict(bundle or {})
        bundle["text/plain"] = repr(self)
        return bundle

    def __repr__(self) -> str:
        return f"Dashboard(runs={len(self.state.runs)}, status={present.status_text(self.state.latest)!r})"


def _stall_text(run) -> str | None:
    found = run.stall
    return found.text() if found is not None else None


def _final_summary(run: Run, status: str) -> dict:
    """The run's summary, and for a stopped run what it kept (what load_model, Try it, export and a resume read)."""
    summary = run.summary()
    if status == "stopped":
        summary["kept"] = layout.kept_text(run.run_dir)
    return summary
