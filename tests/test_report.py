"""Comparison presets and reports (pure parts on exact values; one real CLI comparison is in test_runner)."""

from __future__ import annotations

import dataclasses
import json

import pytest

from ortnb import cli, report
from ortnb.cli import parse_vary
from ortnb.comparison import best, describe_best, grid
from ortnb.errors import ConfigError
from ortnb.hardware import parse_cpuinfo
from ortnb.config import RunConfig

from ._helpers import BARE, CPU, table_of_two_runs

TABLE = table_of_two_runs()


def test_optimum_preset_on_a_cpu_machine():
    labels = [c.label for c in report.optimum_preset(RunConfig(), CPU)]
    assert labels == ["PyTorch + AdamW", "PyTorch + fused AdamW", "ORT + fused AdamW (torch)",
                      "ORT + fused AdamW (torch) + ZeRO-1 x2", "PyTorch bf16 + AdamW", "torch.compile + AdamW"]
    configs = report.optimum_preset(RunConfig(), CPU)
    assert [(c.backend, c.optim) for c in configs[:3]] == [("eager", "adamw_torch"), ("eager", "adamw_torch_fused"),
                                                           ("ort", "adamw_torch_fused")]
    assert configs[3].num_processes == 2 and configs[3].zero_stage == 1


def test_optimum_preset_uses_ort_fused_adam_on_cuda_and_skips_what_is_missing():
    gpu = dataclasses.replace(CPU, cuda=True, ort_cuda=True, ort_training="onnxruntime-training")
    on_gpu = report.optimum_preset(RunConfig(), gpu)
    assert (on_gpu[2].optim, on_gpu[2].label, on_gpu[3].label) == (
        "adamw_ort_fused", "ORT + fused Adam (ORT)", "ORT + fused Adam (ORT) + ZeRO-1 x2")
    assert [c.label for c in report.optimum_preset(RunConfig(), dataclasses.replace(BARE, bf16_cpu_native=False))] \
        == ["PyTorch + AdamW", "PyTorch + fused AdamW", "ORT + fused AdamW (torch)"]


def test_markdown_table_is_exact():
    assert report.markdown_table(TABLE) == (
        "| run | engine | samples/s (median) | p25–p75 | speed-up | peak memory (MB) | MFU | first step (s) |\n"
        "|---|---|---|---|---|---|---|---|\n"
        "| PyTorch + AdamW | pytorch | 20.0 | – | 1.00x | 900.0 | 5.0% | 1.2 |\n"
        "| ORT + fused Adam | onnxruntime | 31.0 | – | 1.55x | 1100.0 | 7.8% | 7.4 |\n")
    judged = TABLE.assign(p25=[19.5, 22.0], p75=[20.5, 40.0],
                          verdict=["baseline", "1.55x, not conclusive: this run is noisy (spread 58% of its median, "
                                               "over 15%)"])
    assert report.markdown_table(judged).splitlines()[3] == (
        "| ORT + fused Adam | onnxruntime | 31.0 | 22.0–40.0 | 1.55x, not conclusive: this run is noisy (spread 58% of "
        "its median, over 15%) | 1100.0 | 7.8% | 7.4 |")


def test_best_configuration_is_the_fastest_that_completed():
    assert describe_best(TABLE) == ("Fastest here: ORT + fused Adam (onnxruntime), 31.00 samples/s, 1.55x the "
                                    "baseline, MFU 7.8%.")
    # the case: a baseline whose spread (39.0) is larger than its median (22.9) is no fact to divide by
    noisy = TABLE.assign(samples_per_s=[22.9, 42.4], spread=[39.0, 2.0])
    assert describe_best(noisy) == ("Fastest measured: ORT + fused Adam (onnxruntime), 42.40 samples/s, 1.85x the "
                                    "baseline, MFU 7.8%; not conclusive: the baseline is noisy (spread 170% of its median, "
                                    "over 15%).")
    assert describe_best(TABLE.assign(steps_measured=[25, 3])) == (
        "Fastest measured: PyTorch + AdamW (pytorch), 20.00 samples/s, the baseline itself, MFU 5.0%; not "
        "conclusive: ORT + fused Adam has too few measured steps (3, at least 5 needed).")
    crashed_fast = TABLE.assign(status=["completed", "failed"])
    assert best(crashed_fast)["label"] == "PyTorch + AdamW"
    assert best(TABLE.assign(status=["failed", "failed"])) is None


def test_report_files_are_self_contained(tmp_path):
    json_path, html_path = report.write(TABLE, [RunConfig()], tmp_path, "ortnb compare --steps 30")
    data = json.loads(json_path.read_text())
    assert data["command"] == "ortnb compare --steps 30" and data["table"][1]["speedup"] == 1.55
    assert "torch" in data["versions"] and "Speed-ups are ratios of medians" in data["method"]
    assert data["best"].startswith("Fastest here: ORT + fused Adam")
    page = html_path.read_text()
    assert 'src="https://cdn.plot.ly' not in page and "plotly.js" in page  # plotly inlined: works offline
    assert "1.55x" in page and "ORT + fused Adam" in page


def test_vary_flags_become_typed_choices():
    assert parse_vary(["backend=eager,ort", "batch-size=8, 16", "threads=none,2", "learning_rate=1e-4"]) == {
        "backend": ["eager", "ort"], "batch_size": [8, 16], "threads": [None, 2], "learning_rate": [1e-4]}


def test_bad_vary_flags_are_all_reported():
    with pytest.raises(ConfigError) as raised:
        parse_vary(["backend", "colour=red", "batch_size=big", "optim=adamw_torch", "optim=adamw_torch_fused"])
    problems = raised.value.problems
    assert len(problems) == 4
    assert "write FIELD=VALUE1,VALUE2" in problems[0] and "colour is not a RunConfig field" in problems[1]
    assert "batch_size takes int values" in problems[2] and "optim is given twice" in problems[3]


def test_grid_is_every_combination_with_distinct_labels():
    configs = grid(RunConfig(), {"backend": ["eager", "ort"], "batch_size": [8, 16]})
    assert [(c.backend, c.batch_size) for c in configs] == [("eager", 8), ("eager", 16), ("ort", 8), ("ort", 16)]
    assert [c.label for c in configs] == ["eager + AdamW (batch_size=8)", "eager + AdamW (batch_size=16)",
                                          "ort + AdamW (batch_size=8)", "ort + AdamW (batch_size=16)"]
    with pytest.raises(ConfigError, match="colour is not a RunConfig field"):
        grid(RunConfig(), {"colour": ["red"]})


def test_compare_cli_refuses_bad_grids_before_any_run(tmp_path, capsys):
    runs = tmp_path / "runs"
    assert cli.main(["compare", "--vary", "seq_len=64,128", "--runs", str(runs), "--out", str(tmp_path)]) == 2
    assert "seq_len differs between the configurations" in capsys.readouterr().err
    assert cli.main(["compare", "--vary", "backend=ort", "--config", "x.json", "--runs", str(runs)]) == 2
    assert "use one of them" in capsys.readouterr().err
    assert not runs.exists()


ZEN3 = "processor\t: 0\nvendor_id\t: AuthenticAMD\ncpu family\t: 25\nmodel\t\t: 1\nmodel name\t: AMD EPYC\nflags\t\t: fpu sse avx2 fma\n\nprocessor\t: 1\nmodel name\t: other\n"
ZEN4 = "processor\t: 0\ncpu family\t: 25\nmodel\t\t: 17\nmodel name\t: AMD EPYC\nflags\t\t: avx2 avx512f avx512_vnni avx512_bf16 avx512bw\n"


def test_cpus_with_one_name_get_distinct_signatures():
    # Cloud VMs call Zen 3 and Zen 4 hosts both "AMD EPYC"; their matmul peaks differ, so must their cache keys.
    zen3, zen4 = parse_cpuinfo(ZEN3), parse_cpuinfo(ZEN4)
    assert zen3.name == zen4.name == "AMD EPYC"
    assert zen3.signature == "AMD EPYC (family 25 model 1; avx2)"
    assert zen4.signature == "AMD EPYC (family 25 model 17; avx2 avx512f avx512_vnni avx512_bf16)"
    assert parse_cpuinfo("", fallback="aarch64").signature == "aarch64"


def test_the_terminal_table_shows_the_dashboards_columns_aligned():
    assert report.text_table(TABLE).splitlines() == [
        "run               engine       samples/s  MFU %  peak memory (MB)  optimizer state (MB)  final loss  "
        "first step (s)",
        "PyTorch + AdamW   pytorch             20    5.0               900                    87         0.6  "
        "           1.2",
        "ORT + fused Adam  onnxruntime         31    7.8             1,100                    87         0.6  "
        "           7.4"]
