"""JupyterLab in a real browser: a server on 127.0.0.1 with a random port and token, Debian's chromium
driven by playwright. Used by tests/ui/test_browser.py and by scripts/dashboard_screenshot.py (the README's
picture), so both drive the Dashboard the same way.
"""

from __future__ import annotations

import contextlib
import os
import re
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

from ortnb.edge.web_browser import FLAGS

CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
# Flags for a machine with a closed network (no Google hosts, no updates) and root: the ones ortnb's own
# headless driver (ortnb.edge.web_browser) launches with.
BROWSER_FLAGS = FLAGS


def require_chromium() -> None:
    """Skip a test without Debian's chromium and playwright; fail instead where ORTNB_REQUIRE_BROWSER=1 (CI
    sets it: there a missing browser is a broken set-up, not a reason to pass)."""
    import pytest

    if not Path(CHROMIUM).exists():
        if os.environ.get("ORTNB_REQUIRE_BROWSER") == "1":
            pytest.fail("chromium is not installed: apt-get install chromium (scripts/test.sh does it as root)")
        pytest.skip("chromium is not installed (apt-get install chromium)")
    pytest.importorskip("playwright")


def write_notebook(path: Path, sources: list[str]) -> Path:
    import nbformat

    kernel = {"name": "python3", "display_name": "Python 3 (ipykernel)", "language": "python"}
    cells = [nbformat.v4.new_code_cell(source) for source in sources]
    nbformat.write(nbformat.v4.new_notebook(cells=cells, metadata={"kernelspec": kernel}), path)
    return path


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


@contextlib.contextmanager
def jupyterlab(root: Path, env: dict | None = None, timeout: float = 60):
    """Yield the base URL (with the token as ``?token=``) of a JupyterLab serving ``root``."""
    port, token = _free_port(), secrets.token_hex(16)
    env = {**os.environ, "JUPYTER_CONFIG_DIR": str(root / ".jupyter-config"),
           "JUPYTER_RUNTIME_DIR": str(root / ".jupyter-runtime"), **(env or {})}
    log = root / "server.log"
    server = subprocess.Popen([sys.executable, "-m", "jupyter", "lab", "--no-browser", "--ServerApp.ip=127.0.0.1",
                               f"--ServerApp.port={port}", f"--IdentityProvider.token={token}",
                               f"--ServerApp.root_dir={root}", "--LabApp.news_url=",
                               "--LabApp.check_for_updates_class=jupyterlab.NeverCheckForUpdate",
                               *(["--allow-root"] if os.geteuid() == 0 else [])],
                              env=env, stdout=open(log, "wb"), stderr=subprocess.STDOUT, start_new_session=True)
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + timeout
        while True:
            try:
                urllib.request.urlopen(f"{base}/api/status?token={token}", timeout=2)
                break
            except OSError:
                if time.monotonic() > deadline or server.poll() is not None:
                    raise RuntimeError(log.read_text()[-3000:])
                time.sleep(0.5)
        yield base, token
    finally:
        _kill_group(server, signal.SIGTERM)  # the server and its kernels
        try:
            server.wait(20)
        except subprocess.TimeoutExpired:
            _kill_group(server, signal.SIGKILL)


def _kill_group(process: subprocess.Popen, signum) -> None:
    try:
        os.killpg(process.pid, signum)
    except ProcessLookupError:
        pass


@contextlib.contextmanager
def browser_page(width: int, height: int):
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=BROWSER_FLAGS, headless=True)
        try:
            page = browser.new_page(viewport={"width": width, "height": height})
            page.console_errors = []  # what the page's scripts refused (plotly.js refuses a whole update at once)
            page.on("console", lambda message: page.console_errors.append(message.text[:500])
                    if message.type == "error" else None)
            yield page
        finally:
            browser.close()


def open_notebook(page, base: str, token: str, name: str):
    """Open a notebook and wait for its kernel; returns the cells locator."""
    from playwright.sync_api import expect

    page.goto(f"{base}/lab/tree/{name}?token={token}")
    cells = page.locator(".jp-Notebook .jp-Cell")
    expect(cells.first).to_be_visible(timeout=60_000)
    expect(page.get_by_text("| Idle")).to_be_visible(timeout=60_000)
    return cells


def run_cell(page, cell) -> None:
    cell.locator(".jp-InputArea-editor").click()
    page.keyboard.press("Shift+Enter")


def button(scope, text: str):
    return scope.locator("button").filter(has_text=re.compile(rf"^\s*{re.escape(text)}\s*$"))


# -- what the page shows ------------------------------------------------------------------------

# The Dashboard's live grid as plotly.js drew it: every axis's drawn range, every trace's drawn values and how
# many markers it drew, and the annotations on screen. Read from the page's plot (``_fullLayout`` and
# ``_fullData``, plotly.js's own record of what it drew, and the SVG), never from the kernel.
_LIVE_VIEW_JS = """(which) => {
    const plot = [...document.querySelectorAll('.ortnb-dashboard .js-plotly-plot')]
        .filter((p) => p._fullLayout && p._fullLayout.xaxis5)[which];
    if (!plot) return null;
    const layout = plot._fullLayout;
    const axes = {};
    for (const key of Object.keys(layout)) {
        if (/^[xy]axis\\d*$/.test(key)) axes[key] = {range: [...layout[key].range], autorange: layout[key].autorange};
    }
    // markers drawn per trace: each subplot has its own layer, so match a layer's trace by its bound data
    const drawn = {};
    for (const g of plot.querySelectorAll('.scatterlayer .trace')) {
        const bound = g.__data__ && g.__data__[0] && g.__data__[0].trace;
        if (bound) drawn[bound.index] = g.querySelectorAll('.points path').length;
    }
    const traces = plot._fullData.map((t) => ({name: t.name, xaxis: t.xaxis, yaxis: t.yaxis,
        x: t.x ? [...t.x] : [], y: t.y ? [...t.y] : [], drawn: drawn[t.index] ?? 0}));
    const annotations = [...plot.querySelectorAll('.infolayer .annotation')]
        .map((a) => a.textContent.trim()).filter((text) => text);
    return {axes, traces, annotations};
}"""


def live_view(page, which: int = 0) -> dict | None:
    """The live grid of the ``which``-th Dashboard on the page as drawn (see _LIVE_VIEW_JS), or None while it is
    not on the page."""
    return page.evaluate(_LIVE_VIEW_JS, which)


# Texts the live grid shows only while it has no step to draw, and while its held-out panel has no evaluation.
EMPTY_STATE_TEXTS = ("Press Run", "the charts start at the first step", "before its first step")
EMPTY_HELD_OUT_TEXTS = ("appears here at each evaluation", "Evaluation while training shows")


def _axis_names(trace: dict) -> tuple[str, str]:
    """plotly names a trace's axes "x2"/"y2"; the layout holds them as "xaxis2"/"yaxis2"."""
    return "xaxis" + trace["xaxis"][1:], "yaxis" + trace["yaxis"][1:]


def live_view_problems(view: dict | None, records: list[dict], complete: bool, label: str | None = None) -> list[str]:
    """What the drawn live grid gets wrong against the run's records (metrics.jsonl), in words; [] when it is
    right. Each panel's drawn range holds its data; a trace draws a marker per value; the samples/s trace
    holds the steps recorded (all of them when ``complete``, else the first ones: the page may trail the file
    by a redraw); the held-out panel holds one point per evaluation; no empty-state hint over data. ``label``:
    check that run's traces (the legend names a run "label [engine]")."""
    if view is None:
        return ["the live grid is not on the page"]
    problems = []
    for trace in view["traces"]:
        x_axis, y_axis = _axis_names(trace)
        for axis, values in ((x_axis, trace["x"]), (y_axis, trace["y"])):
            low, high = sorted(view["axes"][axis]["range"])
            numbers = [v for v in values if isinstance(v, (int, float))]
            if numbers and (min(numbers) < low or max(numbers) > high):
                problems.append(f"{trace['name']}: values {min(numbers):g}..{max(numbers):g} outside {axis}'s drawn "
                                f"range {low:g}..{high:g}")
        if trace["drawn"] != len(trace["x"]):
            problems.append(f"{trace['name']}: {len(trace['x'])} values but {trace['drawn']} markers drawn")
    steps = [r["step"] for r in records if r.get("kind", "step") == "step" and "step" in r]
    evaluations = [r["step"] for r in records if r.get("event") == "eval"]
    mine = [t for t in view["traces"] if label is None or t["name"].startswith(f"{label} [")]
    by_axes = {(t["xaxis"], t["yaxis"]): t for t in mine if not t["name"].endswith((" rank1", " screen"))}
    speed, held_out, rate = by_axes.get(("x", "y")), by_axes.get(("x5", "y5")), by_axes.get(("x6", "y6"))
    rated = [r["step"] for r in records if r.get("kind", "step") == "step" and r.get("learning_rate") is not None]
    for name, trace, wanted in (("samples/s", speed, steps), ("held-out", held_out, evaluations),
                                ("learning-rate", rate, rated)):
        drawn = trace["x"] if trace else []
        if complete and drawn != wanted:
            problems.append(f"{name} panel: drew steps {drawn}, the run recorded {wanted}")
        elif not complete and drawn != wanted[:len(drawn)]:
            problems.append(f"{name} panel: drew steps {drawn}, not the first of the recorded {wanted}")
    recorded_rates = {r["step"]: r["learning_rate"] for r in records if r.get("kind", "step") == "step"
                      and r.get("learning_rate") is not None}
    for step, drawn in zip(rate["x"] if rate else [], rate["y"] if rate else []):
        if step in recorded_rates and abs(drawn - recorded_rates[step]) > 1e-6 * abs(recorded_rates[step]):
            problems.append(f"learning-rate panel: step {step} drawn at {drawn:g}, recorded {recorded_rates[step]:g}")
    if steps and not (speed and speed["x"]) and complete:
        problems.append("samples/s panel: no points although steps were recorded")
    for hints, trace in ((EMPTY_STATE_TEXTS, speed), (EMPTY_HELD_OUT_TEXTS, held_out)):
        stale = [text for text in view["annotations"] if any(hint in text for hint in hints)]
        if stale and trace and trace["x"]:
            problems.append(f"empty-state hint over data: {stale}")
    return problems
