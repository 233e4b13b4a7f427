"""DDP and DeepSpeed ZeRO with the ORT backend, on 2 CPU ranks started by torchrun (real processes, gloo)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

WORKER = Path(__file__).parent / "workers" / "record_rank_losses.py"
STEPS = 6
GLOBAL_BATCH = 8


def run_ranks(out: Path, mode: str, ranks: int) -> list[dict]:
    out.mkdir(parents=True)
    env = {**os.environ, "DS_ACCELERATOR": "cpu", "OMP_NUM_THREADS": "1"}
    command = [sys.executable, "-m", "torch.distributed.run", "--standalone", f"--nproc_per_node={ranks}",
               str(WORKER), str(out), mode, str(GLOBAL_BATCH), str(STEPS)]
    done = subprocess.run(command, env=env, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-4000:]
    return [json.loads((out / f"rank{rank}.json").read_text()) for rank in range(ranks)]


@pytest.mark.slow
@pytest.mark.parametrize("mode", ["ddp", "zero1"])
def test_two_ranks_match_one_rank_with_the_same_global_batch(tmp_path, mode):
    if mode.startswith("zero"):
        pytest.importorskip("deepspeed")
    single = run_ranks(tmp_path / "one", mode, 1)[0]
    pair = run_ranks(tmp_path / "two", mode, 2)
    assert all(rank["engine"] == "onnxruntime" for rank in [single, *pair])
    assert [rank["world_size"] for rank in pair] == [2, 2]
    if mode == "zero1":
        assert pair[0]["wrapper"] == "DeepSpeedEngine" and pair[0]["optimizer"] == "DeepSpeedZeroOptimizer"
    else:
        assert pair[0]["wrapper"] == "DistributedDataParallel"
    mean_of_ranks = np.mean([pair[0]["losses"], pair[1]["losses"]], axis=0)
    assert len(mean_of_ranks) == STEPS
    # Each rank sees half of the 1-rank batch; gradients are averaged, so every step's loss agrees.
    np.testing.assert_allclose(mean_of_ranks, single["losses"], atol=1e-4, rtol=0)
    assert not np.allclose(pair[0]["losses"], pair[1]["losses"])  # the ranks really saw different data
    # Gradients were synchronised: both ranks end with the same parameters as the 1-rank run.
    np.testing.assert_array_equal(pair[0]["parameters"], pair[1]["parameters"])
    np.testing.assert_allclose(pair[0]["parameters"], single["parameters"], atol=1e-4, rtol=1e-6)
