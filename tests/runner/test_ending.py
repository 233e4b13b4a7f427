"""Every command that starts a run and waits on it (profile, compare, tune's measurements) ends that run however
the wait ends: a stall, a timeout, an exception or a KeyboardInterrupt (ortnb/runner/ending.py). Fake runs, no
processes: what matters is that each command asks the run to end."""

from __future__ import annotations

from pathlib import Path

import pytest

import ortnb
from ortnb.runner.ending import ended_after


class Unfinished:
    """A run that trains until it is stopped; ``wait()`` returns ``outcome`` (a status) or raises it."""

    def __init__(self, config, outcome):
        self.config, self.outcome, self.stopped = config, outcome, False
        self.run_dir = Path("/nonexistent/runs/unfinished")
        self.error = None

    @property
    def status(self) -> str:
        return "stopped" if self.stopped else "stalled" if self.outcome == "stalled" else "running"

    @property
    def done(self) -> bool:
        return self.stopped

    @property
    def alive(self) -> bool:
        return not self.stopped

    def stop(self, timeout=30.0) -> str:
        self.stopped = True
        return self.status

    def wait(self, timeout=None, interval=0.5) -> str:
        if not self.stopped and isinstance(self.outcome, BaseException):
            raise self.outcome
        return self.status

    def records(self) -> list:
        return []

    def summary(self) -> dict:
        return {"label": self.config.label, "status": self.status}


OUTCOMES = ["stalled", "running", RuntimeError("a progress callback broke"), KeyboardInterrupt()]
IDS = ["stall", "timeout", "exception", "interrupt"]


@pytest.fixture
def launched(monkeypatch):
    """ortnb.runner.launch replaced: each call returns an Unfinished run, kept in the list."""
    runs = []

    def start(outcome):
        monkeypatch.setattr("ortnb.runner.launch", lambda cfg, *a, **k: runs.append(Unfinished(cfg, outcome))
                            or runs[-1])
        return runs
    return start


def config(tmp_path):
    return ortnb.RunConfig(model="tiny-bert", backend="eager", output_dir=str(tmp_path))


def test_the_block_s_run_is_ended_whatever_ends_the_block(tmp_path):
    run = Unfinished(config(tmp_path), "running")
    with pytest.raises(ValueError), ended_after(run):
        raise ValueError("anything")
    assert run.stopped and not run.alive


@pytest.mark.parametrize("outcome", OUTCOMES, ids=IDS)
def test_profile_ends_the_run_it_gave_up_on(tmp_path, launched, outcome):
    from ortnb.profiling import profile

    runs = launched(outcome)
    with pytest.raises((RuntimeError, KeyboardInterrupt)):
        profile(config(tmp_path), steps=2, warmup=1)
    assert [run.stopped for run in runs] == [True], "the profile left its run training"


@pytest.mark.parametrize("outcome", OUTCOMES, ids=IDS)
def test_compare_ends_the_run_it_gave_up_on(tmp_path, launched, outcome):
    from ortnb import comparison

    runs = launched(outcome)
    try:
        comparison.compare([config(tmp_path)], timeout=0.01)
    except (RuntimeError, comparison.Interrupted):
        pass
    assert [run.stopped for run in runs] == [True], "the comparison left its run training"


def test_a_measurement_ends_its_run_when_the_search_breaks_off(tmp_path, monkeypatch):
    from ortnb.tuning import measure, search, space

    runs = []
    monkeypatch.setattr(measure, "start", lambda cfg, warm=None: runs.append(Unfinished(cfg, "running")) or runs[-1])

    def broken(_run_dir):
        raise RuntimeError("on_progress broke")

    measure_one = measure.measurer(config(tmp_path), tmp_path, keep=True, stop=None)
    candidate = space.Candidate(index=0, axes={"backend": "eager"}, label="eager")
    with pytest.raises(RuntimeError, match="on_progress broke"):
        measure_one(candidate, 1, 2, search.Limits(1e9, broken))
    assert [run.stopped for run in runs] == [True]
