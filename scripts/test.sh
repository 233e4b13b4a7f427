#!/usr/bin/env bash
# The whole test suite, in .venv (created on first use). Extra arguments go to pytest.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/env.sh"
# The suite starts a few hundred Python processes (supervisors, ranks, kernels), each importing ortnb: with
# PYTHONDONTWRITEBYTECODE set (some CI images set it) every one compiled ortnb's modules again, about 80 ms a
# process. The bytecode goes to __pycache__/, which git ignores.
unset PYTHONDONTWRITEBYTECODE
# The notebook UI test drives JupyterLab in Debian's chromium (playwright never downloads a browser).
if ! command -v chromium >/dev/null && [[ $(id -u) == 0 ]] && command -v apt-get >/dev/null; then
  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null
fi
if [[ "${1:-}" == "--fast" ]]; then
  # The pure tier: no training, no worker processes, no notebooks, no browser (under a minute).
  shift
  exec python -m pytest tests -m "not slow and not browser and not ort and not notebook" "$@"
fi
python -m pytest "$@"
