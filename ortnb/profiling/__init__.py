"""Where a training step goes, op by op, for PyTorch and ONNX Runtime in the same categories.

``profile(configs)`` (profiles.py) trains each configuration a few steps in a fresh run with the profilers on
(collect.py, in the worker), reads what they wrote (parse.py), sorts every op into shared categories
(categories.py) and shows it (views.py: a stacked bar per configuration, the top ops with their shapes).
"""

from .categories import CATEGORIES, breakdown, category
from .profiles import Profile, profile

__all__ = ["CATEGORIES", "Profile", "breakdown", "category", "profile"]
