"""Which weights train on the device: ``trainable`` resolved to PyTorch parameter names. Pure."""

from __future__ import annotations

import difflib
import re

from ..errors import ConfigError

# Where transformers keeps the newly added head of a task model, and each family's stack of layers.
HEAD_PREFIXES = ("classifier.", "score.", "lm_head.", "qa_outputs.", "cls.")
LAYER_INDEX = re.compile(r"^(?P<stack>(?:.*?\.)?(?:layer|layers|h|block|blocks)\.)(?P<index>\d+)\.")
CHOICES = '"head", "last_layers:N", "all" or a list of parameter names'


def resolve(trainable, names: list[str]) -> list[str]:
    """The parameter names (in model order) that ``trainable`` selects from ``names``. ConfigError when it
    selects nothing or names what the model does not have."""
    if isinstance(trainable, str):
        chosen = _by_keyword(trainable.strip(), names)
    elif isinstance(trainable, (list, tuple, set, frozenset)) and all(isinstance(n, str) for n in trainable):
        chosen = _by_name(list(trainable), names)
    else:
        raise ConfigError(f"trainable={trainable!r}: use {CHOICES}")
    if not chosen:
        raise ConfigError(f"trainable={trainable!r} selects no parameter of this model; use {CHOICES}")
    return chosen


def _by_keyword(keyword: str, names: list[str]) -> list[str]:
    if keyword == "all":
        return list(names)
    if keyword == "head":
        head = [n for n in names if n.startswith(HEAD_PREFIXES)]
        if not head:
            raise ConfigError(f'trainable="head": this model has no classification head (no parameter starts with '
                              f'{", ".join(HEAD_PREFIXES)}); name the parameters to train or use "last_layers:N"')
        return head
    if keyword.startswith("last_layers:"):
        count = keyword.partition(":")[2]
        if not count.isdigit() or int(count) < 1:
            raise ConfigError(f'trainable="{keyword}": N must be a whole number of layers, 1 or more '
                              '(e.g. "last_layers:1")')
        return _last_layers(int(count), names)
    raise ConfigError(f"trainable={keyword!r} is not a choice: use {CHOICES}")


def _last_layers(count: int, names: list[str]) -> list[str]:
    """The last ``count`` blocks of the layer stack, and everything after the stack (pooler, head)."""
    indices = {int(m["index"]) for n in names if (m := LAYER_INDEX.match(n))}
    if not indices:
        raise ConfigError('trainable="last_layers:N": this model has no numbered layer stack '
                          '(encoder.layer.N, layers.N, h.N, block.N); name the parameters to train instead')
    if count > len(indices):
        raise ConfigError(f'trainable="last_layers:{count}": the model has only {len(indices)} layers; use '
                          f'"last_layers:{len(indices)}" or "all"')
    keep = sorted(indices)[-count:]
    last_in_stack = max(i for i, n in enumerate(names) if LAYER_INDEX.match(n))
    return [n for i, n in enumerate(names)
            if ((m := LAYER_INDEX.match(n)) and int(m["index"]) in keep) or (i > last_in_stack)]


def _by_name(wanted: list[str], names: list[str]) -> list[str]:
    unknown = [w for w in wanted if w not in names]
    if unknown:
        hints = []
        for name in unknown:
            close = difflib.get_close_matches(name, names, n=3, cutoff=0.6)
            hints.append(f"{name!r} (close: {', '.join(close)})" if close else repr(name))
        raise ConfigError(f"trainable names parameters this model does not have: {'; '.join(hints)}. "
                          "Names are PyTorch's, as model.named_parameters() gives them")
    wanted_set = set(wanted)
    return [n for n in names if n in wanted_set]
