"""Plotly figures for runs: pure functions from metrics records to figures and figure updates.

The widgets only assign what these functions return, so every number on screen is tested here.
Figures never set a pixel width: they follow their container (plotly's autosize).
"""

from __future__ import annotations

from dataclasses import dataclass, field

# Readable on white and told apart by colour-blind readers (Okabe-Ito without its yellow).
PALETTE = ["#0072B2", "#D55E00", "#009E73", "#CC79A7", "#E69F00", "#56B4E9", "#000000", "#8C564B"]
# (series key, title, row, col) of the 2x2 live grid.
PANELS = [("samples_per_s", "samples/s", 1, 1), ("loss", "loss", 1, 2), ("peak_rss_mb", "peak memory per rank (MB)", 2, 1),
          ("mfu", "MFU (%)", 2, 2)]
EMPTY_HINT = "Press Run: throughput, loss, memory and MFU appear here as the run trains"
COMPARISON_HINT = "Finish a run and press Add to comparison: one bar per run"
WARMUP_FILL = "rgba(120, 120, 120, 0.12)"


def trace_name(label: str, engine: str | None) -> str:
    """The legend entry: what was asked and what really ran."""
    return f"{label} [{engine or 'engine ?'}]"


def step_series(records: list[dict]) -> dict[str, tuple[list, list]]:
    """x/y lists per panel from step records; memory gets one series per rank (key peak_rss_mb:rankN)."""
    steps = [r for r in records if r.get("kind", "step") == "step"]
    series: dict[str, tuple[list, list]] = {}
    for key, *_ in PANELS:
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
        for series, (xs, ys) in step_series(records).items():
            row, col = panel_position(series)
            rank = series.split(":")[1] if ":" in series else None
            trace = {"x": xs, "y": ys, "name": name if rank in (None, "rank0") else f"{name} {rank}",
                     "legendgroup": key, "showlegend": series == "samples_per_s",
                     "line": {"color": run["colour"], "dash": "dot" if rank not in (None, "rank0") else "solid"}}
            if (key, series) in self.traces:
                changed.append({"index": self.traces.index((key, series)), **trace})
            else:
                self.traces.append((key, series))
                new.append({"row": row, "col": col, **trace})
        return new, changed


def hint_annotation(text: str) -> dict:
    return {"text": text, "xref": "paper", "yref": "paper", "x": 0.5, "y": 0.5, "showarrow": False,
            "font": {"size": 14, "color": "#555555"}, "bgcolor": "rgba(255,255,255,0.85)", "name": "hint"}


def warmup_shapes(warmup_steps: int) -> list[dict]:
    """A grey band over the warm-up steps on every panel (they are left out of the statistics)."""
    if warmup_steps <= 0:
        return []
    shapes = []
    for index in range(len(PANELS)):
        suffix = "" if index == 0 else str(index + 1)
        shapes.append({"type": "rect", "xref": f"x{suffix}", "yref": f"y{suffix} domain", "x0": 0.5,
                       "x1": warmup_steps + 0.5, "y0": 0, "y1": 1, "fillcolor": WARMUP_FILL, "line": {"width": 0},
                       "layer": "below"})
    return shapes


def warmup_label(warmup_steps: int) -> dict:
    return {"text": "warm-up", "xref": "x", "yref": "y domain", "x": (warmup_steps + 1) / 2, "y": 1.0,
            "yanchor": "bottom", "showarrow": False, "font": {"size": 10, "color": "#555555"}, "name": "warm-up"}


def live_layout(warmup_steps: int = 0, empty: bool = True) -> dict:
    """Layout of the live grid: hint while empty, warm-up band, axes reset to autorange."""
    annotations = [hint_annotation(EMPTY_HINT)] if empty else []
    if warmup_steps > 0 and not empty:
        annotations.append(warmup_label(warmup_steps))
    return {"annotations": annotations, "shapes": [] if empty else warmup_shapes(warmup_steps)}


def live_figure(widget: bool = False):
    """Four panels in a 2x2 grid sharing the step axis; a FigureWidget when ``widget`` (live updates)."""
    import plotly.graph_objects as go
    from plotly.subplots import make_subplots

    figure = make_subplots(rows=2, cols=2, vertical_spacing=0.16, horizontal_spacing=0.08,
                           subplot_titles=[title for _, title, _, _ in PANELS])
    figure.update_layout(height=520, autosize=True, template="plotly_white", margin={"l": 50, "r": 20, "t": 70, "b": 45},
                         legend={"orientation": "h", "x": 0, "y": 1.08, "yanchor": "bottom"}, showlegend=True,
                         font={"color": "#1a1a1a"})
    figure.update_xaxes(title_text="step", row=2)
    figure.update_xaxes(rangemode="tozero")
    subplot_titles = list(figure.layout.annotations)
    figure.update_layout(annotations=subplot_titles + live_layout()["annotations"])
    return go.FigureWidget(figure) if widget else figure


def subplot_titles(figure) -> list:
    """The annotations make_subplots wrote (panel titles), without ours."""
    return [a for a in figure.layout.annotations if a.name not in ("hint", "warm-up")]


def apply_updates(figure, new: list[dict], changed: list[dict]) -> None:
    """Add and update traces (inside the caller's batch_update for widgets)."""
    import plotly.graph_objects as go

    for trace in new:
        row, col = trace.pop("row"), trace.pop("col")
        figure.add_trace(go.Scatter(mode="lines+markers", marker={"size": 4}, **trace), row=row, col=col)
    for update in changed:
        index = update.pop("index")
        target = figure.data[index]
        target.x, target.y, target.name = update["x"], update["y"], update["name"]


def set_live_layout(figure, warmup_steps: int, empty: bool) -> None:
    """Hint or warm-up band, and autorange on every axis (Clear must not leave old ranges behind)."""
    extra = live_layout(warmup_steps, empty)
    figure.layout.annotations = subplot_titles(figure) + extra["annotations"]
    figure.layout.shapes = extra["shapes"]
    figure.update_xaxes(autorange=True)
    figure.update_yaxes(autorange=True)


# -- comparison bars ----------------------------------------------------------------------------


def bars_from_table(table) -> list[dict]:
    """Bar rows from a ``compare()`` table (labels there are unique; compare refuses duplicates)."""
    bars = []
    for index, row in enumerate(table.to_dict("records")):
        speedup, spread = row.get("speedup"), row.get("spread")
        bars.append({"label": row["label"], "engine": row["engine"], "samples_per_s": row["samples_per_s"],
                     "spread": spread if spread == spread else None, "colour": PALETTE[index % len(PALETTE)],
                     "text": f"{speedup:.2f}x" if speedup is not None and speedup == speedup else "n/a",
                     "too_few": False})
    return bars


def comparison_bars(rows: list[dict]) -> dict:
    """Plotly bar data: one bar per run with its own colour; runs with too few measured steps hatched."""
    return {
        "x": [f"{r['label']}<br>[{r['engine']}]" for r in rows],
        "y": [float(r["samples_per_s"]) if r["samples_per_s"] is not None else 0.0 for r in rows],
        "text": [r["text"] for r in rows],
        "error_y": [float(r["spread"]) / 2 if r["spread"] is not None else 0.0 for r in rows],
        "colours": [r["colour"] for r in rows],
        "patterns": ["/" if r["too_few"] else "" for r in rows],
    }


def comparison_figure(rows=None, title: str = "Training throughput (median samples/s after warm-up)"):
    """Bars of throughput with the speed-up written on each; ``rows`` is a compare() table or bar rows."""
    import plotly.graph_objects as go

    if rows is not None and hasattr(rows, "to_dict"):
        rows = bars_from_table(rows)
    bars = comparison_bars(rows or [])
    figure = go.Figure(go.Bar(x=bars["x"], y=bars["y"], text=bars["text"], textposition="outside", cliponaxis=False,
                              marker={"color": bars["colours"], "pattern": {"shape": bars["patterns"]}},
                              error_y={"type": "data", "array": bars["error_y"], "visible": True}))
    figure.update_layout(title=title, yaxis_title="samples/s", template="plotly_white", height=420, autosize=True,
                         bargap=_bargap(len(bars["x"])),
                         margin={"l": 50, "r": 20, "t": 60, "b": 80}, font={"color": "#1a1a1a"},
                         annotations=[] if rows else [hint_annotation(COMPARISON_HINT)])
    return figure


def update_comparison(figure, rows: list[dict]) -> None:
    """Redraw the comparison bars in place (the caller batches)."""
    bars = comparison_bars(rows)
    bar = figure.data[0]
    bar.x, bar.y, bar.text = bars["x"], bars["y"], bars["text"]
    bar.marker.color, bar.marker.pattern.shape = bars["colours"], bars["patterns"]
    bar.error_y.array = bars["error_y"]
    figure.layout.annotations = [] if rows else [hint_annotation(COMPARISON_HINT)]
    figure.layout.bargap = _bargap(len(rows))
    figure.update_yaxes(autorange=True)


def _bargap(bars: int) -> float:
    return 0.35 if bars > 2 else 0.6  # one or two bars would otherwise span the whole plot


def runs_figure(runs, warmup_steps: int | None = None):
    """The Dashboard's 2x2 grid for finished runs (any Run, an edge run too), one colour per run."""
    figure, chart = live_figure(), LiveChart()
    for run in runs:
        key = str(run.run_dir)
        chart.add_run(key, run.config.label)
        apply_updates(figure, *chart.updates(key, run.records(), run.summary().get("engine")))
    warmup = warmup_steps if warmup_steps is not None else max((r.config.warmup_steps for r in runs), default=0)
    set_live_layout(figure, warmup, empty=not figure.data)
    return figure
