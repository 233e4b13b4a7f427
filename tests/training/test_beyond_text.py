"""Beyond text: Stable Diffusion's and DDPM's UNets in a hand-written loop through ort_model, Whisper through
ORTSeq2SeqTrainer, ViT through ORTTrainer on real images. Each trains through ONNX Runtime with eager PyTorch's
losses (dropout 0, same seed) over a few steps."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from transformers import Seq2SeqTrainer, Seq2SeqTrainingArguments, Trainer, TrainingArguments

import ortnb
from ortnb import ORTSeq2SeqTrainer, ORTSeq2SeqTrainingArguments, ORTTrainer, ORTTrainingArguments

from .._helpers import COMMON, record_losses

STEPS = 3
pytestmark = [pytest.mark.ort,  # trains with ORTTrainer and ort_model in this process
              pytest.mark.filterwarnings("ignore::torch.jit.TracerWarning")]  # diffusers' shape asserts, traced


def sd_unet():
    """Stable Diffusion's UNet, tiny: cross-attention blocks reading text-encoder states."""
    from diffusers import UNet2DConditionModel

    torch.manual_seed(0)
    return UNet2DConditionModel(sample_size=16, in_channels=4, out_channels=4, layers_per_block=1,
                                block_out_channels=(32, 64), norm_num_groups=8, cross_attention_dim=32,
                                attention_head_dim=8, down_block_types=("CrossAttnDownBlock2D", "DownBlock2D"),
                                up_block_types=("UpBlock2D", "CrossAttnUpBlock2D"))


def ddpm_unet():
    from diffusers import UNet2DModel

    torch.manual_seed(0)
    return UNet2DModel(sample_size=16, in_channels=1, out_channels=1, layers_per_block=1, block_out_channels=(16, 32),
                       norm_num_groups=8, down_block_types=("DownBlock2D", "AttnDownBlock2D"),
                       up_block_types=("AttnUpBlock2D", "UpBlock2D"))


def noise_prediction_losses(model, clean_batches, context=None) -> list[float]:
    """The DDPM / Stable Diffusion objective: predict the noise added at a random timestep (MSE)."""
    from diffusers import DDPMScheduler

    scheduler = DDPMScheduler(num_train_timesteps=1000)
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)
    generator = torch.Generator().manual_seed(1)
    model.train()
    losses = []
    for clean in clean_batches:
        noise = torch.randn(clean.shape, generator=generator)
        timesteps = torch.randint(0, scheduler.config.num_train_timesteps, (clean.shape[0],), generator=generator)
        extra = {} if context is None else {"encoder_hidden_states": context}
        prediction = model(scheduler.add_noise(clean, noise, timesteps), timesteps, **extra).sample
        loss = torch.nn.functional.mse_loss(prediction, noise)
        loss.backward()
        optimizer.step()
        optimizer.zero_grad()
        losses.append(loss.item())
    return losses


def assert_onnxruntime_matched_eager(model, ort_losses, eager_losses):
    np.testing.assert_allclose(ort_losses, eager_losses, atol=1e-4, rtol=0)
    report = ortnb.engine_report(model)
    assert (report["engine"], report["fallback"], report["ort_steps"], report["pytorch_steps"]) == \
        ("onnxruntime", None, STEPS, 0)
    assert report["exports"] == 1  # one graph for every batch


def test_stable_diffusion_unet_in_a_custom_loop():
    pytest.importorskip("diffusers")
    generator = torch.Generator().manual_seed(0)
    latents = [torch.randn(4, 4, 16, 16, generator=generator) for _ in range(STEPS)]  # VAE latents' shape
    context = torch.randn(4, 7, 32, generator=generator)  # text-encoder states for cross-attention
    eager = noise_prediction_losses(sd_unet(), latents, context)
    model = ortnb.ort_model(sd_unet())
    assert_onnxruntime_matched_eager(model, noise_prediction_losses(model, latents, context), eager)


def test_ddpm_unet_on_real_digits_in_a_custom_loop():
    pytest.importorskip("diffusers")
    pytest.importorskip("sklearn")
    from ortnb import assets

    images, _ = assets.digits(size=16)
    clean = [images[i * 8:(i + 1) * 8] * 2 - 1 for i in range(STEPS)]  # DDPM works in [-1, 1]
    eager = noise_prediction_losses(ddpm_unet(), clean)
    model = ortnb.ort_model(ddpm_unet())
    assert_onnxruntime_matched_eager(model, noise_prediction_losses(model, clean), eager)


def tiny_whisper():
    from transformers import WhisperConfig, WhisperForConditionalGeneration

    torch.manual_seed(0)
    config = WhisperConfig(vocab_size=100, num_mel_bins=16, d_model=32, encoder_layers=2, decoder_layers=2,
                           encoder_attention_heads=2, decoder_attention_heads=2, encoder_ffn_dim=64,
                           decoder_ffn_dim=64, max_source_positions=16, max_target_positions=16, pad_token_id=0,
                           bos_token_id=1, eos_token_id=2, decoder_start_token_id=1, dropout=0.0,
                           attention_dropout=0.0, activation_dropout=0.0)
    return WhisperForConditionalGeneration(config)


def test_whisper_through_ort_seq2seq_trainer(tmp_path):
    """Log-mel input_features (16 bins x 32 frames, synthetic: no speech corpus ships offline) and labels only,
    as speech fine-tuning scripts pass them: the decoder then runs transformers' packed-sequence check."""
    from datasets import Dataset

    generator = torch.Generator().manual_seed(0)
    data = Dataset.from_dict({"input_features": torch.randn(8 * STEPS, 16, 32, generator=generator).tolist(),
                              "labels": torch.randint(3, 100, (8 * STEPS, 8), generator=generator).tolist()})
    losses = {}
    for name, trainer_cls, args_cls in (("eager", Seq2SeqTrainer, Seq2SeqTrainingArguments),
                                        ("ort", ORTSeq2SeqTrainer, ORTSeq2SeqTrainingArguments)):
        record = record_losses()
        args = args_cls(output_dir=str(tmp_path / name), max_steps=STEPS, **COMMON)
        trainer = trainer_cls(model=tiny_whisper(), args=args, train_dataset=data, callbacks=[record])
        trainer.train()
        losses[name] = record.losses
    np.testing.assert_allclose(losses["ort"], losses["eager"], atol=1e-4, rtol=0)
    report = trainer.engine_report()
    assert (report["engine"], report["ort_steps"], report["fallback"]) == ("onnxruntime", STEPS, None)
    assert report["attention"] == "eager (switched from sdpa)"


def tiny_vit():
    from transformers import ViTConfig, ViTForImageClassification

    torch.manual_seed(0)
    config = ViTConfig(image_size=16, patch_size=4, num_channels=1, hidden_size=32, num_hidden_layers=2,
                       num_attention_heads=2, intermediate_size=64, num_labels=10, hidden_dropout_prob=0.0,
                       attention_probs_dropout_prob=0.0)
    return ViTForImageClassification(config)


def test_vit_through_ort_trainer_on_real_digits(tmp_path):
    pytest.importorskip("sklearn")
    from datasets import Dataset

    from ortnb import assets

    images, labels = assets.digits(size=16)
    data = Dataset.from_dict({"pixel_values": images[:8 * STEPS].tolist(), "labels": labels[:8 * STEPS].tolist()})
    losses = {}
    for name, trainer_cls, args_cls in (("eager", Trainer, TrainingArguments), ("ort", ORTTrainer, ORTTrainingArguments)):
        record = record_losses()
        args = args_cls(output_dir=str(tmp_path / name), max_steps=STEPS, **COMMON)
        trainer = trainer_cls(model=tiny_vit(), args=args, train_dataset=data, callbacks=[record])
        trainer.train()
        losses[name] = record.losses
    np.testing.assert_allclose(losses["ort"], losses["eager"], atol=1e-4, rtol=0)
    report = trainer.engine_report()
    assert (report["engine"], report["ort_steps"], report["fallback"]) == ("onnxruntime", STEPS, None)
