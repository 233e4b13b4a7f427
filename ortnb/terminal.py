"""Following a run from a terminal command (``ortnb run``, ``ortnb edge train``) until it ends. Ctrl-C,
SIGTERM and SIGHUP (see interrupts.py) stop it the way ``run.stop()`` does: after the step in progress, with a
checkpoint; a further signal while it stops does not cut the stop short."""

from __future__ import annotations

import sys
import time
from typing import Callable

from . import interrupts


def follow(run, command: str, show: Callable[[], None], interval: float = 0.5) -> int | None:
    """Call ``show()`` every ``interval`` s until the run is done. Returns None when it ended by itself, else
    the exit code of the signal that stopped it (128 + its number)."""
    told = False  # the stall was said: say it once, and again only if the run advances and stalls anew
    try:
        while not run.done:
            show()
            found = run.stall
            if found is not None and not told:
                interrupts.say(f"ortnb {command}: {found.text()} Ctrl-C stops it.", sys.stderr)
            told = found is not None
            time.sleep(interval)
        return None
    except KeyboardInterrupt as interrupt:
        signum = interrupts.signum_of(interrupt)
        interrupts.say(f"ortnb {command}: {interrupts.name(signum)}: stopping (checkpointing first)...")
        with interrupts.deferred(lambda again: interrupts.say(
                f"ortnb {command}: {interrupts.name(again)} again: the run is already stopping", sys.stderr)):
            run.stop()
        return interrupts.exit_code(interrupt)
