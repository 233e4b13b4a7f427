"""Export: the Dashboard's part that writes the latest run as an ONNX folder a user can ship (onnx_folder.py),
in the background, and says what was written, from which weights, and how closely ONNX Runtime matched PyTorch.

A mixin of Dashboard, as Profile and Find fastest are: it uses the dashboard's state, lock, runs and render.
"""
from __future__ import annotations

import threading


class ExportAction:
    def export(self, which: str = "best", out=None, wait: bool | None = None):
        """Write the latest finished run as an ONNX folder (``onnx/`` in its run folder unless ``out``): from the
        best evaluation's weights (``which="best"``, when it evaluated) or the final ones (``which="last"``).
        ``wait`` (default: without widgets) blocks and returns the OnnxFolder."""
        from ..onnx_folder import write_onnx_folder

        with self._lock:
            latest = self.state.latest
            refusal = (self.state.why_run_is_disabled() if self.state.busy else
                       "no finished run to export yet" if latest is None or not latest.done else
                       f"{latest.label} failed: it has no model to export" if latest.status == "failed" else None)
            if refusal:
                self.state.say(f"cannot export: {refusal}", "warning")
                self._show_message()
                return None
            run, label = self.runs[latest.id], latest.label
            self.state.exporting = latest.id
            self.state.say(f"exporting {label} to ONNX (written, then checked against PyTorch at two shapes)…")
        self.render()

        def write():
            try:
                shipped = write_onnx_folder(run, out, which)
            except Exception as error:  # noqa: BLE001 - shown on the dashboard, never a thread traceback
                with self._lock:
                    self.state.exporting = None
                    self.state.say(f"cannot export {label}: {str(error).strip().splitlines()[0]}", "error")
                self.render()
                return None
            with self._lock:
                self.state.exporting = None
                self.state.say(f"{label}: {shipped.text()}")
            self.render()
            return shipped

        if wait if wait is not None else not self.widgets:
            return write()
        threading.Thread(target=write, name="ortnb-export", daemon=True).start()
        return None
