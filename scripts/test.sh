#!/usr/bin/env bash
# The whole test suite, in .venv (created on first use). Extra arguments go to pytest.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/env.sh"
python -m pytest "$@"
