"""A loopback static server for a web bundle, started and stopped from Python (the notebook, the tests, the CLI).

Any static server serves a bundle; this one adds what a page needs to use threads: with ``isolated=True`` it
sends ``Cross-Origin-Opener-Policy: same-origin`` and ``Cross-Origin-Embedder-Policy: require-corp``, which
make the page cross-origin isolated, the condition for SharedArrayBuffer and so for ONNX Runtime Web's worker
threads. Without them the page trains on one thread. It also names the types a module loader insists on
(.mjs as JavaScript, .wasm as application/wasm), which older Python versions do not know.
"""

from __future__ import annotations

import errno
import functools
import http.server
import threading
from pathlib import Path

HOST = "127.0.0.1"


class PortUnavailable(OSError):
    """The port cannot be bound: the message says which, why, and how to choose another."""

TYPES = {".mjs": "text/javascript", ".js": "text/javascript", ".wasm": "application/wasm",
         ".onnx": "application/octet-stream", ".json": "application/json"}


class _Handler(http.server.SimpleHTTPRequestHandler):
    isolated = False
    extensions_map = {**http.server.SimpleHTTPRequestHandler.extensions_map, **TYPES}

    def end_headers(self) -> None:
        self.send_header("Cache-Control", "no-store")  # a bundle written again is read again
        if self.isolated:
            self.send_header("Cross-Origin-Opener-Policy", "same-origin")
            self.send_header("Cross-Origin-Embedder-Policy", "require-corp")
        super().end_headers()

    def log_message(self, format, *args) -> None:  # one line per file would bury the notebook's output
        pass


class BundleServer:
    """A running server: ``url`` (index.html), ``stop()``; a context manager that stops on exit."""

    def __init__(self, folder: Path, port: int, isolated: bool, host: str = HOST):
        handler = type("Handler", (_Handler,), {"isolated": isolated})
        self.folder, self.isolated = Path(folder), isolated
        try:
            self._server = http.server.ThreadingHTTPServer((host, port),
                                                           functools.partial(handler, directory=str(folder)))
        except OSError as error:
            refused = PortUnavailable(port_words(port, error.errno, host))
            refused.errno = error.errno
            raise refused from None
        self._server.daemon_threads = True
        self.port = self._server.server_address[1]
        self._thread = threading.Thread(target=self._server.serve_forever, name="ortnb-bundle-server", daemon=True)
        self._thread.start()

    @property
    def url(self) -> str:
        return f"http://{HOST}:{self.port}/index.html"

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(5)

    def __enter__(self) -> "BundleServer":
        return self

    def __exit__(self, *exc) -> None:
        self.stop()

    def __repr__(self) -> str:
        return f"BundleServer({self.url}, {'cross-origin isolated' if self.isolated else 'one thread'})"


def port_words(port: int, number: int | None, host: str = HOST) -> str:
    """Why ``port`` cannot be served and the way out, in one line (the CLI prints it as it is)."""
    way = "serve on another port (--port 8001, or port=8001 in Python; 0 picks a free one)"
    if number == errno.EADDRINUSE:
        return f"port {port} on {host} is in use (another server holds it): {way}, or stop what holds it"
    if number == errno.EACCES:
        return f"port {port} on {host} needs administrator rights (as every port below 1024): {way}"
    return f"port {port} on {host} cannot be opened ({errno.errorcode.get(number, number)}): {way}"


def serve(folder, port: int = 0, isolated: bool = False) -> BundleServer:
    folder = Path(folder)
    if not (folder / "index.html").is_file():
        raise FileNotFoundError(f"{folder} is not a web bundle (no index.html): write one with "
                                "ortnb.edge.web_bundle(artifacts, folder) or `ortnb edge web ARTIFACTS OUT`")
    return BundleServer(folder, port, isolated)
