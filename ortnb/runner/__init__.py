"""Runs in worker processes: launch, watch, stop, compare."""

from .launch import Run, attach, launch

__all__ = ["Run", "attach", "launch"]
