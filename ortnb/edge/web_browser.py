"""A bundle's page, trained in headless Chromium from Python: for notebook 09 (the browser's losses next to the
Python training API's), the step-time benchmark (benchmarks/edge_web.py) and anyone who wants the page's numbers
without opening it. The page itself does the work; this serves it, opens it with ``?autostart=1`` and returns
``window.ortnbEdge`` when it has trained and evaluated (or failed).

Needs playwright (the ``test`` extra) and a Chromium: Debian's ``chromium`` package (what ortnb's tests use;
playwright never downloads a browser here) or one named by ``ORTNB_CHROMIUM``.
"""

from __future__ import annotations

import json
import os
import shutil
import time
from pathlib import Path

# A closed network and root: no Google hosts, no updates, no sandbox (tests/lab_driver.py launches with these too).
FLAGS = ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-sync",
         "--disable-background-networking", "--disable-component-update"]


def chromium() -> str | None:
    found = os.environ.get("ORTNB_CHROMIUM") or shutil.which("chromium") or shutil.which("chromium-browser")
    return found if found and Path(found).exists() else None


def unavailable() -> str | None:
    """Why a page cannot be driven here (None when it can)."""
    try:
        import playwright.sync_api  # noqa: F401
    except ImportError:
        return "playwright is not installed (pip install playwright; it is in ortnb's test extra)"
    if chromium() is None:
        return "no Chromium found (apt-get install chromium, or set ORTNB_CHROMIUM to a Chromium executable)"
    return None


def train_in_browser(bundle, *, isolated: bool = False, timeout: float = 600, query: str = "autostart=1") -> dict:
    """Serve ``bundle`` (a WebBundle or its folder), open it in headless Chromium with ``?autostart=1`` (train
    the bundled rows one round, then evaluate), and return the page's ``window.ortnbEdge`` at the end.
    ``isolated``: serve with the cross-origin isolation headers (the page then uses up to 4 threads)."""
    from concurrent.futures import ThreadPoolExecutor

    reason = unavailable()
    if reason:
        raise RuntimeError(f"cannot drive a browser here: {reason}")
    # In its own thread: playwright's sync API refuses a thread with a running asyncio loop, which a Jupyter
    # kernel's main thread has.
    with ThreadPoolExecutor(1, thread_name_prefix="ortnb-browser") as pool:
        return pool.submit(_train, bundle, isolated, timeout, query).result()


def _train(bundle, isolated: bool, timeout: float, query: str) -> dict:
    from playwright.sync_api import sync_playwright

    from .web_server import serve
    folder = Path(getattr(bundle, "folder", bundle))
    has_eval = json.loads((folder / "bundle.json").read_text()).get("eval_data") is not None
    finished = "s.evaluations.length > 0" if has_eval else "s.step > 0 && s.status === 'ready'"
    with serve(folder, isolated=isolated) as server, sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=chromium(), args=FLAGS, headless=True)
        try:
            page = browser.new_page()
            page.goto(f"{server.url}?{query}")
            return _wait(page, finished, timeout)
        finally:
            browser.close()


def _wait(page, finished: str, timeout: float) -> dict:
    deadline = time.monotonic() + timeout
    while True:
        state, done = page.evaluate(f"""() => {{ const s = window.ortnbEdge;
            if (!s) return [{{}}, false];
            return [JSON.parse(JSON.stringify(s)), s.status === "error" || s.error !== null || ({finished})]; }}""")
        if done:
            return state
        if time.monotonic() > deadline:
            raise TimeoutError(f"the page had not finished after {timeout:.0f} s: status {state.get('status')}, "
                               f"step {state.get('step')}")
        time.sleep(0.25)
