#!/usr/bin/env bash
# JupyterLab on the notebooks, in .venv (created on first use). Extra arguments go to jupyter lab.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/env.sh"
exec jupyter lab --notebook-dir=notebooks "$@"
