"""Trainer runs in worker processes: launch, watch, stop. ``ortnb.attach`` (runs.py) opens any run folder."""

from .launch import Run, launch

__all__ = ["Run", "launch"]
