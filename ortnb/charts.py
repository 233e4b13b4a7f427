"""Plotly figures for runs: pure functions from metrics records to figures and figure updates.

The widgets only assign what these functions return, so every number on screen is tested here.
"""

from __future__ import annotations

from dataclasses import dataclass, field

# Distinct, colour-blind friendly (plotly's "Safe" qualitative palette).
PALETTE = ["#88CCEE", "#CC6677", "#DDCC77", "#117733", "#332288", "#AA4499", "#44AA99", "#999933", "#882255",
           "#661100"]
PANELS = [("samples_per_s", "samples/s"), ("loss", "loss"), ("peak_rss_mb", "peak memory per rank (MB)"),
          ("mfu", "MFU (%)")]


def trace_name(label: str, engine: str | None) -> str:
    """The legend entry: what was asked and what really ran."""
    return f"{label} [{engine or 'engine ?'}]"


def step_series(records: list[dict]) -> dict[str, tuple[list, list]]:
    """x/y lists per panel from step records; memory gets one series per rank (key peak_rss_mb:rankN)."""
    steps = [r for r in records if r.get("kind", "step") == "step"]
    series: dict[str, tuple[list, list]] = {}
    for key, _ in PANELS:
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


@dataclass
class LiveChart:
    """Which trace of the live figure shows which (run, series); pure bookkeeping."""

    traces: list[tuple[str, str]] = field(default_factory=list)  # (run key, series key) per trace index
    runs: dict[str, dict] = field(default_factory=dict)  # run key -> {"label", "engine", "colour"}

    def add_run(self, key: str, label: str) -> dict:
        if key not in self.runs:
            self.runs[key] = {"label": label, "engine": None, "colour": PALETTE[len(self.runs) % len(PALETTE)]}
        return self.runs[key]

    def updates(self, key: str, records: list[dict], engine: str | None = None) -> tuple[list[dict], list[dict]]:
        """(new traces to add, updates to existing traces) that bring the figure up to ``records``."""
        run = self.runs[key]
        run["engine"] = engine or run["engine"]
        name = trace_name(run["label"], run["engine"])
        new, changed = [], []
        for series, (xs, ys) in step_series(records).items():
            panel = series.split(":")[0]
            row = [p[0] for p in PANELS].index(panel) + 1
            rank = series.split(":")[1] if ":" in series else None
            trace = {"x": xs, "y": ys, "name": name if rank in (None, "rank0") else f"{name} {rank}",
                     "legendgroup": key, "showlegend": panel == "samples_per_s",
                     "line": {"color": run["colour"], "dash": "dot" if rank not in (None, "rank0") else "solid"}}
            if (key, series) in self.traces:
                changed.append({"index": self.traces.index((key, series)), **trace})
            else:
                self.traces.append((key, series))
                new.append({"row": row, **trace})
        return new, changed


def live_figure(widget: bool = False):
    """Four stacked panels sharing the step axis; a FigureWidget when ``widget`` (live updates)."""
    import plotly.graph_objects as go
    from plotly.subplots import make_subplots

    figure = make_subplots(rows=len(PANELS), cols=1, shared_xaxes=True, vertical_spacing=0.06,
                           subplot_titles=[title for _, title in PANELS])
    figure.update_layout(height=720, margin={"l": 50, "r": 20, "t": 40, "b": 40}, legend={"orientation": "h"},
                         template="plotly_white")
    figure.update_xaxes(title_text="step", row=len(PANELS), col=1)
    return go.FigureWidget(figure) if widget else figure


def apply_updates(figure, new: list[dict], changed: list[dict]) -> None:
    """Add and update traces (inside the caller's batch_update for widgets)."""
    import plotly.graph_objects as go

    for trace in new:
        row = trace.pop("row")
        figure.add_trace(go.Scatter(mode="lines+markers", marker={"size": 4}, **trace), row=row, col=1)
    for update in changed:
        index = update.pop("index")
        target = figure.data[index]
        target.x, target.y, target.name = update["x"], update["y"], update["name"]


def comparison_bars(table) -> dict:
    """Bar chart data from a compare table: throughput bars with the speed-up written on each (pure)."""
    labels = [f"{label}<br>[{engine}]" for label, engine in zip(table["label"], table["engine"])]
    texts = [f"{s:.2f}x" if s == s and s is not None else "n/a" for s in table["speedup"]]
    return {"x": labels, "y": [float(v) if v is not None else 0.0 for v in table["samples_per_s"]], "text": texts,
            "error_y": [float(v) / 2 if v == v and v is not None else 0.0 for v in table["spread"]]}


def comparison_figure(table=None, title: str = "Training throughput (median samples/s after warm-up)"):
    """Bars of throughput with the speed-up over the first (baseline) written on each; empty if no table."""
    import plotly.graph_objects as go

    bars = comparison_bars(table) if table is not None else {"x": [], "y": [], "text": [], "error_y": []}
    colours = [PALETTE[i % len(PALETTE)] for i in range(len(bars["x"]))]
    figure = go.Figure(go.Bar(x=bars["x"], y=bars["y"], text=bars["text"], textposition="outside",
                              marker_color=colours,
                              error_y={"type": "data", "array": bars["error_y"], "visible": True}))
    figure.update_layout(title=title, yaxis_title="samples/s", template="plotly_white", height=420,
                         margin={"l": 50, "r": 20, "t": 60, "b": 80})
    return figure
