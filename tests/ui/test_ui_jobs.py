"""The Dashboard's background jobs as objects: one host that refuses, runs, stops and ends them, announcing each
change on an event bus; and the one progress bar, on exact values. No widgets, no processes."""

from __future__ import annotations

import threading
from types import SimpleNamespace

import pytest

from ortnb.config import RunConfig
from ortnb.ui import present
from ortnb.ui.jobs import Event, EventBus, Job, JobHost
from ortnb.ui.jobs.export import ExportJob
from ortnb.ui.jobs.profile import ProfileJob
from ortnb.ui.jobs.search import SearchJob
from ortnb.ui.state import DashboardState

EAGER = RunConfig(backend="eager", max_steps=30)


class Clock:
    now = 100.0

    def __call__(self):
        return self.now


def host(state=None):
    state = state or DashboardState()
    bus, heard = EventBus(), []
    for event in Event:
        bus.on(event, lambda a: heard.append((a.event.value, a.job.name if a.job else None, a.ok)))
    return JobHost(state, threading.RLock(), bus, Clock()), state, heard


class Counting(Job):
    name, action = "Count", "count"

    def __init__(self, fail=False):
        self.fail, self.stopped, self.seen = fail, False, []

    def begin(self, state, now):
        state.exporting = "counting"  # anything that makes the state busy
        self.seen.append(("begin", now))

    def work(self, update):
        update(lambda state: state.say("half way"))
        if self.fail:
            raise ValueError("the disk is full\nsecond line never shown")
        return 42

    def ended(self, state, result):
        state.exporting = None
        self.seen.append(("ended", result))

    def failed(self, state, error):
        state.exporting = None
        super().failed(state, error)

    def stop(self):
        self.stopped = True


def test_a_job_begins_reports_and_ends_in_order_and_its_result_is_returned_when_waited_on():
    jobs, state, heard = host()
    job = Counting()
    assert jobs.start(job, wait=True) == 42
    assert job.seen == [("begin", 100.0), ("ended", 42)]
    assert heard == [("started", "Count", True), ("progress", "Count", True), ("ended", "Count", True)]
    assert state.message.text == "half way" and not state.busy and jobs.current is None


def test_a_failed_job_says_its_first_line_and_frees_the_dashboard():
    jobs, state, heard = host()
    assert jobs.start(Counting(fail=True), wait=True) is None
    assert (state.message.text, state.message.level) == ("Count failed: the disk is full", "error")
    assert heard[-1] == ("ended", "Count", False) and not state.busy


def test_one_thing_at_a_time_is_decided_once_for_every_job_and_says_what_cannot_be_done():
    state = DashboardState()
    state.start("/runs/a", EAGER, now=0.0)  # a run trains
    jobs, _, heard = host(state)
    for job, action in ((Counting(), "count"), (SearchJob(EAGER, 30), "start Find fastest"),
                        (ProfileJob([EAGER]), "profile"), (ExportJob({}), "export")):
        assert jobs.start(job, wait=True) is None
        assert state.message.text == f"cannot {action}: a run is training: one run at a time (Stop it, or wait " \
                                     "for it to end)"
        assert heard[-1] == ("refused", job.name, True)
    assert state.search is None and state.profiling is None and state.exporting is None


def test_a_job_may_refuse_for_its_own_reason():
    jobs, state, _ = host()
    assert jobs.start(ExportJob({}), wait=True) is None
    assert state.message.text == "cannot export: no finished run to export yet"
    assert jobs.start(ProfileJob([EAGER], form_refused=True), wait=True) is None
    assert state.message.text.startswith("cannot profile: the form describes a run this machine cannot start")


def test_stop_reaches_the_job_in_progress():
    jobs, state, _ = host()
    release, job = threading.Event(), Counting()
    job.work = lambda update: release.wait(5) and 1
    jobs.start(job, wait=False)
    jobs.stop()
    assert job.stopped
    release.set()


def test_a_search_job_passes_tunes_progress_to_the_state_and_ends_with_the_table(monkeypatch):
    import pandas as pd

    import ortnb.tuning

    def fake_tune(model, dataset, budget_s, base, stop, on_progress, include_base):
        on_progress({"candidate": 1, "of": 4, "elapsed_s": 3.0})
        assert stop.is_set() is False and include_base is True and budget_s == 30.0
        return SimpleNamespace(table=pd.DataFrame([{"rank": 1, "label": "eager + AdamW", "samples_per_s": 9.5}]),
                               best=EAGER, conclusive=True, describe=lambda: "")

    monkeypatch.setattr(ortnb.tuning, "tune", fake_tune)
    jobs, state, heard = host()
    jobs.start(SearchJob(EAGER, 30), wait=True)
    assert state.search.done and state.search.rows == [{"rank": 1, "label": "eager + AdamW", "samples_per_s": 9.5}]
    assert state.search.progress == {"candidate": 1, "of": 4, "elapsed_s": 3.0}
    assert [h[0] for h in heard] == ["started", "progress", "ended"]


def test_the_progress_bar_follows_the_newest_thing_started():
    state = DashboardState()
    assert present.bar(state, now=0.0) is None  # nothing started: hidden
    state.start("/runs/a", EAGER, now=0.0)
    state.observe("/runs/a", status="running", now=10.0,
                  records=[{"kind": "step", "step": 6, "samples_per_s": 10.0, "step_time": 1.0}])
    shown = present.bar(state, now=10.0)
    assert (shown.value, shown.max, shown.style) == (6, 30, "info") and shown.text.startswith("step 6/30")
    state.observe("/runs/a", status="completed", now=40.0, records=state.runs["/runs/a"].records, summary={})
    state.start_search(60, now=50.0)
    state.search_progress({"candidate": 2, "of": 5})
    shown = present.bar(state, now=60.0)
    assert (shown.value, shown.max, shown.style) == (2, 5, "info") and "candidate 2 of 5" in shown.text
    state.search_ended([], None, error="boom")
    assert (present.bar(state, now=61.0).value, present.bar(state, now=61.0).style) == (5, "danger")
    state.start_profile(["eager + AdamW", "ort + AdamW"], now=70.0)
    state.profile_progress("ort + AdamW")
    shown = present.bar(state, now=75.0)
    assert (shown.value, shown.max, shown.style) == (1, 2, "info") and "ort + AdamW (2 of 2)" in shown.text
    state.profile_ended({"rows": []})
    assert (present.bar(state, now=80.0).value, present.bar(state, now=80.0).style) == (2, "success")
    state.start("/runs/b", EAGER, now=90.0)  # a run started after both: its line again
    assert present.bar(state, now=90.0).text.startswith("starting")


def test_a_race_to_a_target_reads_plainly_and_its_table_ranks_by_seconds():
    from types import SimpleNamespace

    from ortnb.ui.jobs.race import race_rows

    state = DashboardState()
    search = state.start_search(120, now=0.0)
    state.search_progress({"phase": "racing to accuracy 0.80", "candidate": 3, "of": None,
                           "best": {"batch_size": 32, "seconds_to_target": 61.0}})
    assert present.search_text(search, now=30.0) == ("Find fastest: racing to accuracy 0.80, trial 3 · 0:30 of 2:00 · "
                                                      "best so far: 1:01 to the target")
    trial = lambda n, state, value, reached, **params: SimpleNamespace(  # noqa: E731
        number=n, state=SimpleNamespace(name=state), value=value, params=params, user_attrs={"reached": reached})
    study = SimpleNamespace(trials=[trial(0, "COMPLETE", 80.0, True, batch_size=16),
                                    trial(1, "PRUNED", 300.0, False, batch_size=8),
                                    trial(2, "COMPLETE", 61.0, True, batch_size=32),
                                    trial(3, "COMPLETE", 400.0, False, batch_size=8)])
    rows = race_rows(SimpleNamespace(study=study), EAGER)
    assert [(r.get("rank"), r["status"], r["seconds_to_target"]) for r in rows] == [
        (1, "reached", 61.0), (2, "reached", 80.0), (None, "pruned", None), (None, "not reached", None)]
    assert rows[2]["reason"] == "fell behind the others at an evaluation"
    assert present.search_order_text(rows) == "soonest to the target first"
    state.search_ended(rows, EAGER.replace(batch_size=32))
    assert present.search_text(search, now=99.0).endswith("2 configurations reached the target · fastest: "
                                                          + EAGER.replace(batch_size=32).label)
    state.search_ended(rows[:1], EAGER)
    assert "· 1 configuration reached the target ·" in present.search_text(search, now=99.0)  # one, not "1 ...s"


def test_a_race_without_a_winner_says_so_in_its_own_words_not_the_quick_searchs():
    from types import SimpleNamespace

    from ortnb.ui.jobs.race import RaceJob, no_winner_text

    rows = [{"status": "pruned"}, {"status": "pruned"}, {"status": "not reached"}]
    assert no_winner_text(rows, "accuracy 0.80") == (
        "No configuration reached accuracy 0.80 (3 tried: 2 fell behind the others at an evaluation, 1 reached its "
        "sample cap first); see the table. A longer budget or a lower target gives the race a winner.")
    assert no_winner_text([{"status": "failed"}], "accuracy 0.95").startswith(
        "No configuration reached accuracy 0.95 (1 tried: 1 failed)")
    assert no_winner_text([], "accuracy 0.80") == ("No configuration reached accuracy 0.80: the budget ended before "
                                                   "the first trial did. A longer budget gives the race a winner.")
    # Through the job into the state: the Dashboard's message is the race's, a warning.
    state = DashboardState()
    state.start_search(120, now=0.0)
    optuna = pytest.importorskip("optuna")
    study = optuna.create_study()
    study.add_trial(optuna.trial.create_trial(
        state=optuna.trial.TrialState.PRUNED, params={"batch_size": 8}, intermediate_values={0: 300.0},
        distributions={"batch_size": optuna.distributions.CategoricalDistribution([8, 16])},
        user_attrs={"reached": False}))
    result = SimpleNamespace(study=study, best=None)
    RaceJob(EAGER.replace(target=0.8), 120).ended(state, result)
    assert state.message.text == ("No configuration reached accuracy 0.80 (1 tried: 1 fell behind the others at an "
                                  "evaluation); see the table. A longer budget or a lower target gives the race a "
                                  "winner.")
    assert state.message.level == "warning" and state.search.best is None
