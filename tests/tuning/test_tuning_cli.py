"""`ortnb tune`: bad input gets one line on stderr and exit code 2 before anything runs; a search prints its
progress, the ranked table and the winner, and writes what `ortnb run` and `ortnb compare --config` read;
Ctrl-C stops it, keeps what was measured and leaves no worker behind."""

from __future__ import annotations

import json
import re
import signal
import subprocess
import sys

import pytest

import ortnb
from ortnb import cli
from ortnb.runner.launch import wait_for

from .._helpers import FakeClock, fake_measure, workers_under

BAD = [  # (arguments, the one line on stderr after "ortnb tune: ")
    (["--budget", "0"], r"--budget must be more than 0 seconds, got 0\.0: it is the time the search may take; the "
                        r"default is 180\.$"),
    (["--budget", "soon"], r"--budget must be a number of seconds \(e\.g\. --budget 180\), got 'soon'\.$"),
    (["--vary", "seq_len=64,128"], r"grid: seq_len changes the samples trained, so the speeds would not compare"),
    (["--vary", "colour=red"], r"--vary 'colour=red': colour is not a RunConfig field; known: "),
    (["--budget", "1"], r"--budget=1 is too small for even one candidate: measuring the quickest one with tiny-bert "
                        r"needs about 12 s .* give --budget >= 12 "),
]


@pytest.mark.parametrize("arguments, message", BAD, ids=[" ".join(a) for a, _ in BAD])
def test_bad_input_says_why_in_one_line(tmp_path, monkeypatch, capsys, arguments, message):
    monkeypatch.setattr("ortnb.runner.launch", lambda *_a, **_k: pytest.fail("a run was launched"))
    code = cli.main(["tune", "--model", "tiny-bert", "--cache-dir", str(tmp_path / "cache"), "--out",
                     str(tmp_path / "out"), *arguments])
    captured = capsys.readouterr()
    assert code == 2 and "Traceback" not in captured.err and captured.err.count("\n") == 1, captured.err
    assert re.search(r"^ortnb tune: " + message, captured.err.strip())
    assert not (tmp_path / "out").exists()


def test_a_search_prints_progress_the_table_and_the_winner_and_writes_its_files(tmp_path, monkeypatch, capsys):
    clock = FakeClock()
    measure = fake_measure(clock, lambda c: 50.0 if c.axes["backend"] == "eager" else 40.0, overhead=3.0)
    monkeypatch.setattr("ortnb.tuning.measure.measurer", lambda *_args, **_kwargs: measure)  # no processes
    out = tmp_path / "out"
    arguments = ["tune", "--model", "tiny-bert", "--budget", "60", "--vary", "backend=ort,eager", "--vary",
                 "precision=no,fp16", "--steps", "200", "--out", str(out), "--cache-dir", str(tmp_path / "cache"),
                 "--wait-for-quiet", "0"]  # measured by a fake: the machine's load does not matter
    assert cli.main(arguments) == 0
    printed = capsys.readouterr().out
    assert "ortnb tune: 4 candidates: 2 refused by validate(), 2 to measure within 60 s" in printed
    assert re.search(r"ortnb tune: rung 1, candidate 1 of 2: .* \| \d+ s of 60 s \| best so far: none yet", printed)
    assert re.search(r"(?m)^ #\s+configuration\s+status\s+samples/s\s+p25\s+p75\s+real tokens/s", printed)
    assert re.search(r"(?m)^ 1\s+eager \+ AdamW\s+measured\s+50\.0 ", printed)
    assert "  refused (ort + AdamW + fp16): precision: fp16 with backend='ort' needs the CUDA" in printed
    winner = ortnb.RunConfig.from_json(out / "config.json")
    assert winner == ortnb.RunConfig(model="tiny-bert", backend="eager", max_steps=200)
    assert json.loads(printed[printed.index("{"):printed.rindex("}") + 1]) == json.loads(winner.to_json())
    assert f"train the winner with: ortnb run {out / 'config.json'}" in printed
    assert [c.label for c in cli.load_configs(str(out / "candidates.json"))] == ["ort + AdamW", "eager + AdamW"]
    assert json.loads((out / "tune.json").read_text())["best"] == "eager + AdamW"
    # the second time it comes from the cache and says so
    monkeypatch.setattr("ortnb.tuning.measure.measurer", lambda *_a, **_k: pytest.fail("measured again"))
    assert cli.main(arguments) == 0
    assert "ortnb tune: from the cache (" in capsys.readouterr().out


@pytest.mark.slow
def test_ctrl_c_stops_the_search_and_leaves_no_worker(tmp_path):
    command = [sys.executable, "-m", "ortnb", "tune", "--model", "tiny-bert", "--budget", "60", "--vary",
               "backend=eager", "--vary", "batch_size=8,16", "--out", str(tmp_path / "out"), "--cache-dir",
               str(tmp_path / "cache")]
    process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    lines = []
    for line in process.stdout:
        lines.append(line)
        if "rung 1, candidate 1 of 2:" in line and "best so far" in line:  # its run has been launched
            process.send_signal(signal.SIGINT)
    assert process.wait(timeout=60) == 130, "".join(lines)
    printed = "".join(lines)
    assert "ortnb tune: stopping the running candidate (Ctrl-C again to abort)..." in printed
    assert "(stopped)" in printed and "the search was stopped while it ran" in printed
    assert wait_for(lambda: not workers_under(tmp_path), 10), [p.info["cmdline"] for p in workers_under(tmp_path)]
    assert json.loads((tmp_path / "out" / "tune.json").read_text())["interrupted"] is True


def test_a_second_search_into_the_same_runs_folder_is_refused_naming_the_first(tmp_path, monkeypatch, capsys):
    clock = FakeClock()
    monkeypatch.setattr("ortnb.tuning.measure.measurer", lambda *_a, **_k: fake_measure(clock, lambda c: 50.0))
    runs = tmp_path / "runs"
    arguments = ["tune", "--model", "tiny-bert", "--budget", "60", "--vary", "backend=eager", "--runs", str(runs),
                 "--out", str(tmp_path / "out"), "--cache-dir", str(tmp_path / "cache"), "--wait-for-quiet", "0"]
    first = subprocess.Popen([sys.executable, "-c", "import sys, time\nfrom pathlib import Path\n"
                              "from ortnb.tuning.lock import search_lock\nwith search_lock(Path(sys.argv[1])):\n"
                              "    print('holding', flush=True)\n    time.sleep(60)", str(runs)],
                             stdout=subprocess.PIPE, text=True)  # a search under way in the same folder
    try:
        assert first.stdout.readline() == "holding\n"
        assert cli.main(arguments) == 2
        said = capsys.readouterr().err
        assert re.search(rf"ortnb tune: output_dir: another search, `ortnb tune` \(pid {first.pid} on \S+, started "
                         rf"\d{{4}}-\d\d-\d\d \d\d:\d\d:\d\d\), measures into {re.escape(str(runs))}; two searches in "
                         r"one folder would measure each other's load\. Wait for it to end, stop it, or give this "
                         r"search another folder \(--runs\)\.", said), said
    finally:
        first.kill()
        first.wait()
    assert cli.main(arguments) == 0  # the kernel released the lock with its holder
