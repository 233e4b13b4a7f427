"""Make the README's pictures of the Dashboard on purpose: MiniLM on Rotten Tomatoes, PyTorch + AdamW
against ONNX Runtime + fused AdamW, both added to the comparison, in JupyterLab in chromium.

    .venv/bin/python scripts/dashboard_screenshot.py      # about 4 minutes on 2 cores

Writes docs/dashboard.png (live charts and the summary card) and docs/dashboard-comparison.png. The
runs go to a temporary folder; nothing else in the checkout changes. The test suite never writes here.
"""

from __future__ import annotations

import argparse
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


def finish_and_compare(page, dashboard) -> None:
    from playwright.sync_api import expect

    expect(page.locator(".ortnb-summary")).to_contain_text("completed", timeout=RUN_TIMEOUT_MS)
    button(dashboard, "Add to comparison").click()
    expect(page.locator(".ortnb-message")).to_contain_text("added", timeout=10_000)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=25)
    parser.add_argument("--out", type=Path, default=ROOT / "docs")
    options = parser.parse_args(argv)
    from playwright.sync_api import expect

    folder = Path(tempfile.mkdtemp(prefix="ortnb-screenshot-"))
    notebook(folder, options.steps)
    try:
        with jupyterlab(folder) as (base, token), browser_page(1400, 1100) as page:
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
            page.locator(".lm-TabBar-tab", has_text="Live").click()
            page.wait_for_timeout(2000)
            options.out.mkdir(exist_ok=True)
            dashboard.screenshot(path=str(options.out / "dashboard.png"))
            page.locator(".lm-TabBar-tab", has_text="Comparison").click()
            page.wait_for_timeout(2000)
            dashboard.screenshot(path=str(options.out / "dashboard-comparison.png"))
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    print(f"wrote {options.out / 'dashboard.png'} and {options.out / 'dashboard-comparison.png'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
