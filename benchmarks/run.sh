#!/usr/bin/env bash
# Regenerate every recorded measurement in benchmarks/results/ (run on a quiet machine: nothing else
# running; about 110 minutes on 2 CPU cores). Uses the project's .venv.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/env.sh
rm -f "${ORTNB_CACHE:-$HOME/.cache/ortnb}/peak.json"   # re-measure this machine's matmul peak for ortnb's own MFU
runs="$(mktemp -d)"
# 5 variants x 3 repeats, alternated; the roofline's peak is measured fresh in the script itself.
python benchmarks/trainer_vs_ort.py --steps 25 --warmup 5 --repeats 3 --out benchmarks/results/trainer-vs-ort.json
# 12 levers x 1 repeat; a lever that fails is recorded in the JSON and the others still run.
python benchmarks/ort_levers.py --steps 20 --warmup 5 --repeats 1 --out benchmarks/results/ort-levers.json
ortnb compare --steps 30 --warmup 5 --repeats 1 --runs "$runs" --out benchmarks/results/optimum-preset
rm -f benchmarks/results/optimum-preset/report.html   # 4.8 MB with plotly inlined: regenerate, don't commit
# where a MiniLM step goes, eager and ORT at two paddings and eager bf16 (about 2 minutes)
ortnb profile --config benchmarks/profile_minilm.json --steps 5 --warmup 3 --runs "$runs" --out "$runs/profile"
cp "$runs/profile/profile.json" benchmarks/results/profile-minilm.json
# ortnb tune's default search (180 s) against an exhaustive compare of its grid (about 25 minutes), then the
# same Rotten Tomatoes samples through plain Trainer, a careful Trainer and the tuned winner (one epoch, about 20 minutes).
python benchmarks/tune_check.py --out benchmarks/results/tune-check.json
python benchmarks/time_to_accuracy.py --out benchmarks/results/time-to-accuracy.json
# until accuracy 0.80, four ways, three alternated repeats (about 40 minutes)
python benchmarks/time_to_target.py --target 0.80 --repeats 3 --out benchmarks/results/time-to-target-v3.json
# ORT vs eager beyond text: a DDPM UNet (32x32 digits), a ViT and Whisper tiny configs in hand-written loops (about 3 minutes).
python benchmarks/beyond_text.py --steps 10 --warmup 3 --repeats 3 --out benchmarks/results/beyond-text.json
# the data phase tokenized vs read from the tokenized-data cache, fresh processes (about 1 minute)
python benchmarks/startup.py --repeats 5 --out benchmarks/results/startup.json
# a run's first step: first launch, launched again, a warm worker's second run (about 3 minutes)
python benchmarks/first_step.py --repeats 3 --out benchmarks/results/first-step.json
# the session's warm worker (ortnb.launch(warm=True), the Dashboard's default) against a cold launch
python benchmarks/warm_start.py --repeats 3 --out benchmarks/results/warm-start.json
# on-device training against ORTModule and eager: 9 configurations x 3 fresh-process runs (about 11 minutes)
python benchmarks/edge.py --steps 20 --warmup 5 --repeats 3 --out benchmarks/results/edge.json
# the same artifacts training in headless Chromium (1 thread; isolated, threaded) next to the Python training API
# and eager PyTorch (about 2 minutes; needs chromium and `ortnb setup --web`)
python benchmarks/edge_web.py --steps 20 --warmup 5 --repeats 2 --out benchmarks/results/edge-web.json
