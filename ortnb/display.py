"""Where output goes: a widget frontend, or plain text. Detected once; degrades without a traceback."""

from __future__ import annotations

import os
import sys
import time
import warnings
from typing import Callable

from .errors import OrtnbWarning

_warned = False


def widget_frontend() -> bool:
    """True inside an IPython kernel with ipywidgets installed (override: ORTNB_WIDGETS=0/1).

    A kernel cannot see whether its client renders widgets (nbval, nbconvert and some editors do
    not); there the widgets' text/plain representation is shown instead, which is deterministic.
    """
    forced = os.environ.get("ORTNB_WIDGETS")
    if forced in ("0", "1"):
        return forced == "1"
    shell = sys.modules.get("IPython") and sys.modules["IPython"].get_ipython()
    if shell is None or type(shell).__name__ != "ZMQInteractiveShell":
        return False
    try:
        import ipywidgets  # noqa: F401
        import anywidget  # noqa: F401  (plotly 6+ FigureWidget runs on it)
        import plotly  # noqa: F401
    except ImportError:
        return False
    return True


def warn_text_mode(what: str) -> None:
    """One warning per process when widgets are not available."""
    global _warned
    if not _warned:
        _warned = True
        warnings.warn(f"{what}: no widget frontend here, showing text progress and a static figure at the end "
                      "(pip install 'ortnb[notebook]' and use JupyterLab for live charts).", OrtnbWarning,
                      stacklevel=3)


class Throttle:
    """True at most once per ``interval`` seconds; the clock is injectable so tests need no sleeping."""

    def __init__(self, interval: float = 0.5, clock: Callable[[], float] = time.monotonic):
        self.interval = interval
        self.clock = clock
        self._last: float | None = None

    def ready(self) -> bool:
        now = self.clock()
        if self._last is None or now - self._last >= self.interval:
            self._last = now
            return True
        return False


def show_static(figure, path: str = "ortnb-run.html") -> None:
    """Show a finished plotly figure where there is no widget frontend: inline in an IPython kernel (nbconvert and
    nbval keep it), else written to ``path`` as a standalone page, which is said."""
    try:
        from IPython import get_ipython
        from IPython.display import display

        if get_ipython() is not None:
            display(figure)
            return
    except ImportError:
        pass
    figure.write_html(path, include_plotlyjs=True)
    print(f"ortnb: chart written to {path}")
