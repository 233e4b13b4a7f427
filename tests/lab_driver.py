"""JupyterLab in a real browser: a server on 127.0.0.1 with a random port and token, Debian's chromium
driven by playwright. Used by tests/test_browser.py and by scripts/dashboard_screenshot.py (the README's
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
            yield browser.new_page(viewport={"width": width, "height": height})
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
