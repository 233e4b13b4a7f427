"""The teaching text says each ratio one way, and the sentences that cite a record say what the record holds.

The one way is ortnb.wording's: a ratio is a speed ratio, written "faster: 1.17x the speed of eager" (or
"slower: 0.90x ..."), never "ORT's step was 1.17x eager's". In a table, a bare "1.24x" is allowed in a column
whose header says "speed". The sentences that quote a benchmark record are rebuilt here from the record's JSON
with ortnb.wording and must appear word for word.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from ortnb.wording import speed_sentence

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "benchmarks" / "results"
MARKDOWN = ["README.md", "benchmarks/README.md", *sorted(str(p.relative_to(ROOT)) for p in ROOT.glob("docs/**/*.md"))]
NOTEBOOKS = sorted(str(p.relative_to(ROOT)) for p in (ROOT / "notebooks").glob("*.ipynb"))

# 1.17x, 3x; not 16x128, 8xA100, 0x1f or 3e-5x, nor a figure quoted as the screen shows it ("2.50x", `1.24x`)
RATIO = re.compile(r"(?<![\w.\-\"`])\d+(?:\.\d+)?x(?![\w\"`])")
# "1.17x the speed of", "**1.17x** the speed of", "0.26x to 0.40x the speed of", "4.05x and 2.97x the speed of"
ONE_WAY = re.compile(r"x\**(?:(?:,| and| to| or)\s+\**\d+(?:\.\d+)?x\**)*\s+the speed of\s")
FORMATTED = re.compile(r"\}x(?![\w])")  # an f-string's "{ratio:.2f}x": build it with ortnb.wording instead


def _record(name: str) -> dict:
    return json.loads((RESULTS / name).read_text())


def _notebook_text(path: str, kinds=("markdown",)) -> str:
    cells = json.loads((ROOT / path).read_text())["cells"]
    return "\n".join("".join(c["source"]) for c in cells if c["cell_type"] in kinds)


def _texts():
    for path in MARKDOWN:
        yield path, (ROOT / path).read_text()
    for path in NOTEBOOKS:
        yield path, _notebook_text(path)


def _table_speed_columns(lines: list[str], index: int) -> set[int] | None:
    """The columns of the table row at ``index`` whose header says 'speed' (None: not a table row)."""
    if not lines[index].lstrip().startswith("|"):
        return None
    start = index
    while start > 0 and lines[start - 1].lstrip().startswith("|"):
        start -= 1
    header = [cell.strip().lower() for cell in lines[start].strip().strip("|").split("|")]
    return {i for i, cell in enumerate(header) if "speed" in cell}


def ratios_said_another_way(text: str) -> list[str]:
    """Each ratio in ``text`` that does not read 'Nx the speed of ...' (outside a speed column of a table)."""
    lines = text.splitlines()
    found, prose = [], []
    for index, line in enumerate(lines):
        columns = _table_speed_columns(lines, index)
        if columns is None:
            prose.append(line)  # prose is read across line breaks
            continue
        prose.append("")
        for column, cell in enumerate(line.strip().strip("|").split("|")):
            found += [f"{cell.strip()[:120]}  <- {m.group()}" for m in RATIO.finditer(cell)
                      if column not in columns and not ONE_WAY.match(cell, m.end() - 1)]
    flowing = re.sub(r"\s*\n\s*", " ", "\n".join(prose))
    found += [f"{flowing[max(0, m.start() - 80):m.end() + 40]}  <- {m.group()}" for m in RATIO.finditer(flowing)
              if not ONE_WAY.match(flowing, m.end() - 1)]
    return found


def test_the_checker_knows_both_ways():
    assert ratios_said_another_way("at 128 tokens ORT's step was 1.17x eager's") != []
    assert ratios_said_another_way("ORT was faster: 1.17x the speed of eager") == []
    assert ratios_said_another_way("| run | speed-up |\n|---|---|\n| ORT | 1.24x |") == []
    assert ratios_said_another_way("| run | vs default |\n|---|---|\n| ORT | 0.61x |") != []
    assert ratios_said_another_way("batch 16 x 128, 16x12x128x128, 8xA100") == []
    assert ratios_said_another_way('every other row states its speed against them ("2.50x")') == []


@pytest.mark.parametrize("path, text", list(_texts()), ids=lambda value: value if value.endswith((".md", ".ipynb")) else "")
def test_every_ratio_reads_one_way(path, text):
    assert ratios_said_another_way(text) == []


@pytest.mark.parametrize("path", NOTEBOOKS)
def test_notebook_code_words_ratios_through_ortnb_wording(path):
    code = _notebook_text(path, kinds=("code",))
    assert [line for line in code.splitlines() if FORMATTED.search(line) or RATIO.search(line)] == []


def _profile_sentences() -> list[str]:
    steps = _record("profile-minilm.json")["unprofiled_step_ms"]
    return [speed_sentence("ORT", "eager", times=(steps[f"ort fp32, {padding}"], steps[f"eager fp32, {padding}"]),
                           unit="ms", per="a step") for padding in ("pad to 128", "padding longest")]


def test_notebook_06_and_the_benchmarks_quote_the_profile_record():
    at_128, longest = _profile_sentences()
    assert at_128 == "ORT was faster: 1.17x the speed of eager (1284 against 1502 ms a step)"
    assert longest == "ORT was slower: 0.90x the speed of eager (492 against 444 ms a step)"
    notebook = _notebook_text("notebooks/06-inside-ort.ipynb")
    benchmarks = (ROOT / "benchmarks" / "README.md").read_text()
    for sentence in (at_128, longest):
        assert sentence in notebook
        assert sentence in benchmarks


def _checked_outputs(path: str) -> list[str]:
    """What the notebook's NBVAL_CHECK_OUTPUT cells printed, as stored (nbval compares the next run with it)."""
    cells = json.loads((ROOT / path).read_text())["cells"]
    return ["".join("".join(o.get("text", "")) for o in c.get("outputs", []))
            for c in cells if c["cell_type"] == "code" and "".join(c["source"]).startswith("# NBVAL_CHECK_OUTPUT")]


def test_notebook_02_prints_the_time_to_target_record():
    record = _record("time-to-target-v3b.json")
    seconds, per = record["summary"]["seconds_to_target"], f"to accuracy {record['target']}"
    levers = "defaults+learning_rate=1e-4+lr_schedule=wsd+freeze_embeddings=true"
    expected = [speed_sentence("(c)", "(b)", times=(seconds["defaults"], seconds["careful"]), per=per),
                speed_sentence("(c')", "(b)", times=(seconds[levers], seconds["careful"]), per=per),
                speed_sentence("(e)", "(b)", times=(seconds["raced"], seconds["careful"]), per=per)]
    assert expected == ["(c) was slower: 0.82x the speed of (b) (75.1 against 61.6 s to accuracy 0.8)",
                        "(c') was slower: 0.85x the speed of (b) (72.3 against 61.6 s to accuracy 0.8)",
                        "(e) was slower: 0.65x the speed of (b) (95.2 against 61.6 s to accuracy 0.8)"]
    # the record's own ratios say the same, and the README quotes them
    summary = record["summary"]
    assert [f"{summary[k]:.2f}" for k in ("careful_over_defaults", "careful_over_raced")] == ["0.82", "0.65"]
    readme = " ".join((ROOT / "README.md").read_text().split())
    assert "ortnb's best, (c'), reached the target at 0.85x the speed of the careful Trainer user" in readme
    assert "the untuned defaults at 0.82x" in readme
    assert "\n".join(expected) + "\n" in _checked_outputs("notebooks/02-speedup-comparison.ipynb")


def test_the_edge_tables_quote_speeds_from_their_records():
    """benchmarks/README.md's on-device tables once gave step-time ratios; each cell is now a speed, from the JSON."""
    benchmarks = (ROOT / "benchmarks" / "README.md").read_text()
    steps = {row["configuration"]: row["median_ms"] for row in _record("edge.json")["rows"]}
    for selection in ("head", "last layer", "all"):
        api = steps[f"training API, {selection}"]
        for other in ("ORTModule", "PyTorch eager"):
            assert f"{api / steps[f'{other}, {selection}']:.2f}x the speed of the API |" in benchmarks, (selection, other)
    web = {row["configuration"]: row["median_ms"] for row in _record("edge-web.json")["rows"]}
    api = web["training API (Python)"]
    for engine in ("Chromium, 1 thread", "Chromium, isolated (threads)", "PyTorch eager"):
        assert f"| {api / web[engine]:.2f}x |" in benchmarks, engine
    one, two = web["Chromium, 1 thread"], web["Chromium, isolated (threads)"]
    assert f"2 threads run at {one / two:.2f}x the speed of 1" in benchmarks
