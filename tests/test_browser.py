"""The Dashboard in JupyterLab, in a real browser (Debian's chromium driven by playwright).

JupyterLab starts on 127.0.0.1 with a random port and token; the test opens a notebook that shows
the Dashboard, clicks Run, waits for 5 throughput points, runs another cell meanwhile, clicks
Stop, and checks the ORT + bf16 explanation. Screenshots go to test-artifacts/.
"""

from __future__ import annotations

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

import pytest

CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
ARTIFACTS = Path(__file__).resolve().parents[1] / "test-artifacts"
README_SCREENSHOT = Path(__file__).resolve().parents[1] / "docs" / "dashboard.png"
# Flags for a machine with a closed network (no Google hosts, no updates) and root.
BROWSER_FLAGS = ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-sync",
                 "--disable-background-networking", "--disable-component-update"]

pytestmark = pytest.mark.browser


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def _notebook(folder: Path, runs: Path) -> Path:
    import nbformat

    cells = [
        nbformat.v4.new_code_cell(
            "import ortnb\n"
            f"dash = ortnb.Dashboard(ortnb.RunConfig(model='tiny-bert', batch_size=8, seq_len=32, max_steps=2000,\n"
            f"                                       warmup_steps=2, output_dir={str(runs)!r}))\n"
            "dash"),
        nbformat.v4.new_code_cell("print('another cell ran', 6 * 7)"),
    ]
    path = folder / "dashboard.ipynb"
    kernel = {"name": "python3", "display_name": "Python 3 (ipykernel)", "language": "python"}
    nbformat.write(nbformat.v4.new_notebook(cells=cells, metadata={"kernelspec": kernel}), path)
    return path


@pytest.fixture
def jupyterlab(tmp_path):
    if not Path(CHROMIUM).exists():
        if os.environ.get("ORTNB_REQUIRE_BROWSER") == "1":
            pytest.fail("chromium is not installed: apt-get install chromium (scripts/test.sh does it as root)")
        pytest.skip("chromium is not installed (apt-get install chromium)")
    pytest.importorskip("playwright")
    port, token = _free_port(), secrets.token_hex(16)
    _notebook(tmp_path, tmp_path / "runs")
    env = {**os.environ, "JUPYTER_CONFIG_DIR": str(tmp_path / "config"), "JUPYTER_RUNTIME_DIR": str(tmp_path / "rt"),
           "ORTNB_FAULT": "slow:0.2"}  # steps of at least 0.2 s: time to run a cell and click Stop mid-run
    server = subprocess.Popen([sys.executable, "-m", "jupyter", "lab", "--no-browser", "--ServerApp.ip=127.0.0.1",
                               f"--ServerApp.port={port}", f"--IdentityProvider.token={token}",
                               f"--ServerApp.root_dir={tmp_path}", "--LabApp.news_url=",
                               "--LabApp.check_for_updates_class=jupyterlab.NeverCheckForUpdate",
                               *(["--allow-root"] if os.geteuid() == 0 else [])],
                              env=env, stdout=open(tmp_path / "server.log", "wb"), stderr=subprocess.STDOUT,
                              start_new_session=True)
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                urllib.request.urlopen(f"{base}/api/status?token={token}", timeout=2)
                break
            except OSError:
                if time.monotonic() > deadline or server.poll() is not None:
                    raise RuntimeError((tmp_path / "server.log").read_text()[-3000:])
                time.sleep(0.5)
        yield f"{base}/lab/tree/dashboard.ipynb?token={token}", tmp_path
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


def _button(scope, text: str):
    return scope.locator("button").filter(has_text=re.compile(rf"^\s*{re.escape(text)}\s*$"))


def _run_cell(page, cell) -> None:
    cell.locator(".jp-InputArea-editor").click()
    page.keyboard.press("Shift+Enter")


def _throughput_points(page) -> int:
    return page.evaluate("""() => {
        const plot = document.querySelector('.ortnb-dashboard .js-plotly-plot');
        return plot && plot.data && plot.data.length ? plot.data[0].x.length : 0;
    }""")


def _shot(page, name: str) -> None:
    ARTIFACTS.mkdir(exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / name), full_page=True)


def test_dashboard_in_jupyterlab(jupyterlab):
    from playwright.sync_api import expect, sync_playwright

    url, _folder = jupyterlab
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=BROWSER_FLAGS, headless=True)
        try:
            page = browser.new_page(viewport={"width": 1400, "height": 1800})
            page.goto(url)
            cells = page.locator(".jp-Notebook .jp-Cell")
            expect(cells.first).to_be_visible(timeout=60_000)
            expect(page.get_by_text("| Idle")).to_be_visible(timeout=60_000)  # the kernel is up
            _run_cell(page, cells.nth(0))
            dashboard = page.locator(".ortnb-dashboard")
            expect(dashboard).to_be_visible(timeout=120_000)
            _shot(page, "1-dashboard.png")

            _button(dashboard, "Run").click()
            deadline = time.monotonic() + 240
            while _throughput_points(page) < 5:
                assert time.monotonic() < deadline, page.locator(".ortnb-status").inner_text()
                page.wait_for_timeout(500)
            _shot(page, "2-training.png")

            _run_cell(page, cells.nth(1))  # the kernel is free while the run trains
            expect(page.locator(".jp-OutputArea-output", has_text="another cell ran 42")).to_be_visible(
                timeout=30_000)
            assert "running" in page.locator(".ortnb-status").inner_text()

            _button(dashboard, "Stop").click()
            expect(page.locator(".ortnb-status")).to_contain_text("stopped", timeout=60_000)
            _shot(page, "3-stopped.png")

            _button(dashboard, "ONNX Runtime").click()
            _button(dashboard, "bf16").click()
            expect(dashboard).to_contain_text("bf16 with backend='ort' needs the CUDA execution provider",
                                              timeout=10_000)
            _shot(page, "4-ort-bf16.png")
            README_SCREENSHOT.parent.mkdir(exist_ok=True)
            shutil.copy(ARTIFACTS / "2-training.png", README_SCREENSHOT)
        except BaseException:
            _shot(page, "failure.png")
            raise
        finally:
            browser.close()
