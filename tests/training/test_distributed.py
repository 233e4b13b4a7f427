"""DDP and DeepSpeed ZeRO with the ORT backend, on 2 CPU ranks started by torchrun (real processes, gloo)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np
import pytest

WORKER = Path(__file__).parent.parent / "workers" / "record_rank_losses.py"
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


def free_port() -> int:
    import socket

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def listeners_while(processes: list[subprocess.Popen]) -> list[tuple]:
    """Every listening socket the processes' families opened, looked at twice a second until they end."""
    from .._helpers import listeners

    seen = []
    while any(process.poll() is None for process in processes):
        seen.extend(listeners())
        time.sleep(0.5)
    return seen


@pytest.mark.slow
def test_two_nodes_on_localhost_train_one_zero1_run_through_ortnb_run(tmp_path):
    """What the README says a cluster does: `ortnb run config.json -- <torchrun node args>` on every node.
    Here two "nodes" on localhost, one process each, meet through a c10d rendezvous. Each node's
    `ortnb run` follows its own run folder; node 0 (global rank 0) saves the model."""
    pytest.importorskip("deepspeed")
    import ortnb
    from ortnb import metrics

    config = tmp_path / "config.json"
    ortnb.RunConfig(model="tiny-bert", dataset="rotten_tomatoes", backend="ort", batch_size=8, seq_len=32,
                    max_steps=4, warmup_steps=0, zero_stage=1, num_processes=1, threads=1,
                    output_dir=str(tmp_path / "runs")).to_json(config)
    endpoint = f"127.0.0.1:{free_port()}"
    nodes = [subprocess.Popen([sys.executable, "-m", "ortnb", "run", str(config), "--", "--nnodes", "2",
                               "--node_rank", str(node), "--rdzv_backend", "c10d", "--rdzv_endpoint", endpoint],
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for node in (0, 1)]
    with ThreadPoolExecutor(1) as pool:
        watch = pool.submit(listeners_while, nodes)
        outputs = [node.communicate(timeout=300) for node in nodes]
        seen = watch.result()
    # Across nodes the stores listen where the user named an address (or this host's name), never on every interface.
    assert seen and not [found for found in seen if found[2] in ("::", "0.0.0.0")], seen
    for node, (out, err) in zip(nodes, outputs):
        assert node.returncode == 0, out[-2000:] + err[-3000:]
        assert out.count("samples/s") == 4 and "completed; engine onnxruntime" in out
    runs = [ortnb.attach(out.split(" in ", 1)[1].splitlines()[0]) for out, _ in outputs]
    assert runs[0].run_dir != runs[1].run_dir
    started = [metrics.events(run.records(), "started")[0] for run in runs]
    assert sorted(s["rank"] for s in started) == [0, 1] and {s["world_size"] for s in started} == {2}
    assert sorted(s["node_rank"] for s in started) == [0, 1]
    # ZeRO-1 across the nodes: each of the 2 ranks holds half of AdamW's two fp32 moments (8 bytes/parameter).
    parameters = started[0]["parameters"]
    for run in runs:
        state = [run.metrics[f"optimizer_state_mb_rank{rank}"].iloc[-1] for rank in (0, 1)]
        assert state == pytest.approx([8 * parameters / 2 / 2**20] * 2, rel=0.01)
    # The nodes computed the same losses (averaged over both ranks) and ended with the same parameters...
    np.testing.assert_array_equal(runs[0].metrics["loss"], runs[1].metrics["loss"])
    checksums = [run.events[-1]["parameter_checksum"] for run in runs]
    assert runs[0].events[-1]["event"] == "completed" and checksums[0] == checksums[1]
    # ...which is the model that global rank 0 saved.
    writer = runs[[s["rank"] for s in started].index(0)]
    saved = writer.load_model(which="last")  # the final weights (load_model() prefers the best evaluation)
    assert float(sum(p.detach().double().sum() for p in saved.parameters())) == pytest.approx(checksums[0], rel=1e-9)


def test_zero_with_one_process_per_node_is_refused_on_one_node_only(tmp_path):
    import ortnb
    from ortnb.runner.launch import nodes
    from ortnb.validation import check

    assert nodes(None) == 1 and nodes(["--standalone"]) == 1
    assert nodes(["--nnodes", "2", "--node_rank", "0"]) == 2 and nodes(["--nnodes=1:4"]) == 4
    cfg = ortnb.RunConfig(model="tiny-bert", dataset="rotten_tomatoes", zero_stage=1, num_processes=1,
                          output_dir=str(tmp_path / "runs"))
    with pytest.raises(ortnb.ConfigError, match="num_processes=1 shards nothing"):
        check(cfg, nodes=1)
    check(cfg, nodes=2)  # across two nodes the one process of each shares the optimizer state
