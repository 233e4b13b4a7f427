"""Python-side state a model's ``forward`` changes, which stops changing under ONNX Runtime.

ORTModule runs the Python ``forward`` only while it exports the graph (during the first step); after that the
graph runs, so a forward that counts its calls, reassigns a buffer or flips an attribute does it once or twice
and then never again, silently. What can be seen is what the export's forward changed: the first step is
compared with a snapshot taken just before it. (State changed only on later calls, under a condition the
export never met, cannot be seen this way.)
"""

from __future__ import annotations

import torch

SIMPLE = (int, float, bool, str, type(None))
WAY_OUT = "use backend='eager' to keep it changing, or move it out of forward (a TrainerCallback, for example)"


def snapshot(model: torch.nn.Module) -> dict[str, object]:
    """'module.name' -> value of every buffer (a copy) and plain attribute (numbers, text, flags) of ``model``."""
    seen: dict[str, object] = {}
    for prefix, module in model.named_modules():
        for name, value in _state(module):
            seen[f"{prefix}.{name}" if prefix else name] = value
    return seen


def _state(module: torch.nn.Module):
    for name, buffer in module._buffers.items():
        if buffer is not None:
            yield name, (id(buffer), buffer.detach().clone())
    for name, value in vars(module).items():
        if name != "training" and not name.startswith("__") and isinstance(value, SIMPLE):
            yield name, value


def changes(before: dict[str, object], model: torch.nn.Module) -> list[str]:
    """What changed since ``before`` (state that was there then), in words: 'calls: 0 -> 2'."""
    after = snapshot(model)
    found = []
    for key, old in before.items():
        if key in after and not _same(old, after[key]):
            found.append(f"{key}: {_shown(old)} -> {_shown(after[key])}")
    return found


def _same(old, new) -> bool:
    if isinstance(old, tuple) and isinstance(new, tuple):  # a buffer: the same tensor object, the same values
        return old[0] == new[0] and old[1].shape == new[1].shape and bool(torch.equal(old[1], new[1]))
    return type(old) is type(new) and old == new


def _shown(value) -> str:
    if isinstance(value, tuple):
        tensor = value[1]
        return f"buffer {tuple(tensor.shape)}" if tensor.numel() > 1 else f"buffer {tensor.item():g}"
    return repr(value)


def warning_text(found: list[str], model_name: str) -> str:
    shown = "; ".join(found[:5]) + (f"; and {len(found) - 5} more" if len(found) > 5 else "")
    return (f"{model_name}.forward changed Python-side state while ONNX Runtime exported it ({shown}). Under "
            "backend='ort' the exported graph runs instead of forward, so this state will not change again during "
            f"training; {WAY_OUT}.")
