"""Plotly figures for runs: pure functions from metrics records to figures and figure updates.

The widgets only assign what these functions return, so every number on screen is tested here.
Figures never set a pixel width: they follow their container (plotly's autosize).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from .views.markup import br, escape, join, tag
from .metrics import evaluations, events

# Readable on white and told apart by colour-blind readers (Okabe-Ito without its yellow).
PALETTE = ["#0072B2", "#D55E00", "#009E73", "#CC79A7", "#E69F00", "#56B4E9", "#000000", "#8C564B"]
# (series key, title, row, col) of the live grid: speed, loss, memory and MFU in 2x2, then one wide panel for
# the held-out metric (evaluation while training). The loss panel also holds the held-out loss.
SPEED_PANELS = [("samples_per_s", "samples/s", 1, 1), ("loss", "loss (train, and held-out dashed)", 1, 2),
                ("peak_rss_mb", "peak memory per rank (MB)", 2, 1), ("mfu", "MFU (%)", 2, 2)]
EVAL_PANEL = ("eval_metric", "held-out metric (evaluation while training)", 3, 1)
# the rate each step trained at: where a schedule decays (warmup-stable-decay marks where and why)
RATE_PANEL = ("learning_rate", "learning rate", 3, 2)
PANELS = [*SPEED_PANELS, EVAL_PANEL, RATE_PANEL]
STEP_PANELS = [*SPEED_PANELS, RATE_PANEL]  # drawn from step records
EVAL_AXES = ("x5", "y5")  # make_subplots numbers the panels' axes row by row: the held-out panel's come fifth
RATE_AXES = ("x6", "y6")
EMPTY_HINT = "Press Run: throughput, loss, memory and MFU appear here as the run trains"
EVAL_TITLES = {"accuracy": "held-out accuracy", "f1": "held-out macro-F1", "loss": "held-out loss",
               "perplexity": "held-out perplexity"}
COMPARISON_HINT = "Finish a run and press Add to comparison: one bar per run"
WARMUP_FILL = "rgba(120, 120, 120, 0.12)"


def trace_name(label: str, engine: str | None) -> str:
    """The legend entry: what was asked and what really ran. Escaped: plotly renders tags in names (a run
    named ``<a href=...>`` would be a live link in the legend)."""
    return escape(f"{label} [{engine or 'engine ?'}]")


def step_series(records: list[dict]) -> dict[str, tuple[list, list]]:
    """x/y lists per panel from step records; memory gets one series per rank (key peak_rss_mb:rankN)."""
    steps = [r for r in records if r.get("kind", "step") == "step"]
    series: dict[str, tuple[list, list]] = {}
    for key, *_ in STEP_PANELS:
        if key == "peak_rss_mb":
            ranks = max((len(r.get(key) or []) for r in steps), default=0)
            for rank in range(ranks):
                xs = [r["step"] for r in steps if r.get(key) and len(r[key]) > rank]
                ys = [r[key][rank] for r in steps if r.get(key) and len(r[key]) > rank]
                series[f"{key}:rank{rank}"] = (xs, ys)
            continue
        scale = 100.0 if key == "mfu" else 1.0
        pairs = [(r["step"], r[key] * scale) for r in steps if isinstance(r.get(key), (int, float))]
        series[key] = ([p[0] for p in pairs], [p[1] for p in pairs])
    return series


def panel_series(records: list[dict]) -> dict[str, tuple[list, list]]:
    """Every series a run draws, and an empty one for each panel it has no data for (no memory figures, no
    evaluation yet, evaluation off): plotly.js leaves a panel without a trace out of its layout, and the next
    update that names that panel's axes (the warm-up band, the held-out hint) was refused whole, so the page
    kept the empty grid's fixed axes and hints while the run's points sat outside them."""
    series = {**step_series(records), **eval_series(records)}
    for key, *_ in PANELS:
        if not any(name.split(":")[0] == key for name in series):
            series[f"{key}:rank0" if key == "peak_rss_mb" else key] = ([], [])
    return series


def eval_metric_of(records: list[dict]) -> str | None:
    """The metric a run's evaluations are judged by (the eval and screen events name it), or None before the
    first."""
    found = evaluations(records) or events(records, "screen")
    return found[0].get("metric") if found else None


def eval_series(records: list[dict]) -> dict[str, tuple[list, list]]:
    """x/y lists of the evaluations: held-out loss (drawn on the loss panel) and the run's metric (the wide
    panel; percent for accuracy and F1), and the screens of a held-out subset (runner/screen.py) on the wide panel
    as their own series. Empty without evaluations or screens."""
    metric = eval_metric_of(records)
    if metric is None:
        return {}
    found, screens = evaluations(records), events(records, "screen")
    key = "eval_loss" if metric == "loss" else metric
    scale = 100.0 if metric in ("accuracy", "f1") else 1.0
    series = {}
    for name, field_name, factor in (("loss:eval", "eval_loss", 1.0), ("eval_metric", key, scale)):
        pairs = [(r["step"], r[field_name] * factor) for r in found if isinstance(r.get(field_name), (int, float))]
        series[name] = ([p[0] for p in pairs], [p[1] for p in pairs])
    if screens:
        pairs = [(r["step"], r["value"] * scale) for r in screens if isinstance(r.get("value"), (int, float))]
        series["eval_metric:screen"] = ([p[0] for p in pairs], [p[1] for p in pairs])
    return series


def eval_title(metric: str | None) -> str:
    """The wide panel's title for a metric: "held-out accuracy (%)"."""
    if metric is None:
        return EVAL_PANEL[1]
    return escape(EVAL_TITLES.get(metric, f"held-out {metric}") + (" (%)" if metric in ("accuracy", "f1") else ""))


def panel_position(series: str) -> tuple[int, int]:
    panel = series.split(":")[0]
    _, _, row, col = next(p for p in PANELS if p[0] == panel)
    return row, col


@dataclass
class LiveChart:
    """Which trace of the live figure shows which (run, series); pure bookkeeping."""

    traces: list[tuple[str, str]] = field(default_factory=list)  # (run key, series key) per trace index
    runs: dict[str, dict] = field(default_factory=dict)  # run key -> {"label", "engine", "colour"}

    def add_run(self, key: str, label: str, colour: str | None = None) -> dict:
        if key not in self.runs:
            colour = colour or PALETTE[len(self.runs) % len(PALETTE)]
            self.runs[key] = {"label": label, "engine": None, "colour": colour}
        return self.runs[key]

    def updates(self, key: str, records: list[dict], engine: str | None = None) -> tuple[list[dict], list[dict]]:
        """(new traces to add, updates to existing traces) that bring the figure up to ``records``.
        Only the throughput panel's traces enter the legend: one legend entry per run."""
        run = self.runs[key]
        run["engine"] = engine or run["engine"]
        name = trace_name(run["label"], run["engine"])
        new, changed = [], []
        for series, (xs, ys) in panel_series(records).items():
            row, col = panel_position(series)
            part = series.split(":")[1] if ":" in series else None  # rankN, eval (held-out loss) or screen
            held_out = part == "eval" or series == "eval_metric"
            suffix = " held-out" if held_out else ("" if part in (None, "rank0") else f" {part}")
            trace = {"x": xs, "y": ys, "name": name + suffix, "legendgroup": key,
                     "showlegend": series == "samples_per_s",
                     "line": {"color": run["colour"], "dash": "dash" if held_out else
                              ("dot" if part not in (None, "rank0") else "solid")}}
            if part == "screen":  # a subset's figure: points, apart from the whole split's line
                trace.update(mode="markers", marker={"color": run["colour"], "symbol": "circle-open", "size": 7})
            if (key, series) in self.traces:
                changed.append({"index": self.traces.index((key, series)), **trace})
            else:
                self.traces.append((key, series))
                new.append({"row": row, "col": col, **trace})
        return new, changed


def hint_annotation(text: str) -> dict:
    return {"text": escape(text), "xref": "paper", "yref": "paper", "x": 0.5, "y": 0.5, "showarrow": False,
            "font": {"size": 14, "color": "#555555"}, "bgcolor": "rgba(255,255,255,0.85)", "name": "hint"}


def warmup_shapes(warmup_steps: int) -> list[dict]:
    """A grey band over the warm-up steps on every panel (they are left out of the statistics)."""
    if warmup_steps <= 0:
        return []
    shapes = []
    for index in range(len(SPEED_PANELS)):  # not the held-out panel: evaluations are not speed measurements
        suffix = "" if index == 0 else str(index + 1)
        shapes.append({"type": "rect", "xref": f"x{suffix}", "yref": f"y{suffix} domain", "x0": 0.5,
                       "x1": warmup_steps + 0.5, "y0": 0, "y1": 1, "fillcolor": WARMUP_FILL, "line": {"width": 0},
                       "layer": "below"})
    return shapes


def warmup_label(warmup_steps: int) -> dict:
    return {"text": "warm-up", "xref": "x", "yref": "y domain", "x": (warmup_steps + 1) / 2, "y": 1.0,
            "yanchor": "bottom", "showarrow": False, "font": {"size": 10, "color": "#555555"}, "name": "warm-up"}


def eval_hint_annotation(text: str) -> dict:
    """A note in the middle of the held-out panel (why it is empty)."""
    x_axis, y_axis = EVAL_AXES
    return {"text": escape(text), "xref": f"{x_axis} domain", "yref": f"{y_axis} domain", "x": 0.5, "y": 0.5,
            "showarrow": False, "font": {"size": 12, "color": "#555555"}, "name": "eval-hint"}


def target_shape(target: float, metric: str | None) -> dict:
    """The target as a dashed line across the held-out panel (in the panel's unit: percent for accuracy)."""
    value = target * 100.0 if metric in ("accuracy", "f1") else target
    x_axis, y_axis = EVAL_AXES
    return {"type": "line", "xref": f"{x_axis} domain", "yref": y_axis, "x0": 0, "x1": 1, "y0": value, "y1": value,
            "line": {"color": "#00703c", "dash": "dash", "width": 1.5}, "name": "target"}


def target_label(target: float, metric: str | None) -> dict:
    value = target * 100.0 if metric in ("accuracy", "f1") else target
    x_axis, y_axis = EVAL_AXES
    return {"text": f"target {target:g}", "xref": f"{x_axis} domain", "yref": y_axis, "x": 1.0, "y": value,
            "xanchor": "right", "yanchor": "bottom", "showarrow": False, "font": {"size": 10, "color": "#00703c"},
            "name": "target"}


def schedule_decay(records: list[dict]) -> tuple[int, str] | None:
    """(the first step trained at a decayed rate, why there) from a warmup-stable-decay run's latest ``schedule``
    event (training/schedule.py), or None: another schedule, or none announced yet (pure)."""
    found = [r for r in records if r.get("event") == "schedule" and isinstance(r.get("decay_step"), int)]
    return (found[-1]["decay_step"], str(found[-1].get("reason") or "")) if found else None


def decay_marks(decay_step: int, reason: str) -> tuple[dict, dict]:
    """A dotted line on the learning-rate panel before the first decayed step, and its label."""
    x_axis, y_axis = RATE_AXES
    at = decay_step - 0.5
    line = {"type": "line", "xref": x_axis, "yref": f"{y_axis} domain", "x0": at, "x1": at, "y0": 0, "y1": 1,
            "line": {"color": "#555555", "dash": "dot", "width": 1}, "name": "decay"}
    label = {"text": escape(f"decay from step {decay_step}: {reason}"), "xref": x_axis, "yref": f"{y_axis} domain",
             "x": at, "y": 1.0, "xanchor": "right", "yanchor": "bottom", "showarrow": False,
             "font": {"size": 10, "color": "#555555"}, "name": "decay"}
    return line, label


def live_layout(warmup_steps: int = 0, empty: bool = True, eval_hint: str | None = None,
                target: float | None = None, metric: str | None = None, empty_hint: str = EMPTY_HINT,
                decay: tuple[int, str] | None = None) -> dict:
    """Layout of the live grid: hint while empty, warm-up band, the held-out panel's note or target line, that
    panel's title (the run's metric), and where a warmup-stable-decay schedule began its decay (``decay``)."""
    annotations = [hint_annotation(empty_hint)] if empty else []
    if warmup_steps > 0 and not empty:
        annotations.append(warmup_label(warmup_steps))
    shapes = [] if empty else warmup_shapes(warmup_steps)
    if eval_hint:
        annotations.append(eval_hint_annotation(eval_hint))
    if target is not None:
        shapes.append(target_shape(target, metric))
        annotations.append(target_label(target, metric))
    if decay is not None and not empty:
        line, label = decay_marks(*decay)
        shapes.append(line)
        annotations.append(label)
    # Empty panels share one frame (steps 0-10, values 0-1) instead of plotly's own guesses, which differ panel
    # to panel; with data every axis fits its own (Clear must not leave old ranges behind).
    axes = {"x": {"range": [0, 10], "autorange": False}, "y": {"range": [0, 1], "autorange": False}} if empty else \
        {"x": {"autorange": True, "range": None}, "y": {"autorange": True, "range": None}}  # None: no stale range
    return {"annotations": annotations, "shapes": shapes, "eval_title": eval_title(metric), "axes": axes}


def eval_hint(config, records: list[dict]) -> str | None:
    """Why the held-out panel is empty, or None once it has a point: evaluation is off, or when the first
    evaluation comes."""
    if config is None:
        return "Evaluation while training shows the held-out metric here"
    if not getattr(config, "evaluate", True):
        return "Evaluation is off for this run: tick evaluate in the form to see the held-out metric here"
    if eval_series(records):
        return None
    return "The held-out metric appears here at each evaluation (the first is before the first step)"


def live_figure(widget: bool = False):
    """Speed, loss, memory and MFU in a 2x2 grid, the held-out metric and the learning rate under them, sharing the
    step axis; a FigureWidget when
    ``widget`` (live updates)."""
    import plotly.graph_objects as go
    from plotly.subplots import make_subplots

    figure = make_subplots(rows=3, cols=2, vertical_spacing=0.11, horizontal_spacing=0.08,
                           subplot_titles=[title for _, title, _, _ in PANELS])
    figure.update_layout(height=760, autosize=True, template="plotly_white", margin={"l": 50, "r": 20, "t": 70, "b": 45},
                         legend={"orientation": "h", "x": 0, "y": 1.05, "yanchor": "bottom"}, showlegend=True,
                         font={"color": "#1a1a1a"})
    figure.update_xaxes(title_text="step", row=3)
    figure.update_xaxes(rangemode="tozero")
    figure.update_yaxes(tickformat=".1e", row=3, col=2)  # 5.0e-5, not plotly's "50µ"
    for index, _ in enumerate(figure.layout.annotations):
        figure.layout.annotations[index].name = "title"
    titles = list(figure.layout.annotations)
    empty = live_layout(eval_hint=eval_hint(None, []))
    figure.update_layout(annotations=titles + empty["annotations"])
    figure.update_xaxes(**empty["axes"]["x"])
    figure.update_yaxes(**empty["axes"]["y"])
    return go.FigureWidget(figure) if widget else figure


def subplot_titles(figure) -> list:
    """The annotations make_subplots wrote (panel titles), without ours."""
    return [a for a in figure.layout.annotations if a.name == "title"]


def retitled(titles: list, eval_title: str) -> list[dict]:
    """The panel titles as new dicts, the held-out panel's set to ``eval_title``.

    New dicts, never an edit of the figure's own annotation: inside a FigureWidget's batch_update, editing
    ``annotations[4].text`` and replacing ``annotations`` send one relayout holding both, and plotly.js refuses
    it whole ("cannot set annotations.4.text and a parent attribute simultaneously"): the page then kept its
    empty-state axes and hints for a whole run while the kernel's figure looked right."""
    plain = [title.to_plotly_json() for title in titles]
    held_out = PANELS.index(EVAL_PANEL)
    if len(plain) > held_out:
        plain[held_out] = {**plain[held_out], "text": eval_title}
    return plain


def apply_updates(figure, new: list[dict], changed: list[dict]) -> None:
    """Add and update traces (inside the caller's batch_update for widgets)."""
    import plotly.graph_objects as go

    for trace in new:
        row, col = trace.pop("row"), trace.pop("col")
        figure.add_trace(go.Scatter(**{"mode": "lines+markers", "marker": {"size": 4}, **trace}), row=row, col=col)
    for update in changed:
        index = update.pop("index")
        target = figure.data[index]
        target.x, target.y, target.name = update["x"], update["y"], update["name"]


def set_live_layout(figure, warmup_steps: int, empty: bool, eval_hint: str | None = None,
                    target: float | None = None, metric: str | None = None, empty_hint: str = EMPTY_HINT,
                    decay: tuple[int, str] | None = None) -> None:
    """Hint or warm-up band, the held-out panel's note, target and title, the schedule's decay, and autorange on
    every axis (Clear must not leave old ranges behind)."""
    extra = live_layout(warmup_steps, empty, eval_hint, target, metric, empty_hint, decay)
    figure.layout.annotations = retitled(subplot_titles(figure), extra["eval_title"]) + extra["annotations"]
    figure.layout.shapes = extra["shapes"]
    figure.update_xaxes(**extra["axes"]["x"])
    figure.update_yaxes(**extra["axes"]["y"])


# -- comparison bars ----------------------------------------------------------------------------


def bars_from_table(table) -> list[dict]:
    """Bar rows from a ``compare()`` table (labels there are unique; compare refuses duplicates)."""
    bars = []
    for index, row in enumerate(table.to_dict("records")):
        speedup = _number_or_none(row.get("speedup"))
        known = speedup is not None
        text = row.get("verdict") or (f"{speedup:.2f}x" if known else "n/a")
        bars.append({"label": row["label"], "engine": row["engine"], "samples_per_s": row["samples_per_s"],
                     "p25": _number_or_none(row.get("p25")), "p75": _number_or_none(row.get("p75")),
                     "colour": PALETTE[index % len(PALETTE)], "text": text,
                     "too_few": not known and not row.get("baseline")})
    return bars


def _number_or_none(value):
    return value if isinstance(value, (int, float)) and value == value else None


def bar_label(label: str, engine: str, verdict: str) -> str:
    """The text under a bar: the run, the engine that ran, the speed-up, and "not conclusive" without the
    reason (the table beside the chart gives it in full; a long reason here turned every label sideways)."""
    figure, _, reason = verdict.partition(", not conclusive")
    shown = join([tag("b", figure), *([br(), "not conclusive"] if reason else [])])
    return join([label, br(), f"[{engine}]", br(), shown])


def comparison_bars(rows: list[dict]) -> dict:
    """Plotly bar data: one bar per run with its own colour; runs with too few measured steps hatched. The
    error bar is the interquartile range as it is (p25 to p75, asymmetric), never a ± of half of it."""
    def median(r):
        return float(r["samples_per_s"]) if r["samples_per_s"] is not None else 0.0

    return {
        # the speed-up goes under the bar with its name: written on the bar, the error bar crossed it
        "x": [bar_label(r["label"], r["engine"], r["text"]) for r in rows],
        "y": [median(r) for r in rows],
        "text": [r["text"] for r in rows],
        "error_y": [max(0.0, r["p75"] - median(r)) if r.get("p75") is not None else 0.0 for r in rows],
        "error_y_minus": [max(0.0, median(r) - r["p25"]) if r.get("p25") is not None else 0.0 for r in rows],
        "colours": [r["colour"] for r in rows],
        "patterns": ["/" if r["too_few"] else "" for r in rows],
    }


def comparison_figure(rows=None, title: str = "Training throughput (median samples/s after warm-up)"):
    """Bars of throughput with the speed-up written on each; ``rows`` is a compare() table or bar rows."""
    import plotly.graph_objects as go

    if rows is not None and hasattr(rows, "to_dict"):
        rows = bars_from_table(rows)
    bars = comparison_bars(rows or [])
    figure = go.Figure(go.Bar(x=bars["x"], y=bars["y"], hovertext=bars["text"], cliponaxis=False,
                              marker={"color": bars["colours"], "pattern": {"shape": bars["patterns"]}},
                              error_y={"type": "data", "array": bars["error_y"], "arrayminus": bars["error_y_minus"],
                                       "symmetric": False, "visible": True, "color": "#555555"}))
    # the title on the left: plotly's toolbar sits top right, over a centred title at 1000 px
    figure.update_layout(title={"text": title, "x": 0.01, "xanchor": "left"}, yaxis_title="samples/s", template="plotly_white", height=420, autosize=True,
                         bargap=_bargap(len(bars["x"])),
                         margin={"l": 50, "r": 20, "t": 60, "b": 80}, font={"color": "#1a1a1a"}, xaxis={"automargin": True},
                         annotations=[] if rows else [hint_annotation(COMPARISON_HINT)])
    return figure


def update_comparison(figure, rows: list[dict]) -> None:
    """Redraw the comparison bars in place (the caller batches)."""
    bars = comparison_bars(rows)
    bar = figure.data[0]
    bar.x, bar.y, bar.hovertext = bars["x"], bars["y"], bars["text"]
    bar.marker.color, bar.marker.pattern.shape = bars["colours"], bars["patterns"]
    bar.error_y.array, bar.error_y.arrayminus = bars["error_y"], bars["error_y_minus"]
    figure.layout.annotations = [] if rows else [hint_annotation(COMPARISON_HINT)]
    figure.layout.bargap = _bargap(len(rows))
    figure.update_yaxes(autorange=True)


def _bargap(bars: int) -> float:
    return 0.35 if bars > 2 else 0.6  # one or two bars would otherwise span the whole plot


def runs_figure(runs, warmup_steps: int | None = None):
    """The Dashboard's live grid for finished runs (any Run, an edge run too), one colour per run."""
    figure, chart = live_figure(), LiveChart()
    records = []
    for run in runs:
        key = str(run.run_dir)
        chart.add_run(key, run.config.label)
        records = run.records()
        apply_updates(figure, *chart.updates(key, records, run.summary().get("engine")))
    warmup = warmup_steps if warmup_steps is not None else max((r.config.warmup_steps for r in runs), default=0)
    last = runs[-1].config if runs else None
    set_live_layout(figure, warmup, empty=not figure.data, eval_hint=eval_hint(last, records),
                    target=getattr(last, "target", None), metric=eval_metric_of(records),
                    decay=schedule_decay(records))
    return figure


# -- the confusion matrix -----------------------------------------------------------------------


def confusion_data(confusion: list[list[int]], names: list[str]) -> dict:
    """Heatmap data: shade = share of the true class's row (recall on the diagonal), text = count and share.
    Rows top to bottom in class order (plotly draws the first row at the bottom unless the axis is reversed)."""
    shares = [[cell / sum(row) if sum(row) else 0.0 for cell in row] for row in confusion]
    text = [[f"{count:,}<br>{share:.0%}" for count, share in zip(row, share_row)]
            for row, share_row in zip(confusion, shares)]
    labels = [escape(n) for n in names]
    return {"z": shares, "text": text, "x": labels, "y": labels}


def confusion_figure(confusion: list[list[int]], names: list[str], step: int | None = None):
    """The last evaluation's confusion matrix as a plotly heatmap (rows: true class; columns: predicted)."""
    import plotly.graph_objects as go

    data = confusion_data(confusion, names)
    figure = go.Figure(go.Heatmap(z=data["z"], x=data["x"], y=data["y"], text=data["text"], texttemplate="%{text}",
                                  zmin=0, zmax=1, colorscale="Blues", showscale=False,
                                  hovertemplate="true %{y}, predicted %{x}: %{text}<extra></extra>"))
    when = f" at step {step}" if step is not None else ""
    figure.update_layout(title=f"Confusion matrix{when} (share of each true class)", template="plotly_white",
                         height=140 + 60 * len(names), autosize=True, margin={"l": 80, "r": 20, "t": 50, "b": 50},
                         xaxis={"title": "predicted", "side": "bottom"},
                         yaxis={"title": "true", "autorange": "reversed"}, font={"color": "#1a1a1a"})
    return figure
