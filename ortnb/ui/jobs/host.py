"""The Dashboard's background jobs (a search, a profile, an export) as small objects, and the one place that runs
them: ``JobHost``.

A job is told what happened, in order, as transformers' TrainerCallback and fastai's Callback are: ``begin`` (the
state records that it started), ``work`` (on a thread, or in the caller's when it waits), then ``ended`` with its
result or ``failed`` with the first line of its error. ``begin``, ``ended`` and ``failed`` write only the pure state
(``state.DashboardState``) and run under the host's lock; ``work`` never touches the state except through the
``update`` it is handed. A job knows nothing of widgets: the host announces each change on an ``EventBus`` and the
Dashboard, subscribed, draws it (or prints it without a widget frontend).

"One thing at a time" is decided here once, from the state: a run, a search, a profile and an export each measure
or load the CPU, so a job is refused, with the reason on the status line, while any of them is going.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass
from enum import Enum
from typing import Any, Callable

from ..state import DashboardState


class Event(str, Enum):
    REFUSED = "refused"  # a job was not started; the state's message says why
    STARTED = "started"  # a job began (the state already says so)
    PROGRESS = "progress"  # a job reported progress (the state holds it)
    ENDED = "ended"  # a job ended, well or not (``Announcement.ok``)


@dataclass(frozen=True)
class Announcement:
    event: Event
    job: "Job | None" = None
    result: Any = None
    ok: bool = True  # for ENDED: the job's work returned (it did not raise)


class EventBus:
    """Handlers subscribed per event, called in subscription order on the thread that emits."""

    def __init__(self):
        self._handlers: dict[Event, list[Callable[[Announcement], None]]] = {event: [] for event in Event}

    def on(self, event: Event, handler: Callable[[Announcement], None]) -> None:
        self._handlers[Event(event)].append(handler)

    def emit(self, event: Event, job: "Job | None" = None, result: Any = None, ok: bool = True) -> None:
        announcement = Announcement(Event(event), job, result, ok)
        for handler in list(self._handlers[announcement.event]):
            handler(announcement)


Update = Callable[[Callable[[DashboardState], None]], None]


class Job:
    """One background job. Subclasses set ``name`` and ``tab`` and override the events they need."""

    name = "job"
    action = "start the job"  # what a refusal says cannot be done: "cannot <action>: <why>"
    tab: int | None = None  # the Dashboard tab its result is shown in, brought forward when it succeeds

    def refusal(self, state: DashboardState) -> str | None:
        """Why this job cannot start now, beyond "one thing at a time" (which the host decides), or None."""
        return None

    def begin(self, state: DashboardState, now: float) -> None:
        """Record in the state that the job started (under the lock)."""

    def work(self, update: Update) -> Any:
        """Do the job; ``update(change)`` applies ``change(state)`` under the lock and announces it."""
        raise NotImplementedError

    def ended(self, state: DashboardState, result: Any) -> None:
        """Record the result (under the lock)."""

    def failed(self, state: DashboardState, error: str) -> None:
        """Record the first line of the error (under the lock); the job's own wording of what failed."""
        state.say(f"{self.name} failed: {error}", "error")

    def stop(self) -> None:
        """Stop promptly, keeping what was measured (Stop pressed); called from any thread."""

    def progress_text(self, state: DashboardState, now: float) -> str | None:
        """The line printed for a progress report without a widget frontend (None: nothing to print)."""
        return None

    def result_text(self, result: Any) -> str | None:
        """What is printed of the result without a widget frontend (None: the status message says it all)."""
        return None


def first_line(error: BaseException) -> str:
    return (str(error).strip().splitlines() or [type(error).__name__])[0]


class JobHost:
    """Starts jobs one at a time, on a thread or in the caller's, and writes their ends to the state; every change
    is announced on ``bus``."""

    def __init__(self, state: DashboardState, lock: threading.RLock, bus: EventBus, clock: Callable[[], float]):
        self.state, self.lock, self.bus, self.clock = state, lock, bus, clock
        self.current: Job | None = None

    def start(self, job: Job, wait: bool) -> Any:
        """Run ``job`` unless something else is going or the job refuses (the reason goes to the status line);
        ``wait`` runs it in this thread and returns its result (None when refused or failed)."""
        with self.lock:
            refusal = self.state.why_run_is_disabled() if self.state.busy else job.refusal(self.state)
            if refusal:
                self.state.say(f"cannot {job.action}: {refusal}", "warning")
                self.bus.emit(Event.REFUSED, job)
                return None
            job.begin(self.state, self.clock())
            self.current = job
        self.bus.emit(Event.STARTED, job)
        if wait:
            return self._work(job)
        threading.Thread(target=self._work, args=(job,), name=f"ortnb-{job.name.lower().replace(' ', '-')}",
                         daemon=True).start()
        return None

    def update(self, job: Job, change: Callable[[DashboardState], None]) -> None:
        with self.lock:
            change(self.state)
        self.bus.emit(Event.PROGRESS, job)

    def stop(self) -> None:
        """Stop the job in progress, if any (the state's request_stop has marked it stopping)."""
        job = self.current
        if job is not None:
            job.stop()

    def _work(self, job: Job) -> Any:
        try:
            result = job.work(lambda change: self.update(job, change))
        except Exception as error:  # noqa: BLE001 - shown on the dashboard, never a thread traceback
            with self.lock:
                job.failed(self.state, first_line(error))
                self.current = None
            self.bus.emit(Event.ENDED, job, ok=False)
            return None
        with self.lock:
            job.ended(self.state, result)
            self.current = None
        self.bus.emit(Event.ENDED, job, result)
        return result
