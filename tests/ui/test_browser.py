"""The Dashboard in JupyterLab, in a real browser (Debian's chromium driven by playwright).

One JupyterLab, one notebook, tiny-bert runs slowed to >= 0.2 s a step. At 1400 px: Run is disabled
while a run trains, a progress bar with an ETA appears, another cell runs meanwhile, a summary card
appears at the end; two identical runs make two bars with distinct labels; Stop stops a long run, whose screens of
held-out rows (a target it cannot reach) the card counts and the held-out panel draws. Then
at 1000 px and at 1400 px: the charts fill their output area and no text is cut. Then ONNX Runtime +
bf16 is refused in the form's words, Profile fills its tab with a bar per engine, and Find fastest runs once
with a short budget, stopped once it has measured two configurations. Last, a run folder someone else wrote, every
text a script, tracked in a second Dashboard: shown as text, nothing runs. Screenshots go to ORTNB_ARTIFACTS (or the
test's temp folder); the README's picture is made on purpose by scripts/dashboard_screenshot.py.
"""

from __future__ import annotations

import json
import re
import time
from pathlib import Path

import pytest

from ..lab_driver import (browser_page, button, jupyterlab, live_view, live_view_problems, open_notebook,
                         require_chromium, run_cell, write_notebook)
from .._helpers import payload_folder

pytestmark = pytest.mark.browser
STEPS = 12
SEARCH_BUDGET_S = 30
SCRIPT = ('<img src=x onerror="window.__ortnb_xss=1">"><svg onload="window.__ortnb_xss=2">'
          '<a href="javascript:window.__ortnb_xss=3">link</a>')

# Text elements of the dashboard whose content must never be cut (ellipsis or overflow).
TEXT_ELEMENTS = ("button, .widget-label, .ortnb-field-label, .widget-html-content, .lm-TabBar-tabLabel, "
                 ".ortnb-progress-text, .ortnb-cell, .ortnb-card-value, .ortnb-note")


@pytest.fixture
def lab(tmp_path):
    require_chromium()
    runs = tmp_path / "runs"
    shared = payload_folder(tmp_path / "shared", SCRIPT)
    moods = {"neg": ["a dull and tired film", "I wanted my money back", "flat and far too long"],
             "neu": ["it is a film about a town", "the film runs two hours", "shot in colour in French"],
             "pos": ["a warm and funny delight", "the best film this year", "moving and beautifully acted"]}
    (tmp_path / "moods.csv").write_text("text,label\n" + "".join(
        f"{text} ({n}),{label}\n" for n in range(12) for label, texts in moods.items() for text in texts))
    write_notebook(tmp_path / "dashboard.ipynb", [
        "import ortnb\n"
        f"dash = ortnb.Dashboard(ortnb.RunConfig(model='tiny-bert', batch_size=8, seq_len=32, max_steps={STEPS},\n"
        f"                                       warmup_steps=2, output_dir={str(runs)!r}))\n"
        "dash",
        "print('another cell ran', 6 * 7)",
        # the long run keeps the slowed steps of the session's warm worker (started with the kernel's environment);
        # Profile's runs (processes of their own) and Find fastest's warm worker start after it: full speed
        # with a target it cannot reach in its steps, it screens 4 held-out rows every 5 steps and never the whole split
        "long_run = dash.run(dash.panel.config.replace(max_steps=2000, eval_every=10, metric='loss', target=1e-4,\n"
        "                                              eval_screen=4))\nimport os\ndel os.environ['ORTNB_FAULT']",
        # someone else's run folder, every text in it a script (test_views_escape checks each view's HTML)
        f"shared = ortnb.Dashboard()\nshared.track(ortnb.attach({str(shared)!r}))\nshared",
    ])
    # Steps of at least 0.2 s: time to run a cell and to click Stop mid-run.
    with jupyterlab(tmp_path, env={"ORTNB_FAULT": "slow:0.2"}) as (base, token):
        yield base, token, tmp_path


def layout_report(page) -> dict:
    """Widths of the visible plots against their output area, and every text element that is cut."""
    return page.evaluate("""(selector) => {
        const dash = document.querySelector('.ortnb-dashboard');
        const area = dash.closest('.jp-OutputArea-output').getBoundingClientRect().width;
        const plots = [...dash.querySelectorAll('.js-plotly-plot .main-svg:first-child')]
            .map((svg) => svg.getBoundingClientRect().width).filter((width) => width > 0);
        const cut = [...dash.querySelectorAll(selector)]
            .filter((e) => e.clientWidth > 0 && e.scrollWidth > e.clientWidth + 1)
            .map((e) => `${e.className}: '${e.textContent.trim().slice(0, 50)}' ${e.scrollWidth}>${e.clientWidth}`);
        const scrolls = dash.scrollWidth > dash.clientWidth + 1;
        return {area, plots, cut, scrolls};
    }""", TEXT_ELEMENTS)


def fits(report: dict) -> bool:
    """Every chart spans 90% to 100% of its output area (a chart still at the width of a wider window is not
    fitted yet), no text is cut, nothing scrolls sideways."""
    return bool(report["plots"]) and 0.9 * report["area"] <= min(report["plots"]) \
        and max(report["plots"]) <= report["area"] + 1 and not report["cut"] and not report["scrolls"]


def assert_fits(page, where: str, settle_s: float = 5.0) -> None:
    """The charts re-fit within a moment of a layout change (tab switch, resize): wait that long."""
    deadline = time.monotonic() + settle_s
    report = layout_report(page)
    while not fits(report) and time.monotonic() < deadline:
        page.wait_for_timeout(250)
        report = layout_report(page)
    assert report["plots"], f"{where}: no visible chart"
    assert min(report["plots"]) >= 0.9 * report["area"], f"{where}: charts narrower than 90%: {report}"
    assert max(report["plots"]) <= report["area"] + 1, f"{where}: charts wider than their output area: {report}"
    assert not report["cut"], f"{where}: cut text: {report['cut']}"
    assert not report["scrolls"], f"{where}: the dashboard scrolls sideways"


def plot_data(page, index: int) -> list[dict]:
    """x values and names of the traces of the dashboard's index-th plot."""
    return page.evaluate("""(index) => {
        const plot = document.querySelectorAll('.ortnb-dashboard .js-plotly-plot')[index];
        return plot && plot.data ? plot.data.map((t) => ({x: t.x ? [...t.x] : [], name: t.name})) : [];
    }""", index)


def plot_with_trace(page, name: str) -> list[dict]:
    """The traces of the dashboard's plot that has a trace called ``name`` ([] if none)."""
    return page.evaluate("""(name) => {
        const plots = [...document.querySelectorAll('.ortnb-dashboard .js-plotly-plot')];
        const plot = plots.find((p) => p.data && p.data.some((t) => t.name === name));
        return plot ? plot.data.map((t) => ({x: t.x ? [...t.x] : [], name: t.name})) : [];
    }""", name)


def newest_run(runs: Path):
    import ortnb

    folders = sorted((p for p in runs.iterdir() if (p / "config.json").exists()), key=lambda p: p.stat().st_mtime)
    return ortnb.attach(folders[-1])


def assert_page_shows_run(page, run, shots: Path, moment: str, complete: bool, settle_s: float = 15.0,
                          which: int = 0) -> dict:
    """The live grid as the page drew it agrees with the run's metrics.jsonl at this moment (see
    lab_driver.live_view_problems); waits up to ``settle_s`` for the page to catch up with the file (it redraws at
    most twice a second). A screenshot and the page's reading are kept for a person: ``moment``.png / .json."""
    deadline = time.monotonic() + settle_s
    while True:
        view, records = live_view(page, which), run.records()
        problems = live_view_problems(view, records, complete)
        speed = next((t for t in (view or {}).get("traces", []) if (t["xaxis"], t["yaxis"]) == ("x", "y")), None)
        if not complete and not (speed and speed["x"]):
            problems.append("the samples/s panel shows no step yet")
        if not problems or time.monotonic() > deadline:
            break
        page.wait_for_timeout(250)
    page.screenshot(path=str(shots / f"{moment}.png"))
    (shots / f"{moment}.json").write_text(json.dumps({"problems": problems, "page": view,
                                                       "steps_recorded": len(run.records())}, indent=1))
    assert not problems, f"{moment}: the page shows something else than the run recorded: {problems}"
    return view


def card_items(page) -> dict[str, str]:
    """The summary card as a person reads it: name -> value."""
    return page.evaluate("""() => Object.fromEntries([...document.querySelectorAll('.ortnb-summary .ortnb-card-item')]
        .map((item) => [item.querySelector('.ortnb-card-name').textContent.trim(),
                        item.querySelector('.ortnb-card-value').textContent.trim()]))""")


def assert_card_shows_run(page, run) -> None:
    """The card's figures, read from the page, equal the run's records: the final loss, the best evaluation (ties
    on accuracy go to the lower held-out loss) with its step and its own loss, the first step."""
    from ortnb import metrics

    card, records = card_items(page), run.records()
    steps, evals = metrics.steps(records), metrics.evaluations(records)
    assert float(card["final loss"]) == pytest.approx(steps[-1]["loss"], rel=6e-4, abs=6e-5), card  # 4 digits
    best = max(evals, key=lambda e: (e["accuracy"], -e["eval_loss"], -e["step"]))
    value, _, rest = card["best held-out accuracy"].partition(" at step ")
    assert float(value) == pytest.approx(best["accuracy"], abs=6e-4) and int(rest.split()[0]) == best["step"], card
    assert float(card["its held-out loss"]) == pytest.approx(best["eval_loss"], rel=6e-4, abs=6e-5), card
    from ortnb.views.numbers import format_span

    summary = run.summary()
    plural = "s" if len(evals) != 1 else ""
    assert card["evaluating"] == f"{len(evals)} evaluation{plural} in {format_span(summary['eval_total_s'])}", card
    first = metrics.first_step_seconds(metrics.startup_phases(records))
    assert card["first step"].startswith(f"{first:.1f} s"), card
    assert f"first step {first:.1f}" in card["start-up"], card
    from ortnb.ui.present import started_text

    assert card["started"] == started_text(summary["warm_run"]), card  # cold, warm: as the run's stream says


def metrics_events(run, name: str) -> list[dict]:
    return [r for r in run.records() if r.get("event") == name]


def assert_page_shows_screens(page, run, shots: Path, settle_s: float = 15.0) -> None:
    """A target run's screens, read off the page: the card counts them with their rows and seconds, apart from
    whole-split evaluations, and the held-out panel draws one open point per screen at its step."""
    from ortnb.views.numbers import format_span

    screens, evals = metrics_events(run, "screen"), metrics_events(run, "eval")
    assert screens, "the long run screened nothing before it was stopped"
    said = f"{len(screens)} screen{'s' if len(screens) != 1 else ''} of 4 rows in " \
           f"{format_span(sum(e['eval_time_s'] for e in screens))}"
    if evals:
        said = f"{len(evals)} evaluation{'s' if len(evals) != 1 else ''} in " \
               f"{format_span(sum(e['eval_time_s'] for e in evals))}; " + said
    deadline = time.monotonic() + settle_s
    while True:
        card = card_items(page)
        drawn = [t for t in (live_view(page) or {"traces": []})["traces"]
                 if t["name"].endswith(" screen") and (t["xaxis"], t["yaxis"]) == ("x5", "y5")]
        problems = ([] if card.get("evaluating") == said else [f"card says {card.get('evaluating')!r}, not {said!r}"])
        if len(drawn) != 1 or drawn[0]["x"] != [e["step"] for e in screens]:
            problems.append(f"held-out panel draws screens at {[t['x'] for t in drawn]}, the run recorded "
                            f"{[e['step'] for e in screens]}")
        elif drawn[0]["y"] != pytest.approx([e["value"] for e in screens], rel=1e-6):
            problems.append(f"screens drawn at {drawn[0]['y']}, recorded {[e['value'] for e in screens]}")
        if not problems or time.monotonic() > deadline:
            break
        page.wait_for_timeout(250)
    page.screenshot(path=str(shots / "3b-long-run-screens.png"))
    assert not problems, problems


def show_tab(page, name: str) -> None:
    """Bring a Dashboard tab forward; assert_fits then waits for its charts (a hidden chart has no width, so
    nothing is measured before the tab shows)."""
    from playwright.sync_api import expect

    page.locator(".ortnb-dashboard .lm-TabBar-tab", has_text=name).click()
    expect(page.locator(".ortnb-dashboard .lm-TabBar-tab.lm-mod-current")).to_contain_text(name)


def narrow_window(page, width: int) -> None:
    """Narrow the window and wait for JupyterLab to lay the notebook out again (it does so a moment after the
    resize): the output area narrower. assert_fits then waits for the charts to follow it."""
    before = layout_report(page)["area"]
    page.set_viewport_size({"width": width, "height": page.viewport_size["height"]})
    page.wait_for_function("""(before) => document.querySelector('.ortnb-dashboard').closest('.jp-OutputArea-output')
        .getBoundingClientRect().width < before - 1""", arg=before, timeout=10_000)


def dismiss_notifications(page) -> None:
    """JupyterLab asks about its news feed in a toast that covers the charts' corner."""
    no = button(page, "No")
    if no.count():
        no.first.click()


def test_dashboard_in_jupyterlab(lab, artifacts):
    from playwright.sync_api import expect

    from ortnb.ui.form import FORM_FIELDS, MORE_FIELDS

    base, token, folder = lab
    shots = artifacts
    with browser_page(1400, 900) as page:
        try:
            cells = open_notebook(page, base, token, "dashboard.ipynb")
            run_cell(page, cells.nth(0))
            dashboard = page.locator(".ortnb-dashboard")
            expect(dashboard).to_be_visible(timeout=120_000)
            dismiss_notifications(page)
            expect(dashboard).to_contain_text("Press Run")  # empty charts: axes and a hint
            # Every control has its help on hover; options this machine cannot run look unavailable and
            # say why without hovering (here: fused Adam (ORT, CUDA), bf16 and fp16 with ONNX Runtime).
            # the form's controls, its more settings and the budget
            expect(page.locator(".ortnb-field-label[title]")).to_have_count(len(FORM_FIELDS) + len(MORE_FIELDS) + 1)
            expect(dashboard).to_contain_text("unavailable here: fused Adam (ORT, CUDA)")
            struck = page.evaluate("""() => [...document.querySelectorAll('.ortnb-dashboard .widget-toggle-button')]
                .filter((b) => getComputedStyle(b).textDecorationLine.includes('line-through'))
                .map((b) => b.textContent.trim())""")
            assert struck == ["fused Adam (ORT, CUDA)", "bf16", "fp16"], struck
            assert_fits(page, "1400 px, before the first run")
            page.screenshot(path=str(shots / "1-empty.png"))

            # Own data: a CSV with class names, uploaded through the form, trains and is evaluated while training
            with page.expect_file_chooser() as chooser:  # ipywidgets' upload input lives outside the page's tree
                dashboard.locator(".widget-upload").first.click()
            chooser.value.set_files(str(folder / "moods.csv"))
            expect(dashboard).to_contain_text("stored as", timeout=20_000)
            expect(dashboard.locator(".ortnb-form-notes, .ortnb-ready").first).to_be_visible(timeout=20_000)
            status, progress = page.locator(".ortnb-status"), page.locator(".ortnb-progress-text")
            for number in (1, 2):  # two identical runs
                button(dashboard, "Run").click()
                expect(button(dashboard, "Run")).to_be_disabled(timeout=10_000)  # one run at a time
                if number == 2:  # pressed on the Try it tab: Run brings the Live tab forward
                    expect(page.locator(".ortnb-dashboard .lm-TabBar-tab.lm-mod-current")).to_contain_text("Live")
                expect(progress).to_contain_text("ETA", timeout=240_000)
                if number == 1:  # the page, read as a person sees it, while the run trains
                    run = newest_run(folder / "runs")
                    assert_page_shows_run(page, run, shots, "1a-live-while-training", complete=False)
                    run_cell(page, cells.nth(1))  # the kernel is free while the run trains
                    expect(page.locator(".jp-OutputArea-output", has_text="another cell ran 42")).to_be_visible(
                        timeout=30_000)
                    expect(progress).to_contain_text(f"/{STEPS}")
                    page.screenshot(path=str(shots / "2-training.png"))
                expect(page.locator(".ortnb-summary")).to_contain_text("completed", timeout=240_000)
                expect(page.locator(".ortnb-summary")).to_contain_text("onnxruntime")
                expect(button(dashboard, "Run")).to_be_enabled()
                if number == 2:  # the same kind again: the session's warm worker trained it, and the card says so
                    second = newest_run(folder / "runs")
                    assert second.summary()["warm_run"] == 2, second.summary()
                    assert card_items(page)["started"] == ("warm: the session's worker, its run 2 (no interpreter "
                                                           "start or imports)")
                if number == 1:
                    expect(page.locator(".ortnb-summary")).to_contain_text("best held-out accuracy")
                    assert_page_shows_run(page, run, shots, "1b-live-completed", complete=True)
                    assert_card_shows_run(page, run)
                    # A reload rebuilds every widget from the kernel: the same figures, not "Press Run".
                    with page.expect_response(lambda r: r.request.method == "PUT" and "/api/contents/" in r.url):
                        page.keyboard.press("Control+s")  # saved: no "leave the page?" before the reload
                    page.reload()
                    expect(page.locator(".ortnb-summary")).to_contain_text("completed", timeout=60_000)
                    assert_page_shows_run(page, run, shots, "1c-live-after-reload", complete=True)
                    assert_card_shows_run(page, run)
                    held_out = [t for t in plot_data(page, 0) if t["name"].endswith("held-out")]
                    assert len(held_out) == 2 and all(len(t["x"]) >= 2 for t in held_out), held_out
                    page.locator(".lm-TabBar-tab", has_text="Try it").click()
                    page.locator(".ortnb-tryit textarea").fill("a warm and funny delight")
                    button(dashboard, "Predict").click()
                    expect(page.locator(".ortnb-prediction")).to_contain_text("pos", timeout=60_000)
                    expect(page.locator(".ortnb-confusion")).to_contain_text("Confusion matrix at step")
                    page.screenshot(path=str(shots / "2b-try-it.png"))
                    expect(button(dashboard, "Export")).to_be_enabled()  # the finished run can be shipped
                button(dashboard, "Add to comparison").click()
                expect(page.locator(".ortnb-message")).to_contain_text("added", timeout=10_000)
            page.screenshot(path=str(shots / "3-comparison.png"))
            bars = plot_data(page, 1)[0]["x"]
            assert len(bars) == 2 and len(set(bars)) == 2, bars  # one bar each, distinct labels
            assert "#2" in bars[1]
            expect(page.locator(".ortnb-remove")).to_have_count(2)
            assert_fits(page, "1400 px, comparison")

            run_cell(page, cells.nth(2))  # a long run, stopped from the dashboard
            expect(progress).to_contain_text("ETA", timeout=240_000)
            long_run = newest_run(folder / "runs")
            deadline = time.monotonic() + 60
            while not metrics_events(long_run, "screen") and time.monotonic() < deadline:
                page.wait_for_timeout(250)
            button(dashboard, "Stop").click()
            expect(status).to_contain_text("stopped", timeout=60_000)
            show_tab(page, "Live")
            assert_fits(page, "1400 px, live charts")
            assert_page_shows_screens(page, long_run, shots)

            narrow_window(page, 1000)
            assert_fits(page, "1000 px, live charts")
            page.screenshot(path=str(shots / "4-1000px.png"))
            show_tab(page, "Comparison")
            assert_fits(page, "1000 px, comparison")

            page.locator(".ortnb-dashboard .jupyter-widget-Collapse-header").first.click()  # unfold the form
            button(dashboard, "ONNX Runtime").click()
            button(dashboard, "bf16").click()
            expect(dashboard).to_contain_text("bf16 with ONNX Runtime needs the CUDA execution provider",
                                              timeout=10_000)
            expect(button(dashboard, "Run")).to_be_disabled()
            page.screenshot(path=str(shots / "5-ort-bf16.png"))

            # Profile: the form's settings (ORT) beside PyTorch's, a stacked bar per engine in the Profile tab.
            button(dashboard, "fp32").click()
            button(dashboard, "Profile").click()
            expect(progress).to_contain_text("Profile:", timeout=10_000)
            expect(button(dashboard, "Run")).to_be_disabled()  # one thing at a time
            expect(progress).to_contain_text("Profile: done", timeout=300_000)
            expect(page.locator(".ortnb-profile")).to_contain_text("[onnxruntime]", timeout=10_000)
            expect(page.locator(".ortnb-profile")).to_contain_text("matrix products")
            bars = plot_with_trace(page, "matrix products")  # the Profile tab's stacked bars
            assert [t["name"] for t in bars][:2] == ["matrix products", "attention"], bars
            assert bars[0]["x"] == ["eager + AdamW [pytorch]", "ort + AdamW [onnxruntime]"], bars
            assert_fits(page, "1000 px, profile")
            page.locator(".ortnb-profile").scroll_into_view_if_needed()
            page.screenshot(path=str(shots / "5b-profile.png"))

            # Find fastest, once, with a short budget: progress while it measures, Stop once two configurations are
            # measured (the third under way; a busy machine may spend the whole budget first), the ranked table, the
            # winner loaded into the form.
            budget = dashboard.locator(".widget-hbox", has=page.locator(".ortnb-field-label", has_text="budget (s)"))
            budget.locator("input").fill(str(SEARCH_BUDGET_S))
            budget.locator("input").press("Enter")
            button(dashboard, "Find fastest").click()
            expect(progress).to_contain_text("Find fastest:", timeout=10_000)
            expect(button(dashboard, "Run")).to_be_disabled()
            expect(progress).to_contain_text(re.compile(r"candidate ([3-9]|\d\d+) of|ended"),
                                             timeout=(SEARCH_BUDGET_S * 1.1 + 30) * 1000)
            stopped = "ended" not in progress.text_content()
            if stopped:
                button(dashboard, "Stop").click()
            expect(progress).to_contain_text("ended", timeout=60_000)
            measured = int(re.search(r"(\d+) configurations? measured", progress.text_content()).group(1))
            assert measured >= (2 if stopped else 1), progress.text_content()
            expect(page.locator(".ortnb-search")).to_contain_text("configuration")
            button(dashboard, "Load winner").click()
            expect(page.locator(".ortnb-message")).to_contain_text("the form now holds", timeout=10_000)
            page.screenshot(path=str(shots / "6-find-fastest.png"))

            # A tracked run folder whose every text is a script: shown as text, nothing runs, no element made.
            run_cell(page, cells.nth(3))
            expect(page.locator(".ortnb-summary")).to_have_count(2, timeout=60_000)
            expect(page.locator(".ortnb-summary").nth(1)).to_contain_text("window.__ortnb_xss")
            # ortnb.Dashboard() without settings: the form starts from this machine's engine and says why
            from ortnb.tuning.defaults import choice_text, choose

            expect(page.locator(".ortnb-choice-note")).to_have_text(choice_text(choose("minilm", "rotten_tomatoes")))
            page.wait_for_timeout(2000)
            made = page.evaluate("""() => ({ran: window.__ortnb_xss ?? null,
                elements: document.querySelectorAll('img[src="x"], svg[onload], a[href^="javascript"]').length})""")
            assert made == {"ran": None, "elements": 0}, made
            # a run tracked after it ended, without memory figures: every panel drawn (plotly.js refused a whole
            # update naming the axes of a panel it had dropped for want of a trace, and the page kept the empty grid)
            shared = newest_run(folder / "shared" / "runs")
            assert_page_shows_run(page, shared, shots, "7-shared-folder-payload", complete=True, which=1)
            refused = [error for error in page.console_errors if "Error setting state" in error]
            assert not refused, refused
        except BaseException:
            page.screenshot(path=str(shots / "failure.png"), full_page=True)
            print(f"screenshots: {shots}")
            raise


def test_report_html_fits_1000_px_and_no_cell_breaks_a_word(tmp_path):
    """report.html, as `ortnb compare` writes it, read in a real browser at 1000 px: no sideways scrolling of
    the page, no table cell whose text is wider than the cell (words and numbers never break mid-way)."""
    require_chromium()
    import ortnb
    from ortnb import comparison, report

    def summary(label, speed, iqr, other=None):
        return {"label": label, "status": "completed", "engine": "onnxruntime" if "ORT" in label else "pytorch",
                "samples_per_s": speed, "samples_per_s_iqr": iqr, "samples_per_s_p25": speed - iqr / 2,
                "samples_per_s_p75": speed + iqr / 2, "steps_measured": 25, "peak_rss_mb": 1234.5,
                "optimizer_state_mb": 512.25, "final_loss": 0.6931, "mfu": 0.4239, "first_step_s": 12.5,
                "real_tokens_per_s": speed * 80, "contended": other is not None, "contended_share": other}

    table = comparison.table([[summary("PyTorch + AdamW", 22.9, 39.0)], [summary("ORT + fused Adam", 42.4, 2.0)],
                              [summary("ORT + fused Adam + ZeRO-1 (2 processes)", 40.1, 1.0, other=0.45)]])
    table.attrs["notes"] = ["the machine was not quiet before ORT + fused Adam: other processes used 45% of the "
                            "CPU after waiting 60 s; its figures are flagged where they were measured under load"]
    configs = [ortnb.RunConfig(model="tiny-bert", backend=b) for b in ("eager", "ort", "ort")]
    _, page_path = report.write(table, configs, tmp_path, "ortnb compare --steps 30 --warmup 5")
    with browser_page(1000, 900) as page:
        page.goto(page_path.as_uri())
        found = page.evaluate("""() => ({
            page: [document.documentElement.scrollWidth, document.documentElement.clientWidth],
            cut: [...document.querySelectorAll('td, th')].filter((c) => c.scrollWidth > c.clientWidth + 1)
                .map((c) => c.textContent),
            broken: [...document.querySelectorAll('td, th')].filter((c) => getComputedStyle(c).wordBreak
                === 'break-all').length,
            plot: document.querySelector('.js-plotly-plot').getBoundingClientRect().width})""")
    assert found["page"][0] <= found["page"][1], found  # no sideways scrolling
    assert not found["cut"] and not found["broken"], found
    assert 600 < found["plot"] <= 1000, found
