"""A look at the model before any run starts, shared by ``validate()`` and the worker: does its head fit
the data's classes, and does its tokenizer turn text into tokens and pad a batch?

- A saved classifier whose classes differ from the data's gets a new head, said plainly (``HeadPlan.note``);
  one with the same class names keeps its head, and the data's ids follow the saved id2label.
- A folder without tokenizer files would get transformers 5's empty stand-in (every word [UNK]): refused.
- A tokenizer without a pad token pads with its end-of-sequence or unknown token (said), or is refused.
"""

from __future__ import annotations

import functools
import json
import re
from dataclasses import dataclass
from pathlib import Path

from ..data.checks import Labels
from ..vocabulary import Task

TOKENIZER_FILES = ("tokenizer.json", "tokenizer_config.json", "vocab.txt", "vocab.json", "spiece.model",
                   "tokenizer.model", "sentencepiece.bpe.model")
MIN_VOCABULARY = 100  # fewer tokens than this is no real tokenizer (transformers' empty stand-in has 5)
_DEFAULT_NAME = re.compile(r"LABEL_\d+")


@dataclass(frozen=True)
class HeadPlan:
    labels: Labels | None  # the data's classes, in the order the head's outputs take them
    new_head: bool  # the saved head is not used (another number or other names of classes)
    note: str | None = None  # what a user should read before the run


def head_plan(saved: dict | None, labels: Labels | None) -> HeadPlan:
    """How a model whose config.json holds ``saved`` (None: not known) trains on ``labels`` (pure)."""
    if labels is None or not saved or not _is_classifier(saved):
        return HeadPlan(labels, new_head=True)
    saved_names = _saved_names(saved)
    count = len(saved_names) if saved_names else int(saved.get("num_labels") or 2)
    if count != labels.count:
        return HeadPlan(labels, True, f"new {labels.count}-class head; the saved {count}-class head is not used")
    named = saved_names and not all(_DEFAULT_NAME.fullmatch(n) for n in saved_names)
    if not named or not labels.names:
        # ids 0..K-1 in both, or unnamed saved classes: the head is kept; names come from where they exist
        return HeadPlan(Labels(count, labels.names or (tuple(saved_names) if named else None), labels.mapped), False)
    if set(saved_names) == set(labels.names):
        return HeadPlan(Labels(count, tuple(saved_names), labels.mapped), False)  # ids as the saved head has them
    shown = ", ".join(saved_names)
    return HeadPlan(labels, True, f"new {labels.count}-class head; the saved head's classes ({shown}) are not the "
                                  f"data's ({', '.join(labels.names)}), so it is not used")


def _is_classifier(saved: dict) -> bool:
    return any(str(a).endswith("ForSequenceClassification") for a in saved.get("architectures") or [])


def _saved_names(saved: dict) -> list[str] | None:
    id2label = saved.get("id2label")
    if not isinstance(id2label, dict) or not id2label:
        return None
    try:
        return [str(id2label[key]) for key in sorted(id2label, key=int)]
    except (TypeError, ValueError):
        return None


def saved_config(model: str) -> dict | None:
    """config.json of a local folder, or of a Hub id already in the local cache; None when not known."""
    path = Path(model).expanduser()
    file = path / "config.json" if path.is_dir() else _cached_hub_file(model, "config.json")
    if file is None:
        return None
    try:
        data = json.loads(Path(file).read_text())
    except (OSError, ValueError):
        return None  # the loader reports an unreadable config with its own message
    return data if isinstance(data, dict) else None


def looks_like_path(model: str) -> bool:
    """Whether ``model`` names a local folder rather than a Hub id (org/name): it starts with ./ ../ / or ~ (or any
    dot: no Hub id does), its first part is a folder here (models/nope, when models/ exists), or it has more than
    one slash (a Hub id has exactly one). A plain org/name with no such folder here is a Hub id."""
    if model.startswith((".", "/", "~")):
        return True
    return model.count("/") > 1 or ("/" in model and Path(model.split("/")[0]).is_dir())


def _cached_hub_file(repo: str, name: str) -> str | None:
    if "/" not in repo or looks_like_path(repo):
        return None
    try:
        from huggingface_hub import try_to_load_from_cache
    except ImportError:
        return None
    try:
        found = try_to_load_from_cache(repo, name)
    except Exception:  # noqa: BLE001 - an id that is no repository name: the loader says so later
        return None
    return found if isinstance(found, str) else None


# -- the tokenizer -------------------------------------------------------------------------------


@dataclass(frozen=True)
class TokenizerLook:
    problems: tuple[str, ...] = ()
    notes: tuple[str, ...] = ()


def pad_choice(pad: str | None, eos: str | None, unk: str | None) -> tuple[str | None, str | None]:
    """(token to pad with, note): the pad token; else end-of-sequence, else unknown (the attention mask hides
    padding, so which token fills it does not change what the model reads); else none."""
    if pad is not None:
        return pad, None
    for token, what in ((eos, "end-of-sequence"), (unk, "unknown-word")):
        if token is not None:
            return token, f"the tokenizer has no pad token; ortnb pads batches with its {what} token {token!r}"
    return None, None


def tokenizer_problems(tokenizer, name: str, task: str, embeddings: int | None = None) -> TokenizerLook:
    """What stops ``tokenizer`` from feeding a run, and what a user should know about it. ``embeddings``: rows
    of the model's input embeddings (None: not known)."""
    size = len(tokenizer)
    if embeddings is not None and size > embeddings:
        return TokenizerLook((too_many_tokens(name, size, embeddings),))
    if size < MIN_VOCABULARY:
        return TokenizerLook((f"{name}'s tokenizer has only {size} tokens, so nearly every word would be read as "
                              "an unknown token; save the model's real tokenizer beside it "
                              f"(tokenizer.save_pretrained('{name}')).",))
    if task == Task.CAUSAL_LM:
        return TokenizerLook()  # full blocks of tokens: nothing is padded
    token, note = pad_choice(tokenizer.pad_token, tokenizer.eos_token, getattr(tokenizer, "unk_token", None))
    if token is None:
        return TokenizerLook((f"{name}'s tokenizer has no pad, end-of-sequence or unknown token to pad batches "
                              "with; add one and save it: tokenizer.add_special_tokens({'pad_token': '[PAD]'}); "
                              f"tokenizer.save_pretrained('{name}'), then model.resize_token_embeddings(len("
                              f"tokenizer)); model.save_pretrained('{name}').",))
    return TokenizerLook(notes=(note,) if note else ())


def too_many_tokens(name: str, tokens: int, embeddings: int) -> str:
    return (f"{name}'s tokenizer has {tokens} tokens but the model's embeddings hold {embeddings} (config.json's "
            f"vocab_size): a text with a token numbered {embeddings} or above would stop the run with 'index out of "
            "range'. Save the tokenizer the model was trained with beside it, or grow the embeddings to fit: "
            f"model.resize_token_embeddings(len(tokenizer)); model.save_pretrained('{name}').")


def embedding_rows(saved: dict | None) -> int | None:
    """Rows of a model's input embeddings as its config.json says (vocab_size; a multimodal model's text part)."""
    saved = saved or {}
    value = saved.get("vocab_size", (saved.get("text_config") or {}).get("vocab_size"))
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else None


def weights_problems(folder: str, task: str) -> list[str]:
    """Why a local folder's weights cannot start a run: a damaged weight file (named), or weights of another
    architecture than config.json names (beyond a new head: the counts and a few names)."""
    from . import weights

    damaged = weights.folder_problems(folder)
    if damaged:
        return damaged
    found = weights.fit(folder, task)
    if found is None or found.fits:
        return []
    return [weights.describe_misfit(folder, found, saved_config(folder))]


def look_tokenizer(folder: str, task: str) -> TokenizerLook:
    """The tokenizer of a local model folder (cached per folder state: the form checks on every change)."""
    path = Path(folder).expanduser()
    stamp = tuple((f, (path / f).stat().st_mtime_ns) for f in TOKENIZER_FILES if (path / f).exists())
    config = path / "config.json"  # its vocab_size is checked against the tokenizer
    return _look_tokenizer(str(path), task, stamp, config.stat().st_mtime_ns if config.exists() else None)


@functools.lru_cache(maxsize=16)
def _look_tokenizer(folder: str, task: str, stamp: tuple, _config_stamp: int | None = None) -> TokenizerLook:
    path = Path(folder)
    if not stamp:
        return TokenizerLook((f"{path.name} holds no tokenizer (none of {', '.join(TOKENIZER_FILES[:3])}, ...); "
                              "transformers would build an empty one and every word would be read as [UNK]. Save "
                              f"the tokenizer beside the model: tokenizer.save_pretrained('{folder}').",))
    from transformers import AutoTokenizer

    from ..progress import without_progress_bars

    try:
        with without_progress_bars():
            tokenizer = AutoTokenizer.from_pretrained(folder)
    except Exception as error:  # noqa: BLE001 - any loader failure is the same problem for the user
        return TokenizerLook((f"{path.name}'s tokenizer cannot be loaded ({type(error).__name__}: "
                              f"{str(error).splitlines()[0][:200]}); save it again with tokenizer.save_pretrained.",))
    return tokenizer_problems(tokenizer, path.name, task, embedding_rows(saved_config(folder)))
