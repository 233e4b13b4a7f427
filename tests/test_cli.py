"""`ortnb run` and `ortnb compare --config`: a configuration file that cannot be used gets one clear line on
stderr and exit code 2, never a traceback; a failed configuration of a comparison says why, in the terminal
and in results.json."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from ortnb import cli
from ortnb.config import RunConfig

GOOD = {"model": "tiny-bert", "dataset": "rotten_tomatoes", "backend": "eager", "max_steps": 3, "warmup_steps": 1}


class FakeRun:
    """What cmd_run and cmd_compare read from a Run, without training anything."""

    def __init__(self, config: RunConfig, run_dir: Path, error: str | None = None):
        self.config, self.run_dir, self.error = config, run_dir, error
        self.status = "failed" if error else "completed"
        self.done = True
        self.phase, self.bad_lines = None, 0

    def records(self) -> list:
        return []

    def follow(self, on_record, interval=0.5, on_tick=None, since=0, stop_on_interrupt=True) -> str:
        for record in self.records()[since:]:
            on_record(record)
        return self.status

    def summary(self) -> dict:
        return {"label": self.config.label, "status": self.status, "run_dir": str(self.run_dir),
                "engine": None if self.error else "pytorch", "samples_per_s": None if self.error else 10.0}


def write(tmp_path, name: str, content: str | bytes) -> str:
    path = tmp_path / name
    path.write_bytes(content if isinstance(content, bytes) else content.encode())
    return str(path)


def one_line_error(capsys) -> str:
    captured = capsys.readouterr()
    assert "Traceback" not in captured.err
    assert captured.err.count("\n") == 1, captured.err
    return captured.err.strip()


# -- ortnb run ------------------------------------------------------------------------------------


def test_run_reads_yaml(tmp_path, monkeypatch, capsys):
    started = []
    monkeypatch.setattr("ortnb.runner.launch", lambda cfg, launcher_args=None: started.append(cfg) or
                        FakeRun(cfg, tmp_path / "run"))
    path = write(tmp_path, "cfg.yaml", "model: tiny-bert\ndataset: rotten_tomatoes\nbackend: eager\nprecision: no\n"
                                       "max_steps: 3\nwarmup_steps: 1\n")
    assert cli.main(["run", path]) == 0
    assert started == [RunConfig(**GOOD)]  # `precision: no` is the value "no", not YAML's false
    assert "ortnb run: completed; engine pytorch" in capsys.readouterr().out


RUN_FILES = [  # (file name, content or None for no file, the one line on stderr after "ortnb run: ")
    ("cfg.yaml", None, r"cfg\.yaml: no such file\.$"),
    ("cfg.json", "", r"cfg\.json is empty; write RunConfig fields in it"),
    ("cfg.json", b'{"model": "caf\xe9"}', r"cfg\.json is not UTF-8 text \(byte 14\); save it as UTF-8\.$"),
    ("cfg.json", '{"model": "tiny-bert",\n "backend" "eager"}',
     r"cfg\.json line 2 column 12: not valid JSON \(Expecting ':' delimiter\); fix the file\.$"),
    ("cfg.yaml", "model: tiny-bert\nbackend: eager: ort\n",
     r"cfg\.yaml line 2 column 15: not valid YAML \(mapping values are not allowed here\); fix the file\.$"),
    ("cfg.yaml", "- model: tiny-bert\n- model: minilm\n",
     r"cfg\.yaml holds a list, but `ortnb run` takes one RunConfig: a mapping of field: value \(to run several "
     r"configurations, use `ortnb compare --config`\)\.$"),
    ("cfg.yaml", "model: tiny-bert\ncolour: red\nsize: 3\n",
     r"cfg\.yaml: Unknown RunConfig field\(s\): colour, size\. Known: backend, batch_size, "),
    ("cfg.yaml", "# nothing yet\n", r"cfg\.yaml holds nothing; write RunConfig fields in it, e\.g\. model: minilm\.$"),
]


@pytest.mark.parametrize("name, content, message", RUN_FILES, ids=[f"{i}-{r[0]}" for i, r in enumerate(RUN_FILES)])
def test_run_with_an_unusable_file_says_why_in_one_line(tmp_path, monkeypatch, capsys, name, content, message):
    monkeypatch.chdir(tmp_path)  # file names in the messages as the user typed them
    if content is not None:
        write(tmp_path, name, content)
    assert cli.main(["run", name]) == 2
    assert re.search(r"^ortnb run: " + message, one_line_error(capsys))


def test_run_with_a_folder_instead_of_a_file(tmp_path, capsys):
    assert cli.main(["run", str(tmp_path)]) == 2
    assert one_line_error(capsys).endswith("is a folder; pass a JSON or YAML configuration file.")


def test_run_refused_by_validate_lists_every_problem_and_starts_nothing(tmp_path, capsys):
    path = write(tmp_path, "cfg.json", json.dumps({**GOOD, "batch_size": 0, "output_dir": None}))
    assert cli.main(["run", path]) == 2
    err = capsys.readouterr().err
    assert "Traceback" not in err and err.startswith("ortnb run: 2 problems:")
    assert "- batch_size: 0 is below 1; use 1 or more." in err and "- output_dir: must be a folder path" in err


def test_the_command_exits_2_without_a_traceback(tmp_path):
    done = subprocess.run([sys.executable, "-m", "ortnb", "run", str(tmp_path / "missing.yaml")],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 2
    assert done.stderr == f"ortnb run: {tmp_path / 'missing.yaml'}: no such file.\n"


# -- ortnb compare --config -------------------------------------------------------------------------


COMPARE_FILES = [  # (file name, content, the one line on stderr after "ortnb compare: ")
    ("cmp.json", json.dumps(GOOD),
     r"cmp\.json holds one mapping, but compare takes a list of RunConfigs: write \[\{\.\.\.\}, \{\.\.\.\}\] \(JSON\), "
     r"one '- ' entry per configuration \(YAML\), or \{\"configs\": \[\.\.\.\]\}\.$"),
    ("cmp.yaml", "configs: eager\n", r"cmp\.yaml: compare takes a non-empty list of RunConfigs, got a string\.$"),
    ("cmp.json", "[]", r"cmp\.json: compare takes a non-empty list of RunConfigs, got a list \(empty\)\.$"),
    ("cmp.yaml", "- model: tiny-bert\n  backend: [eager\n",
     r"cmp\.yaml line 3 column 1: not valid YAML \(expected ',' or '\]', but got '<stream end>'\); fix the file\.$"),
    ("cmp.json", "[{\"model\": \"tiny-bert\"}, \"eager\"]",
     r"cmp\.json configuration 1: a RunConfig is a mapping of field: value \(e\.g\. \{\"model\": \"minilm\"\}\), got "
     r"a string\.$"),
]


@pytest.mark.parametrize("name, content, message", COMPARE_FILES,
                         ids=[f"{i}-{r[0]}" for i, r in enumerate(COMPARE_FILES)])
def test_compare_with_an_unusable_file_says_why_in_one_line(tmp_path, monkeypatch, capsys, name, content, message):
    monkeypatch.chdir(tmp_path)
    write(tmp_path, name, content)
    assert cli.main(["compare", "--config", name]) == 2
    assert re.search(r"^ortnb compare: " + message, one_line_error(capsys))


def test_compare_reports_every_configuration_with_unknown_fields(tmp_path, capsys):
    path = write(tmp_path, "cmp.yaml", "- {model: tiny-bert, colour: red}\n- {model: tiny-bert}\n- {speed: 3}\n")
    assert cli.main(["compare", "--config", path]) == 2
    err = capsys.readouterr().err
    assert "Traceback" not in err and err.startswith("ortnb compare: 2 problems:")
    assert re.search(r"- .*cmp\.yaml configuration 0: Unknown RunConfig field\(s\): colour\.", err)
    assert re.search(r"- .*cmp\.yaml configuration 2: Unknown RunConfig field\(s\): speed\.", err)


def test_compare_says_why_a_configuration_failed_and_stores_it(tmp_path, monkeypatch, capsys):
    from ortnb import comparison

    def fake_compare(configs, baseline=0, repeats=1, on_run=None, **waiting):
        runs = [FakeRun(configs[0], tmp_path / "a"),
                FakeRun(configs[1], tmp_path / "b", error="ValueError: tokenizer exploded\nTraceback (most recent...")]
        for run in runs:
            on_run(run)
        return comparison.table([[run.summary()] for run in runs], baseline)

    monkeypatch.setattr(comparison, "compare", fake_compare)
    monkeypatch.setattr("ortnb.charts.comparison_figure", lambda table: SimpleFigure())  # the lead's charts stay out
    configs = [{**GOOD, "name": "first"}, {**GOOD, "name": "second"}]
    path = write(tmp_path, "cmp.json", json.dumps({"configs": configs}))
    assert cli.main(["compare", "--config", path, "--out", str(tmp_path / "out"), "--runs", str(tmp_path)]) == 1
    err = capsys.readouterr().err
    assert f"ortnb compare: second failed: ValueError: tokenizer exploded (the whole error is in results.json; run " \
           f"folder {tmp_path / 'b'})" in err
    runs = json.loads((tmp_path / "out" / "results.json").read_text())["runs"]
    assert [r[0]["error"] for r in runs] == [None, "ValueError: tokenizer exploded\nTraceback (most recent..."]


def test_compare_with_profile_puts_where_each_step_goes_into_the_report(tmp_path, monkeypatch, capsys):
    import pandas as pd

    import ortnb.profiling
    from ortnb import comparison
    from ortnb.profiling import CATEGORIES, Profile

    def fake_compare(configs, baseline=0, repeats=1, on_run=None, **waiting):
        runs = [FakeRun(configs[0], tmp_path / "a"), FakeRun(configs[1], tmp_path / "b")]
        return comparison.table([[run.summary()] for run in runs], baseline)

    profiled = []

    def fake_profile(configs, on_run=None):
        profiled.extend(c.label for c in configs)
        rows = [{"label": c.label, "engine": "pytorch", "category": name, "ms_per_step": 2.0, "share": 0.1}
                for c in configs for name in CATEGORIES]
        return Profile(pd.DataFrame(rows), pd.DataFrame([]), {c.label: 20.0 for c in configs},
                       {c.label: 19.0 for c in configs}, {c.label: "pytorch" for c in configs})

    monkeypatch.setattr(comparison, "compare", fake_compare)
    monkeypatch.setattr(ortnb.profiling, "profile", fake_profile)
    configs = [{**GOOD, "name": "first"}, {**GOOD, "name": "second"}]
    path = write(tmp_path, "cmp.json", json.dumps({"configs": configs}))
    out = tmp_path / "out"
    assert cli.main(["compare", "--config", path, "--out", str(out), "--runs", str(tmp_path), "--profile"]) == 0
    assert profiled == ["first", "second"]
    page = (out / "report.html").read_text()
    assert page.index("<h2>Where a step goes</h2>") < page.index("<h2>Method</h2>")
    assert "first [pytorch]" in page and "profiled 20.0 ms a step, 19.0 without the profiler" in page
    assert json.loads((out / "profile.json").read_text())["step_ms"] == {"first": 20.0, "second": 20.0}
    assert cli.main(["compare", "--config", path, "--out", str(tmp_path / "plain"), "--runs", str(tmp_path)]) == 0
    assert not (tmp_path / "plain" / "profile.json").exists() and len(profiled) == 2  # only when asked


class SimpleFigure:
    def to_html(self, **_options) -> str:
        return "<div>figure</div>"
