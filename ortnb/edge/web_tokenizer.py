"""Which tokenizer.json files the in-browser tokenizer (``ortnb/edge/web/tokenizer.js``) can reproduce.

The page that trains a model in the browser tokenizes its text itself, with a small JavaScript
WordPiece tokenizer that gives the same ids as the Rust ``tokenizers`` library for BERT-style files:
a ``WordPiece`` model, a ``BertNormalizer`` (any flags) or none, the ``BertPreTokenizer``, a
``TemplateProcessing`` (single template) or ``BertProcessing`` post-processor or none, and added tokens
matched as they are in the raw text. :func:`unsupported` applies the same rules as the JavaScript
``unsupported()``, with the same messages, so a bundle can be refused here before it is written rather
than in the page. Stdlib only, no torch.
"""

from __future__ import annotations

import json

__all__ = ["unsupported"]

NORMALIZER_FLAGS = ("clean_text", "handle_chinese_chars", "strip_accents", "lowercase")
ADDED_TOKEN_FLAGS = ("normalized", "lstrip", "rstrip", "single_word")


def unsupported(tokenizer_json: dict) -> list[str]:
    """What in this parsed tokenizer.json the page cannot reproduce, one message per part; [] when it can.

    The file's own truncation and padding are not read: the page passes its max length and never pads.
    """
    if not isinstance(tokenizer_json, dict):
        return ["not a tokenizer.json object"]
    return [*_model_problems(_object(tokenizer_json.get("model"))),
            *_normalizer_problems(tokenizer_json.get("normalizer")),
            *_pre_tokenizer_problems(_object(tokenizer_json.get("pre_tokenizer"))),
            *_post_processor_problems(tokenizer_json.get("post_processor")),
            *_added_token_problems(tokenizer_json.get("added_tokens"))]


def _model_problems(model: dict) -> list[str]:
    if model.get("type") != "WordPiece":
        return [f"model {_show(model.get('type'))} (the page reads WordPiece)"]
    if not isinstance(model.get("vocab"), dict):
        return ["model WordPiece without a vocab"]
    if not isinstance(model.get("unk_token"), str) or model["unk_token"] not in model["vocab"]:
        return [f"model WordPiece unk_token {_show(model.get('unk_token'))} is not in the vocab"]
    return []


def _normalizer_problems(normalizer) -> list[str]:
    if normalizer is None:
        return []
    normalizer = _object(normalizer)
    if normalizer.get("type") != "BertNormalizer":
        return [f"normalizer {_show(normalizer.get('type'))} (the page reads BertNormalizer or none)"]
    problems = []
    for flag in NORMALIZER_FLAGS:
        value = normalizer.get(flag)
        # Absent means the default; strip_accents may be null: "follow lowercase".
        if flag not in normalizer or isinstance(value, bool) or (flag == "strip_accents" and value is None):
            continue
        problems.append(f"normalizer BertNormalizer {flag}={_show(value)} (the page reads true or false)")
    return problems


def _pre_tokenizer_problems(pre: dict) -> list[str]:
    if pre.get("type") != "BertPreTokenizer":
        return [f"pre_tokenizer {_show(pre.get('type'))} (the page reads BertPreTokenizer)"]
    return []


def _post_processor_problems(post) -> list[str]:
    post_type = _object(post).get("type")
    if post_type == "TemplateProcessing":
        return _template_problems(post)
    if post is not None and post_type != "BertProcessing":
        return [f"post_processor {_show(post_type)} (the page reads TemplateProcessing, BertProcessing or none)"]
    return []


def _template_problems(post: dict) -> list[str]:
    # Only the single-sequence template is read: the page never encodes pairs.
    problems = []
    single = post.get("single") if isinstance(post.get("single"), list) else []
    sequences = [item for item in single if isinstance(_object(item).get("Sequence"), dict)]
    if len(sequences) != 1 or sequences[0]["Sequence"].get("id") != "A":
        problems.append("post_processor TemplateProcessing single template needs exactly one $A")
    special_tokens = _object(post.get("special_tokens"))
    for item in single:
        if isinstance(_object(item).get("Sequence"), dict):
            continue
        name = _object(_object(item).get("SpecialToken")).get("id")
        if not isinstance(name, str):
            problems.append(f"post_processor TemplateProcessing single item {_show(item)} "
                            "(the page reads SpecialToken and Sequence)")
        elif not isinstance(_object(special_tokens.get(name)).get("ids"), list):
            problems.append(f"post_processor TemplateProcessing special token {name} has no ids")
    return problems


def _added_token_problems(added_tokens) -> list[str]:
    problems = []
    for token in added_tokens if isinstance(added_tokens, list) else []:
        # Added tokens matched after normalization, or that swallow the spaces around them, would need
        # the Rust library's offset bookkeeping; BERT's special tokens need none of it.
        for flag in ADDED_TOKEN_FLAGS:
            if _object(token).get(flag):
                problems.append(f"added token {_show(token.get('content'))} {flag}=true "
                                "(the page matches added tokens as they are, in the raw text)")
    return problems


def _object(value) -> dict:
    return value if isinstance(value, dict) else {}


def _show(value) -> str:
    """A value in a message, as the JavaScript writes it: a string as it is, None as "none", else JSON."""
    if isinstance(value, str):
        return value
    return "none" if value is None else json.dumps(value, separators=(",", ":"), ensure_ascii=False)
