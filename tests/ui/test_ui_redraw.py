"""ui/redraw.py on exact values, and the Dashboard's live grid sending only updates plotly.js accepts, with the
state a reloaded page rebuilds from kept current (the page itself is read in tests/ui/test_browser.py)."""

from __future__ import annotations

from ortnb.display import Throttle
from ortnb.ui.redraw import conflicting_roots, merged_edits, path_parts


def test_paths_and_the_pairs_plotly_js_refuses():
    assert path_parts("annotations[4].text") == ("annotations", "4", "text") == path_parts("annotations.4.text")
    assert conflicting_roots(["annotations", "annotations[4].text", "xaxis.autorange"]) == ["annotations"]
    assert conflicting_roots(["xaxis", "xaxis.range[0]", "xaxis2.range"]) == ["xaxis"]  # xaxis2 is no child of xaxis
    assert conflicting_roots(["shapes", "annotations", "yaxis.autorange"]) == []


def test_a_refused_pair_is_sent_as_the_containers_current_value():
    edits = {"annotations.4.text": "held-out accuracy (%)", "annotations": [{"text": "old"}], "xaxis.autorange": True}
    current = {"annotations": [{"text": "samples/s"}, {"text": "held-out accuracy (%)"}]}
    assert merged_edits(edits, current.__getitem__) == {"xaxis.autorange": True,
                                                         "annotations": current["annotations"]}
    assert merged_edits({"xaxis.autorange": True}, current.__getitem__) == {"xaxis.autorange": True}


class _Clock:
    now = 100.0

    def __call__(self):
        return self.now


class _Run:
    def __init__(self, records, status="running"):
        from ortnb.config import RunConfig

        self._records, self.status, self.error = records, status, None
        self.config = RunConfig(name="ort + AdamW", max_steps=4, warmup_steps=1)
        self.run_dir = "/runs/a"

    def records(self):
        return self._records

    def summary(self):
        return {"label": "ort + AdamW", "status": self.status, "engine": "onnxruntime", "steps_measured": 0}


def _step(n):
    return {"kind": "step", "step": n, "samples_per_s": 10.0 + n, "loss": 1.0 / n, "peak_rss_mb": [500.0 + n],
            "mfu": 0.01}


def test_every_live_redraw_is_one_update_plotly_js_accepts_and_a_reload_rebuilds_the_same_figure(monkeypatch):
    monkeypatch.setenv("ORTNB_WIDGETS", "1")
    import ortnb

    clock = _Clock()
    dashboard = ortnb.Dashboard(throttle=Throttle(0.5, clock), start=False)
    sent = []
    dashboard.figure.observe(lambda change: sent.append(change["new"]) if change["new"] else None,
                             names=["_py2js_update", "_py2js_relayout"])
    evaluation = {"kind": "event", "event": "eval", "step": 0, "eval_loss": 0.7, "accuracy": 0.4, "metric": "accuracy"}
    run = _Run([evaluation])
    dashboard.track(run)
    for records in ([evaluation, _step(1)], [evaluation, _step(1), _step(2), {**evaluation, "step": 2}]):
        run._records = records
        clock.now += 1.0
        assert dashboard.refresh()
    run.status = "completed"
    clock.now += 1.0
    dashboard.refresh()
    layouts = [m.get("layout_data") or m.get("relayout_data") or {} for m in sent]
    assert len(layouts) >= 3 and all(conflicting_roots(layout) == [] for layout in layouts), layouts
    # the state a reloaded page draws from is the kernel's figure now, not the figure as first displayed
    assert dashboard.figure._widget_data == [trace.to_plotly_json() for trace in dashboard.figure.data]
    shown = dashboard.figure._widget_layout
    titles = [a["text"] for a in shown["annotations"] if a.get("name") == "title"]
    assert titles[4:] == ["held-out accuracy (%)", "learning rate"]
    assert not any("Press Run" in a["text"] for a in shown["annotations"])
    assert shown["xaxis"]["autorange"] is True and "range" not in shown["yaxis"]
    dashboard.close()


def test_the_empty_grid_is_displayed_with_its_frame_and_hint():
    from ortnb import charts

    figure = charts.live_figure(widget=True)
    assert figure._widget_layout["xaxis"]["range"] == [0, 10]
    assert any(charts.EMPTY_HINT in a["text"] for a in figure._widget_layout["annotations"])


def test_a_reload_asks_for_one_copy_of_plotly_js_not_one_per_figure(monkeypatch):
    """A page reload fetches every widget's state in one answer that ipywidgets waits 4 s for; with one
    FigureWidget (plotly.js, about 5 MB, in its state) per figure it was 15 MB and the reload showed 'model not
    found'. Only the live grid is a FigureWidget; the other figures are plotly JSON in Output widgets."""
    import json

    from ipywidgets.widgets.widget import _remove_buffers

    import ortnb
    from ortnb.ui.figure_view import MIME

    from .._helpers import EVALS, FakeClock, FakeRun

    monkeypatch.setenv("ORTNB_WIDGETS", "1")
    dashboard = ortnb.Dashboard(ortnb.RunConfig(model="tiny-bert"), throttle=Throttle(0.5, FakeClock()), start=False)
    try:
        dashboard.track(FakeRun(list(EVALS), status="completed", run_dir="/runs/a"))
        dashboard.refresh(force=True)
        dashboard.add_to_comparison()
        tree = list(_widgets(dashboard.widget))
        states = [_remove_buffers(widget.get_state(drop_defaults=False))[0] for widget in tree]
        shipped_js = [state for state in states if len(state.get("_esm") or "") > 1_000_000]
        assert len(shipped_js) == 1  # the live grid
        assert sum(len(json.dumps(state)) for state in states) < 6_500_000
        drawn = [shown for widget in tree for shown in getattr(widget, "outputs", ()) if MIME in shown["data"]]
        assert len(drawn) == 2  # the comparison and Try it's confusion matrix, as JSON
    finally:
        dashboard.close()


def _widgets(widget):
    yield widget
    for child in getattr(widget, "children", ()):
        yield from _widgets(child)
