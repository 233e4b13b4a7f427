"""Trying a trained run: label and class probabilities for texts, a continuation for a prompt.

The model runs in this process (the kernel) in PyTorch eval mode, loaded once per folder by ``Run``; a
classifier's class names come from the id2label its run saved (the data's class names).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from ..errors import ConfigError

MAX_TEXTS = 1024  # one call; more would hold the kernel for minutes on a CPU
BATCH = 32


@dataclass
class Predictor:
    model: object
    tokenizer: object
    source: str  # what the weights are: "the best evaluation (step 40, accuracy 0.812)"

    @classmethod
    def load(cls, folder: Path, source: str) -> "Predictor":
        from transformers import AutoTokenizer

        from ..progress import without_progress_bars

        with without_progress_bars():
            tokenizer = AutoTokenizer.from_pretrained(folder)
        model = load_folder(folder)
        model.eval()
        if tokenizer.pad_token is None:
            tokenizer.pad_token = tokenizer.eos_token or getattr(tokenizer, "unk_token", None)
        return cls(model, tokenizer, source)

    @property
    def causal(self) -> bool:
        return any(a.endswith("ForCausalLM") for a in (self.model.config.architectures or []))

    def names(self) -> list[str]:
        id2label = self.model.config.id2label or {}
        return [str(id2label.get(i, i)) for i in range(self.model.config.num_labels)]


def _texts(texts) -> list[str]:
    if isinstance(texts, str):
        texts = [texts]
    texts = list(texts)
    if not texts:
        raise ConfigError("texts: give at least one text to predict.")
    bad = next((t for t in texts if not isinstance(t, str)), None)
    if bad is not None:
        raise ConfigError(f"texts: every item must be a string, got {type(bad).__name__} {bad!r:.40}.")
    if len(texts) > MAX_TEXTS:
        raise ConfigError(f"texts: {len(texts)} texts at once; predict at most {MAX_TEXTS} per call (or evaluate "
                          "them as an eval_dataset).")
    return texts


def classify(predictor: Predictor, texts) -> list[dict]:
    """Per text ``{"label": name, "probabilities": {name: p}}`` (probabilities sum to 1)."""
    import torch

    if predictor.causal:
        raise ConfigError("predict: this run trained a causal LM, which continues text rather than labelling it; "
                          "use run.generate(prompt).")
    texts, names, results = _texts(texts), predictor.names(), []
    max_length = min(512, getattr(predictor.model.config, "max_position_embeddings", 512) or 512)
    with torch.no_grad():
        for start in range(0, len(texts), BATCH):
            batch = predictor.tokenizer(texts[start:start + BATCH], truncation=True, max_length=max_length,
                                        padding=True, return_tensors="pt")
            probabilities = torch.softmax(predictor.model(**batch).logits.double(), dim=-1)
            for row in probabilities.tolist():
                best = max(range(len(row)), key=row.__getitem__)
                results.append({"label": names[best], "probabilities": dict(zip(names, row))})
    return results


def continue_text(predictor: Predictor, prompt: str, max_new_tokens: int = 40) -> str:
    """The greedy continuation of ``prompt`` (without the prompt)."""
    import torch

    if not predictor.causal:
        raise ConfigError("generate: this run trained a classifier; use run.predict(texts).")
    if not isinstance(prompt, str) or not prompt.strip():
        raise ConfigError("prompt: give some text to continue.")
    if not (isinstance(max_new_tokens, int) and 1 <= max_new_tokens <= 512):
        raise ConfigError(f"max_new_tokens: must be 1 to 512, got {max_new_tokens!r}.")
    inputs = predictor.tokenizer(prompt, return_tensors="pt")
    with torch.no_grad():
        output = predictor.model.generate(**inputs, max_new_tokens=max_new_tokens, do_sample=False,
                                          pad_token_id=predictor.tokenizer.pad_token_id)
    return predictor.tokenizer.decode(output[0, inputs["input_ids"].shape[1]:], skip_special_tokens=True)


def load_folder(folder: Path):
    """A save_pretrained folder as the model class its config names (causal LM or sequence classifier)."""
    from transformers import AutoModelForCausalLM, AutoModelForSequenceClassification

    from ..progress import without_progress_bars

    from .weights import check_folder

    check_folder(folder)  # a cut or foreign weight file is named here, not met as a bare SafetensorError
    config = json.loads((Path(folder) / "config.json").read_text())
    causal = any(a.endswith("ForCausalLM") for a in config.get("architectures", []))
    with without_progress_bars():
        return (AutoModelForCausalLM if causal else AutoModelForSequenceClassification).from_pretrained(folder)
