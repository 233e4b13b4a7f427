"""ORTTrainer and its arguments (imports transformers)."""

from ..backends.options import OrtFallback
from .arguments import Backend, ORTSeq2SeqTrainingArguments, ORTTrainingArguments
from .trainer import ORTSeq2SeqTrainer, ORTTrainer

__all__ = ["Backend", "ORTSeq2SeqTrainer", "ORTSeq2SeqTrainingArguments", "ORTTrainer", "ORTTrainingArguments",
           "OrtFallback"]
