"""Peak memory as runs record it belongs to the process itself, not to the kernel that started it."""

from __future__ import annotations

import subprocess
import sys

import pytest

from ortnb.memory import peak_rss_mb

CHILD = "from ortnb.memory import peak_rss_mb; print(peak_rss_mb())"


@pytest.mark.ort  # holds 600 MB resident: kept out of the pure tier
@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="ru_maxrss carries over exec on Linux")
def test_a_child_of_a_big_process_reports_its_own_peak():
    ballast = bytearray(600 * 1024 * 1024)
    ballast[::4096] = b"\x01" * len(ballast[::4096])  # touch every page: resident, not just reserved
    assert peak_rss_mb() > 600
    child = float(subprocess.run([sys.executable, "-c", CHILD], capture_output=True, text=True,
                                 check=True).stdout)
    del ballast
    assert 5 < child < 300  # ru_maxrss would say over 600 here
