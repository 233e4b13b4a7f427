"""transformers models train under ORT with eager attention: ORT cannot build the gradient graph of torch's
scaled_dot_product_attention as transformers calls it (with a mask; see ort-on-current-pytorch.md, item 5).

The switch is made when the ORT engine attaches and undone when it detaches, so evaluation and generation
after training get the user's attention back. diffusers' attention (no mask in a UNet) trains as it is.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass

import torch

logger = logging.getLogger("ortnb")


@dataclass
class AttentionSwitch:
    note: str | None  # for the engine report: the attention that trains, and what it replaced
    switched_from: str | None = None


def use_eager_attention(model: torch.nn.Module) -> AttentionSwitch:
    config = getattr(model, "config", None)
    current = getattr(config, "_attn_implementation", None)
    if current in (None, "eager") or not hasattr(model, "set_attn_implementation"):
        return AttentionSwitch(note=current)
    model.set_attn_implementation("eager")
    logger.warning("ortnb: attention switched from %r to 'eager' for ONNX Runtime, which cannot build the "
                   "gradient of scaled_dot_product_attention; the numbers are the same.", current)
    return AttentionSwitch(note=f"eager (switched from {current})", switched_from=current)


def restore_attention(model: torch.nn.Module, switch: AttentionSwitch | None) -> None:
    if switch is not None and switch.switched_from:
        model.set_attn_implementation(switch.switched_from)
        switch.switched_from = None
