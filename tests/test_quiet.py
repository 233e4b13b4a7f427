"""Waiting for a quiet machine before measuring (ortnb/contention.py), and compare/tune saying when it stayed busy."""

from __future__ import annotations

import subprocess
import sys

import pytest

from ortnb import comparison, contention, report
from ortnb.errors import ConfigError


class Looks:
    """A machine_share stand-in: the shares it returns, one per look, each look taking one second."""

    def __init__(self, shares):
        self.shares, self.now = list(shares), 0.0

    def sample(self):
        self.now += 1.0
        return self.shares.pop(0) if self.shares else self.last

    @property
    def last(self):
        return 0.0

    def clock(self):
        return self.now


def test_a_quiet_machine_is_not_waited_for():
    looks = Looks([0.02])
    told = []
    found = contention.wait_for_quiet(60, sample=looks.sample, clock=looks.clock, on_wait=told.append)
    assert found == contention.Quiet(True, 0.02, 1.0) and told == [] and found.text("before ort") is None


def test_a_busy_machine_is_waited_for_until_it_is_quiet_and_the_wait_is_told_once():
    looks = Looks([0.5, 0.45, 0.3, 0.05])
    told = []
    found = contention.wait_for_quiet(60, sample=looks.sample, clock=looks.clock, on_wait=told.append)
    assert found == contention.Quiet(True, 0.05, 4.0) and told == [0.5]


def test_a_machine_that_stays_busy_ends_the_wait_at_its_timeout_and_says_so():
    looks = Looks([0.5] * 100)
    found = contention.wait_for_quiet(3, sample=looks.sample, clock=looks.clock)
    assert found == contention.Quiet(False, 0.5, 3.0)
    assert found.text("before ort + fused Adam") == (
        "the machine was not quiet before ort + fused Adam: other processes used 50% of the CPU after waiting 3 s; "
        "its figures are flagged where they were measured under load")


def test_off_linux_nothing_can_be_looked_at_so_nothing_is_waited_for():
    found = contention.wait_for_quiet(60, sample=lambda: None)
    assert found.quiet and found.share is None and found.text("before x") is None


@pytest.mark.slow  # a real busy process, watched for seconds: the pure tier stays under 45 s
def test_a_real_busy_process_is_seen_and_an_idle_machine_is_not():
    if not contention.wait_for_quiet(10).quiet:  # the test needs a quiet machine to start from
        pytest.skip("other processes keep this machine busy (a second suite, a build): nothing to compare against")
    busy = subprocess.Popen([sys.executable, "-c", "while True: pass"])
    try:
        loaded = contention.machine_share(1.0)
    finally:
        busy.kill()
        busy.wait()
    assert loaded is not None and loaded > 0.3, loaded  # one core of two, less what the start took
    found = contention.wait_for_quiet(10)
    assert found.quiet, found  # the loop is gone: the next looks find the machine quiet


class FakeRun:
    done = True
    alive = False

    def __init__(self, config):
        self.config, self.run_dir = config, "runs/fake"

    def wait(self, timeout=None):
        return "completed"

    def summary(self):
        return {"label": self.config.label, "status": "completed", "engine": "pytorch", "samples_per_s": 20.0,
                "samples_per_s_iqr": 1.0, "samples_per_s_p25": 19.5, "samples_per_s_p75": 20.5,
                "steps_measured": 10, "mfu": 0.4239}


def test_compare_waits_before_each_run_and_names_the_runs_that_started_on_a_busy_machine(monkeypatch, tmp_path):
    import ortnb

    looks = iter([0.6, 0.6, 0.0])  # busy before the first run (one wait that ends busy), quiet before the second
    waits = []

    def fake_wait(timeout_s, on_wait=None):
        share = next(looks)
        if share > contention.CONTENDED_SHARE:
            on_wait(share)
            share = next(looks)
        return contention.Quiet(share <= contention.CONTENDED_SHARE, share, timeout_s if share else 1.0)

    monkeypatch.setattr("ortnb.runner.launch", FakeRun)
    monkeypatch.setattr(contention, "wait_for_quiet", fake_wait)
    configs = [ortnb.RunConfig(model="tiny-bert", backend="eager", output_dir=str(tmp_path)),
               ortnb.RunConfig(model="tiny-bert", backend="eager", optim="adamw_torch_fused", output_dir=str(tmp_path))]
    table = comparison.compare(configs, wait_for_quiet_s=5, on_wait=waits.append)
    assert waits == ["other processes use 60% of the CPU; waiting up to 5 s for a quiet machine before "
                     "eager + AdamW"]
    assert table.attrs["notes"] == [
        "the machine was not quiet before eager + AdamW: other processes used 60% of the CPU after waiting 5 s; "
        "its figures are flagged where they were measured under load"]
    json_path, html_path = report.write(table, configs, tmp_path / "out", "ortnb compare")
    page = html_path.read_text()
    assert "the machine was not quiet before eager + AdamW" in page
    assert "<th>MFU %</th>" in page and ">42.4<" in page and "0.4239" not in page  # MFU as the headline says it
    assert "samples_per_s" not in page.split("<h2>Method")[0].split("</script>")[-1]  # no raw field names
    with pytest.raises(ConfigError, match="wait_for_quiet_s must be a number of seconds >= 0"):
        comparison.compare(configs, wait_for_quiet_s=-1)
