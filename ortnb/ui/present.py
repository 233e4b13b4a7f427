"""What the Dashboard shows, as pure functions of its state: progress, status, summary card, comparison.

Like tqdm's ``format_meter``: numbers in, text out, no display touched; tested on exact values.
"""

from __future__ import annotations

import math
import statistics
from dataclasses import dataclass

from .. import judge, metrics
from ..evaluation import METRIC_NAMES
from ..runs.records import FIRST_STEP
from ..tuning.space import AXES
from ..views import comparison_table
from ..views.markup import Markup, join, tag
from ..views.numbers import format_duration, format_span, metric_text
from ..views.numbers import number as _number
from .form import humanize
from .state import DashboardState, RunEntry

LEVEL_COLOURS = {"info": "#1a1a1a", "warning": "#8a5a00", "error": "#b00020"}
STATUS_COLOURS = {"failed": "#b00020", "stopped": "#8a5a00", "stalled": "#8a5a00", "completed": "#00703c"}


# -- progress ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class Progress:
    step: int
    total: int | None  # None while an epoch-sized run has not said how many steps it trains
    elapsed_s: float
    eta_s: float | None
    phase: str  # a phase before the first step, "training", or the final status
    text: str


def _steps(records: list[dict]) -> list[dict]:
    return metrics.steps(records)


def _phase(records: list[dict]) -> tuple[str, float | None]:
    """The phase a run is in before its first step (as the worker names it), with its start time."""
    phases = metrics.events(records, "phase")
    if phases:
        return phases[-1]["phase"], phases[-1].get("time")
    return ("preparing" if metrics.events(records, "started") else "starting processes"), None


def eta_seconds(steps: list[dict], total: int | None) -> float | None:
    """Remaining steps times the median step time, leaving out the first step (graph builds)."""
    times = [s["step_time"] for s in steps[1:] if isinstance(s.get("step_time"), (int, float))]
    if not times or not steps or total is None:
        return None
    return max(0, total - steps[-1]["step"]) * statistics.median(times)


def planned(entry: RunEntry) -> int | None:
    """The steps the run trains (its worker says how many epochs take; else max_steps or the default); None
    while an epoch-sized run has not said."""
    return metrics.planned_steps(entry.records, entry.config.max_steps, getattr(entry.config, "epochs", None))


def progress(entry: RunEntry, now: float, wall_clock: float | None = None) -> Progress:
    """Step i/N, elapsed, ETA and the named phase; ``wall_clock`` (time.time()) dates phase events."""
    steps = _steps(entry.records)
    step, total = (steps[-1]["step"] if steps else 0), planned(entry)
    elapsed = (entry.ended_at or now) - entry.started_at
    if entry.done:
        text = f"{entry.status} · {step}/{metrics.steps_of(total)} steps in {format_duration(elapsed)}"
        return Progress(step, total, elapsed, 0.0, entry.status, text)
    if not steps:
        phase, since = _phase(entry.records)
        took = f" ({format_duration(wall_clock - since)})" if since and wall_clock else ""
        verb = "stopping" if entry.stopping else f"{phase}…{took}"
        text = f"{verb} · {format_duration(elapsed)} elapsed · step 0/{metrics.steps_of(total)}"
        return Progress(0, total, elapsed, None, phase, text)
    eta = eta_seconds(steps, total)
    verb = "stopping · " if entry.stopping else ""
    text = (f"{verb}step {step}/{metrics.steps_of(total)} · {format_duration(elapsed)} elapsed · ETA "
            f"{format_duration(eta) if eta is not None else 'after the next step'}")
    return Progress(step, total, elapsed, eta, "training", text)


@dataclass(frozen=True)
class Bar:
    """The one progress bar under the buttons: of the newest of the latest run, a search and a profile."""

    value: int
    max: int
    style: str  # ipywidgets' bar_style: info while going, then success, warning or danger
    text: str


RUN_BAR_STYLES = {"failed": "danger", "stopped": "warning", "completed": "success"}


def bar(state: DashboardState, now: float, wall_clock: float | None = None) -> Bar | None:
    """What the progress bar shows (None: hidden, nothing has started). The newest thing started is shown: a
    profile or search started after the latest run replaces its line until a run starts again."""
    search, latest, profiling = state.search, state.latest, state.profiling
    started = {"run": latest, "search": search, "profile": profiling}  # on a tie, the later in this order
    newest = max((name for name, item in started.items() if item is not None),
                 key=lambda name: (started[name].started_at, list(started).index(name)), default=None)
    if newest == "profile":
        done = profiling.done
        count = max(1, len(profiling.labels))
        style = (("success" if profiling.data is not None else "danger" if profiling.error else "warning")
                 if done else "info")
        return Bar(count if done else profiling.current, count, style, profile_text(profiling, now))
    if newest == "search":
        event = search.progress
        count = max(1, int(event.get("of") or 1))
        value = count if search.done else min(int(event.get("candidate") or 0), count)
        style = "danger" if search.error else "success" if search.done else "info"
        return Bar(value, count, style, search_text(search, now))
    if newest is None:
        return None
    shown = progress(latest, now, wall_clock)
    total = max(1, shown.total or max(1, shown.step))  # an epoch-sized run before it says how many: no false end
    return Bar(min(shown.step, total), total, RUN_BAR_STYLES.get(latest.status, "info"), shown.text)


# -- status line and message -----------------------------------------------------------------


def status_text(entry: RunEntry | None) -> str:
    if entry is None:
        return "idle"
    status = "stopping" if entry.stopping and not entry.done else entry.status
    text = f"{entry.label}: {status}"
    steps = _steps(entry.records)
    if steps and entry.done:  # while it trains the progress line beside the bar counts steps: one count on screen
        text += f" (step {steps[-1]['step']}/{metrics.steps_of(planned(entry))})"
    forced = next((r for r in reversed(entry.records) if r.get("event") == "stopped" and r.get("forced")), None)
    if forced:
        text += " - forced: " + str(forced.get("reason", "the ranks were terminated"))
    if entry.status in ("failed", "stalled") and entry.error:  # a stall's error is what it says of the stall
        text += f" - {entry.error.splitlines()[0]}"
    return text


def live_hint(entry: RunEntry | None) -> str:
    """What the empty live charts say: press Run only when there is nothing else to say."""
    from ..charts import EMPTY_HINT

    if entry is None:
        return EMPTY_HINT
    if entry.status == "failed":
        return "The run failed before its first step: the status above says why"
    if entry.done:
        return f"The run ended ({entry.status}) before its first step"
    phase, _ = _phase(entry.records)
    return f"{phase[0].upper()}{phase[1:]}…: the charts start at the first step"


def progress_html(text: str) -> Markup:
    """The line beside the progress bar (a run's, a search's or a profile's)."""
    return tag("span", text, class_="ortnb-progress-text")


def status_html(state: DashboardState) -> Markup:
    entry = state.latest
    colour = STATUS_COLOURS.get(entry.status if entry else "", "#1a1a1a")
    hint = "" if entry else " (set up a run and press Run)"
    line = tag("div", tag("b", "status:"), " ", status_text(entry), hint, class_="ortnb-status", style=f"color:{colour}")
    if not state.message:
        return line
    return join([line, tag("div", humanize(state.message.text), class_="ortnb-message",
                           style=f"color:{LEVEL_COLOURS[state.message.level]}")])


# -- summary card -----------------------------------------------------------------------------


def summary_items(entry: RunEntry) -> list[tuple[str, str]]:
    """(name, value) pairs for the card shown when a run ends: how good (the held-out metric, when the run
    evaluated), how fast (median with its interquartile range, as the table and the chart show it), where."""
    s = entry.summary or {}
    measured = s.get("steps_measured") or 0
    if s.get("samples_per_s") is None:
        speed = "– (no measured steps)"
    else:
        speed = judge.spread_text(s.get("samples_per_s"), s.get("samples_per_s_p25"), s.get("samples_per_s_p75"))
        if measured < judge.MIN_MEASURED_STEPS:
            speed += f" ({measured} measured step{'s' if measured != 1 else ''}: too few to compare)"
    items = quality_items(s)
    items += [
        ("final loss", _number(s.get("final_loss"), 4)),
        ("samples/s (median, p25–p75)", speed),
        ("tokens/s, real (padded)", _tokens(s)),
        ("MFU", _mfu(s)),
        ("wall time", format_duration((entry.ended_at or entry.started_at) - entry.started_at)),
        (FIRST_STEP, first_step_text(s.get("startup_s"), s.get("first_step_s"))),
        ("start-up", startup_text(s.get("startup_s"))),
        ("started", started_text(s.get("warm_run"))),
        ("engine", s.get("engine") or "none (no step ran)"),
        ("run folder", str(s.get("run_dir") or entry.id)),
    ]
    if entry.status == "stopped":
        items.append(("kept", s.get("kept") or "nothing to load"))
    return items


def startup_text(phases: dict | None) -> str:
    """'12.6 s to the end of step 1: loading model 7.7 · tokenizing (cached) 0.1 · evaluation before step 1 2.0 ·
    first step 2.8' (seconds, in order); the first step's own parts are on the card's first-step line."""
    if not phases:
        return "–"
    first_step = metrics.first_step_phases(phases)
    shown = {name: seconds for name, seconds in phases.items() if name not in first_step}
    first = metrics.first_step_seconds(phases)
    if first is not None:
        shown[FIRST_STEP] = first
    parts = " · ".join(f"{name} {seconds:.1f}" for name, seconds in shown.items())
    return f"{sum(phases.values()):.1f} s to the end of step 1: {parts}"


def started_text(warm_run: int | None) -> str:
    """How the run's processes started: cold (a new interpreter, torch and transformers imported), or in the
    session's warm worker, where only its first run pays that (runner/warm.py)."""
    if warm_run is None:
        return "cold: new processes (interpreter started, torch and transformers imported)"
    if warm_run == 1:
        return "cold, in a new warm worker: the next run of this kind starts warm"
    return f"warm: the session's worker, its run {warm_run} (no interpreter start or imports)"


def first_step_text(phases: dict | None, first_step_s: float | None) -> str:
    """'2.8 s (ONNX export 1.0 · graph build 0.5 · step 1 1.3)': the same figure as on the start-up line, with its
    parts where there are several."""
    if first_step_s is None:
        return "–"
    parts = {("step 1" if name == FIRST_STEP else name): seconds
             for name, seconds in metrics.first_step_phases(phases or {}).items() if seconds > 0}
    detail = " (" + " · ".join(f"{name} {seconds:.1f}" for name, seconds in parts.items()) + ")" if len(parts) > 1 else ""
    return f"{first_step_s:.1f} s{detail}"


def quality_items(s: dict) -> list[tuple[str, str]]:
    """The card's evaluation items: the best held-out value with its step and time and that evaluation's loss
    (the weights Try it and export use), the last evaluation where it differs, the target, early stop."""
    metric = s.get("eval_metric")
    if metric is None:  # no evaluation of the whole split yet; a target run may have screened a subset
        return [("evaluating", evaluating_text(s))] if s.get("screens") else []
    name = METRIC_NAMES.get(metric, metric)
    best = _number(s.get("best_value")) if isinstance(s.get("best_value"), (int, float)) else "–"
    if s.get("best_step") is not None:
        best += f" at step {s['best_step']}"
        if s.get("best_reached_s") is not None:
            best += f" ({format_duration(s['best_reached_s'])})"
    items = [(f"best held-out {name}", best)]
    if metric != "loss":
        items.append(("its held-out loss", _number(s.get("best_eval_loss"), 4)))
    if s.get("last_eval_step") is not None and s.get("last_eval_step") != s.get("best_step"):
        last = s.get("eval_loss") if metric == "loss" else s.get(metric)
        items.append(("last evaluation", f"{metric_text(metric, last)} at step {s['last_eval_step']}"))
    if s.get("target") is not None:
        if s.get("reached_target"):
            when = f" ({format_duration(s['target_reached_s'])})" if s.get("target_reached_s") is not None else ""
            items.append(("target", f"reached {s['target']:g} at step {s.get('target_step')}{when}"))
        else:
            items.append(("target", f"{s['target']:g} not reached"))
    if s.get("early_stopped"):
        items.append(("stopped early", s.get("early_stop") or "no better evaluation within the patience"))
    if s.get("eval_evaluations") or s.get("screens"):  # their time, apart from training's
        items.append(("evaluating", evaluating_text(s)))
    return items


def evaluating_text(s: dict) -> str:
    """What evaluating cost, the full split's evaluations and the screens apart: "3 evaluations in 8.6 s; 9 screens
    of 200 rows in 5.1 s" (pure)."""
    parts = []
    count, screens = s.get("eval_evaluations") or 0, s.get("screens") or 0
    if count:
        parts.append(f"{count} evaluation{'s' if count != 1 else ''} in {format_span(s.get('eval_total_s'))}")
    if screens:
        rows = f" of {s['screen_samples']:,} rows" if s.get("screen_samples") else ""
        parts.append(f"{screens} screen{'s' if screens != 1 else ''}{rows} in {format_span(s.get('screen_total_s'))}")
    return "; ".join(parts)


def _mfu(summary: dict) -> str:
    mfu = summary.get("mfu")
    if mfu is not None:
        return f"{mfu * 100:.1f}%"
    return "– (" + summary["mfu_error"] + ")" if summary.get("mfu_error") else "–"


def _tokens(summary: dict) -> str:
    real, padded = summary.get("real_tokens_per_s"), summary.get("tokens_per_s")
    if real is None:
        return _number(padded) if padded is not None else "–"
    return f"{_number(real)} ({_number(padded)})"


def card_notes(entry: RunEntry) -> list[str]:
    """What the run did that a user should know (a new head, the pad token, contention), in plain words."""
    s = entry.summary or {}
    notes = [humanize(n) for n in s.get("notes") or []]
    if entry.engine_note:
        notes.append(entry.engine_note)
    if s.get("contended"):
        share = s.get("contended_share")
        notes.append("measured while other processes used the CPU" + (f" ({share:.0%})" if share else "") +
                     ": its speed is no fact; measure again on a quiet machine")
    return notes


def summary_card_html(entry: RunEntry | None) -> Markup:
    if entry is None or not entry.done:
        return Markup()
    colour = STATUS_COLOURS.get(entry.status, "#1a1a1a")
    cells = join(tag("span", tag("span", name, class_="ortnb-card-name"), " ", tag("span", value, class_="ortnb-card-value"),
                     class_="ortnb-card-item") for name, value in summary_items(entry))
    error = (tag("div", entry.error.splitlines()[0], class_="ortnb-card-error")
             if entry.status == "failed" and entry.error else "")
    notes = join(tag("div", n, class_="ortnb-card-note") for n in card_notes(entry))
    return tag("div", tag("div", f"{entry.label}: {entry.status}", class_="ortnb-card-title"), error, notes,
               tag("div", cells, class_="ortnb-card-grid"),
               class_="ortnb-summary", style=f"border-left:4px solid {colour}")


# -- comparison -------------------------------------------------------------------------------


def comparison_rows(state: DashboardState) -> list[dict]:
    """One row per compared run, in the order added, judged by ``ortnb.judge`` (the judge compare, the report
    and tune use): the speed-up is over the first run with enough measured steps, and is a fact only where the
    judge allows it; runs with too few steps are kept (marked) but get no speed-up."""
    rows, summaries = [], []
    for run_id in state.compared:
        entry = state.runs[run_id]
        s = entry.summary or {}
        summaries.append({**s, "label": entry.label})
        rows.append({"id": run_id, "label": entry.label, "colour": entry.colour, "engine": s.get("engine") or "none",
                     "status": entry.status, "samples_per_s": s.get("samples_per_s"),
                     "p25": s.get("samples_per_s_p25"), "p75": s.get("samples_per_s_p75"),
                     "steps_measured": s.get("steps_measured") or 0,
                     "peak_rss_mb": s.get("peak_rss_mb"), "optimizer_state_mb": s.get("optimizer_state_mb"),
                     "final_loss": s.get("final_loss"), "mfu": s.get("mfu"), "first_step_s": s.get("first_step_s"),
                     "real_tokens_per_s": s.get("real_tokens_per_s"),
                     "held_out": metric_text(s.get("eval_metric"), s.get("best_value"))})
    for row, verdict in zip(rows, judge.judge(summaries)):
        row.update(speedup=verdict.speedup, baseline=verdict.baseline, too_few=not verdict.usable,
                   noisy=verdict.noisy, contended=verdict.contended, conclusive=verdict.conclusive,
                   reason=verdict.reason, text=verdict.text)
    return rows


TABLE_COLUMNS, TEXT_COLUMNS, table_cells = comparison_table.COLUMNS, comparison_table.TEXT_COLUMNS, comparison_table.cells


# -- Find fastest -----------------------------------------------------------------------------

SEARCH_COLUMNS = [("rank", "#"), ("rung", "rung"), ("label", "configuration"), ("status", "status"), ("samples_per_s", "samples/s"),
                  ("vs_yours", "vs your settings"),
                  ("p25", "p25–p75"), ("flag", "judged"), ("real_tokens_per_s", "real tokens/s"), ("mfu", "MFU %"), ("engine", "engine"),
                  ("first_step_s", "first step (s)"), ("seconds_to_target", "s to target"), ("reason", "why")]


def target_text(config) -> str:
    """``accuracy 0.80``: the metric a run's target is on, and the target (pure)."""
    return f"{config.metric or 'accuracy'} {config.target:.2f}"


def search_text(search, now: float) -> str:
    """One line while ortnb.tune searches (candidate i of n, elapsed, best so far) and after it ends."""
    elapsed = (now - search.started_at) if not search.done else search.progress.get("elapsed_s", 0.0)
    if search.done:
        measured = sum(1 for r in search.rows if r.get("samples_per_s") is not None or r.get("status") == "reached")
        what = "reached the target" if any("seconds_to_target" in r for r in search.rows) else "measured"
        best = f" · fastest: {search.best.label}" if search.best is not None else ""
        configurations = f"{measured} configuration{'s' if measured != 1 else ''}"
        return f"Find fastest: ended after {format_duration(elapsed)} · {configurations} {what}{best}"
    event = search.progress
    where = ("preparing" if not event.get("candidate") else f"candidate {event['candidate']} of {event['of']}"
             if event.get("of") else f"trial {event['candidate']}")
    if event.get("phase"):
        where = f"{event['phase']}, {where}"
    best = event.get("best")
    best_text = ("" if not best else f" · best so far: {format_duration(best['seconds_to_target'])} to the target"
                 if "seconds_to_target" in best else
                 f" · best so far: {best['label']}, {_number(best.get('samples_per_s'))} samples/s")
    verb = "stopping · " if search.stopping else ""
    return (f"{verb}Find fastest: {where} · {format_duration(elapsed)} of "
            f"{format_duration(search.budget_s)}{best_text}")


def profile_text(profiling, now: float) -> str:
    """One line while a profile measures (configuration i of n, elapsed) and after it ends (pure)."""
    count = len(profiling.labels)
    if profiling.done:
        if profiling.data is None:
            return "Profile: stopped" if profiling.error is None or "stopped" in profiling.error else "Profile: failed"
        return f"Profile: done · {count} configuration{'s' if count != 1 else ''} · see the Profile tab"
    verb = "stopping · " if profiling.stopping else ""
    label = profiling.labels[profiling.current] if profiling.labels else ""
    return (f"{verb}Profile: {label} ({profiling.current + 1} of {count}) · "
            f"{format_duration(now - profiling.started_at)}")


def search_cell(key: str, value, row: dict | None = None) -> str:
    if row is not None and row.get("yours") and key in ("label", "vs_yours"):
        return "your settings" if key == "vs_yours" else f"{value} (yours)"
    if key == "vs_yours":
        return f"{value:.2f}x" if isinstance(value, (int, float)) and math.isfinite(value) else "–"
    if key == "p25" and row is not None:  # the range, as the comparison table shows it
        low, high = row.get("p25"), row.get("p75")
        return f"{_number(low)}–{_number(high)}" if low is not None and high is not None else "–"
    if value is None or (isinstance(value, float) and not math.isfinite(value)):
        return "–"
    if key == "mfu":
        return f"{value * 100:.1f}"
    if isinstance(value, float):
        return _number(value)
    return str(value)


GROUPED = ("refused", "unsupported", "skipped", "not measured")  # statuses whose rows say the same thing


def search_table_rows(rows: list[dict]) -> list[dict]:
    """The rows a person reads: measured and failed candidates one by one; candidates that were not run for the
    same reason once, with how many and which (the grid had 16 rows saying one refusal), in the form's words."""
    shown, groups = [], {}
    for row in rows:
        alone = row.get("yours") or row.get("status") == "failed"  # yours is the reference: never in a group
        if not alone and (row.get("status") in GROUPED or (row.get("samples_per_s") is None and row.get("reason"))):
            groups.setdefault((row.get("status"), humanize(str(row.get("reason") or "no reason recorded"))),
                              []).append(str(row.get("label")))
        else:
            shown.append({**row, "reason": humanize(str(row["reason"])) if row.get("reason") else None})
    for (status, reason), labels in groups.items():
        which = labels[0] if len(labels) == 1 else f"{len(labels)} candidates: {', '.join(labels[:3])}" + (
            f" and {len(labels) - 3} more" if len(labels) > 3 else "")
        shown.append({"label": which, "status": status, "reason": reason})
    return shown


def search_order_text(rows: list[dict]) -> str:
    """How the table is ordered, in words that agree with its numbers: the tuner ranks the candidates measured
    again (a higher rung, more steps) above faster-looking figures of a shorter rung, so "fastest first" was
    false (#1 at 70.1 samples/s above #2 at 77.7)."""
    if any(row.get("seconds_to_target") is not None for row in rows):
        return "soonest to the target first"
    rungs = {row.get("rung") for row in rows if row.get("samples_per_s") is not None and row.get("rung")}
    if len(rungs) <= 1:
        return "fastest first"
    return (f"ranked by the rung each reached, then speed: the rung-{max(rungs)} rows were measured again over more "
            "steps, so their figures outrank a faster-looking figure of a shorter rung")


def search_table_html(rows: list[dict]) -> Markup:
    """The ranked table of a search: every candidate, measured or not, with the reason when not (candidates
    refused for one reason share a row)."""
    if not rows:
        return Markup()
    rows = search_table_rows(rows)
    columns = [(key, title) for key, title in SEARCH_COLUMNS if any(key in row for row in rows)
               and (key != "vs_yours" or any(row.get("yours") for row in rows))]
    head = tag("tr", *(tag("th", title, class_="ortnb-cell ortnb-head") for _, title in columns))
    body = (tag("tr", *(tag("td", search_cell(key, row.get(key), row), class_="ortnb-cell") for key, _ in columns))
            for row in rows)
    return tag("div", tag("b", f"Find fastest: every candidate, {search_order_text(rows)}"),
               tag("table", head, *body, style="width:100%;border-collapse:collapse"), class_="ortnb-search")


def winner_for_form(best, form_config, settings: dict | None = None):
    """The form's run with the search winner's settings, and the sentence saying how its learning rate changed
    (None when it did not): steps and the rest stay the user's, and the user's learning rate follows the
    winner's global batch (tuning.learning_rate: square-root scaling). A race to a target (``settings``) chose its
    learning rate itself: the form takes the settings as raced."""
    from ..tuning import learning_rate

    if settings is not None:
        return form_config.replace(**settings, name=None), "the race chose its learning rate with the rest"

    winner = form_config.replace(**{name: getattr(best, name) for name in AXES}, name=None)  # the axes it varied
    return learning_rate.follow_batch(form_config, winner)
