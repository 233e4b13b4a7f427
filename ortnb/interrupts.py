"""What a signal to an ortnb command means: end its runs the way ``run.stop()`` does, keep what was written,
and exit with the shell's code for that signal (128 + its number: 130 for Ctrl-C, 143 for SIGTERM).

Ctrl-C raises KeyboardInterrupt in the main thread. SIGTERM (``kill``, a scheduler, a container being
stopped) and SIGHUP (the terminal closed) would end the command at once by default, leaving its runs'
supervisors re-parented to pid 1 and their ranks training; ``as_keyboard_interrupt`` gives them Ctrl-C's
meaning, so each command's one ``except KeyboardInterrupt`` path stops its runs for all three.
"""

from __future__ import annotations

import signal
import sys
import threading
from contextlib import contextmanager

ENDING = (signal.SIGTERM, signal.SIGHUP)  # raised as Terminated; SIGINT already raises KeyboardInterrupt
ALL = (signal.SIGINT, *ENDING)  # every signal that ends a command, a run's supervisor or an edge worker gracefully


class Terminated(KeyboardInterrupt):
    """SIGTERM or SIGHUP, raised where Ctrl-C's KeyboardInterrupt would be."""

    def __init__(self, signum: int):
        super().__init__(name(signum))
        self.signum = signum


def name(signum: int) -> str:
    return signal.Signals(signum).name


def signum_of(interrupt: BaseException) -> int:
    """The signal behind a KeyboardInterrupt: SIGINT unless it is a Terminated (or carries ``signum``)."""
    return getattr(interrupt, "signum", signal.SIGINT)


def exit_code(interrupt: BaseException) -> int:
    return 128 + signum_of(interrupt)


def _in_main_thread() -> bool:
    # Only the main thread may install signal handlers (and only it receives KeyboardInterrupt).
    return threading.current_thread() is threading.main_thread()


def raise_terminated(signum, _frame):
    """A signal handler: raise Terminated in the main thread."""
    raise Terminated(signum)


@contextmanager
def as_keyboard_interrupt():
    """Within: SIGTERM and SIGHUP raise Terminated (a KeyboardInterrupt) in the main thread. Outside the main
    thread it changes nothing."""
    if not _in_main_thread():
        yield
        return
    previous = {signum: signal.signal(signum, raise_terminated) for signum in ENDING}
    try:
        yield
    finally:
        for signum, handler in previous.items():
            signal.signal(signum, handler)


@contextmanager
def deferred(note=None):
    """Within: SIGINT, SIGTERM and SIGHUP are noted, not raised, so that a stop in progress is not cut short
    (cut short, it would leave the run's processes behind). ``note(signum)`` is called for each one, e.g. to
    say that the stop goes on. Outside the main thread it changes nothing."""
    if not _in_main_thread():
        yield
        return

    def noted(signum, _frame):
        if note is not None:
            note(signum)

    previous = {signum: signal.signal(signum, noted) for signum in ALL}
    try:
        yield
    finally:
        for signum, handler in previous.items():
            signal.signal(signum, handler)


def say(text: str, file=None) -> None:
    """print(), except that a terminal that hung up (SIGHUP) or a closed pipe must not keep a run from being
    stopped: the message is lost, the stop goes on."""
    try:
        print(text, file=file or sys.stdout, flush=True)
    except (OSError, ValueError):
        pass
