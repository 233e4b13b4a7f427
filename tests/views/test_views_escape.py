"""No text from a run folder becomes markup in any view.

A run folder can be written by someone else (a shared output_dir, a copied run). Here every string field of
every record kind a folder holds carries an HTML/JS payload, and every view is drawn from it: the Dashboard's
tabs (every HTML widget and every figure), Try it, report.html and profile.html. The check parses what each view
produced and asserts that no element and no attribute came from the payload, while the payload's text is shown.
"""
from __future__ import annotations

from html.parser import HTMLParser

import pytest

import ortnb
from ortnb.views.markup import Markup, escape, join, tag

from .._helpers import PAYLOAD, payload_folder, table_of_two_runs, tiny

FOREIGN_TAGS = {"img", "svg", "a", "script", "iframe"}


class Parsed(HTMLParser):
    """Every element and attribute of a piece of HTML, its text, and what its script elements hold."""

    def __init__(self, text: str):
        super().__init__(convert_charrefs=True)
        self.elements, self.text, self.scripts = [], [], []
        self.feed(text)
        self.close()

    def handle_starttag(self, name, attrs):
        self.elements.append((name, dict(attrs)))

    def handle_data(self, data):
        (self.scripts if self.lasttag == "script" else self.text).append(data)


def injected(html_text: str) -> list:
    """What of the payload became markup: its elements, event-handler attributes, script in attribute values, its
    script element (a page may hold plotly's own inline scripts, whose data holds the payload as a JSON string)."""
    parsed = Parsed(html_text)
    found = [name for name, attrs in parsed.elements if name in FOREIGN_TAGS - {"script"}]
    found += [f"<script>{code}" for code in parsed.scripts if code.strip().startswith("alert(")]
    for name, attrs in parsed.elements:
        found += [f"{name}[{key}]" for key, value in attrs.items()
                  if key.startswith("on") or "alert(" in (value or "") or "javascript:" in (value or "")]
    return found


def plotly_markup(figure_json) -> list[str]:
    """Strings of a figure that plotly.js would draw as a link or element (it reads <a>, <b>, <br>, <span> ...)."""
    found = []

    def walk(value):
        if isinstance(value, str):
            lowered = value.lower()
            if any(f"<{name}" in lowered for name in FOREIGN_TAGS):
                found.append(value)
        elif isinstance(value, dict):
            for item in value.values():
                walk(item)
        elif isinstance(value, (list, tuple)):
            for item in value:
                walk(item)

    walk(figure_json)
    return found


# -- the one function ------------------------------------------------------------------------------


def test_escape_and_tag_on_exact_values():
    assert escape('<b a="1">&\'') == '&lt;b a=&#34;1&#34;&gt;&amp;\''
    assert tag("div", "<i>", tag("b", "x"), class_='c"d', title=None, hidden=True) == \
        '<div class="c&#34;d" hidden>&lt;i&gt;<b>x</b></div>'
    assert join(["<", Markup("<br>")], ", ") == "&lt;, <br>"
    assert isinstance(tag("p"), Markup) and not isinstance("<p>" + tag("p"), Markup)  # joining by + loses it
    with pytest.raises(ValueError, match="not a tag name"):
        tag("img src=x")
    with pytest.raises(ValueError, match="not an attribute name"):
        tag("p", **{"on load": "x"})


def test_an_html_widget_refuses_a_plain_string():
    from ortnb.ui.safe_html import SafeHTML

    widget = SafeHTML()
    with pytest.raises(TypeError, match="plain string"):
        widget.value = "<b>bold</b>"
    widget.value = tag("b", "bold")
    assert widget.value == "<b>bold</b>"


# -- a run folder full of payloads -----------------------------------------------------------------


def widgets_of(widget):
    yield widget
    for child in getattr(widget, "children", ()):
        yield from widgets_of(child)


def profile_data(label: str) -> dict:
    return {"step_ms": {label: 10.0, "b": 12.0}, "unprofiled_step_ms": {label: 8.0, "b": 9.0},
            "engines": {label: PAYLOAD, "b": "pytorch"}, "notes": {label: [PAYLOAD]}, "runs": {label: PAYLOAD},
            "table": [{"label": label, "category": "matrix products", "ms_per_step": 6.0, "share": 0.6},
                      {"label": "b", "category": "matrix products", "ms_per_step": 7.0, "share": 0.6}],
            "top_ops": [{"label": label, "op": PAYLOAD, "engine_of_op": PAYLOAD, "category": "matrix products",
                         "ms_per_step": 6.0, "calls_per_step": 2.0, "shapes": [[8, 64]]}],
            "fusions": {label: {"nodes": {"torch_exported": 10}, "removed": [{"op": PAYLOAD, "exported": 1, "forward": 0}],
                                "fused": [{"op": PAYLOAD, "exported": 0, "training": 2, "where": PAYLOAD,
                                           "replaces": PAYLOAD}]}},
            "profiled_steps": {}, "matmul": {}, "profiler_cost": {}}


def test_nothing_from_a_run_folder_becomes_markup_in_any_dashboard_tab(tmp_path, monkeypatch):
    from ortnb.ui.safe_html import SafeHTML
    from ortnb.ui.state import Profiling, Search

    monkeypatch.setenv("ORTNB_WIDGETS", "1")
    dashboard = ortnb.Dashboard(start=False)
    request_close = dashboard.close
    run = ortnb.attach(payload_folder(tmp_path))
    dashboard.track(run)
    dashboard.refresh(force=True)
    dashboard.add_to_comparison()
    with dashboard._lock:
        dashboard.state.search = Search(started_at=0.0, budget_s=60, rows=[{"label": PAYLOAD, "status": "refused", "reason": PAYLOAD}],
                                        done=True)
        dashboard.state.profiling = Profiling(started_at=0.0, labels=[PAYLOAD, "b"], done=True,
                                              data=profile_data(PAYLOAD))
    dashboard.render()
    dashboard.try_it.show(run, dashboard.state.latest)
    dashboard.try_it._say(PAYLOAD)

    shown = [w.value for w in widgets_of(dashboard.widget) if isinstance(w, SafeHTML) and w.value]
    assert shown and all(isinstance(value, Markup) for value in shown)
    for value in shown:
        assert injected(value) == [], value
    text = " ".join(" ".join(Parsed(value).text) for value in shown)
    assert PAYLOAD in text  # shown as the text it is, not dropped
    from ortnb.ui.figure_view import MIME

    figures = [w.to_plotly_json() for w in widgets_of(dashboard.widget) if hasattr(w, "to_plotly_json")]
    figures += [shown["data"][MIME] for w in widgets_of(dashboard.widget) for shown in getattr(w, "outputs", ())
                if MIME in shown.get("data", {})]  # the figures JupyterLab's plotly renderer draws
    assert len(figures) == 4  # live, comparison, profile and Try it's confusion matrix
    for figure in figures:
        assert plotly_markup(figure) == []
    request_close()


def test_nothing_from_a_run_becomes_markup_in_report_html_and_profile_html(tmp_path):
    from ortnb import report
    from ortnb.profiling import views

    table = table_of_two_runs().assign(label=[PAYLOAD, "b"], engine=[PAYLOAD, "onnxruntime"],
                                       verdict=[PAYLOAD, PAYLOAD])
    _, page = report.write(table, [tiny(tmp_path)], tmp_path / "report", PAYLOAD, incomplete=PAYLOAD)
    written = page.read_text()
    assert injected(written) == [] and PAYLOAD in " ".join(Parsed(written).text)

    class Profile:
        def to_dict(self):
            return profile_data(PAYLOAD)

    page = views.page_html(Profile())
    assert injected(page) == [] and PAYLOAD in " ".join(Parsed(page).text)
    assert plotly_markup(views.figure(profile_data(PAYLOAD)).to_plotly_json()) == []


def test_text_reaches_html_only_through_markup():
    """The structure, not each field: no module escapes on its own or makes an HTML widget but through SafeHTML."""
    import re
    from pathlib import Path

    root = Path(ortnb.__file__).parent
    own = {root / "views" / "markup.py", root / "ui" / "safe_html.py"}
    pattern = re.compile(r"html\.escape\(|import html\b|\bw\.HTML\(|widgets\.HTML\(|\.innerHTML\b")
    found = [f"{path.relative_to(root)}:{number}: {line.strip()}"
             for path in sorted(root.rglob("*.py")) if path not in own
             for number, line in enumerate(path.read_text().splitlines(), 1) if pattern.search(line)]
    assert found == []


def test_the_web_page_sets_text_never_html():
    """`ortnb edge web`'s page shows rows and labels from the user's files: textContent only, never parsed HTML."""
    from pathlib import Path

    web = Path(ortnb.__file__).parent / "edge" / "web"
    scripts = sorted(web.glob("*.js"))
    assert scripts
    sinks = ("innerHTML", "outerHTML", "insertAdjacentHTML", "document.write", "eval(", "new Function")
    assert [f"{path.name}: {sink}" for path in scripts for sink in sinks if sink in path.read_text()] == []
