"""Successive halving within a time budget, over candidates that validate() accepted.

Rung 1 measures each candidate in a short run, the likely fastest first: the order comes from believed
speed-ups (space._PRIOR) corrected by every measurement so far (a Bayesian linear model of log samples/s on the
options, pulled toward the beliefs), with a bonus for options not yet tried, so a budget that cannot cover the
grid still measures its promising part and learns what each option does. No run starts that the remaining
budget cannot hold at the cost seen so far. Later rungs give the faster half of the previous rung twice the
measured steps, until one remains.

The clock and the measurement are injected: tests drive the whole search with a fake clock and fake runs.
"""

from __future__ import annotations

import math
import statistics
import threading
from dataclasses import dataclass
from typing import Callable

from .. import stats
from .space import RUNG1_STEPS, WARMUP_STEPS, Candidate, prior_effect, prior_overhead, prior_step, samples_per_step

NOISE = 0.1  # spread of one short run's log samples/s (a shared 2-core machine)
PRIOR_SPREAD = 0.3  # how far a believed effect (log speed-up) may be off
PRIOR_WEIGHT = (NOISE / PRIOR_SPREAD) ** 2  # how strongly beliefs hold against measurements
EXPLORE = 0.5  # rung 1 orders by mean + EXPLORE * uncertainty: best in simulated searches, beliefs right or wrong


class Interrupted(Exception):
    """tune(stop=...) was set: the running candidate was stopped and the search ends."""


def rung_steps(rung: int) -> int:
    return RUNG1_STEPS * 2 ** (rung - 1)


@dataclass
class Budget:
    seconds: float
    clock: Callable[[], float]
    started: float

    def elapsed(self) -> float:
        return self.clock() - self.started

    def remaining(self) -> float:
        return self.seconds - self.elapsed()

    def run_deadline(self) -> float:
        """When a running candidate is stopped: the budget's end, less what stopping it takes."""
        return self.started + self.seconds - max(1.0, 0.03 * self.seconds)

    def room(self) -> float:
        """Seconds a run started now could use before it is stopped."""
        return self.run_deadline() - self.clock()


@dataclass
class Limits:
    """What one measurement run may do: run until ``deadline`` (clock time); ``on_start(run_dir)`` is called once
    it has been launched."""

    deadline: float
    on_start: Callable[[str], None]


Measure = Callable[[Candidate, int, int, Limits], dict]  # (candidate, rung, measured steps, limits) -> run record


def predict(candidates: list[Candidate], explore: float = 0.0) -> dict[int, float]:
    """Expected log samples/s of every candidate, plus ``explore`` times its uncertainty.

    A Bayesian linear model: log samples/s = level + the effect of each option value, each effect believed
    (space._PRIOR) with a spread of PRIOR_SPREAD, measurements with a noise of NOISE. Ordering by mean plus
    uncertainty measures options never tried before it settles on the best-looking ones: otherwise an option
    present in every run so far (bf16, say) could never be told apart from the level, right or wrong."""
    import numpy as np

    features, prior = _design(candidates)
    known = [row for row, c in enumerate(candidates) if c.runnable and c.samples_per_s]
    measured = features[known]
    target = np.array([math.log(candidates[row].samples_per_s) for row in known])
    weight = np.array([1e-9] + [PRIOR_WEIGHT] * (len(prior) - 1))  # the level is free: measurements set it
    precision = measured.T @ measured + np.diag(weight)
    effects = np.linalg.solve(precision, measured.T @ target + weight * prior)
    mean = features @ effects
    if explore and known:
        spread = NOISE * np.sqrt(np.einsum("ij,ij->i", features @ np.linalg.inv(precision), features))
        mean = mean + explore * spread
    return {c.index: float(value) for c, value in zip(candidates, mean)}


def _design(candidates: list[Candidate]):
    """One row per candidate: 1 for the level, then 1 for each option value it has; and the believed effects."""
    import numpy as np

    options = sorted({(name, repr(value)): prior_effect(name, value)
                      for c in candidates for name, value in c.axes.items()}.items())
    column = {option: i + 1 for i, (option, _) in enumerate(options)}
    features = np.zeros((len(candidates), len(options) + 1))
    features[:, 0] = 1.0
    for row, candidate in enumerate(candidates):
        for name, value in candidate.axes.items():
            features[row, column[(name, repr(value))]] = 1.0
    return features, np.array([0.0] + [effect for _, effect in options])


def ranked(candidates: list[Candidate]) -> list[Candidate]:
    """Measured candidates, the furthest rung first, then by samples/s; the rest after them (see result.py)."""
    measured = [c for c in candidates if c.status == "measured"]
    return sorted(measured, key=lambda c: (-c.rung, -c.samples_per_s, c.index))


class Costs:
    """Seconds a measurement run takes: the believed cost, calibrated by the runs measured so far."""

    def __init__(self, defaults: dict, candidates: list[Candidate]):
        self.defaults = defaults  # space.defaults(base): what a candidate's axes leave unsaid
        self.candidates = candidates

    def settings(self, candidate: Candidate) -> dict:
        return {**self.defaults, **candidate.axes}

    def _runs(self):
        return [(c, r) for c in self.candidates for r in c.runs if r.get("overhead_s") is not None]

    def _kind(self, candidate: Candidate) -> tuple:
        """Runs of one kind start alike: the backend (ORT exports) and the processes (torchrun) decide it."""
        settings = self.settings(candidate)
        return settings.get("backend"), settings.get("num_processes")

    def overhead(self, candidate: Candidate) -> float:
        """Startup and first step: the mean of runs like it (same backend and processes), else the belief
        scaled by how the measured runs compared with theirs."""
        runs = self._runs()
        alike = [r["overhead_s"] for c, r in runs if self._kind(c) == self._kind(candidate)]
        if alike:
            return statistics.mean(alike)
        believed = prior_overhead(self.settings(candidate))
        if not runs:
            return believed
        return believed * statistics.mean(r["overhead_s"] / prior_overhead(self.settings(c)) for c, r in runs)

    def step(self, candidate: Candidate, predicted: dict[int, float]) -> float:
        """Seconds per step: measured, else from the predicted samples/s once anything was measured."""
        own = candidate.values("step_time")
        if own:
            return stats.median(own)
        if any(c.samples_per_s for c in self.candidates):
            return samples_per_step(self.settings(candidate)) / math.exp(predicted[candidate.index])
        return prior_step(self.settings(candidate))

    def estimate(self, candidate: Candidate, steps: int, predicted: dict[int, float]) -> float:
        # The overhead holds the first step; the other warm-up and measured steps come after it.
        return self.overhead(candidate) + (WARMUP_STEPS + steps - 1) * self.step(candidate, predicted)


class Search:
    """One search over ``candidates`` (refused ones included: they are skipped); ``run()`` returns why it ended."""

    def __init__(self, candidates: list[Candidate], budget: Budget, measure: Measure, defaults: dict,
                 notify: Callable[[dict], None] = lambda event: None, stop: threading.Event | None = None,
                 save: Callable[[], None] = lambda: None):
        self.candidates = candidates
        self.runnable = [c for c in candidates if c.runnable]
        self.budget = budget
        self.measure = measure
        self.costs = Costs(defaults, candidates)
        self.notify = notify
        self.stop = stop
        self.save = save
        self.attempted: set[tuple[int, int]] = set()  # (index, rung) tried in this call

    def run(self) -> str:
        covered = self.first_rung()
        later = self.later_rungs()  # even when rung 1 could not cover the grid: the leaders, if the budget holds
        return later if covered else "the budget ran out before every candidate was measured"

    # -- rung 1 ---------------------------------------------------------------------------------

    def first_rung(self) -> bool:
        """Measure every runnable candidate once, the likely fastest first; False if the budget ran out."""
        while True:
            self.check_stop()
            pending = [c for c in self.runnable if not c.settled() and (c.index, 1) not in self.attempted]
            if not pending:
                return all(c.settled() for c in self.runnable)
            predicted = predict(self.candidates)
            hopeful = predict(self.candidates, EXPLORE)
            # yours first: the reference every speed-up is stated against is measured even on a short budget
            pending.sort(key=lambda c: (not c.yours, -hopeful[c.index], c.index))
            room = self.budget.room()
            chosen = next((c for c in pending if self.costs.estimate(c, RUNG1_STEPS, predicted) <= room), None)
            if chosen is None:
                return False
            position = sum(c.settled() for c in self.runnable) + 1
            self.measure_one(chosen, 1, position, len(self.runnable), predicted)

    # -- rungs 2 and on -------------------------------------------------------------------------

    def later_rungs(self) -> str:
        rung = 1
        while True:
            pool = ranked([c for c in self.runnable if c.rung >= rung])
            survivors = pool[:math.ceil(len(pool) / 2)]
            if len(survivors) < 2:
                return "every candidate was measured and one remained"
            rung += 1
            for position, candidate in enumerate(survivors, 1):
                self.check_stop()
                predicted = predict(self.candidates)
                fits = self.costs.estimate(candidate, rung_steps(rung), predicted) <= self.budget.room()
                if candidate.rung < rung and (candidate.index, rung) not in self.attempted and fits:
                    self.measure_one(candidate, rung, position, len(survivors), predicted)
            # A survivor never tried at this rung did not fit the budget; one that was tried and failed is out.
            if any(c.rung < rung and (c.index, rung) not in self.attempted for c in survivors):
                return f"every candidate was measured; the budget ran out in rung {rung}"

    # -- one run --------------------------------------------------------------------------------

    def measure_one(self, candidate: Candidate, rung: int, position: int, of: int, predicted) -> None:
        self.attempted.add((candidate.index, rung))
        estimate = self.costs.estimate(candidate, rung_steps(rung), predicted)
        where = {"candidate": position, "of": of, "phase": f"rung {rung}", "label": candidate.label}
        limits = Limits(self.budget.run_deadline(),
                        lambda run_dir: self.event("candidate", **where, run_dir=run_dir,
                                                   estimate_s=round(estimate, 1)))
        try:
            record = self.measure(candidate, rung, rung_steps(rung), limits)
        except BaseException:  # Stop, KeyboardInterrupt: the run in progress is discarded (a resume measures it)
            candidate.unreached = "the search was stopped while it ran"
            raise
        candidate.runs.append(record)
        self.save()
        self.event("result", **where, status=candidate.status, samples_per_s=_measured(record),
                   cost_s=record.get("cost_s"), reason=record.get("note"))

    def check_stop(self) -> None:
        if self.stop is not None and self.stop.is_set():
            raise Interrupted()

    def best(self) -> dict | None:
        leaders = ranked(self.candidates)
        return {"label": leaders[0].label, "samples_per_s": leaders[0].samples_per_s} if leaders else None

    def event(self, name: str, **fields) -> None:
        self.notify({"event": name, **fields, "elapsed_s": round(self.budget.elapsed(), 1),
                     "budget_s": self.budget.seconds, "best": self.best()})

    def mark_unreached(self, interrupted: bool) -> None:
        """Say why each runnable candidate that got no run got none."""
        predicted = predict(self.candidates)
        left = max(0.0, self.budget.room())
        for candidate in self.runnable:
            if candidate.runs or candidate.unreached:
                continue
            if interrupted:
                candidate.unreached = "the search was stopped before it"
            elif (need := self.costs.estimate(candidate, RUNG1_STEPS, predicted)) > left:
                candidate.unreached = (f"the budget ran out before it: {left:.0f} s were left and its run needs "
                                       f"about {need:.0f} s")
            else:  # it did not fit when rung 1 ended; later measurements lowered its estimate
                candidate.unreached = f"the budget ran out before it (its run needs about {need:.0f} s)"


def _measured(record: dict) -> float | None:
    return stats.median(record.get("samples_per_s") or [])
