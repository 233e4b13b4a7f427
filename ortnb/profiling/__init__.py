"""Where a training step goes, op by op, for PyTorch and ONNX Runtime in the same categories."""

from .categories import CATEGORIES, breakdown, category

__all__ = ["CATEGORIES", "breakdown", "category"]
