"""compare(configs): each configuration in a fresh run, one table.

Method: same model, data and seed for every run; each run in fresh processes; the first
``warmup_steps`` steps are left out; throughput is the median samples/s with its interquartile
range; with ``repeats=k`` the configurations alternate (A B C A B C ...) so drifts in machine
speed hit all of them alike; the speed-up is a ratio of medians within this one invocation; the
engine column says what really ran (an ORT run that fell back to PyTorch shows ``pytorch``).
"""

from __future__ import annotations

import itertools
from typing import Callable

from . import judge, runner, stats
from .config import RunConfig, fields
from .errors import ConfigError
from .runs.run import Run
from .runner.ending import ended_after
from .validation import validate

SAME_FOR_ALL = ("model", "task", "dataset", "seed", "seq_len")  # padding may differ: it is an option being compared
COLUMNS = ["label", "engine", "status", "samples_per_s", "spread", "p25", "p75", "speedup", "verdict",
           "steps_measured", "contended", "contended_share", "tokens_per_s", "tokens_per_s_iqr", "real_tokens_per_s", "peak_rss_mb",
           "optimizer_state_mb", "final_loss", "mfu", "first_step_s", "startup_s", "runs"]
# Shown when the runs evaluated while training: the best value of the run's metric, its step and when it was
# first reached (seconds since the run began), and the eval loss of the last evaluation.
METRIC_COLUMNS = ["metric", "best_value", "best_step", "best_reached_s", "eval_loss"]


def workload_problems(configs: list[RunConfig]) -> list[str]:
    problems = []
    for name in SAME_FOR_ALL:
        values = {repr(getattr(c, name)) for c in configs}
        if len(values) > 1:
            problems.append(f"{name} differs between the configurations ({', '.join(sorted(values))}); a comparison "
                            f"keeps {name} the same and changes only the options.")
    return problems


def check_comparable(configs: list[RunConfig]) -> None:
    problems = workload_problems(configs)
    for index, cfg in enumerate(configs):
        problems += [f"configuration {index} ({cfg.label}): {p}" for p in validate(cfg)]
    labels = [c.label for c in configs]
    if len(set(labels)) != len(labels):
        problems.append(f"two configurations share a label ({labels}); give them distinct `name`s.")
    if problems:
        raise ConfigError(problems)


LABELLED = ("backend", "optim", "precision", "zero_stage", "num_processes", "freeze_embeddings", "dropout")  # the label shows


def grid(base: RunConfig, choices: dict[str, list]) -> list[RunConfig]:
    """Every combination of ``choices`` (field -> values) applied to ``base``, in order, the first value of each
    field first. Fields the automatic label does not show are named in the label (``batch_size=32``)."""
    unknown = sorted(set(choices) - set(fields()))
    if unknown:
        raise ConfigError([f"{name} is not a RunConfig field; known: {', '.join(fields())}." for name in unknown])
    empty = [name for name, values in choices.items() if not values]
    if empty:
        raise ConfigError([f"{name} has no values to compare; give at least one." for name in empty])
    configs = []
    for values in itertools.product(*choices.values()):
        changes = dict(zip(choices, values))
        config = base.replace(**changes)
        shown = [f"{k}={v}" for k, v in changes.items() if k not in LABELLED and len(choices[k]) > 1]
        configs.append(config.replace(name=f"{config.label} ({', '.join(shown)})") if shown else config)
    return configs


def compare(configs: list[RunConfig], baseline: int = 0, repeats: int = 1,
            on_run: Callable[[Run], None] | None = None, timeout: float = 3600, wait_for_quiet_s: float = 0.0,
            on_wait: Callable[[str], None] | None = None):
    """Run every configuration ``repeats`` times, alternating; returns a pandas DataFrame (one row each).

    ``on_run`` is called with each Run as it starts (the dashboard uses it to draw live charts). A run that
    has not ended within ``timeout`` s is stopped. ``wait_for_quiet_s``: before each run, wait up to this long
    for other work to leave the CPU (on 2 cores one busy process can slow a run 10x); a run that starts on a
    busy machine is named in ``table.attrs["notes"]``, and its own measured contention flags it in the table.
    ``on_wait`` is told, in words, when a wait starts. Interrupted (KeyboardInterrupt), it stops the run in
    progress and raises ``Interrupted``, which carries the table of the runs so far.
    """
    if not configs:
        raise ConfigError("compare needs at least one configuration.")
    if not 0 <= baseline < len(configs):
        raise ConfigError(f"baseline={baseline} is not an index of the {len(configs)} configurations.")
    if repeats < 1:
        raise ConfigError(f"repeats must be >= 1, got {repeats}.")
    if not isinstance(wait_for_quiet_s, (int, float)) or isinstance(wait_for_quiet_s, bool) or wait_for_quiet_s < 0:
        raise ConfigError(f"wait_for_quiet_s must be a number of seconds >= 0 (0: do not wait), got "
                          f"{wait_for_quiet_s!r}.")
    check_comparable(configs)
    summaries: list[list[dict]] = [[] for _ in configs]
    notes: list[str] = []
    run, recorded = None, True  # recorded: the last run's summary is in ``summaries``
    try:
        for _ in range(repeats):
            for index, cfg in enumerate(configs):
                if wait_for_quiet_s:
                    note = _wait_for_quiet(wait_for_quiet_s, cfg.label, on_wait)
                    notes += [note] if note else []
                run, recorded = runner.launch(cfg), False  # looked up at call time: tests replace runner.launch
                with ended_after(run):  # out of time, stalled or interrupted: no run is left training behind it
                    if on_run:
                        on_run(run)
                    run.wait(timeout)
                summaries[index].append(run.summary())
                recorded = True
    except KeyboardInterrupt as interrupt:
        if run is not None and not recorded:
            summaries[[c.label for c in configs].index(run.config.label)].append(run.summary())
        done = sum(len(group) for group in summaries)
        for cfg, group in zip(configs, summaries):
            if not group:
                group.append({"label": cfg.label, "status": "not run"})
        partial = table(summaries, baseline)
        partial.attrs["notes"] = notes
        raise Interrupted(partial, done, len(configs) * repeats, interrupt) from interrupt
    found = table(summaries, baseline)
    found.attrs["notes"] = notes
    return found


def _wait_for_quiet(timeout_s: float, label: str, on_wait: Callable[[str], None] | None) -> str | None:
    from . import contention

    def waiting(share: float) -> None:
        if on_wait:
            on_wait(f"other processes use {share:.0%} of the CPU; waiting up to {timeout_s:g} s for a quiet "
                    f"machine before {label}")

    return contention.wait_for_quiet(timeout_s, on_wait=waiting).text(f"before {label}")


class Interrupted(KeyboardInterrupt):
    """compare() was interrupted (Ctrl-C, or SIGTERM/SIGHUP in ``ortnb compare``). The run in progress was
    stopped the way stop() does; ``table`` holds every run so far (a configuration never started reads status
    "not run"), ``runs_done`` of ``runs_planned`` ended, and ``signum`` is the signal."""

    def __init__(self, partial, runs_done: int, runs_planned: int, interrupt: BaseException):
        from .interrupts import signum_of

        super().__init__(f"compare() was interrupted after {runs_done} of {runs_planned} runs")
        self.table, self.runs_done, self.runs_planned = partial, runs_done, runs_planned
        self.signum = signum_of(interrupt)


def table(summaries: list[list[dict]], baseline: int = 0):
    """The comparison table from each configuration's run summaries (pure: tested on exact values)."""
    import pandas as pd

    rows = [_row(runs) for runs in summaries]
    for row, verdict in zip(rows, judge.judge(rows, baseline)):  # the one judge every view asks
        row["speedup"], row["verdict"] = verdict.speedup, verdict.text
    evaluated = any(row.get("metric") for row in rows)
    return pd.DataFrame(rows, columns=COLUMNS + (METRIC_COLUMNS if evaluated else []))


def _row(runs: list[dict]) -> dict:
    def median(key):
        return stats.median(r.get(key) for r in runs)

    engines = sorted({r.get("engine") or "none" for r in runs})
    statuses = sorted({r["status"] for r in runs})
    measured = [r.get("steps_measured") or 0 for r in runs]
    return {"label": runs[0]["label"], "engine": "/".join(engines), "status": "/".join(statuses),
            "samples_per_s": median("samples_per_s"), "spread": median("samples_per_s_iqr"),
            "p25": median("samples_per_s_p25"), "p75": median("samples_per_s_p75"),
            "steps_measured": min(measured), "tokens_per_s_iqr": median("tokens_per_s_iqr"),
            "contended": any(r.get("contended") for r in runs), "contended_share": median("contended_share"),
            "tokens_per_s": median("tokens_per_s"), "real_tokens_per_s": median("real_tokens_per_s"),
            "peak_rss_mb": median("peak_rss_mb"), "optimizer_state_mb": median("optimizer_state_mb"),
            "final_loss": median("final_loss"), "mfu": median("mfu"), "first_step_s": median("first_step_s"),
            # from the worker's first phase to the end of its first step (the phases: each run's startup_s)
            "startup_s": stats.median(sum(r["startup_s"].values()) for r in runs if r.get("startup_s")),
            "runs": len(runs), "metric": next((r["eval_metric"] for r in runs if r.get("eval_metric")), None),
            "best_value": median("best_value"), "best_step": median("best_step"),
            "best_reached_s": median("best_reached_s"), "eval_loss": median("eval_loss")}


def best(table) -> dict | None:
    """The fastest configuration that completed every run, as a dict (None when none did)."""
    done = table[(table["status"] == "completed") & table["samples_per_s"].notna()]
    if done.empty:
        return None
    return done.loc[done["samples_per_s"].idxmax()].to_dict()


def describe_quality(table) -> str | None:
    """One sentence on how good the models got, when the runs evaluated: the best value of the metric and
    which run reached it (None without evaluations)."""
    from .evaluation import HIGHER_IS_BETTER, METRIC_NAMES

    if "metric" not in table or table["best_value"].notna().sum() == 0:
        return None
    metric = table["metric"].dropna().iloc[0]
    column = table["best_value"]
    index = column.idxmax() if HIGHER_IS_BETTER.get(metric, True) else column.idxmin()
    row = table.loc[index]
    reached = f", first reached after {row['best_reached_s']:.0f} s" if row["best_reached_s"] == row["best_reached_s"] \
        else ""
    return (f"Best {METRIC_NAMES.get(metric, metric)}: {row['best_value']:.4g} ({row['label']}, step "
            f"{row['best_step']:.0f}{reached}).")


def describe_best(table, baseline: int = 0) -> str:
    """The "fastest" sentence, stated as a fact only where the judge allows it (see ortnb/judge.py)."""
    if best(table) is None:
        return "No configuration completed; there is no best one."
    rows = [{k: (None if isinstance(v, float) and v != v else v) for k, v in r.items()}
            for r in table.to_dict(orient="records")]
    verdicts = judge.judge(rows, baseline)
    mfu = [f", MFU {r['mfu']:.1%}" if r.get("mfu") is not None else "" for r in rows]
    return judge.fastest_line(rows, verdicts, [r["engine"] for r in rows], [r["status"] == "completed" for r in rows],
                              mfu)
