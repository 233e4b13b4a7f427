"""The Dashboard's state: one small pure model that the widgets only render.

Runs are keyed by their run id (the run folder), never by their label. Whether a run is active,
stopping, done or compared is a field here; every button is an action on this model, and what each
button may do follows from it (Run is disabled while a run trains). No widgets, no files, no clocks:
the controller (dashboard.py) feeds in what it read and the time, so every rule is tested on exact
values and the browser test only has to check layout and wiring.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ..charts import PALETTE
from ..config import RunConfig
from ..runs.records import FINAL_EVENTS as FINAL  # how a run ends; read as state.FINAL too

ACTIVE = ("starting", "running", "stalled")  # a stalled run still holds its processes: Stop ends it


@dataclass(frozen=True)
class Message:
    text: str
    level: str = "info"  # info, warning or error: the colour follows the message, not the last run


@dataclass
class RunEntry:
    """One run started from this dashboard, as last observed."""

    id: str
    config: RunConfig
    label: str  # unique within the dashboard: settings, then #2, #3 ...
    colour: str
    started_at: float
    status: str = "starting"
    stopping: bool = False
    records: list = field(default_factory=list)
    error: str | None = None
    summary: dict | None = None
    ended_at: float | None = None
    engine_note: str | None = None  # why its engine and precision, when they are this machine's choice

    @property
    def active(self) -> bool:
        return self.status in ACTIVE

    @property
    def done(self) -> bool:
        return self.status in FINAL


def unique_label(label: str, taken: list[str]) -> str:
    """``label``, or ``label #2``, ``#3`` ... if an earlier run already has it."""
    if label not in taken:
        return label
    number = 2
    while f"{label} #{number}" in taken:
        number += 1
    return f"{label} #{number}"


@dataclass
class Search:
    """A Find-fastest search (ortnb.tune) started from the dashboard, as last reported."""

    started_at: float
    budget_s: float
    progress: dict = field(default_factory=dict)  # tune's latest progress event
    rows: list[dict] = field(default_factory=list)  # the ranked table, when it ended
    best: RunConfig | None = None
    error: str | None = None
    done: bool = False
    stopping: bool = False
    conclusive: bool = True  # every runnable candidate measured: the winner won a search
    settings: dict | None = None  # a race to a target: the winner's settings, learning rate included, as raced
    figure: dict | None = None  # a race to a target: the study's optimisation history (plotly JSON)


@dataclass
class Profiling:
    """A Profile (ortnb.profile) started from the dashboard: where a step goes for one or more configurations."""

    started_at: float
    labels: list[str]
    current: int = 0  # the configuration being profiled (index into labels)
    data: dict | None = None  # Profile.to_dict() when it ended
    error: str | None = None
    done: bool = False
    stopping: bool = False


@dataclass
class DashboardState:
    runs: dict[str, RunEntry] = field(default_factory=dict)  # run id -> entry, in start order
    compared: list[str] = field(default_factory=list)  # run ids, the first one with enough steps is the baseline
    message: Message | None = None
    form_problems: list[str] = field(default_factory=list)
    started_count: int = 0  # never reset, so a run's colour is never reused after Clear
    search: Search | None = None
    profiling: Profiling | None = None
    exporting: str | None = None  # the run id whose ONNX folder is being written

    # -- what the buttons may do --------------------------------------------------------------

    @property
    def active_runs(self) -> list[RunEntry]:
        return [e for e in self.runs.values() if e.active]

    @property
    def latest(self) -> RunEntry | None:
        return next(reversed(self.runs.values()), None)

    @property
    def searching(self) -> bool:
        return self.search is not None and not self.search.done

    @property
    def profiling_active(self) -> bool:
        return self.profiling is not None and not self.profiling.done

    @property
    def busy(self) -> bool:
        """One thing at a time: a run, a search, a profile or an export (each measures or loads the CPU)."""
        return bool(self.active_runs) or self.searching or self.profiling_active or self.exporting is not None

    def buttons(self) -> dict[str, bool]:
        """Which buttons are enabled."""
        latest = self.latest
        busy = self.busy
        return {
            "Run": not busy and not self.form_problems,
            "Profile": not busy and not self.form_problems,
            "Find fastest": not busy,
            "Load winner": bool(self.search and self.search.done and self.search.best is not None),
            "Stop": any(not e.stopping for e in self.active_runs) or (self.searching and not self.search.stopping)
                    or (self.profiling_active and not self.profiling.stopping),
            "Export": bool(latest and latest.done and latest.status != "failed") and not busy,
            "Add to comparison": bool(latest and latest.done and latest.id not in self.compared
                                      and latest.summary is not None),
            "Clear": bool(self.message or self.compared or any(e.done for e in self.runs.values())
                          or (self.search is not None and self.search.done)
                          or (self.profiling is not None and self.profiling.done)),
        }

    def why_run_is_disabled(self) -> str:
        if self.active_runs:
            return "a run is training: one run at a time (Stop it, or wait for it to end)"
        if self.searching:
            return "Find fastest is measuring candidates: one thing at a time (Stop it, or wait for it to end)"
        if self.profiling_active:
            return "a profile is measuring: one thing at a time (Stop it, or wait for it to end)"
        if self.exporting is not None:
            return "the ONNX export is being written and checked: one thing at a time (it takes a few seconds)"
        if self.form_problems:
            return "the form describes a run this machine cannot start (see the notes above)"
        return ""

    # -- actions ------------------------------------------------------------------------------

    def start(self, run_id: str, config: RunConfig, now: float, engine_note: str | None = None) -> RunEntry:
        """Record a run the controller has just launched. Refused while another run trains."""
        if self.busy:
            raise RuntimeError(self.why_run_is_disabled())
        label = unique_label(config.label, [e.label for e in self.runs.values()])
        entry = RunEntry(run_id, config, label, PALETTE[self.started_count % len(PALETTE)], now,
                         engine_note=engine_note)
        self.started_count += 1
        self.runs[run_id] = entry
        self.message = None
        return entry

    def request_stop(self) -> list[str]:
        """Mark every active run (and a search) as stopping; returns the run ids the controller must stop."""
        ids = [e.id for e in self.active_runs if not e.stopping]
        for run_id in ids:
            self.runs[run_id].stopping = True
        if ids:
            names = ", ".join(self.runs[i].label for i in ids)
            self.message = Message(f"stopping {names}: the ranks checkpoint after their current step...")
        if self.searching and not self.search.stopping:
            self.search.stopping = True
            self.message = Message("stopping the search: what was measured so far is kept")
        if self.profiling_active and not self.profiling.stopping:
            self.profiling.stopping = True
            self.message = Message("stopping the profile: the run in progress stops after its current step")
        return ids

    # -- Find fastest -------------------------------------------------------------------------

    def start_search(self, budget_s: float, now: float) -> Search:
        if self.busy:
            raise RuntimeError(self.why_run_is_disabled())
        self.search = Search(started_at=now, budget_s=budget_s)
        self.message = None
        return self.search

    def search_progress(self, event: dict) -> None:
        if self.search is not None:
            self.search.progress = dict(event)

    def search_ended(self, rows: list[dict], best: RunConfig | None, error: str | None = None,
                     conclusive: bool = True, description: str | None = None) -> None:
        """The search ended. ``conclusive``: every runnable candidate was measured and the judge trusts the
        figures, so the winner won a search; otherwise it is only the best of those measured and the message
        says why (``description``: the search's own words, with what to do about it; also used when there is no
        winner)."""
        if self.search is None:
            return
        self.search.rows, self.search.best, self.search.error, self.search.done = rows, best, error, True
        self.search.stopping = False
        self.search.conclusive = conclusive
        if error:
            self.message = Message(f"Find fastest failed: {error}", "error")
        elif best is None:
            self.message = Message(description or "Find fastest measured no configuration to the end; see the table",
                                   "warning")
        elif not conclusive:
            text = description or f"best of those measured, not a search: {best.label}"
            self.message = Message(f"{text} Press Load winner to try it.", "warning")
        else:
            self.message = Message(f"fastest here: {best.label}; press Load winner to put it in the form")

    # -- Profile ------------------------------------------------------------------------------

    def start_profile(self, labels: list[str], now: float) -> Profiling:
        """A profile of these configurations begins. Refused while a run, a search or another profile runs."""
        if self.busy:
            raise RuntimeError(self.why_run_is_disabled())
        self.profiling = Profiling(started_at=now, labels=list(labels))
        self.message = None
        return self.profiling

    def profile_progress(self, label: str) -> None:
        """The profile started its run of ``label``."""
        if self.profiling is not None and label in self.profiling.labels:
            self.profiling.current = self.profiling.labels.index(label)

    def profile_ended(self, data: dict | None, error: str | None = None) -> None:
        if self.profiling is None:
            return
        stopped = self.profiling.stopping
        self.profiling.data, self.profiling.error, self.profiling.done = data, error, True
        self.profiling.stopping = False
        if data is not None:
            self.message = Message("profiled " + " and ".join(self.profiling.labels) + ": see the Profile tab")
        elif stopped:
            self.message = Message("the profile was stopped; nothing was profiled to the end", "warning")
        else:
            self.message = Message(f"Profile failed: {error}", "error")

    def observe(self, run_id: str, *, status: str, records: list, now: float, error: str | None = None,
                summary: dict | None = None) -> None:
        """What the controller read of a run. A run that has just ended clears the message."""
        entry = self.runs.get(run_id)
        if entry is None:
            return
        ended = status in FINAL and not entry.done
        entry.status, entry.records, entry.error = status, records, error
        if summary is not None:
            entry.summary = summary
        if ended:
            entry.ended_at = now
            entry.stopping = False
            self.message = None

    def add_to_comparison(self, run_id: str | None = None, workload_problems=None) -> bool:
        """Add a finished run (default: the latest). ``workload_problems(configs)`` says why runs differ."""
        entry = self.runs.get(run_id) if run_id else self.latest
        if entry is None or not entry.done or entry.summary is None:
            self.message = Message("add a run to the comparison once it has finished", "warning")
            return False
        if entry.id in self.compared:
            self.message = Message(f"{entry.label} is already in the comparison", "warning")
            return False
        configs = [self.runs[i].config for i in self.compared] + [entry.config]
        problems = workload_problems(configs) if workload_problems else []
        if problems:
            self.message = Message(problems[0], "error")
            return False
        self.compared.append(entry.id)
        count = len(self.compared)
        self.message = Message(f"added {entry.label} to the comparison ({count} run{'s' if count > 1 else ''})")
        return True

    def remove_from_comparison(self, run_id: str) -> None:
        if run_id in self.compared:
            self.compared.remove(run_id)
            self.message = Message(f"removed {self.runs[run_id].label} from the comparison")

    def clear(self) -> list[str]:
        """Forget finished runs, the comparison and the message; a training run stays (never orphaned).
        Returns the ids that were dropped."""
        dropped = [e.id for e in self.runs.values() if not e.active]
        for run_id in dropped:
            del self.runs[run_id]
        self.compared = []
        self.message = None
        if self.search is not None and self.search.done:
            self.search = None
        if self.profiling is not None and self.profiling.done:
            self.profiling = None
        return dropped

    def say(self, text: str, level: str = "info") -> None:
        self.message = Message(text, level) if text else None

    def form_changed(self, problems: list[str]) -> None:
        """The form changed: a message about the earlier form no longer applies."""
        self.form_problems = list(problems)
        self.message = None
