"""A figure that changes only now and then (the comparison bars, Try it's confusion matrix, a profile's bars),
shown as plotly's own mimetype in an Output widget: JupyterLab's plotly renderer draws it, and the widget's state
holds the figure's JSON only.

Why not a FigureWidget: plotly 7's FigureWidget carries plotly.js (about 5 MB) in its own widget state. The
Dashboard had four, so a page reload asked the kernel for 15 to 20 MB of state; ipywidgets waits 4 s for that
answer before it falls back to asking widget by widget, and on a busy machine the page then showed "model not
found" where the Dashboard was. The live grid stays a FigureWidget: it is updated in place many times a second.
"""
from __future__ import annotations

import json

from .fit import RESPONSIVE

MIME = "application/vnd.plotly.v1+json"


def mime_bundle(figure) -> dict:
    """The display data JupyterLab's plotly renderer draws (plain text for any other front end)."""
    plotted = json.loads(figure.to_json())
    title = (plotted.get("layout", {}).get("title") or {}).get("text") or "plotly figure"
    return {MIME: {**plotted, "config": {**RESPONSIVE, "displaylogo": False}}, "text/plain": f"<{title}>"}


class FigureView:
    """``widget`` shows the last figure given to ``show``; ``figure`` is that figure (its data for tests)."""

    def __init__(self, figure=None, css_class: str | None = None):
        import ipywidgets as w

        self.widget = w.Output(layout=w.Layout(width="100%"))
        if css_class:
            self.widget.add_class(css_class)
        self.figure = None
        if figure is not None:
            self.show(figure)

    def show(self, figure) -> None:
        """Replace what is drawn (outputs set directly: safe from the Dashboard's poll thread, where an Output's
        `with` block would capture nothing)."""
        figure.update_layout(width=None, autosize=True)
        self.figure = figure
        self.widget.outputs = ({"output_type": "display_data", "data": mime_bundle(figure), "metadata": {}},)

    def show_json(self, plotted: dict | None) -> None:
        """Show a figure kept as plotly JSON in the pure state (None: nothing), drawing only when it changed."""
        if plotted is None:
            self.figure, self.widget.outputs = None, ()
            return
        if self.figure is not None and getattr(self, "_shown", None) is plotted:
            return
        import plotly.graph_objects as go

        self._shown = plotted
        self.show(go.Figure(plotted))

    @property
    def data(self):
        return self.figure.data if self.figure is not None else ()

    @property
    def layout(self):
        return self.figure.layout if self.figure is not None else None
