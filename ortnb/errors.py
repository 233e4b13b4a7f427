"""ortnb's exceptions and warnings. Each subclasses a builtin so callers can catch broadly."""

from __future__ import annotations


class OrtnbWarning(UserWarning):
    """A warning from ortnb (errors under the test suite)."""


class ConfigError(ValueError):
    """One or more settings cannot work together on this machine.

    ``problems`` holds every problem found, each naming the field and the way out, so a
    user fixes them all in one go instead of one per run.
    """

    def __init__(self, problems: list[str] | str):
        self.problems = [problems] if isinstance(problems, str) else list(problems)
        if len(self.problems) == 1:
            message = self.problems[0]
        else:
            message = f"{len(self.problems)} problems:\n" + "\n".join(f"- {p}" for p in self.problems)
        super().__init__(message)


class RunFolderError(ValueError):
    """A run folder's own files cannot be read (a damaged config.json, a kind this ortnb does not know); the
    message names the file and what can still be done."""


class WeightsError(ValueError):
    """A saved model's weights cannot be used: a file cut short or not safetensors, or weights of another
    architecture than its config.json names. The message names the file, why, and what to do."""


class MissingDependencyError(ImportError):
    """An optional package is not installed; the message says what to install."""


class OrtFallbackError(RuntimeError):
    """ONNX Runtime could not run the model and ``ort_fallback="error"`` forbids running PyTorch instead."""


class ExportParityError(AssertionError):
    """The exported ONNX model disagrees with PyTorch by more than the tolerance."""
