"""What runs the training steps.

- ``ort``: ONNX Runtime through ORTModule (``ortmodule.py``), made to work on current torch by
  ``ort_compat.py`` (the fixes) and ``ort_extensions.py`` (the C++ extension build).
- ``eager``: plain PyTorch; nothing to attach.
- ``compile``: torch.compile, through transformers' own ``torch_compile=True`` path.
"""
