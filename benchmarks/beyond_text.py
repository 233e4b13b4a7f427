"""ORT against eager PyTorch beyond text: a DDPM UNet, a ViT and Whisper, in hand-written loops, fp32, CPU.

What: three tiny configs, each trained by the same bare loop (forward, loss, backward, AdamW, zero_grad) in a
fresh process, once as the plain PyTorch model ("eager") and once through ``ortnb.ort_model`` ("ort", the
engine ORTTrainer uses). Variants are alternated over repeats in one invocation (harness.alternate); the first
WARMUP steps of each run (the ORT export and graph build among them) are dropped; medians and interquartile
ranges of step times are reported, and every ratio compares medians from this invocation.

    python benchmarks/beyond_text.py --steps 14 --warmup 4 --repeats 2 --out benchmarks/results/beyond-text.json

Models (seed 0, dropout 0, batch of real digits where images are needed):
  unet     diffusers UNet2DModel, DDPM: scikit-learn's digits upsampled to 32x32, 1 channel, blocks (32, 64),
           one layer each, attention at 16x16, batch 16; loss = MSE of the predicted noise at a random timestep
  vit      transformers ViTForImageClassification: digits at 16x16, patches 4x4, width 64, 4 layers, 4 heads,
           batch 32; cross-entropy over 10 classes
  whisper  transformers WhisperForConditionalGeneration: 16 mel bins x 32 frames (synthetic: no speech ships
           offline), width 64, 2+2 layers, 4 heads, 12 label tokens, batch 8
Variant ``unet-ort-1thread`` is unet-ort with torch.set_num_threads(1): ORTModule runs GroupNorm through an
ATen node (PyTorch's kernel inside the ORT graph), and PyTorch's thread pool then competes with ORT's.

Model FLOPs per step are counted by torch.utils.flop_counter on one eager forward+backward of the same batch
(matmuls, convolutions, attention; a convolution's FLOPs are not 6N per sample). MFU = those FLOPs per second
over this machine's fp32 matmul peak (best of 5 fresh ortnb.flops.measure_peak calls, in the parent first).
Every ORT run records the engine that really ran (ortnb.engine_report); one that fell back to PyTorch is
recorded and not counted. ``uptime`` load averages before and after are kept: this is a shared 2-core machine.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time

import harness

VARIANTS = ("unet-eager", "unet-ort", "unet-ort-1thread", "vit-eager", "vit-ort", "whisper-eager", "whisper-ort")
BATCH = {"unet": 16, "vit": 32, "whisper": 8}


# --- child side: one model, one engine, one bare loop ----------------------------------------------


def _unet():
    import torch
    from diffusers import DDPMScheduler, UNet2DModel

    from ortnb import assets

    torch.manual_seed(harness.SEED)
    model = UNet2DModel(sample_size=32, in_channels=1, out_channels=1, layers_per_block=1, block_out_channels=(32, 64),
                        norm_num_groups=8, down_block_types=("DownBlock2D", "AttnDownBlock2D"),
                        up_block_types=("AttnUpBlock2D", "UpBlock2D"))
    images = assets.digits(size=32)[0] * 2 - 1
    scheduler = DDPMScheduler(num_train_timesteps=1000)
    generator = torch.Generator().manual_seed(harness.SEED)

    def batch(step):
        clean = images[step * BATCH["unet"]:(step + 1) * BATCH["unet"]]
        noise = torch.randn(clean.shape, generator=generator)
        timesteps = torch.randint(0, 1000, (len(clean),), generator=generator)
        return (scheduler.add_noise(clean, noise, timesteps), timesteps), noise

    def loss(model, inputs, target):
        return torch.nn.functional.mse_loss(model(*inputs).sample, target)

    return model, batch, loss


def _vit():
    import torch
    from transformers import ViTConfig, ViTForImageClassification

    from ortnb import assets

    torch.manual_seed(harness.SEED)
    model = ViTForImageClassification(ViTConfig(image_size=16, patch_size=4, num_channels=1, hidden_size=64,
                                                num_hidden_layers=4, num_attention_heads=4, intermediate_size=128,
                                                num_labels=10, hidden_dropout_prob=0.0,
                                                attention_probs_dropout_prob=0.0))
    images, labels = assets.digits(size=16)

    def batch(step):
        rows = slice(step * BATCH["vit"], (step + 1) * BATCH["vit"])
        return (), {"pixel_values": images[rows], "labels": labels[rows]}

    def loss(model, _inputs, kwargs):
        return model(**kwargs).loss

    return model, batch, loss


def _whisper():
    import torch
    from transformers import WhisperConfig, WhisperForConditionalGeneration

    torch.manual_seed(harness.SEED)
    model = WhisperForConditionalGeneration(WhisperConfig(
        vocab_size=200, num_mel_bins=16, d_model=64, encoder_layers=2, decoder_layers=2, encoder_attention_heads=4,
        decoder_attention_heads=4, encoder_ffn_dim=128, decoder_ffn_dim=128, max_source_positions=16,
        max_target_positions=32, pad_token_id=0, bos_token_id=1, eos_token_id=2, decoder_start_token_id=1,
        dropout=0.0, attention_dropout=0.0, activation_dropout=0.0))
    generator = torch.Generator().manual_seed(harness.SEED)

    def batch(_step):
        return (), {"input_features": torch.randn(BATCH["whisper"], 16, 32, generator=generator),
                    "labels": torch.randint(3, 200, (BATCH["whisper"], 12), generator=generator)}

    def loss(model, _inputs, kwargs):
        return model(**kwargs).loss

    return model, batch, loss


MODELS = {"unet": _unet, "vit": _vit, "whisper": _whisper}


def _flops_per_step(model, loss, inputs, target) -> float:
    """FLOPs of one eager forward+backward (torch's counter), before any engine is attached."""
    from torch.utils.flop_counter import FlopCounterMode

    counter = FlopCounterMode(display=False)
    with counter:
        loss(model, inputs, target).backward()
    model.zero_grad(set_to_none=True)
    return float(counter.get_total_flops())


def measure(variant: str, steps: int) -> dict:
    import warnings

    import torch

    import ortnb

    warnings.filterwarnings("ignore", category=torch.jit.TracerWarning)
    name, _, engine = variant.partition("-")
    model, batch, loss = MODELS[name]()
    model.train()
    flops = _flops_per_step(model, loss, *batch(0))
    if engine.startswith("ort"):
        model = ortnb.ort_model(model)
    if engine == "ort-1thread":
        torch.set_num_threads(1)
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)
    times = []
    for step in range(steps):
        inputs, target = batch(step)
        started = time.perf_counter()
        loss(model, inputs, target).backward()
        optimizer.step()
        optimizer.zero_grad()
        times.append(time.perf_counter() - started)
    result = {"variant": variant, "step_times": times, "flops_per_step": flops, "batch": BATCH[name],
              "torch_threads": torch.get_num_threads(), "engine": "pytorch"}
    if engine.startswith("ort"):
        report = ortnb.engine_report(model)
        result.update(engine=report["engine"], engine_report=report)
        if report["engine"] != "onnxruntime" or report["pytorch_steps"]:
            result["not_counted"] = f"ORT did not run every step: {report['fallback']}"
    return result


# --- parent side ----------------------------------------------------------------------------------------


def load() -> str:
    return subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip()


def peak() -> dict:
    import os

    from ortnb import flops

    threads = os.cpu_count() or 1
    samples = [flops.measure_peak("fp32", threads) for _ in range(harness.PEAK_SAMPLES)]
    return {"peak_flops": max(samples), "peak_samples_flops": samples, "peak_threads": threads,
            "peak_method": f"max of {harness.PEAK_SAMPLES} ortnb.flops.measure_peak('fp32', {threads}) calls, fresh"}


def summarise(outcome: harness.Outcome, variants: list[str], roof: dict) -> dict:
    stats = {v: harness.summary(outcome.times[v]) for v in variants}
    medians = {v: s["median_s"] for v, s in stats.items() if s["median_s"]}
    flops = {v: next((r["flops_per_step"] for r in outcome.results(v)), None) for v in variants}
    ratios = {}
    for ort in (v for v in variants if "-ort" in v):
        eager = ort.split("-")[0] + "-eager"
        if medians.get(ort) and medians.get(eager):
            ratios[f"{ort}_vs_eager"] = medians[eager] / medians[ort]
    return {
        "median_step_s": medians, "iqr_step_s": {v: s["iqr_s"] for v, s in stats.items()},
        "steps_measured": {v: s["n"] for v, s in stats.items()},
        "samples_per_s": {v: BATCH[v.split("-")[0]] / m for v, m in medians.items()},
        "ratios_vs_eager": ratios,
        "flops_per_step": flops,
        "mfu": {v: flops[v] / m / roof["peak_flops"] for v, m in medians.items() if flops.get(v)},
        "engine": {v: sorted({str(r.get("engine")) for r in outcome.results(v)}) for v in variants},
        "first_step_s": {v: [r["step_times"][0] for r in outcome.results(v)] for v in variants},
        "time_to_first_step_s": {v: [r["engine_report"]["time_to_first_step_s"] for r in outcome.results(v)]
                                 for v in variants if "-ort" in v},
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--steps", type=int, default=14)
    parser.add_argument("--warmup", type=int, default=4)
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--variants", default=",".join(VARIANTS))
    parser.add_argument("--out", default="benchmarks/results/beyond-text.json")
    parser.add_argument("--one", help=argparse.SUPPRESS)  # internal: measure one variant in this process
    options = parser.parse_args()
    if options.one:
        harness.emit(measure(options.one, options.steps))
        return
    variants = options.variants.split(",")
    unknown = sorted(set(variants) - set(VARIANTS))
    if unknown:
        parser.error(f"unknown variant(s) {unknown}; known: {', '.join(VARIANTS)}")
    if options.steps <= options.warmup:
        parser.error("--steps must exceed --warmup")
    load_before = load()
    roof = peak()
    print(f"fp32 matmul peak {roof['peak_flops'] / 1e9:.1f} GFLOP/s; load: {load_before}", flush=True)

    def command_for(variant: str) -> list[str]:
        return [sys.executable, __file__, "--one", variant, "--steps", str(options.steps)]

    outcome = harness.alternate(variants, options.repeats, command_for, options.warmup, timeout=900)
    result = {"command": "python " + " ".join(sys.argv), "date": time.strftime("%Y-%m-%d %H:%M:%S %Z"),
              "steps": options.steps, "warmup": options.warmup, "repeats": options.repeats, "variants": variants,
              "batch": BATCH, "load_before": load_before, "load_after": load(), "roofline": roof,
              **summarise(outcome, variants, roof), "failures": outcome.failures(), "runs": outcome.runs}
    harness.write(options.out, result)
    print(json.dumps({k: result[k] for k in ("median_step_s", "ratios_vs_eager", "mfu", "engine", "load_before",
                                             "load_after")}, indent=2))


if __name__ == "__main__":
    main()
