"""Find fastest *to quality*: an Optuna study whose trials are real runs racing to a target on the held-out split.

``tune()`` ranks configurations by samples per second; what a user waits for is a good model, and a faster step
that needs more samples (a larger batch) or a learning rate that climbs slowly can lose that race. Here every trial
trains the user's task with a target and is judged by the seconds it took to reach it (training, evaluations and
start-up included: what the user waits for).

- **The measure**: seconds to the target. While a trial trains, each evaluation reports a *projection*: the seconds
  so far divided by the share of the way from chance to the target the best evaluation covered (``projected_s``);
  once reached, the real figure. A trial that never reaches the target ends at its cap with its projection.
- **Pruning**: evaluations fall at the same numbers of samples in every trial (``eval_every`` follows the global
  batch), so Optuna's successive-halving pruner compares trials at equal rungs and stops the slow ones early. A trial
  on a large held-out split screens a subset there (runner/screen.py) and reports the screen's figure.
- **Storage**: the study is a SQLite file in ortnb's cache folder (``studies.sqlite3``), named by the workload
  (model, data, target, metric), so a search that crashed resumes where it was, a second search on the same
  workload adds trials to the same study, ``optuna-dashboard sqlite:///<file>`` opens it, and several machines given
  the same database URL (``storage=``, e.g. a PostgreSQL server) search it together.

The trials' runs are real runs (``ortnb.launch``); tests hand in a ``train`` function instead.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from ..cache_folder import cache_root
from ..config import RunConfig
from ..errors import ConfigError, MissingDependencyError
from .learning_rate import global_batch

STUDIES_FILE = "studies.sqlite3"
EVAL_SAMPLES = 512  # samples between evaluations in every trial: the pruner's rungs fall at equal samples
NEVER_S = 1e9  # the projection of a run that has not left chance: "never", as a number Optuna can compare


@dataclass(frozen=True)
class Axis:
    """One setting a trial chooses: from ``choices``, or log-uniformly between ``low`` and ``high``."""

    name: str
    choices: tuple = ()
    low: float | None = None
    high: float | None = None

    def suggest(self, trial):
        if self.choices:
            return trial.suggest_categorical(self.name, list(self.choices))
        return trial.suggest_float(self.name, self.low, self.high, log=True)


def default_axes(base: RunConfig, bf16_native: bool, ort_available: bool) -> list[Axis]:
    """What a trial may choose on this machine: batch size, learning rate, the engine and precision together
    (``engine``: only the pairs this machine runs: bf16 where the CPU has bf16 units, ORT where ONNX Runtime training
    imports, never ORT in bf16 without CUDA), frozen word embeddings and dropout (the model's own, or off: a race
    shorter than an epoch may not need it)."""
    rate = float(base.learning_rate)
    axes = [Axis("batch_size", (8, 16, 32)), Axis("learning_rate", low=rate / 3, high=rate * 6)]
    engines = engine_choices(base, bf16_native, ort_available)
    if len(engines) > 1:
        axes.append(Axis(ENGINE, engines))
    return axes + [Axis("freeze_embeddings", (False, True)), Axis("dropout", (None, 0.0))]


ENGINE = "engine"  # one axis for backend and precision: separately a trial could pick a pair no run can take


def engine_choices(base: RunConfig, bf16_native: bool, ort_available: bool) -> tuple[str, ...]:
    """'eager no', 'eager bf16', 'ort no' ...: the engine and precision pairs this machine runs for ``base``."""
    from ..validation import validate

    backends = ("eager", "ort") if ort_available else (str(base.backend),)
    precisions = ("no", "bf16") if bf16_native else (str(base.precision),)
    runnable = []
    for backend in backends:
        for precision in precisions:
            refused = [p for p in validate(base.replace(backend=backend, precision=precision))
                       if p.field in ("backend", "precision")]
            if not refused:
                runnable.append(engine_value(backend, precision))
    return tuple(runnable)


def engine_value(backend: str, precision: str) -> str:
    """The ``engine`` axis's value for a pair, 'ort no' (expand reads it back)."""
    return f"{backend} {precision}"


def own_settings(base: RunConfig, axes: list) -> dict:
    """The base's own value on each axis that holds it (its engine and precision as one ``engine`` value): the first
    trial of a new study."""
    values = {axis.name: getattr(base, axis.name, None) for axis in axes}
    values[ENGINE] = engine_value(base.backend, base.precision)
    own = {}
    for axis in axes:
        value = values[axis.name]
        if axis.choices and value in axis.choices:
            own[axis.name] = value
        elif not axis.choices and isinstance(value, (int, float)) and axis.low <= value <= axis.high:
            own[axis.name] = float(value)
    return own


def expand(params: dict) -> dict:
    """A trial's parameters as RunConfig fields: ``engine`` 'ort no' becomes backend='ort', precision='no'."""
    settings = {name: value for name, value in params.items() if name != ENGINE}
    if ENGINE in params:
        settings["backend"], settings["precision"] = str(params[ENGINE]).split(" ", 1)
    return settings


def projected_s(elapsed_s: float, best: float | None, target: float, chance: float) -> float:
    """Seconds to reach ``target`` projected from the progress so far (pure): ``elapsed_s`` once reached; else the
    elapsed seconds over the share of the way from ``chance`` to the target covered; ``NEVER_S`` before any
    progress."""
    if best is not None and best >= target:
        return elapsed_s
    covered = 0.0 if best is None else (best - chance) / (target - chance)
    return elapsed_s / covered if covered > 0 else NEVER_S


def eval_every(config: RunConfig, samples: int = EVAL_SAMPLES) -> int:
    """Optimizer steps between evaluations so that every trial evaluates after the same numbers of samples."""
    return max(1, round(samples / global_batch(config)))


def trial_config(base: RunConfig, settings: dict, target: float, max_samples: int, runs_dir: Path,
                 number: int) -> RunConfig:
    """The run of one trial: the base with the trial's settings, the target, evaluations at equal samples."""
    config = base.replace(**settings, name=f"trial {number}", output_dir=str(runs_dir), evaluate=True, epochs=None,
                          early_stopping_patience=None, report_to=None)
    config = config.replace(max_steps=max(1, max_samples // global_batch(config)))
    return config.replace(target=target, eval_every=eval_every(config))


def study_name(base: RunConfig, target: float) -> str:
    """The workload a study measures: the same name for the same model, data, task, metric and target."""
    from .cache import data_identity

    workload = {"model": base.model, "data": data_identity(base), "task": str(base.task or ""),
                "metric": str(base.metric or ""), "seq_len": base.seq_len, "target": target}
    digest = hashlib.sha256(json.dumps(workload, sort_keys=True, default=str).encode()).hexdigest()[:12]
    return f"ortnb-{base.model}-{digest}"


def storage_url(storage: str | Path | None) -> str:
    """A database URL for Optuna: given as a URL, a SQLite file path, or None for the one in the cache folder."""
    if storage is not None and "://" in str(storage):
        return str(storage)
    path = Path(storage) if storage is not None else cache_root() / STUDIES_FILE
    path.parent.mkdir(parents=True, exist_ok=True)
    return f"sqlite:///{path.resolve()}"


@dataclass
class QualityResult:
    study: object  # optuna.Study: open it with optuna's plots or optuna-dashboard
    storage: str
    target: float

    @property
    def best(self) -> dict | None:
        """The best finished trial's settings and its seconds to the target, or None when no trial reached it."""
        done = [t for t in self.study.trials if t.value is not None and t.user_attrs.get("reached")]
        if not done:
            return None
        top = min(done, key=lambda t: t.value)
        return {**expand(top.params), "seconds_to_target": top.value, "trial": top.number}

    def table(self):
        """One row per trial: its settings, state (complete, pruned, failed), seconds (or projection), reached."""
        import pandas as pd

        rows = [{"trial": t.number, **expand(t.params), "state": t.state.name.lower(), "seconds": t.value,
                 "reached": bool(t.user_attrs.get("reached")), "engine": t.user_attrs.get("engine")}
                for t in self.study.trials]
        return pd.DataFrame(rows).sort_values("seconds", na_position="last").reset_index(drop=True)


def tune_to_target(model: str | None = None, dataset=None, *, target: float, base: RunConfig | None = None,
                   **options) -> QualityResult:
    """``ortnb.tune_to_target``: the configuration of ``model`` on ``dataset`` (or ``base``) that reaches ``target``
    soonest on this machine, by an Optuna study of real runs (see ``search`` for the options)."""
    base = base or RunConfig()
    base = base.replace(**{name: value for name, value in (("model", model), ("dataset", dataset)) if value is not None})
    return search(base, target, **options)


class Stopped(Exception):
    """Stop was asked for: the trial in progress ends (its run stopped) and the search returns what it has."""


def search(base: RunConfig, target: float, *, trials: int = 12, max_samples: int = 8192, storage=None,
           runs_dir: str | Path | None = None, chance: float | None = None, axes: list[Axis] | None = None,
           train: Callable | None = None, seed: int = 0, on_progress: Callable[[dict], None] | None = None,
           stop=None, timeout_s: float | None = None) -> QualityResult:
    """Race ``trials`` configurations of ``base`` to ``target`` (on its metric, on the held-out split), each capped at
    ``max_samples`` training samples, pruning those that fall behind; returns the study and the winner.
    ``train(config, report)`` runs one trial and returns ``(seconds, reached, engine)``, calling
    ``report(rung, projected_s)`` after each evaluation (which raises to prune); the default launches real runs.
    ``on_progress(event)`` hears each trial start and end (``{"trial", "of", "best"}``); ``stop`` (a
    threading.Event) ends the trial in progress and the search, keeping the trials that ended; ``timeout_s``: no
    trial starts after this many seconds (the one in progress ends at its cap or its pruning)."""
    try:
        import optuna
    except ImportError:
        raise MissingDependencyError("tune_to_target runs an Optuna study: pip install 'ortnb[search]' "
                                     "(or pip install optuna)") from None
    folder = Path(runs_dir) if runs_dir is not None else Path(base.output_dir) / "quality-search"
    axes = axes if axes is not None else _machine_axes(base)
    url = storage_url(storage)
    _check(base, target, trials, max_samples, folder, axes, url)
    chance = chance if chance is not None else 0.5
    race = _Race(optuna, base, target, max_samples, folder, axes,
                 train or _train_for_real(chance, target, stop), on_progress or (lambda event: None), stop, trials)
    quiet = optuna.logging.get_verbosity()
    optuna.logging.set_verbosity(optuna.logging.WARNING)  # a line per trial is the table's job
    try:
        study = optuna.create_study(study_name=study_name(base, target), storage=url, direction="minimize",
                                    load_if_exists=True, sampler=optuna.samplers.TPESampler(seed=seed),
                                    pruner=optuna.pruners.SuccessiveHalvingPruner(min_resource=1, reduction_factor=3))
        race.study = study
        if not study.trials:  # a new study races the user's own settings first: it can then only improve on them
            study.enqueue_trial(own_settings(base, axes), skip_if_exists=True)
        study.optimize(race.objective, n_trials=trials, timeout=timeout_s, catch=(RuntimeError,))
    except Stopped:
        pass
    finally:
        optuna.logging.set_verbosity(quiet)
    return QualityResult(study, url, target)


def _check(base: RunConfig, target: float, trials: int, max_samples: int, folder: Path, axes: list | None = None,
           url: str | None = None) -> None:
    problems = _problems(base, target, trials, max_samples) + _space_problems(axes or []) + _storage_problems(url)
    if not problems:  # the base as a trial runs it: a model or data that cannot run is named before any trial
        from ..validation import validate

        problems = [str(p) for p in validate(trial_config(base, {}, target, max_samples, folder, 0))]
    if problems:
        raise ConfigError(problems)


def _space_problems(axes: list) -> list[str]:
    """A race needs something to choose: a search space with one value on every axis is refused."""
    if axes and all(len(axis.choices) == 1 for axis in axes):
        return [f"axes: every axis has one value ({', '.join(f'{a.name}={a.choices[0]!r}' for a in axes)}), so every "
                "trial would run the same configuration; give an axis two values or more, or a range, or launch that "
                "one run with ortnb.launch"]
    return []


SQLITE_HEADER = b"SQLite format 3\x00"


def _storage_problems(url: str | None) -> list[str]:
    """A study file that is not an SQLite database (cut short, overwritten) is named before any trial, with the
    way out, instead of a database error from deep inside Optuna."""
    if not url or not url.startswith("sqlite:///"):
        return []
    path = Path(url[len("sqlite:///"):])
    if not path.exists() or path.stat().st_size == 0:
        return []
    try:
        with open(path, "rb") as handle:
            header = handle.read(len(SQLITE_HEADER))
    except OSError as error:
        return [f"storage: the study file {path} cannot be read ({error.strerror}); pass storage= another file"]
    if header != SQLITE_HEADER:
        return [f"storage: {path} is not an SQLite database (damaged, or another kind of file); move it aside to "
                "start the studies in it afresh, or pass storage= another file"]
    return []


@dataclass
class _Race:
    """One search's objective: a trial's settings, its run, its reports to the pruner, and progress."""

    optuna: object
    base: RunConfig
    target: float
    max_samples: int
    folder: Path
    axes: list
    train: Callable
    on_progress: Callable[[dict], None]
    stop: object
    trials: int
    study: object = None
    started: int = 0

    def objective(self, trial) -> float:
        settings = expand({axis.name: axis.suggest(trial) for axis in self.axes})
        config = trial_config(self.base, settings, self.target, self.max_samples, self.folder, trial.number)
        self.started += 1
        self.on_progress({"trial": self.started, "of": self.trials, "label": config.label, "best": self._best()})

        def report(rung: int, projected: float) -> None:
            if self.stop is not None and self.stop.is_set():
                raise Stopped()
            trial.report(projected, rung)
            if trial.should_prune():
                raise self.optuna.TrialPruned()

        seconds, reached, engine = self.train(config, report)
        trial.set_user_attr("reached", bool(reached))
        trial.set_user_attr("engine", engine)
        return seconds

    def _best(self) -> dict | None:
        return QualityResult(self.study, "", self.target).best if self.study is not None else None


def _problems(base: RunConfig, target: float, trials: int, max_samples: int) -> list[str]:
    problems = []
    if not isinstance(target, (int, float)) or not 0 < target <= 1:
        problems.append(f"target={target!r}: the accuracy (or F1) the search races to, between 0 and 1 (e.g. 0.8)")
    if not isinstance(trials, int) or trials < 1:
        problems.append(f"trials={trials!r}: how many configurations to race, at least 1")
    if not isinstance(max_samples, int) or max_samples < EVAL_SAMPLES:
        problems.append(f"max_samples={max_samples!r}: each trial's cap in training samples, at least {EVAL_SAMPLES} "
                        "(one evaluation's worth)")
    if base.metric in ("loss", "perplexity"):
        problems.append(f"metric={base.metric!r}: the search races to a score that rises (accuracy or f1)")
    return problems


def _machine_axes(base: RunConfig) -> list[Axis]:
    from .. import _imports
    from ..hardware import capabilities

    return default_axes(base, capabilities().bf16_cpu_native, _imports.is_ort_training_available())


def rung_value(record: dict, metric: str) -> float | None:
    """The metric an eval or screen event measured (a screen holds it as ``value``), or None for any other record
    (pure)."""
    if record.get("event") == "eval":
        value = record.get(metric)
    elif record.get("event") == "screen":
        value = record.get("value")
    else:
        return None
    return float(value) if isinstance(value, (int, float)) and isinstance(record.get("step"), int) else None


def _train_for_real(chance: float, target: float, stop=None):
    """train(config, report) on a real run: launched, followed, each evaluation reported as a projection from the
    seconds since the run began (its first event); a pruned trial's run is stopped before the pruning goes on."""
    def train(config: RunConfig, report) -> tuple[float, bool, str | None]:
        from ..runner import launch
        from ..runner.ending import ended_after

        run = launch(config)
        seen = {"start": None, "best": None, "last": 0.0, "rungs": set()}
        metric = str(config.metric or "accuracy")

        def on_record(record: dict) -> None:
            moment = record.get("time") if record.get("kind") == "event" else None
            if isinstance(moment, (int, float)):
                seen["start"] = moment if seen["start"] is None else seen["start"]
                seen["last"] = moment - seen["start"]
            value = rung_value(record, metric)
            if value is None:
                return
            seen["best"] = max(value, seen["best"] if seen["best"] is not None else value)
            rung = record["step"] // config.eval_every
            # the pruner compares trials at equal samples (every eval_every steps), once per rung: a run with a
            # target screens there (runner/screen.py) and evaluates the whole split in between when it comes near
            if record["step"] % config.eval_every == 0 and rung not in seen["rungs"]:
                seen["rungs"].add(rung)
                report(rung, projected_s(seen["last"], seen["best"], target, chance))

        def on_tick() -> None:
            if stop is not None and stop.is_set():
                raise Stopped()

        with ended_after(run, 5.0):
            run.follow(on_record, on_tick=on_tick, stop_on_interrupt=False)
        summary = run.summary()
        reached = bool(summary.get("reached_target"))
        seconds = (summary["target_reached_s"] if reached and summary.get("target_reached_s") is not None
                   else projected_s(seen["last"], seen["best"], target, chance))
        return float(seconds), reached, summary.get("engine")

    return train
