"""Following a run from a terminal command (``ortnb run``, ``ortnb edge train``) until it ends. Ctrl-C,
SIGTERM and SIGHUP (see interrupts.py) stop it the way ``run.stop()`` does: after the step in progress, with a
checkpoint; a further signal while it stops does not cut the stop short."""

from __future__ import annotations

import sys
from typing import Callable

from . import interrupts


def format_step(record: dict) -> str:
    """One line of text progress for a step record (pure)."""
    mfu = f" mfu {record['mfu']:.1%}" if record.get("mfu") is not None else ""
    return (f"step {record['step']:>5}  loss {record['loss']:.4f}  {record['samples_per_s']:8.1f} samples/s"
            f"  {record['step_time'] * 1000:7.1f} ms/step{mfu}")


def print_record(record: dict) -> None:
    """A step as one line of progress (other records say nothing here)."""
    if record.get("kind") == "step":
        print(format_step(record), flush=True)


def follow(run, command: str, on_record: Callable[[dict], None] = print_record, interval: float = 0.5) -> int | None:
    """Hand each record to ``on_record`` (run.follow) until the run is done, saying a stall once. Returns None
    when it ended by itself, else the exit code of the signal that stopped it (128 + its number)."""
    told = False  # the stall was said: say it once, and again only if the run advances and stalls anew
    handed = 0  # records handed on: after an interrupt, following goes on from there

    def hand(record: dict) -> None:
        nonlocal handed
        handed += 1
        on_record(record)

    def look_for_a_stall():
        nonlocal told
        found = run.stall
        if found is not None and not told:
            interrupts.say(f"ortnb {command}: {found.text()} Ctrl-C stops it.", sys.stderr)
        told = found is not None

    try:
        run.follow(hand, interval, look_for_a_stall, stop_on_interrupt=False)  # stopped below, with words
        return None
    except KeyboardInterrupt as interrupt:
        signum = interrupts.signum_of(interrupt)
        interrupts.say(f"ortnb {command}: {interrupts.name(signum)}: stopping (checkpointing first)...")
        with interrupts.deferred(lambda again: interrupts.say(
                f"ortnb {command}: {interrupts.name(again)} again: the run is already stopping", sys.stderr)):
            run.stop()
        run.follow(hand, interval, since=handed)  # the steps it made while it stopped, and its final event
        return interrupts.exit_code(interrupt)
