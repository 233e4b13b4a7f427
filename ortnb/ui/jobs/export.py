"""Export: the job that writes the latest run as an ONNX folder a user can ship (onnx_folder.py), in the
background, and says what was written, from which weights, and how closely ONNX Runtime matched PyTorch."""

from __future__ import annotations

from .host import Job


class ExportJob(Job):
    name = "Export"
    action = "export"

    def __init__(self, runs: dict, which: str = "best", out=None):
        """``runs``: run id -> Run, the Dashboard's; the latest finished one is exported."""
        self.runs, self.which, self.out = runs, which, out
        self.run = self.label = None

    def refusal(self, state):
        latest = state.latest
        return ("no finished run to export yet" if latest is None or not latest.done else
                f"{latest.label} failed: it has no model to export" if latest.status == "failed" else None)

    def begin(self, state, now):
        latest = state.latest
        self.run, self.label = self.runs[latest.id], latest.label
        state.exporting = latest.id
        state.say(f"exporting {self.label} to ONNX (written, then checked against PyTorch at two shapes)…")

    def work(self, update):
        from ...onnx_folder import write_onnx_folder

        return write_onnx_folder(self.run, self.out, self.which)

    def ended(self, state, result):
        state.exporting = None
        state.say(f"{self.label}: {result.text()}")

    def failed(self, state, error):
        state.exporting = None
        state.say(f"cannot export {self.label}: {error}", "error")
