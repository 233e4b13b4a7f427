"""Make the README's pictures of the Dashboard on purpose: MiniLM on Rotten Tomatoes, PyTorch + AdamW
against ONNX Runtime + fused AdamW, both added to the comparison, in JupyterLab in chromium.

    .venv/bin/python scripts/dashboard_screenshot.py      # about 6 minutes on 2 shared cores

Writes docs/dashboard.png (live charts and the summary card) and docs/dashboard-comparison.png. The
runs go to a temporary folder; nothing else in the checkout changes. The test suite never writes here.
JupyterLab runs with its own settings folder (no news question, no update check, no toasts), and every
notification left on the page is closed before each picture, which fails if one is still over the Dashboard.
Look at both pictures before committing them.
"""

from __future__ import annotations

import argparse
import json
import re
import shutil
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))

from lab_driver import browser_page, button, jupyterlab, open_notebook, run_cell, write_notebook  # noqa: E402

RUN_TIMEOUT_MS = 600_000


def notebook(folder: Path, steps: int) -> None:
    runs = folder / "runs"
    write_notebook(folder / "dashboard.ipynb", [
        "import ortnb\n"
        f"base = ortnb.RunConfig(model='minilm', dataset='rotten_tomatoes', batch_size=16, seq_len=128,\n"
        f"                       max_steps={steps}, warmup_steps=5, output_dir={str(runs)!r})\n"
        "dash = ortnb.Dashboard(base.replace(backend='eager'))\n"
        "dash",
        "dash.run(base.replace(backend='ort', optim='adamw_torch_fused'))",
    ])


# JupyterLab's notification settings for this server only: it asks "Would you like to get notified about
# official Jupyter news?" in a toast at first start, and that toast sat over the charts of an earlier picture.
QUIET_LAB = {"fetchNews": "false", "checkForUpdates": False, "doNotDisturbMode": True}


def lab_settings(folder: Path) -> Path:
    settings = folder / "lab-settings"
    target = settings / "@jupyterlab" / "apputils-extension" / "notification.jupyterlab-settings"
    target.parent.mkdir(parents=True)
    target.write_text(json.dumps(QUIET_LAB))
    return settings


def clear_notifications(page) -> None:
    """Close any toast JupyterLab still shows, and check that none is left on the page."""
    from playwright.sync_api import expect

    for close in page.get_by_title("Hide notification").all():
        if close.is_visible():
            close.click()
    expect(page.locator(".Toastify__toast")).to_have_count(0, timeout=10_000)


def show_tab(page, dashboard, title: str) -> None:
    """Bring one of the Dashboard's tabs forward and wait until the page shows it (Add to comparison opens the
    Comparison tab by itself, a moment after its message: a click before that was undone in an earlier picture)."""
    from playwright.sync_api import expect

    tab = dashboard.locator(".lm-TabBar-tab", has_text=re.compile(rf"^\s*{re.escape(title)}\s*$"))
    tab.click()
    expect(tab).to_have_class(re.compile(r"\blm-mod-current\b"), timeout=10_000)
    page.wait_for_timeout(2000)  # plotly's resize to the tab's width


def finish_and_compare(page, dashboard) -> None:
    from playwright.sync_api import expect

    expect(page.locator(".ortnb-summary")).to_contain_text("completed", timeout=RUN_TIMEOUT_MS)
    button(dashboard, "Add to comparison").click()
    expect(page.locator(".ortnb-message")).to_contain_text("added", timeout=10_000)
    comparison = dashboard.locator(".lm-TabBar-tab", has_text="Comparison")
    expect(comparison).to_have_class(re.compile(r"\blm-mod-current\b"), timeout=10_000)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=25)
    parser.add_argument("--out", type=Path, default=ROOT / "docs")
    options = parser.parse_args(argv)
    from playwright.sync_api import expect

    folder = Path(tempfile.mkdtemp(prefix="ortnb-screenshot-"))
    notebook(folder, options.steps)
    try:
        env = {"JUPYTERLAB_SETTINGS_DIR": str(lab_settings(folder))}
        with jupyterlab(folder, env=env) as (base, token), browser_page(1400, 1800) as page:
            cells = open_notebook(page, base, token, "dashboard.ipynb")
            page.keyboard.press("Control+b")  # fold the file browser away: more room for the charts
            run_cell(page, cells.nth(0))
            dashboard = page.locator(".ortnb-dashboard")
            expect(dashboard).to_be_visible(timeout=120_000)
            button(dashboard, "Run").click()
            finish_and_compare(page, dashboard)
            run_cell(page, cells.nth(1))
            expect(page.locator(".ortnb-progress-text")).to_contain_text("ETA", timeout=RUN_TIMEOUT_MS)
            finish_and_compare(page, dashboard)
            show_tab(page, dashboard, "Live")
            options.out.mkdir(exist_ok=True)
            clear_notifications(page)
            dashboard.screenshot(path=str(options.out / "dashboard.png"))
            show_tab(page, dashboard, "Comparison")
            clear_notifications(page)
            dashboard.screenshot(path=str(options.out / "dashboard-comparison.png"))
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    print(f"wrote {options.out / 'dashboard.png'} and {options.out / 'dashboard-comparison.png'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
