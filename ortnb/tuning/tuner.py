"""tune(): check the request, list the candidates, search within the budget, cache and hand back the result
(the package docstring, ortnb/tuning/__init__.py, says how the parts fit)."""


from __future__ import annotations

import contextlib
import math
import shutil
import tempfile
import threading
import time
from pathlib import Path
from typing import Callable

from .. import interrupts
from ..config import RunConfig
from ..errors import ConfigError
from . import cache, result, space
from .lock import search_lock
from .result import TuneResult
from .search import Budget, Interrupted, Search
from .space import RUNG1_STEPS, default_grid

__all__ = ["DEFAULT_BUDGET_S", "candidate_configs", "minimum_budget", "tune"]

DEFAULT_BUDGET_S = 180  # seconds; whole, so the Dashboard's budget box (an integer field) shows it as is
WARM_CLOSE_S = 10.0  # the warm worker's last run was stopped or has ended: it only has to exit


def tune(model: str | None = None, dataset=None, *, budget_s: float = DEFAULT_BUDGET_S,
         base: RunConfig | None = None, grid: dict[str, list] | None = None, refresh: bool = False,
         on_progress: Callable[[dict], None] | None = None, stop: threading.Event | None = None,
         output_dir: str | Path | None = None, cache_dir: str | Path | None = None,
         wait_for_quiet_s: float = 0.0, include_base: bool = False) -> TuneResult:
    """Measure the configurations this machine can run and return them ranked, with the winner as a RunConfig.

    ``model`` / ``dataset``: what to train (default: ``base``'s, else minilm on rotten_tomatoes). ``budget_s``:
    the whole call's time; it ends within it plus 10%. ``base``: the settings every candidate shares (seq_len,
    learning rate, ...; the winner keeps its max_steps). ``grid``: field -> values to combine, instead of
    ``default_grid``. ``refresh``: measure again instead of returning the cached result. ``on_progress``: called
    with a dict per event (start, candidate, result, done). ``stop``: set it to end the search; the running
    candidate is stopped and what was measured is kept. ``output_dir``: keep the measurement runs there
    (default: a temporary folder, deleted). ``cache_dir``: default ``~/.cache/ortnb/tune`` (``$ORTNB_CACHE``).
    ``wait_for_quiet_s``: before measuring, wait up to this long for other processes to leave the CPU (not
    counted in the budget; a progress event "waiting" says so). Candidates measured under load anyway are
    flagged, and make the winner not conclusive. ``include_base``: measure ``base``'s own settings too, first,
    and state every candidate's speed against them (the Dashboard's Find fastest starts from the form's settings).

    Every argument is checked before any run, and each problem is named in one ConfigError.
    """
    clock = time.monotonic
    started = clock()
    base = _base(model, dataset, base)
    problems = _argument_problems(budget_s, grid, on_progress, stop)
    if not isinstance(wait_for_quiet_s, (int, float)) or isinstance(wait_for_quiet_s, bool) or wait_for_quiet_s < 0:
        problems.append(f"wait_for_quiet_s must be a number of seconds >= 0 (0: do not wait), got "
                        f"{wait_for_quiet_s!r}.")
    if problems:
        raise ConfigError(problems)
    candidates, grid = _candidates(base, grid, include_base)
    _check_budget(budget_s, base, candidates)
    root = cache.directory(cache_dir)
    _check_folder(base, candidates, "output_dir", output_dir)
    _check_folder(base, candidates, "cache_dir", root)
    key = {**cache.key(base, grid, budget_s), **({"yours": True} if include_base else {})}
    path = cache.path_for(root, key)
    entry = None if refresh else cache.read(path, key)
    if entry is not None and not entry["interrupted"]:
        return TuneResult.from_dict(entry, base, from_cache=True, cache_path=str(path))
    resumed = _resume(candidates, entry)
    # one search per runs folder (a temporary one is this search's own); the second is refused, naming the first
    with search_lock(Path(output_dir).expanduser()) if output_dir is not None else contextlib.nullcontext():
        if wait_for_quiet_s:
            waited = _wait_for_quiet(wait_for_quiet_s, on_progress)
            started += waited.waited_s  # the budget is for measuring, not for waiting
        budget = Budget(float(budget_s), clock, started)
        return _search(candidates, base, grid, budget, (path, key), resumed, on_progress, stop, output_dir)


def candidate_configs(model: str | None = None, dataset=None, *, base: RunConfig | None = None,
                      grid: dict[str, list] | None = None) -> list[RunConfig]:
    """Every candidate tune() would measure (validate() refuses none of them), as RunConfigs named by their
    labels: ``ortnb.compare(candidate_configs(...))`` measures the same grid exhaustively."""
    base = _base(model, dataset, base)
    problems = space.grid_problems(grid) if grid is not None else []
    if problems:
        raise ConfigError(problems)
    candidates, _ = _candidates(base, grid)
    return [base.replace(**c.axes, name=c.label) for c in candidates if c.runnable]


def minimum_budget(base: RunConfig, candidates: list[space.Candidate]) -> int:
    """Whole seconds for one measurement of the cheapest runnable candidate: its believed cost with 20% to
    spare (machines differ), plus the second the budget keeps for stopping a run at its end."""
    common = space.defaults(base)
    cheapest = min(space.prior_cost({**common, **c.axes}, RUNG1_STEPS) for c in candidates if c.runnable)
    return math.ceil(1.2 * cheapest + 1.0)


# -- checks, all before any run ---------------------------------------------------------------------


def _base(model, dataset, base) -> RunConfig:
    if isinstance(base, dict):
        base = RunConfig.from_dict(base)
    elif base is None:
        base = RunConfig(model="minilm", dataset="rotten_tomatoes")
    elif not isinstance(base, RunConfig):
        raise ConfigError(f"base must be a RunConfig (e.g. base=ortnb.RunConfig(seq_len=64)) or None, got "
                          f"{type(base).__name__}.")
    changes = {name: value for name, value in (("model", model), ("dataset", dataset)) if value is not None}
    return base.replace(**changes)


def _argument_problems(budget_s, grid, on_progress, stop) -> list[str]:
    problems = []
    if not isinstance(budget_s, (int, float)) or isinstance(budget_s, bool) or not math.isfinite(budget_s):
        problems.append(f"budget_s must be a number of seconds, got {budget_s!r}; the default is "
                        f"{DEFAULT_BUDGET_S:g} (ortnb tune --budget {DEFAULT_BUDGET_S:g}).")
    elif budget_s <= 0:
        problems.append(f"budget_s must be more than 0 seconds, got {budget_s!r}: it is the time the search may "
                        f"take; the default is {DEFAULT_BUDGET_S:g}.")
    if grid is not None:
        problems += space.grid_problems(grid)
    if on_progress is not None and not callable(on_progress):
        problems.append(f"on_progress must be a function taking one dict (or None), got "
                        f"{type(on_progress).__name__}.")
    if stop is not None and not callable(getattr(stop, "is_set", None)):
        problems.append(f"stop must be a threading.Event (or None), got {type(stop).__name__}.")
    return problems


def _candidates(base: RunConfig, grid, include_base: bool = False) -> tuple[list[space.Candidate], dict]:
    """Every candidate (with base's own settings when ``include_base``), checked by validate(); ConfigError with
    the reasons when none can run."""
    from ..hardware import capabilities

    caps = capabilities()
    if grid is None:
        grid = default_grid(base, caps, _cuda_devices() if caps.cuda else 0)
    grid = {name: list(values) for name, values in grid.items()}
    candidates = space.build(base, grid, caps)
    if include_base:
        candidates = space.with_yours(base, grid, candidates, caps)
    if not any(c.runnable for c in candidates):
        raise space.nothing_runnable(candidates)
    return candidates, grid


def _cuda_devices() -> int:
    import torch

    return torch.cuda.device_count()


def _check_budget(budget_s: float, base: RunConfig, candidates: list[space.Candidate]) -> None:
    minimum = minimum_budget(base, candidates)
    if budget_s < minimum:
        raise ConfigError(
            f"budget_s={budget_s:g} is too small for even one candidate: measuring the quickest one with "
            f"{base.model} needs about {minimum} s on a machine like this (two Python processes start and import "
            f"torch, the model loads, the data is tokenized, then {space.WARMUP_STEPS + RUNG1_STEPS} steps); give "
            f"budget_s >= {minimum} (the default is {DEFAULT_BUDGET_S:g}; more measures more candidates).")


def _check_folder(base: RunConfig, candidates, argument: str, folder) -> None:
    """The folder that measurement runs (or the cache) will write into must be creatable: validate() says."""
    if folder is None:
        return
    from ..validation import validate

    runnable = next(c for c in candidates if c.runnable)
    probe = base.replace(**runnable.axes, output_dir=str(folder))
    found = [p.message for p in validate(probe) if p.field == "output_dir"]
    if found:
        raise ConfigError(f"{argument}: {found[0].replace('output_dir', argument)}")


def _resume(candidates: list[space.Candidate], entry: dict | None) -> int:
    """Runs of an interrupted search with this key go back to their candidates; returns how many were measured."""
    if not entry:
        return 0
    saved = {(c["index"], c["label"]): c for c in entry.get("candidates") or []}
    for candidate in candidates:
        earlier = saved.get((candidate.index, candidate.label))
        if earlier and candidate.runnable:
            candidate.runs = list(earlier.get("runs") or [])
    return sum(bool(c.measured_runs()) for c in candidates)


def _wait_for_quiet(timeout_s: float, on_progress):
    from ..contention import wait_for_quiet

    tell = (lambda share: on_progress({"event": "waiting", "share": share, "timeout_s": timeout_s})) \
        if on_progress else None
    return wait_for_quiet(timeout_s, on_wait=tell)


# -- the search ----------------------------------------------------------------------------------


def _search(candidates, base, grid, budget: Budget, entry: tuple, resumed: int, on_progress, stop,
            output_dir, warm_worker: bool = True) -> TuneResult:
    from ..runner.warm import WarmWorker
    from .measure import measurer

    path, key = entry
    created = time.strftime("%Y-%m-%d %H:%M:%S %Z")

    def snapshot(complete: bool, interrupted: bool, ended: str) -> TuneResult:
        return result.build(candidates, base, grid, budget_s=budget.seconds, elapsed_s=budget.elapsed(),
                            complete=complete, interrupted=interrupted, ended=ended, cache_path=str(path),
                            created=created)

    def save():  # after every run: a search cut short (even by a killed kernel) is resumed from here
        cache.write(path, snapshot(False, True, "the search was under way").to_dict(), key)

    keep = output_dir is not None
    path.parent.mkdir(parents=True, exist_ok=True)
    runs_dir = Path(output_dir).expanduser() if keep else Path(tempfile.mkdtemp(prefix="runs-", dir=path.parent))
    warm = WarmWorker(runs_dir) if warm_worker else None
    search = Search(candidates, budget, measurer(base, runs_dir, keep, stop, warm=warm), space.defaults(base),
                    on_progress or (lambda event: None), stop, save)
    try:
        search.event("start", candidates=len(candidates), runnable=len(search.runnable),
                     refused=len(candidates) - len(search.runnable), resumed=resumed)
        ended, interrupted = search.run(), False
    except Interrupted:
        ended, interrupted = "stopped", True
    except BaseException:  # KeyboardInterrupt, or an error in on_progress: keep what was measured, then raise
        with interrupts.deferred():  # one more Ctrl-C or SIGTERM must not lose the measurements
            search.mark_unreached(interrupted=True)
            cache.write(path, snapshot(False, True, "interrupted").to_dict(), key)
        raise
    finally:
        with interrupts.deferred():
            if warm is not None:
                warm.close(WARM_CLOSE_S)
            if not keep:
                shutil.rmtree(runs_dir, ignore_errors=True)
    search.mark_unreached(interrupted)
    complete = not interrupted and all(c.settled() for c in search.runnable)
    found = snapshot(complete, interrupted, ended)
    cache.write(path, found.to_dict(), key)
    search.event("done", complete=complete, interrupted=interrupted, ended=ended, measured=found.counts["measured"])
    return found
